/* Peer for bench_himeno.py: the Himeno benchmark as himenoBMTxp.c (RIKEN) has it.
 *
 * Same static arrays (p, a[4], b[3], c[3], bnd, wrk1, wrk2, single precision), initmt,
 * jacobi, fflop and mflops, and the same flow: a 3-iteration rehearsal, nn = target /
 * (time / 3), then the measured nn iterations, timed with second() (gettimeofday). Sizes
 * by macro as in the original: -DXSMALL (33x33x65, the original's SSMALL), -DSMALL
 * (65x65x129), -DMIDDLE (129x129x257), -DLARGE (257x257x513), -DELARGE (513x513x1025).
 * Two optional arguments, for the benchmark: the target in seconds (himenoBMTxp: 60) and a
 * fixed nn (skips the computed one; the rehearsal still runs first, as in the original).
 * Output as the original's:
 *   MFLOPS: %f time(s): %f %e            (rehearsal; the last is gosa after 3 iterations)
 *   Loop executed for %d times
 *   Gosa : %e
 *   MFLOPS measured : %f	cpu : %f
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>

#ifdef XSMALL
#define MIMAX 33
#define MJMAX 33
#define MKMAX 65
#endif

#ifdef SMALL
#define MIMAX 65
#define MJMAX 65
#define MKMAX 129
#endif

#ifdef MIDDLE
#define MIMAX 129
#define MJMAX 129
#define MKMAX 257
#endif

#ifdef LARGE
#define MIMAX 257
#define MJMAX 257
#define MKMAX 513
#endif

#ifdef ELARGE
#define MIMAX 513
#define MJMAX 513
#define MKMAX 1025
#endif

#ifndef MIMAX
#error "define one of XSMALL, SMALL, MIDDLE, LARGE, ELARGE"
#endif

double second();
float jacobi();
void initmt();
double fflop(int, int, int);
double mflops(int, double, double);

static float p[MIMAX][MJMAX][MKMAX];
static float a[4][MIMAX][MJMAX][MKMAX], b[3][MIMAX][MJMAX][MKMAX], c[3][MIMAX][MJMAX][MKMAX];
static float bnd[MIMAX][MJMAX][MKMAX];
static float wrk1[MIMAX][MJMAX][MKMAX], wrk2[MIMAX][MJMAX][MKMAX];

static int imax, jmax, kmax;
static float omega;

int main(int argc, char **argv)
{
    int nn;
    float gosa;
    double cpu, cpu0, cpu1, flop, target;

    target = argc > 1 ? atof(argv[1]) : 60.0;
    omega = 0.8;
    imax = MIMAX - 1;
    jmax = MJMAX - 1;
    kmax = MKMAX - 1;

    /* Initializing matrixes */
    initmt();
    printf("mimax = %d mjmax = %d mkmax = %d\n", MIMAX, MJMAX, MKMAX);
    printf("imax = %d jmax = %d kmax =%d\n", imax, jmax, kmax);

    nn = 3;
    printf(" Start rehearsal measurement process.\n");
    printf(" Measure the performance in %d times.\n\n", nn);

    cpu0 = second();
    gosa = jacobi(nn);
    cpu1 = second();
    cpu = cpu1 - cpu0;

    flop = fflop(imax, jmax, kmax);

    printf(" MFLOPS: %f time(s): %f %e\n\n", mflops(nn, cpu, flop), cpu, gosa);

    nn = (int)(target / (cpu / 3.0));
    if (argc > 2)
        nn = atoi(argv[2]);

    printf(" Now, start the actual measurement process.\n");
    printf(" The loop will be excuted in %d times\n", nn);
    printf(" This will take about one minute.\n");
    printf(" Wait for a while\n\n");

    /* Start measuring */
    cpu0 = second();
    gosa = jacobi(nn);
    cpu1 = second();

    cpu = cpu1 - cpu0;

    printf(" Loop executed for %d times\n", nn);
    printf(" Gosa : %e \n", gosa);
    printf(" MFLOPS measured : %f\tcpu : %f\n", mflops(nn, cpu, flop), cpu);
    printf(" Score based on Pentium III 600MHz : %f\n", mflops(nn, cpu, flop) / 82.84);

    return (0);
}

