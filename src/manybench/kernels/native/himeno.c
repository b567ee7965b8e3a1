/* cpu.himeno: himenoBMTxp's Jacobi iterations as a slot kernel.
 *
 * Same data, loops and arithmetic as himenoBMTxp.c (single precision, omega 0.8, 34 flops
 * per interior point): initmt, then per iteration the 19-point stencil over the interior
 * i = 1..imax-2, j = 1..jmax-2, k = 1..kmax-2 into wrk2 with gosa += ss*ss, then p = wrk2.
 * The grids sit one after another in one block in himeno's declaration order (p, a[4], b[3],
 * c[3], bnd, wrk1, wrk2), as its static arrays do. With threads > 1 the i loops are shared
 * by OpenMP (static schedule, gosa a reduction), as the usual OpenMP ports do, and initmt is
 * done by the same threads (first touch); with one thread nothing enters OpenMP.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "clones.h"
#include "himeno.h"
#include "nb_omp.h"

#define GRIDS 14 /* p, a[4], b[3], c[3], bnd, wrk1, wrk2 */

/* Offset of point (i, j, k) in a grid. */
#define IDX(h, i, j, k) \
    (((size_t)(i) * (size_t)(h)->mjmax + (size_t)(j)) * (size_t)(h)->mkmax + (size_t)(k))

/* One row (i, j) of the stencil over k = 1..kmax-2, continuing the running sum gosa. Every
 * pointer is at (i, j, 0) of its grid; p's neighbours are at +-si (i) and +-sj (j). The
 * pointers are restrict parameters so the compiler knows wrk2 aliases none of the reads, as
 * it knows for himeno's distinct static arrays (GCC does not apply restrict to locals). */
static inline float row(int kmax, float omega, float gosa, ptrdiff_t si, ptrdiff_t sj,
                        const float *restrict p, const float *restrict a0,
                        const float *restrict a1, const float *restrict a2,
                        const float *restrict a3, const float *restrict b0,
                        const float *restrict b1, const float *restrict b2,
                        const float *restrict c0, const float *restrict c1,
                        const float *restrict c2, const float *restrict bnd,
                        const float *restrict wrk1, float *restrict wrk2)
{
    for (int k = 1; k < kmax - 1; k++) {
        float s0 = a0[k] * p[k + si]
                 + a1[k] * p[k + sj]
                 + a2[k] * p[k + 1]
                 + b0[k] * (p[k + si + sj] - p[k + si - sj]
                            - p[k - si + sj] + p[k - si - sj])
                 + b1[k] * (p[k + sj + 1] - p[k - sj + 1]
                            - p[k + sj - 1] + p[k - sj - 1])
                 + b2[k] * (p[k + si + 1] - p[k - si + 1]
                            - p[k + si - 1] + p[k - si - 1])
                 + c0[k] * p[k - si]
                 + c1[k] * p[k - sj]
                 + c2[k] * p[k - 1]
                 + wrk1[k];
        float ss = (s0 * a3[k] - p[k]) * bnd[k];
        gosa += ss * ss;
        wrk2[k] = p[k] + omega * ss;
    }
    return gosa;
}

/* One i-plane of the stencil, continuing the running sum gosa (so one thread sums in
 * himeno's own i, j, k order). */
static inline float plane(const nb_himeno *h, int i, float omega, float gosa)
{
    const size_t g = h->grid;
    const ptrdiff_t si = (ptrdiff_t)h->mjmax * h->mkmax, sj = h->mkmax; /* signed: p[k - si] */
    const int jmax = h->jmax, kmax = h->kmax;
    for (int j = 1; j < jmax - 1; j++) {
        const size_t o = IDX(h, i, j, 0);
        const float *a = h->a + o, *b = h->b + o, *c = h->c + o;
        gosa = row(kmax, omega, gosa, si, sj, h->p + o, a, a + g, a + 2 * g, a + 3 * g, b,
                   b + g, b + 2 * g, c, c + g, c + 2 * g, h->bnd + o, h->wrk1 + o, h->wrk2 + o);
    }
    return gosa;
}

