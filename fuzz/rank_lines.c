/* libFuzzer target: the lines libmbrank.so reads from its slot (kernels/native/mbrank.c):
 * "place CPUS MEMS CWD", then "go T0_NS SPIN_NS". An input is what the slot sent, whole, cut
 * short or anything: written into a socket as the slot would, closed, then read with the
 * library's own reader (hear) and parsers. Nothing is applied (no binding, no chdir, no wait
 * for T0). mbrank.c is included, not linked: its reader and parsers are static (its
 * constructor does nothing without MANYBENCH_MPI_SOCK). scripts/fuzz.sh builds and runs it. */
#include "../src/manybench/kernels/native/mbrank.c"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
        abort();
    for (size_t off = 0; off < size;) { /* the slot's end: all of it, then closed */
        ssize_t w = send(pair[0], data + off, size - off, MSG_NOSIGNAL);
        if (w <= 0)
            abort(); /* more than the socket holds: scripts/fuzz.sh's -max_len is below it */
        off += (size_t)w;
    }
    close(pair[0]);
    sock = pair[1];
    char line[LINE];
    if (hear(line, sizeof line)) {
        struct place p;
        if (!parse_place(line, &p) && p.cpus_given && CPU_COUNT(&p.cpus) == 0)
            abort(); /* understood, yet no cpu to bind to */
    }
    if (hear(line, sizeof line)) {
        long long t0, spin;
        if (parse_go(line, &t0, &spin) && (t0 < 0 || spin < 0))
            abort();
    }
    close(pair[1]);
    sock = -1;
    return 0;
}
