/* The node's noise floor and one core's clock and FMA throughput (probe.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "native.h"
#include "probe.h"

/* ---- noise floor ---------------------------------------------------------------------- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Spin reading the clock: every gap between two reads is time the core spent elsewhere
 * (sysjitter, hwlatdetect). lost_ns counts what of a gap falls inside the spin's window,
 * so it is a share of spin_ns: a stall across the window's end counts to the end. */
static void spin_part(nb_noise *n)
{
    int64_t start = nb_mono(), prev = start, end = start + n->spin_ns;
    while (prev < end) {
        int64_t now = nb_mono();
        int64_t gap = now - prev;
        n->reads++;
        if (gap >= nb_noise_gap_ns[0]) {
            n->lost_ns += (now < end ? now : end) - prev;
            for (int k = 0; k < NB_NOISE_GAPS; k++)
                if (gap >= nb_noise_gap_ns[k])
                    n->gaps[k]++;
            if (gap > n->gap_max_ns)
                n->gap_max_ns = gap;
        }
        prev = now;
    }
}

/* Absolute sleeps of interval_ns, as a slot sleeps until T0 (cyclictest's measurement):
 * the lateness of each wake-up. */
static void sleep_part(nb_noise *n)
{
    if (n->interval_ns <= 0 || n->sleep_ns <= 0)
        return;
    size_t cap = (size_t)(n->sleep_ns / n->interval_ns) + 2;
    int64_t *late = malloc(cap * sizeof *late);
    if (!late)
        return;
    int64_t end = nb_mono() + n->sleep_ns, next = nb_mono() + n->interval_ns;
    size_t k = 0;
    while (k < cap && next <= end) {
        struct timespec ts = {.tv_sec = next / 1000000000LL, .tv_nsec = next % 1000000000LL};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ;
        int64_t now = nb_mono();
        late[k++] = now - next;
        /* a wake-up later than a period does not make the next ones catch up in a burst */
        next = now - next >= n->interval_ns ? now + n->interval_ns : next + n->interval_ns;
    }
    n->wakes = k;
    if (k) {
        qsort(late, k, sizeof *late, cmp_i64);
        n->wake_p50_ns = late[(k - 1) / 2];
        n->wake_p99_ns = late[(size_t)((double)(k - 1) * 0.99 + 0.5)];
        n->wake_max_ns = late[k - 1];
        for (size_t i = 0; i < k; i++)
            n->wakes_late += late[i] >= 100000;
    }
    free(late);
}

void nb_noise_measure(nb_noise *n)
{
    if (n->cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(n->cpu, &set);
        n->err = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    }
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0); /* as slots: no 50 us rounding of the sleeps */
    spin_part(n);
    sleep_part(n);
}

static void *noise_thread(void *arg)
{
    nb_noise_measure(arg);
    return NULL;
}