static inline void copy_row(int kmax, float *restrict p, const float *restrict w)
{
    for (int k = 1; k < kmax - 1; k++)
        p[k] = w[k];
}

/* p = wrk2 over the interior of plane i. */
static inline void copy_back(const nb_himeno *h, int i)
{
    for (int j = 1; j < h->jmax - 1; j++) {
        const size_t o = IDX(h, i, j, 0);
        copy_row(h->kmax, h->p + o, h->wrk2 + o);
    }
}

/* nn iterations; *first = the first iteration's gosa. Returns the last one's. */
/* noinline: one call per run; benchmarks/ sets its compiled code beside himenoBMTxp's.
 * NB_CLONES: compiled for several targets, this cpu's picked at load time (clones.h) */
NB_CLONES __attribute__((noinline)) static float jacobi(nb_himeno *h, int nn, float *first)
{
    const int imax = h->imax;
    const float omega = h->omega;
    float gosa = 0.0f;
    *first = 0.0f;
    if (h->threads <= 1) {
        for (int n = 0; n < nn; n++) {
            gosa = 0.0f;
            for (int i = 1; i < imax - 1; i++)
                gosa = plane(h, i, omega, gosa);
            for (int i = 1; i < imax - 1; i++)
                copy_back(h, i);
            if (n == 0)
                *first = gosa;
            NB_PROGRESS(n + 1);
        }
        return gosa;
    }
    float g1 = 0.0f;
#pragma omp parallel
    for (int n = 0; n < nn; n++) {
#pragma omp single
        {
            if (n == 1)
                g1 = gosa; /* every thread is past the previous iteration's barriers */
            gosa = 0.0f;
            NB_PROGRESS(n); /* iterations done */
        }
#pragma omp for schedule(static) reduction(+ : gosa)
        for (int i = 1; i < imax - 1; i++)
            gosa = plane(h, i, omega, gosa);
#pragma omp for schedule(static)
        for (int i = 1; i < imax - 1; i++)
            copy_back(h, i);
    }
    *first = nn == 1 ? gosa : g1;
    return gosa;
}

/* initmt's values of p on plane i (0 outside 0..imax-1). */
static void init_p(nb_himeno *h, int i)
{
    const float d = (float)((h->imax - 1) * (h->imax - 1));
    for (int j = 0; j < h->mjmax; j++)
        for (int k = 0; k < h->mkmax; k++)
            h->p[IDX(h, i, j, k)] =
                (i < h->imax && j < h->jmax && k < h->kmax) ? (float)(i * i) / d : 0.0f;
}

/* initmt, plane by plane: zeros everywhere, then the values inside 0..imax-1 etc. */
static void initmt_plane(nb_himeno *h, int i)
{
    const size_t g = h->grid;
    for (int j = 0; j < h->mjmax; j++)
        for (int k = 0; k < h->mkmax; k++) {
            const size_t o = IDX(h, i, j, k);
            const int in = i < h->imax && j < h->jmax && k < h->kmax;
            h->a[o] = h->a[o + g] = h->a[o + 2 * g] = in ? 1.0f : 0.0f;
            h->a[o + 3 * g] = in ? (float)(1.0 / 6.0) : 0.0f;
            h->b[o] = h->b[o + g] = h->b[o + 2 * g] = 0.0f;
            h->c[o] = h->c[o + g] = h->c[o + 2 * g] = in ? 1.0f : 0.0f;
            h->wrk1[o] = 0.0f;
            h->wrk2[o] = 0.0f; /* not in initmt (static arrays start at 0): same thing */
            h->bnd[o] = in ? 1.0f : 0.0f;
        }
    init_p(h, i);
}

