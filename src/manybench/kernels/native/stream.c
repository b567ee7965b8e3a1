/* mem.stream: McCalpin's STREAM (v5.10) as a slot kernel.
 *
 * Same loops as STREAM: Copy c = a, Scale b = s*c, Add c = a + b, Triad a = b + s*c with
 * s = 3.0, each timed on its own, NTIMES iterations of the four in a row. The arrays are
 * allocated and first-touched before the wait by the threads that will run the loops (STREAM's
 * parallel initialisation: pages land on those threads' NUMA nodes), with the same static
 * schedule as the loops. With one thread nothing here enters OpenMP. The timed window is the
 * NTIMES iterations; the check of the results (checkSTREAMresults) comes after the end stamp.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "clones.h"
#include "nb_omp.h"
#include "stream.h"

#define SCALAR 3.0
#define EPSILON 1.e-13 /* checkSTREAMresults' bound for 8-byte elements */
#define ARRAY_ALIGN 64

/* ---- the four kernels: one thread, plain loops ---- */

/* noinline: one call per run; the loops stay a function of their own, so benchmarks/ can
 * set their compiled code beside the reference's (work.loops). NB_CLONES: compiled for
 * several targets, this cpu's picked at load time (clones.h) */
NB_CLONES __attribute__((noinline)) static void loops_serial(nb_stream *s, int ntimes, int64_t *times, int64_t *t)
{
    double *restrict a = __builtin_assume_aligned(s->a, ARRAY_ALIGN);
    double *restrict b = __builtin_assume_aligned(s->b, ARRAY_ALIGN);
    double *restrict c = __builtin_assume_aligned(s->c, ARRAY_ALIGN);
    const size_t n = (size_t)s->n;
    const double scalar = SCALAR;
    const uint64_t w = sizeof(double) * n; /* bytes of one array */
    uint64_t done = 0;                     /* progress: bytes moved so far, as r->bytes counts */
    int64_t t1;
    for (int k = 0; k < ntimes; k++) {
        for (size_t j = 0; j < n; j++)
            c[j] = a[j];
        t1 = nb_mono(), times[0 * ntimes + k] = t1 - *t, *t = t1; NB_PROGRESS(done += 2 * w);
        for (size_t j = 0; j < n; j++)
            b[j] = scalar * c[j];
        t1 = nb_mono(), times[1 * ntimes + k] = t1 - *t, *t = t1; NB_PROGRESS(done += 2 * w);
        for (size_t j = 0; j < n; j++)
            c[j] = a[j] + b[j];
        t1 = nb_mono(), times[2 * ntimes + k] = t1 - *t, *t = t1; NB_PROGRESS(done += 3 * w);
        for (size_t j = 0; j < n; j++)
            a[j] = b[j] + scalar * c[j];
        t1 = nb_mono(), times[3 * ntimes + k] = t1 - *t, *t = t1; NB_PROGRESS(done += 3 * w);
    }
}

/* ---- the same with `#pragma omp parallel for` on each, as STREAM under OpenMP ---- */

NB_CLONES __attribute__((noinline)) static void loops_omp(nb_stream *s, int ntimes, int64_t *times, int64_t *t)
{
    double *restrict a = __builtin_assume_aligned(s->a, ARRAY_ALIGN);
    double *restrict b = __builtin_assume_aligned(s->b, ARRAY_ALIGN);
    double *restrict c = __builtin_assume_aligned(s->c, ARRAY_ALIGN);
    const size_t n = (size_t)s->n;
    const double scalar = SCALAR;
    const uint64_t w = sizeof(double) * n; /* bytes of one array */
    uint64_t done = 0;                     /* progress: bytes moved so far, as r->bytes counts */
    int64_t t1;
    for (int k = 0; k < ntimes; k++) {
#pragma omp parallel for schedule(static)
        for (size_t j = 0; j < n; j++)
            c[j] = a[j];
        t1 = nb_mono(), times[0 * ntimes + k] = t1 - *t, *t = t1; NB_PROGRESS(done += 2 * w);
#pragma omp parallel for schedule(static)
        for (size_t j = 0; j < n; j++)
            b[j] = scalar * c[j];
        t1 = nb_mono(), times[1 * ntimes + k] = t1 - *t, *t = t1; NB_PROGRESS(done += 2 * w);
#pragma omp parallel for schedule(static)
        for (size_t j = 0; j < n; j++)
            c[j] = a[j] + b[j];
        t1 = nb_mono(), times[2 * ntimes + k] = t1 - *t, *t = t1; NB_PROGRESS(done += 3 * w);
#pragma omp parallel for schedule(static)
        for (size_t j = 0; j < n; j++)
            a[j] = b[j] + scalar * c[j];
        t1 = nb_mono(), times[3 * ntimes + k] = t1 - *t, *t = t1; NB_PROGRESS(done += 3 * w);
    }
}

/* ---- initialisation and check, with the loops' threads and schedule ---- */

/* a = 1, b = 2, c = 0, then a = 2a (STREAM's timer-granularity pass, which its check
 * accounts for): the first touch of every page, by the thread that will use it. */
static void init_arrays(nb_stream *s)
{
    double *restrict a = s->a, *restrict b = s->b, *restrict c = s->c;
    const size_t n = (size_t)s->n;
    if (s->threads > 1) {
#pragma omp parallel for schedule(static)
        for (size_t j = 0; j < n; j++) {
            a[j] = 1.0;
            b[j] = 2.0;
            c[j] = 0.0;
        }
#pragma omp parallel for schedule(static)
        for (size_t j = 0; j < n; j++)
            a[j] = 2.0E0 * a[j];
    } else {
        for (size_t j = 0; j < n; j++) {
            a[j] = 1.0;
            b[j] = 2.0;
            c[j] = 0.0;
        }
        for (size_t j = 0; j < n; j++)
            a[j] = 2.0E0 * a[j];
    }
    s->dirty = 0;
}

