/* mbhimeno: the Himeno benchmark (himenoBMTxp's Jacobi iterations of a 19-point stencil for
 * Poisson's equation) with MPI ranks and OpenMP threads, manybench's own program for "ranks
 * against threads". Built on demand with an MPI family's mpicc and -fopenmp (`manybench
 * mpi-build --program mbhimeno`, kernels/mpi_program.py), never by the package's own build.
 *
 *   mbhimeno [XS|S|M|L|XL] [-n ITERATIONS] [-s SECONDS]
 *
 * The grid is himenoBMTxp's (XS 33x33x65 ... XL 513x513x1025; single precision, omega 0.8,
 * 34 flops per interior point, its initmt), cut into slabs along i, one per rank (I-decomp =
 * ranks, as himenoBMTxp_mpi with J and K not split); each rank keeps its slab and a halo plane
 * on each side, exchanges them after every iteration and sums gosa over the ranks, as the MPI
 * versions do. Inside a rank the i loop is shared by OMP_NUM_THREADS threads (static
 * schedule, gosa a reduction). First himenoBMTxp's rehearsal of 3 iterations, kept (the Gosa
 * printed is after 3 + the measured ones, as himenoBMTxp's); without -n the count is then
 * calibrated as himenoBMTxp does, as many as take SECONDS (default 60); rank 0 decides and
 * every rank runs the same count. The output is the MPI versions' (parse = "himeno"):
 * "MFLOPS measured : ...", "cpu : ... sec.", "Gosa : ...", "I-decomp = N J-decomp = 1 ...".
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, nranks;
static int imax, jmax, kmax;          /* the whole grid's MIMAX-1, ...: points 0..imax-1 */
static int lo, hi;                    /* this rank's interior planes [lo, hi) (global i) */
static int ni;                        /* planes held: hi - lo + 2 (a halo on each side) */
static float *p, *a, *b, *c, *bnd, *wrk1, *wrk2;
static size_t plane;                  /* floats per plane: jmax * kmax */
static const float omega = 0.8f;

#define AT(g, n, i, j, k) ((g)[(size_t)(n) * (size_t)ni * plane + (size_t)(i) * plane + \
                           (size_t)(j) * (size_t)kmax + (size_t)(k)])
#define P(i, j, k) (p[(size_t)(i) * plane + (size_t)(j) * (size_t)kmax + (size_t)(k)])
#define W2(i, j, k) (wrk2[(size_t)(i) * plane + (size_t)(j) * (size_t)kmax + (size_t)(k)])
#define ONE(g, i, j, k) ((g)[(size_t)(i) * plane + (size_t)(j) * (size_t)kmax + (size_t)(k)])