int nb_noise_many(nb_noise *n, int count)
{
    pthread_t *t = calloc((size_t)count, sizeof *t);
    if (!t)
        return ENOMEM;
    int started = 0, err = 0;
    for (; started < count; started++) {
        err = pthread_create(&t[started], NULL, noise_thread, &n[started]);
        if (err)
            break;
    }
    for (int i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    free(t);
    return err;
}

/* ---- one core's clock ------------------------------------------------------------------ */

double nb_probe_clock_ghz(int64_t ns, int trials)
{
#if defined(__x86_64__) || defined(__aarch64__)
    double best = 0;
    volatile uint64_t one = 1;
    uint64_t y = one, x = 0;
    for (int t = 0; t < trials; t++) {
        uint64_t iters = 0;
        int64_t start = nb_mono(), now = start;
        while (now - start < ns) {
            for (int i = 0; i < 10000; i++) {
                /* 20 register-to-register adds, each needing the last: one cycle each on
                 * every core (an add of an immediate may be folded away by some renamers) */
#if defined(__x86_64__)
#define ADD5 "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
#else
#define ADD5 "add %0, %0, %1\n\tadd %0, %0, %1\n\tadd %0, %0, %1\n\tadd %0, %0, %1\n\t" \
             "add %0, %0, %1\n\t"
#endif
                __asm__ volatile(ADD5 ADD5 ADD5 ADD5 : "+r"(x) : "r"(y));
#undef ADD5
            }
            iters += 10000;
            now = nb_mono();
        }
        double ghz = (double)iters * 20.0 / (double)(now - start);
        if (ghz > best)
            best = ghz;
    }
    return best;
#else
    (void)ns;
    (void)trials;
    return 0;
#endif
}

/* ---- one core's FMA throughput ---------------------------------------------------------- */

/* Each loop keeps enough independent chains (accumulators) to cover the FMA latency on
 * every pipe (4 cycles x 2 pipes needs 8), converging to a fixed point: no overflow, no
 * denormals. Returns flops done; *sink keeps the work alive. */
#if defined(__x86_64__)
#include <immintrin.h>

#define FMA_BODY(T, SET1, FMA, ADD, N)                                                     \
    T a[N];                                                                                \
    T m = SET1(mul), c = SET1(add);                                                        \
    for (int k = 0; k < N; k++)                                                            \
        a[k] = SET1(1.0 + k * 1e-3);                                                       \
    for (uint64_t i = 0; i < iters; i++)                                                   \
        for (int k = 0; k < N; k++)                                                        \
            a[k] = FMA(a[k], m, c);                                                        \
    T s = a[0];                                                                            \
    for (int k = 1; k < N; k++)                                                            \
        s = ADD(s, a[k]);                                                                  \
    double out[sizeof(T) / sizeof(double)];                                                \
    memcpy(out, &s, sizeof s);                                                             \
    *sink += out[0];                                                                       \
    return iters * N * (sizeof(T) / sizeof(double)) * 2;

__attribute__((target("avx512f"))) static uint64_t fma512(uint64_t iters, double mul,
                                                          double add, double *sink)
{
    FMA_BODY(__m512d, _mm512_set1_pd, _mm512_fmadd_pd, _mm512_add_pd, 16)
}

__attribute__((target("avx2,fma"))) static uint64_t fma256(uint64_t iters, double mul,
                                                           double add, double *sink)
{
    FMA_BODY(__m256d, _mm256_set1_pd, _mm256_fmadd_pd, _mm256_add_pd, 12)
}

__attribute__((target("fma"))) static uint64_t fma128(uint64_t iters, double mul, double add,
                                                      double *sink)
{
    FMA_BODY(__m128d, _mm_set1_pd, _mm_fmadd_pd, _mm_add_pd, 12)
}
#undef FMA_BODY
#endif

volatile double probe_sink;

typedef uint64_t (*fma_fn)(uint64_t, double, double, double *);

static double best_rate(fma_fn f, int64_t ns, int trials)
{
    volatile double mul = 0.999999, add = 1e-6; /* unknown to the compiler: no folding */
    double sink = 0, best = 0;
    for (int t = 0; t < trials; t++) {
        uint64_t flops = 0;
        int64_t start = nb_mono(), now = start;
        while (now - start < ns) {
            flops += f(20000, mul, add, &sink);
            now = nb_mono();
        }
        double rate = (double)flops / (double)(now - start);
        if (rate > best)
            best = rate;
    }
    probe_sink = sink; /* the work is observable: not optimised away */
    return best;
}

void nb_probe_fma(int64_t ns, int trials, double gflops[4])
{
    memset(gflops, 0, 4 * sizeof *gflops);
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("fma"))
        gflops[1] = best_rate(fma128, ns, trials);
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        gflops[2] = best_rate(fma256, ns, trials);
    if (__builtin_cpu_supports("avx512f"))
        gflops[3] = best_rate(fma512, ns, trials);
#else
    (void)ns;
    (void)trials;
#endif
}