void initmt()
{
    int i, j, k;

    for (i = 0; i < MIMAX; i++)
        for (j = 0; j < MJMAX; j++)
            for (k = 0; k < MKMAX; k++) {
                a[0][i][j][k] = 0.0;
                a[1][i][j][k] = 0.0;
                a[2][i][j][k] = 0.0;
                a[3][i][j][k] = 0.0;
                b[0][i][j][k] = 0.0;
                b[1][i][j][k] = 0.0;
                b[2][i][j][k] = 0.0;
                c[0][i][j][k] = 0.0;
                c[1][i][j][k] = 0.0;
                c[2][i][j][k] = 0.0;
                p[i][j][k] = 0.0;
                wrk1[i][j][k] = 0.0;
                bnd[i][j][k] = 0.0;
            }

    for (i = 0; i < imax; i++)
        for (j = 0; j < jmax; j++)
            for (k = 0; k < kmax; k++) {
                a[0][i][j][k] = 1.0;
                a[1][i][j][k] = 1.0;
                a[2][i][j][k] = 1.0;
                a[3][i][j][k] = 1.0 / 6.0;
                b[0][i][j][k] = 0.0;
                b[1][i][j][k] = 0.0;
                b[2][i][j][k] = 0.0;
                c[0][i][j][k] = 1.0;
                c[1][i][j][k] = 1.0;
                c[2][i][j][k] = 1.0;
                p[i][j][k] = (float)(i * i) / (float)((imax - 1) * (imax - 1));
                wrk1[i][j][k] = 0.0;
                bnd[i][j][k] = 1.0;
            }
}

float jacobi(int nn)
{
    int i, j, k, n;
    float gosa, s0, ss;

    for (n = 0; n < nn; ++n) {
        gosa = 0.0;

        for (i = 1; i < imax - 1; i++)
            for (j = 1; j < jmax - 1; j++)
                for (k = 1; k < kmax - 1; k++) {
                    s0 = a[0][i][j][k] * p[i + 1][j][k]
                       + a[1][i][j][k] * p[i][j + 1][k]
                       + a[2][i][j][k] * p[i][j][k + 1]
                       + b[0][i][j][k] * (p[i + 1][j + 1][k] - p[i + 1][j - 1][k]
                                          - p[i - 1][j + 1][k] + p[i - 1][j - 1][k])
                       + b[1][i][j][k] * (p[i][j + 1][k + 1] - p[i][j - 1][k + 1]
                                          - p[i][j + 1][k - 1] + p[i][j - 1][k - 1])
                       + b[2][i][j][k] * (p[i + 1][j][k + 1] - p[i - 1][j][k + 1]
                                          - p[i + 1][j][k - 1] + p[i - 1][j][k - 1])
                       + c[0][i][j][k] * p[i - 1][j][k]
                       + c[1][i][j][k] * p[i][j - 1][k]
                       + c[2][i][j][k] * p[i][j][k - 1]
                       + wrk1[i][j][k];

                    ss = (s0 * a[3][i][j][k] - p[i][j][k]) * bnd[i][j][k];

                    gosa += ss * ss;

                    wrk2[i][j][k] = p[i][j][k] + omega * ss;
                }

        for (i = 1; i < imax - 1; ++i)
            for (j = 1; j < jmax - 1; ++j)
                for (k = 1; k < kmax - 1; ++k)
                    p[i][j][k] = wrk2[i][j][k];

    } /* end n loop */

    return (gosa);
}

double fflop(int mx, int my, int mz)
{
    return ((double)(mz - 2) * (double)(my - 2) * (double)(mx - 2) * 34.0);
}

double mflops(int nn, double cpu, double flop)
{
    return (flop / cpu * 1.e-6 * (double)nn);
}

double second()
{
    struct timeval tm;
    double t;

    static int base_sec = 0, base_usec = 0;

    gettimeofday(&tm, NULL);

    if (base_sec == 0 && base_usec == 0) {
        base_sec = tm.tv_sec;
        base_usec = tm.tv_usec;
        t = 0.0;
    } else {
        t = (double)(tm.tv_sec - base_sec) + ((double)(tm.tv_usec - base_usec)) / 1.0e6;
    }

    return t;
}