static float *grid(int n)
{
    float *g = malloc((size_t)n * (size_t)ni * plane * sizeof(float));
    if (!g) {
        fprintf(stderr, "mbhimeno: out of memory (%zu planes of %zu floats)\n", (size_t)ni,
                plane);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return g;
}

/* himenoBMTxp's initmt on this rank's planes (local li is global lo - 1 + li), touched by the
 * threads that will run the loops. */
static void initmt(void)
{
#pragma omp parallel for schedule(static)
    for (int li = 0; li < ni; li++) {
        int g = lo - 1 + li;
        for (int j = 0; j < jmax; j++)
            for (int k = 0; k < kmax; k++) {
                for (int n = 0; n < 4; n++)
                    AT(a, n, li, j, k) = n == 3 ? 1.0f / 6.0f : 1.0f;
                for (int n = 0; n < 3; n++) {
                    AT(b, n, li, j, k) = 0.0f;
                    AT(c, n, li, j, k) = 1.0f;
                }
                P(li, j, k) = (float)(g * g) / (float)((imax - 1) * (imax - 1));
                ONE(wrk1, li, j, k) = 0.0f;
                ONE(wrk2, li, j, k) = 0.0f;
                ONE(bnd, li, j, k) = 1.0f;
            }
    }
}

/* p's first and last interior planes to the neighbours' halos. */
static void exchange(void)
{
    int left = rank > 0 ? rank - 1 : MPI_PROC_NULL, right = rank + 1 < nranks ? rank + 1
                                                                                : MPI_PROC_NULL;
    MPI_Sendrecv(&P(1, 0, 0), (int)plane, MPI_FLOAT, left, 1, &P(ni - 1, 0, 0), (int)plane,
                 MPI_FLOAT, right, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Sendrecv(&P(ni - 2, 0, 0), (int)plane, MPI_FLOAT, right, 2, &P(0, 0, 0), (int)plane,
                 MPI_FLOAT, left, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

static float jacobi(int nn)
{
    float gosa = 0.0f;
    size_t si = plane, sj = (size_t)kmax;
    for (int n = 0; n < nn; n++) {
        float local = 0.0f;
#pragma omp parallel for schedule(static) reduction(+ : local)
        for (int i = 1; i < ni - 1; i++)
            for (int j = 1; j < jmax - 1; j++) {
                size_t o = (size_t)i * plane + (size_t)j * sj;
                const float *pp = p + o, *a0 = a + o, *a1 = a0 + ni * plane,
                            *a2 = a1 + ni * plane, *a3 = a2 + ni * plane, *b0 = b + o,
                            *b1 = b0 + ni * plane, *b2 = b1 + ni * plane, *c0 = c + o,
                            *c1 = c0 + ni * plane, *c2 = c1 + ni * plane, *bn = bnd + o,
                            *w1 = wrk1 + o;
                float *w2 = wrk2 + o;
                for (int k = 1; k < kmax - 1; k++) {
                    float s0 = a0[k] * pp[k + si] + a1[k] * pp[k + sj] + a2[k] * pp[k + 1]
                             + b0[k] * (pp[k + si + sj] - pp[k + si - sj] - pp[k - si + sj]
                                        + pp[k - si - sj])
                             + b1[k] * (pp[k + sj + 1] - pp[k - sj + 1] - pp[k + sj - 1]
                                        + pp[k - sj - 1])
                             + b2[k] * (pp[k + si + 1] - pp[k - si + 1] - pp[k + si - 1]
                                        + pp[k - si - 1])
                             + c0[k] * pp[k - si] + c1[k] * pp[k - sj] + c2[k] * pp[k - 1]
                             + w1[k];
                    float ss = (s0 * a3[k] - pp[k]) * bn[k];
                    local += ss * ss;
                    w2[k] = pp[k] + omega * ss;
                }
            }
#pragma omp parallel for schedule(static)
        for (int i = 1; i < ni - 1; i++)
            for (int j = 1; j < jmax - 1; j++)
                memcpy(&P(i, j, 1), &W2(i, j, 1), (size_t)(kmax - 2) * sizeof(float));
        exchange();
        MPI_Allreduce(&local, &gosa, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
    return gosa;
}

static double flops(int nn)
{
    return (double)(kmax - 2) * (double)(jmax - 2) * (double)(imax - 2) * 34.0 * nn;
}

/* nn iterations timed as the MPI versions do: barrier, MPI_Wtime, the loop, the slowest
 * rank's time. */
static double timed(int nn, float *gosa)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime();
    *gosa = jacobi(nn);
    t = MPI_Wtime() - t;
    double slowest;
    MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest;
}

static int usage(void)
{
    if (rank == 0)
        fprintf(stderr, "usage: mbhimeno [XS|S|M|L|XL] [-n ITERATIONS] [-s SECONDS]\n");
    MPI_Finalize();
    return 2;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    static const struct { const char *name; int i, j, k; } sizes[] = {
        {"XS", 33, 33, 65}, {"S", 65, 65, 129}, {"M", 129, 129, 257},
        {"L", 257, 257, 513}, {"XL", 513, 513, 1025}};
    int mimax = 65, mjmax = 65, mkmax = 129, nn = 0;
    double seconds = 60.0;
    for (int i = 1; i < argc; i++) {
        int known = 0;
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
            if (!strcmp(argv[i], sizes[s].name)) {
                mimax = sizes[s].i, mjmax = sizes[s].j, mkmax = sizes[s].k, known = 1;
            }
        if (known)
            continue;
        if (i + 1 < argc && !strcmp(argv[i], "-n") && (nn = atoi(argv[i + 1])) > 0)
            i++;
        else if (i + 1 < argc && !strcmp(argv[i], "-s") && (seconds = atof(argv[i + 1])) > 0)
            i++;
        else
            return usage();
    }
    imax = mimax - 1, jmax = mjmax - 1, kmax = mkmax - 1;
    if (imax - 2 < nranks) {
        if (rank == 0)
            fprintf(stderr, "mbhimeno: %d ranks for %d interior planes: use a larger grid\n",
                    nranks, imax - 2);
        MPI_Finalize();
        return 2;
    }
    int interior = imax - 2, share = interior / nranks, extra = interior % nranks;
    lo = 1 + rank * share + (rank < extra ? rank : extra);
    hi = lo + share + (rank < extra ? 1 : 0);
    ni = hi - lo + 2;
    plane = (size_t)jmax * (size_t)kmax;
    p = grid(1), a = grid(4), b = grid(3), c = grid(3), bnd = grid(1);
    wrk1 = grid(1), wrk2 = grid(1);
    initmt();
    if (rank == 0) {
        printf("Sequential version array size\n mimax = %d mjmax = %d mkmax = %d\n", mimax,
               mjmax, mkmax);
        printf("Parallel version array size\n mimax = %d mjmax = %d mkmax = %d\n", ni + 1,
               mjmax, mkmax);
        printf("imax = %d jmax = %d kmax =%d\n", ni, jmax, kmax);
        printf("I-decomp = %d J-decomp = %d K-decomp =%d\n", nranks, 1, 1);
        printf("threads per rank = %d\n", omp_get_max_threads());
    }
    float gosa;
    /* himenoBMTxp's rehearsal, with -n too: its changes to p are kept, as himenoBMTxp keeps
     * them, so the Gosa printed is after 3 + nn iterations, as himenoBMTxp's */
    double t3 = timed(3, &gosa);
    if (rank == 0) {
        printf(" Start rehearsal measurement process.\n Measure the performance in 3 "
               "times.\n\n MFLOPS: %f time(s): %f %e\n\n", flops(3) / (t3 > 0 ? t3 : 1e-9)
               * 1e-6, t3, gosa);
        if (nn == 0)
            nn = (int)(seconds / (t3 / 3.0));
        if (nn < 1)
            nn = 1;
    }
    MPI_Bcast(&nn, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf(" Now, start the actual measurement process.\n The loop will be excuted in %d "
               "times\n\n", nn);
    double t = timed(nn, &gosa);
    if (rank == 0) {
        double mflops = flops(nn) / (t > 0 ? t : 1e-9) * 1e-6;
        printf("cpu : %f sec.\nLoop executed for %d times\nGosa : %e \nMFLOPS measured : %f\n"
               "Score based on Pentium III 600MHz using Fortran 77: %f\n", t, nn, gosa, mflops,
               mflops / 82.84);
    }
    MPI_Finalize();
    return 0;
}