static double sum_err(const double *x, double expect, size_t n, int threads)
{
    double sum = 0.0;
    if (threads > 1) {
#pragma omp parallel for schedule(static) reduction(+ : sum)
        for (size_t j = 0; j < n; j++)
            sum += fabs(x[j] - expect);
    } else {
        for (size_t j = 0; j < n; j++)
            sum += fabs(x[j] - expect);
    }
    return sum;
}

/* checkSTREAMresults: replay the iterations on scalars, compare the average absolute error
 * of each array, relative to the expected value, with epsilon. */
static void check_results(nb_stream *s, int ntimes, nb_result *r)
{
    double aj = 1.0, bj = 2.0, cj = 0.0;
    const double scalar = SCALAR;
    aj = 2.0E0 * aj;
    for (int k = 0; k < ntimes; k++) {
        cj = aj;
        bj = scalar * cj;
        cj = aj + bj;
        aj = bj + scalar * cj;
    }
    const size_t n = (size_t)s->n;
    const double *arr[3] = {s->a, s->b, s->c};
    const double expect[3] = {aj, bj, cj};
    for (int i = 0; i < 3; i++) {
        double avg = sum_err(arr[i], expect[i], n, s->threads) / (double)n;
        if (!(fabs(avg / expect[i]) <= EPSILON)) { /* also catches NaN */
            size_t bad = 0, first = n;
            for (size_t j = 0; j < n; j++)
                if (!(fabs(arr[i][j] / expect[i] - 1.0) <= EPSILON)) {
                    if (first == n)
                        first = j;
                    bad++;
                }
            nb_set_error(r, EDOM,
                         "failed validation on array %c[]: AvgRelAbsErr %e > epsilon %e; "
                         "expected %e, %zu of %zu elements wrong, first %c[%zu] = %e",
                         "abc"[i], fabs(avg / expect[i]), EPSILON, expect[i], bad, n, "abc"[i],
                         first < n ? first : 0, first < n ? arr[i][first] : arr[i][0]);
            return;
        }
    }
}

/* ---- the family's calls ---- */

int nb_stream_new(uint64_t n, int threads, nb_stream **out, char *msg, size_t msglen)
{
    *out = NULL;
    if (n == 0 || threads < 1)
        return nb_fail_msg(msg, msglen, EINVAL, "mem.stream: elements and threads must be > 0");
    if (n > SIZE_MAX / sizeof(double))
        return nb_fail_msg(msg, msglen, ENOMEM, "mem.stream: %llu elements per array",
                           (unsigned long long)n);
    nb_stream *s = calloc(1, sizeof *s);
    if (!s)
        return nb_fail_msg(msg, msglen, ENOMEM, "mem.stream: allocating its state");
    s->n = n;
    s->threads = threads;
    /* One block, the arrays back to back, as stream.c's static a, b, c lie: each one array
     * (rounded up to the compiler's 64-byte alignment) after the other. Their offsets within a
     * page follow from n as in stream.c (n = 20,000,000: b half a page off a and c), where
     * three allocations of their own all start at one page offset: Triad measured 1.09-1.11x
     * stream.c's in those, 1.00 in this layout (docs/fidelity.md). */
    size_t stride = ((size_t)n * sizeof(double) + ARRAY_ALIGN - 1) / ARRAY_ALIGN * ARRAY_ALIGN;
    if (stride > SIZE_MAX / 3) {
        free(s);
        return nb_fail_msg(msg, msglen, ENOMEM, "mem.stream: %llu elements per array",
                           (unsigned long long)n);
    }
    void *p = NULL;
    int rc = posix_memalign(&p, ARRAY_ALIGN, 3 * stride);
    if (rc) {
        free(s);
        return nb_fail_msg(msg, msglen, rc, "mem.stream: allocating 3 arrays of %zu bytes",
                           (size_t)n * sizeof(double));
    }
    s->a = p;
    s->b = (double *)((char *)p + stride);
    s->c = (double *)((char *)p + 2 * stride);
    if (threads > 1)
        nb_omp_follow(threads);
    init_arrays(s);
    *out = s;
    return 0;
}

int nb_stream_run(nb_stream *s, int ntimes, int64_t *times_ns, int64_t t0_ns, int64_t spin_ns,
                  nb_result *r)
{
    if (!s->a)
        nb_set_error(r, EINVAL, "mem.stream: the arrays were already released");
    else if (ntimes < 1)
        nb_set_error(r, EINVAL, "mem.stream: ntimes must be at least 1");
    if (r->err)
        return r->err;
    if (s->threads > 1)
        nb_omp_follow(s->threads); /* the pool follows the slot's affinity of this phase */
    if (s->dirty)
        init_arrays(s); /* a second run on the same arrays starts from STREAM's values again */
    memset(times_ns, 0, sizeof *times_ns * NB_STREAM_KERNELS * (size_t)ntimes);
    s->dirty = 1;
    int64_t start = nb_begin(r, t0_ns, spin_ns), t = start;
    if (s->threads > 1)
        loops_omp(s, ntimes, times_ns, &t);
    else
        loops_serial(s, ntimes, times_ns, &t);
    nb_end(r, start, t);
    r->ops = (uint64_t)ntimes * NB_STREAM_KERNELS;
    r->bytes = (uint64_t)ntimes * (2 + 2 + 3 + 3) * sizeof(double) * s->n;
    check_results(s, ntimes, r);
    return r->err;
}

void nb_stream_release(nb_stream *s)
{
    free(s->a); /* the one block: b and c lie inside it */
    s->a = s->b = s->c = NULL;
}
