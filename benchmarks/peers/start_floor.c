/* Peer for bench_sync.py: the floor of synchronized starts on this machine.
 *
 * N processes, each pinned to the cpus given for it (exactly the affinity manybench gives
 * the slot it stands for; "-" = not pinned), sleep (absolute CLOCK_REALTIME, timer slack
 * 1 ns as slots set it) until T0 - spin, spin to T0 when its spin > 0 (a slot spins only on
 * a core of its own), then stamp start and end around nothing, as a null task does: no
 * Python, no pipes, no scheduling of T0. T0 of round r is a common base + r * GAP_NS.
 * Prints one line per round: "skew_ns overhead_ns": max start - min start, and max end -
 * min start (the sync overhead of that round, as manybench defines it for a null phase).
 * usage: start_floor ROUNDS GAP_NS CPULIST:SPIN_NS [CPULIST:SPIN_NS ...]  (one per process)
 *        CPULIST as taskset -c takes it without ranges: "3" or "0,2"; "-" for any cpu */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* "0,2:300000" -> the cpu set (empty = any) and the spin; 0 when well formed */
static int parse_place(const char *arg, cpu_set_t *set, int *pinned, long long *spin)
{
    const char *colon = strchr(arg, ':');
    if (!colon)
        return -1;
    *spin = atoll(colon + 1);
    CPU_ZERO(set);
    *pinned = 0;
    if (arg[0] == '-')
        return 0;
    for (const char *p = arg; p < colon;) {
        char *end;
        long cpu = strtol(p, &end, 10);
        if (end == p || cpu < 0 || cpu >= CPU_SETSIZE)
            return -1;
        CPU_SET((int)cpu, set);
        *pinned = 1;
        p = (*end == ',') ? end + 1 : end;
        if (end != colon && *end != ',')
            return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: start_floor ROUNDS GAP_NS CPULIST:SPIN_NS ...\n");
        return 2;
    }
    int rounds = atoi(argv[1]), n = argc - 3;
    long long gap = atoll(argv[2]);
    /* per round and process: start, end */
    long long *st = mmap(0, 2 * sizeof(long long) * (size_t)rounds * (size_t)n,
                         PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (st == MAP_FAILED)
        return 1;
    long long base = now() + 100000000LL; /* a lead long enough to fork them all */
    for (int i = 0; i < n; i++) {
        cpu_set_t set;
        int pinned;
        long long spin;
        if (parse_place(argv[3 + i], &set, &pinned, &spin) != 0) {
            fprintf(stderr, "start_floor: bad CPULIST:SPIN_NS %s\n", argv[3 + i]);
            return 2;
        }
        if (fork() == 0) {
            if (pinned && sched_setaffinity(0, sizeof set, &set) != 0) {
                perror("sched_setaffinity");
                _exit(1);
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
    int status, failed = 0;
    while (wait(&status) > 0)
        failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    if (failed)
        return 1;
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
