/* Peer for bench_sync.py: the floor of synchronized starts on this machine.
 *
 * N processes, each pinned to the cpu given for it (as manybench pins its slots; -1 = any),
 * sleep (absolute CLOCK_REALTIME) until T0 - spin, spin to T0 when spin > 0, then stamp start
 * and end around nothing, as a null task does: no Python, no pipes, no scheduling of T0.
 * Prints one line per round: "skew_ns overhead_ns" (max start - min start, and max end - min
 * start: the sync overhead of that round).
 * usage: start_floor ROUNDS SPIN_NS GAP_NS CPU [CPU ...]   (one CPU per process) */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc < 5)
        return 2;
    int rounds = atoi(argv[1]), n = argc - 4;
    long long spin = atoll(argv[2]), gap = atoll(argv[3]);
    /* per round and process: start, end */
    long long *st = mmap(0, 2 * sizeof(long long) * (size_t)rounds * (size_t)n,
                         PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (st == MAP_FAILED)
        return 1;
    long long base = now() + 100000000LL;
    for (int i = 0; i < n; i++) {
        if (fork() == 0) {
            int cpu = atoi(argv[4 + i]);
            if (cpu >= 0) {
                cpu_set_t s;
                CPU_ZERO(&s);
                CPU_SET(cpu, &s);
                sched_setaffinity(0, sizeof s, &s);
            }
            prctl(PR_SET_TIMERSLACK, 1);
            for (int r = 0; r < rounds; r++) {
                long long t0 = base + r * gap, w = t0 - spin, a;
                struct timespec ts = {w / 1000000000LL, w % 1000000000LL};
                clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, 0);
                while ((a = now()) < t0)
                    ;
                long long *slot = st + 2 * ((size_t)r * n + i);
                slot[0] = a;
                slot[1] = now();
            }
            _exit(0);
        }
    }
    while (wait(0) > 0)
        ;
    for (int r = 0; r < rounds; r++) {
        long long lo = -1, hi = 0, end = 0;
        for (int i = 0; i < n; i++) {
            long long *slot = st + 2 * ((size_t)r * n + i);
            if (lo < 0 || slot[0] < lo)
                lo = slot[0];
            if (slot[0] > hi)
                hi = slot[0];
            if (slot[1] > end)
                end = slot[1];
        }
        printf("%lld %lld\n", hi - lo, end - lo);
    }
    return 0;
}
