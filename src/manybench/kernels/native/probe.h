/* Measurements of the node itself, not benchmarks: its noise floor (probe.c, as cyclictest
 * and sysjitter measure it) and one core's clock and FMA throughput (for peaks the CPU's
 * model does not tell). Plain C: no Python here (bind_probe.c is the binding). */
#ifndef MANYBENCH_PROBE_H
#define MANYBENCH_PROBE_H

#include <stdint.h>

/* Gap thresholds of the spin part: a clock read this long after the previous one means the
 * core did something else meanwhile (an interrupt, another task, the hypervisor). */
#define NB_NOISE_GAPS 3
static const int64_t nb_noise_gap_ns[NB_NOISE_GAPS] = {10000, 100000, 1000000};

typedef struct {
    int cpu;                 /* pin the measuring thread here; -1 leaves its affinity alone */
    int64_t spin_ns;         /* how long to spin reading CLOCK_MONOTONIC */
    int64_t sleep_ns;        /* how long to take absolute sleeps of interval_ns */
    int64_t interval_ns;
    /* results */
    uint64_t reads;                 /* clock reads while spinning */
    uint64_t gaps[NB_NOISE_GAPS];   /* gaps between reads >= 10 us, 100 us, 1 ms */
    int64_t gap_max_ns;             /* the longest gap */
    int64_t lost_ns;                /* time inside gaps >= 10 us: the core was elsewhere */
    uint64_t wakes;                 /* absolute sleeps taken */
    uint64_t wakes_late;            /* woke >= 100 us after the target */
    int64_t wake_p50_ns, wake_p99_ns, wake_max_ns;   /* lateness of the wake-ups */
    int err;                        /* errno of pinning (0 = pinned as asked) */
} nb_noise;

/* Measure one cpu in the calling thread (pins it, sets its timer slack to 1 ns). */
void nb_noise_measure(nb_noise *n);
/* Measure several cpus at once, one thread each; 0 or an errno (thread creation). */
int nb_noise_many(nb_noise *n, int count);

/* Clock of one busy core: dependent integer adds (one per cycle on every core this targets)
 * over about `ns`; best of `trials`. 0 when the architecture has no such loop here. */
double nb_probe_clock_ghz(int64_t ns, int trials);

/* Double-precision FMA throughput of one core at each vector width the CPU offers, best of
 * `trials` runs of about `ns` each: flops per ns at 64, 128, 256, 512 bits (0 = not
 * available on this CPU or build). */
void nb_probe_fma(int64_t ns, int trials, double gflops[4]);

#endif
