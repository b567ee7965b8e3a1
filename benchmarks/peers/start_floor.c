/* Peer for bench_sync.py: the floor of synchronized starts on this machine.
 * Two processes pinned to cpus 0 and 1 sleep (absolute CLOCK_REALTIME) until T0 - spin, spin
 * to T0 and stamp; no Python, no pipes, no scheduling of T0. Prints one skew (ns) per round.
 * usage: start_floor ROUNDS SPIN_NS GAP_NS */
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
    if (argc != 4)
        return 2;
    int rounds = atoi(argv[1]);
    long long spin = atoll(argv[2]), gap = atoll(argv[3]);
    long long *st = mmap(0, 16 * (size_t)rounds, PROT_READ | PROT_WRITE,
                         MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    long long base = now() + 50000000LL;
    int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
    for (int i = 0; i < 2; i++) {
        if (fork() == 0) {
            cpu_set_t s;
            CPU_ZERO(&s);
            CPU_SET(i % ncpu, &s);
            sched_setaffinity(0, sizeof s, &s);
            prctl(PR_SET_TIMERSLACK, 1);
            for (int r = 0; r < rounds; r++) {
                long long t0 = base + r * gap, w = t0 - spin, n;
                struct timespec ts = {w / 1000000000LL, w % 1000000000LL};
                clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, 0);
                while ((n = now()) < t0)
                    ;
                st[2 * r + i] = n;
            }
            _exit(0);
        }
    }
    while (wait(0) > 0)
        ;
    for (int r = 0; r < rounds; r++)
        printf("%lld\n", llabs(st[2 * r] - st[2 * r + 1]));
    return 0;
}
