/* libFuzzer target: the lines libmbrank.so reads from its slot (kernels/native/mbrank.c):
 * "place CPUS MEMS CWD", then "go T0_NS SPIN_NS" (with its start page). An input is what the
 * slot sent, whole, cut short or anything: written into a socket as the slot would, a
 * descriptor riding with its last byte (where a go line's page would be, or anywhere),
 * closed, then read with the library's own reader (hear) and parsers. Nothing is applied
 * (no binding, no chdir, no wait for T0, no page mapped). mbrank.c is included, not linked:
 * its reader and parsers are static (its constructor does nothing without
 * MANYBENCH_MPI_SOCK). scripts/fuzz.sh builds and runs it. */
#include "../src/manybench/kernels/native/mbrank.c"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
        abort();
    size_t head = size ? size - 1 : 0;   /* the slot's end: all of it, then closed */
    for (size_t off = 0; off < head;) {
        ssize_t w = send(pair[0], data + off, head - off, MSG_NOSIGNAL);
        if (w <= 0)
            abort(); /* more than the socket holds: scripts/fuzz.sh's -max_len is below it */
        off += (size_t)w;
    }
    if (size) { /* the last byte with a descriptor, as socket.send_fds sends the go line's */
        int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        union {
            struct cmsghdr align;
            char space[CMSG_SPACE(sizeof(int))];
        } control;
        struct iovec iov = {.iov_base = (void *)(data + head), .iov_len = 1};
        struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.space,
                             .msg_controllen = sizeof control.space};
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof fd);
        if (fd < 0 || sendmsg(pair[0], &msg, MSG_NOSIGNAL) != 1)
            abort();
        close(fd);
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
    if (page_fd >= 0) { /* heard (whole lines before it leave it unread): not leaked */
        close(page_fd);
        page_fd = -1;
    }
    return 0;
}