int nb_himeno_new(int mimax, int mjmax, int mkmax, int threads, nb_himeno **out, char *msg,
                  size_t msglen)
{
    *out = NULL;
    if (mimax < 4 || mjmax < 4 || mkmax < 4 || threads < 1)
        return nb_fail_msg(msg, msglen, EINVAL,
                           "cpu.himeno: every grid dimension must be at least 4 (got %dx%dx%d)"
                           " and threads at least 1", mimax, mjmax, mkmax);
    size_t grid = (size_t)mimax * (size_t)mjmax;
    if (grid > SIZE_MAX / (size_t)mkmax || grid * (size_t)mkmax > SIZE_MAX / GRIDS / 4)
        return nb_fail_msg(msg, msglen, ENOMEM, "cpu.himeno: grid %dx%dx%d is too large",
                           mimax, mjmax, mkmax);
    grid *= (size_t)mkmax;
    nb_himeno *h = calloc(1, sizeof *h);
    if (!h)
        return nb_fail_msg(msg, msglen, ENOMEM, "cpu.himeno: allocating its state");
    void *mem = NULL;
    int rc = posix_memalign(&mem, 64, grid * GRIDS * sizeof(float));
    if (rc) {
        free(h);
        return nb_fail_msg(msg, msglen, rc, "cpu.himeno: allocating %zu bytes for a %dx%dx%d "
                           "grid", grid * GRIDS * sizeof(float), mimax, mjmax, mkmax);
    }
    *h = (nb_himeno){.mimax = mimax, .mjmax = mjmax, .mkmax = mkmax, .imax = mimax - 1,
                     .jmax = mjmax - 1, .kmax = mkmax - 1, .threads = threads, .omega = 0.8f,
                     .mem = mem, .grid = grid};
    h->p = h->mem;
    h->a = h->p + grid;
    h->b = h->a + 4 * grid;
    h->c = h->b + 3 * grid;
    h->bnd = h->c + 3 * grid;
    h->wrk1 = h->bnd + grid;
    h->wrk2 = h->wrk1 + grid;
    if (threads > 1) {
        nb_omp_follow(threads);
#pragma omp parallel for schedule(static)
        for (int i = 0; i < mimax; i++)
            initmt_plane(h, i);
    } else {
        for (int i = 0; i < mimax; i++)
            initmt_plane(h, i);
    }
    *out = h;
    return 0;
}

float nb_himeno_jacobi(nb_himeno *h, int nn)
{
    float first;
    if (!h->mem || nn < 1)
        return 0.0f;
    if (h->threads > 1)
        nb_omp_follow(h->threads);
    return jacobi(h, nn, &first);
}

void nb_himeno_reset(nb_himeno *h)
{
    if (!h->mem)
        return;
    if (h->threads > 1) {
        nb_omp_follow(h->threads);
#pragma omp parallel for schedule(static)
        for (int i = 0; i < h->mimax; i++)
            init_p(h, i);
    } else {
        for (int i = 0; i < h->mimax; i++)
            init_p(h, i);
    }
}

int nb_himeno_run(nb_himeno *h, int nn, int64_t t0_ns, int64_t spin_ns, float *gosa,
                  float *gosa1, nb_result *r)
{
    *gosa = *gosa1 = 0.0f;
    if (!h->mem)
        nb_set_error(r, EINVAL, "cpu.himeno: the grids were already released");
    else if (nn < 1)
        nb_set_error(r, EINVAL, "cpu.himeno: iterations must be at least 1");
    if (r->err)
        return r->err;
    if (h->threads > 1)
        nb_omp_follow(h->threads); /* the pool follows the slot's affinity of this phase */
    int64_t start = nb_begin(r, t0_ns, spin_ns);
    *gosa = jacobi(h, nn, gosa1);
    nb_end(r, start, nb_mono());
    r->ops = (uint64_t)nn;
    if (!isfinite(*gosa))
        nb_set_error(r, EDOM, "cpu.himeno: gosa is %g after %d iterations (not finite)",
                     (double)*gosa, nn);
    else if (nn > 1 && !(*gosa <= *gosa1))
        nb_set_error(r, EDOM, "cpu.himeno: gosa grew from %e (first iteration) to %e "
                     "(iteration %d)", (double)*gosa1, (double)*gosa, nn);
    return r->err;
}

void nb_himeno_release(nb_himeno *h)
{
    free(h->mem);
    h->mem = NULL;
}
