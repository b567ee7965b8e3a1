/* Peer for bench_stream.py: STREAM as John D. McCalpin's stream.c (v5.10) has it.
 *
 * Same structure as the original: static arrays of STREAM_ARRAY_SIZE (+ OFFSET) doubles,
 * parallel initialisation, the timer-granularity pass a = 2a, NTIMES iterations of Copy,
 * Scale, Add and Triad each timed with mysecond() (gettimeofday), `#pragma omp parallel for`
 * on every loop, best rate over iterations 2..NTIMES with MB = 10^6 bytes, and
 * checkSTREAMresults. Output follows stream.c's summary table:
 *   Function    Best Rate MB/s  Avg time     Min time     Max time
 *   Triad:          12345.6     0.012345     0.012345     0.012345
 * build: cc -O3 [-fopenmp] -DSTREAM_ARRAY_SIZE=20000000 [-DNTIMES=10] stream_ref.c
 */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <sys/time.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#ifndef STREAM_ARRAY_SIZE
#define STREAM_ARRAY_SIZE 10000000
#endif
#ifdef NTIMES
#if NTIMES <= 1
#define NTIMES 10
#endif
#endif
#ifndef NTIMES
#define NTIMES 10
#endif
#ifndef OFFSET
#define OFFSET 0
#endif
#define HLINE "-------------------------------------------------------------\n"
#ifndef MIN
#define MIN(x, y) ((x) < (y) ? (x) : (y))
#endif
#ifndef MAX
#define MAX(x, y) ((x) > (y) ? (x) : (y))
#endif
#ifndef STREAM_TYPE
#define STREAM_TYPE double
#endif

static STREAM_TYPE a[STREAM_ARRAY_SIZE + OFFSET], b[STREAM_ARRAY_SIZE + OFFSET],
    c[STREAM_ARRAY_SIZE + OFFSET];

static double avgtime[4] = {0}, maxtime[4] = {0}, mintime[4] = {FLT_MAX, FLT_MAX, FLT_MAX, FLT_MAX};

static char *label[4] = {"Copy:      ", "Scale:     ", "Add:       ", "Triad:     "};

static double bytes[4] = {2 * sizeof(STREAM_TYPE) * STREAM_ARRAY_SIZE,
                          2 * sizeof(STREAM_TYPE) * STREAM_ARRAY_SIZE,
                          3 * sizeof(STREAM_TYPE) * STREAM_ARRAY_SIZE,
                          3 * sizeof(STREAM_TYPE) * STREAM_ARRAY_SIZE};

extern double mysecond();
extern void checkSTREAMresults();
extern int checktick();

int main()
{
    int quantum;
    int BytesPerWord;
    int k;
    ssize_t j;
    STREAM_TYPE scalar;
    double t, times[4][NTIMES];

    printf(HLINE);
    printf("STREAM version $Revision: 5.10 $ (manybench peer)\n");
    printf(HLINE);
    BytesPerWord = sizeof(STREAM_TYPE);
    printf("This system uses %d bytes per array element.\n", BytesPerWord);
    printf("Array size = %llu (elements), Offset = %d (elements)\n",
           (unsigned long long)STREAM_ARRAY_SIZE, OFFSET);
    printf("Memory per array = %.1f MiB (= %.1f GiB).\n",
           BytesPerWord * ((double)STREAM_ARRAY_SIZE / 1024.0 / 1024.0),
           BytesPerWord * ((double)STREAM_ARRAY_SIZE / 1024.0 / 1024.0 / 1024.0));
    printf("Each kernel will be executed %d times.\n", NTIMES);
#ifdef _OPENMP
#pragma omp parallel
    {
#pragma omp master
        {
            k = omp_get_num_threads();
            printf("Number of Threads requested = %i\n", k);
        }
    }
#endif

#pragma omp parallel for
    for (j = 0; j < STREAM_ARRAY_SIZE; j++) {
        a[j] = 1.0;
        b[j] = 2.0;
        c[j] = 0.0;
    }

    printf(HLINE);
    if ((quantum = checktick()) >= 1)
        printf("Your clock granularity/precision appears to be %d microseconds.\n", quantum);
    else {
        printf("Your clock granularity appears to be less than one microsecond.\n");
        quantum = 1;
    }

    t = mysecond();
#pragma omp parallel for
    for (j = 0; j < STREAM_ARRAY_SIZE; j++)
        a[j] = 2.0E0 * a[j];
    t = 1.0E6 * (mysecond() - t);
    printf("Each test below will take on the order of %d microseconds.\n", (int)t);

    /* --- MAIN LOOP --- repeat test cases NTIMES times --- */
    scalar = 3.0;
    for (k = 0; k < NTIMES; k++) {
        times[0][k] = mysecond();
#pragma omp parallel for
        for (j = 0; j < STREAM_ARRAY_SIZE; j++)
            c[j] = a[j];
        times[0][k] = mysecond() - times[0][k];

        times[1][k] = mysecond();
#pragma omp parallel for
        for (j = 0; j < STREAM_ARRAY_SIZE; j++)
            b[j] = scalar * c[j];
        times[1][k] = mysecond() - times[1][k];

        times[2][k] = mysecond();
#pragma omp parallel for
        for (j = 0; j < STREAM_ARRAY_SIZE; j++)
            c[j] = a[j] + b[j];
        times[2][k] = mysecond() - times[2][k];

        times[3][k] = mysecond();
#pragma omp parallel for
        for (j = 0; j < STREAM_ARRAY_SIZE; j++)
            a[j] = b[j] + scalar * c[j];
        times[3][k] = mysecond() - times[3][k];
    }

    /* --- SUMMARY --- */
    for (k = 1; k < NTIMES; k++) { /* note -- skip first iteration */
        for (j = 0; j < 4; j++) {
            avgtime[j] = avgtime[j] + times[j][k];
            mintime[j] = MIN(mintime[j], times[j][k]);
            maxtime[j] = MAX(maxtime[j], times[j][k]);
        }
    }

    printf("Function    Best Rate MB/s  Avg time     Min time     Max time\n");
    for (j = 0; j < 4; j++) {
        avgtime[j] = avgtime[j] / (double)(NTIMES - 1);
        printf("%s%12.1f  %11.6f  %11.6f  %11.6f\n", label[j], 1.0E-06 * bytes[j] / mintime[j],
               avgtime[j], mintime[j], maxtime[j]);
    }
    printf(HLINE);

    checkSTREAMresults();
    printf(HLINE);
    return 0;
}

#define M 20

int checktick()
{
    int i, minDelta, Delta;
    double t1, t2, timesfound[M];

    for (i = 0; i < M; i++) {
        t1 = mysecond();
        while (((t2 = mysecond()) - t1) < 1.0E-6)
            ;
        timesfound[i] = t1 = t2;
    }
    minDelta = 1000000;
    for (i = 1; i < M; i++) {
        Delta = (int)(1.0E6 * (timesfound[i] - timesfound[i - 1]));
        minDelta = MIN(minDelta, MAX(Delta, 0));
    }
    return (minDelta);
}

double mysecond()
{
    struct timeval tp;
    gettimeofday(&tp, NULL);
    return ((double)tp.tv_sec + (double)tp.tv_usec * 1.e-6);
}

#ifndef abs
#define abs(a) ((a) >= 0 ? (a) : -(a))
#endif
void checkSTREAMresults()
{
    STREAM_TYPE aj, bj, cj, scalar;
    STREAM_TYPE aSumErr, bSumErr, cSumErr;
    STREAM_TYPE aAvgErr, bAvgErr, cAvgErr;
    double epsilon;
    ssize_t j;
    int k, err;

    aj = 1.0;
    bj = 2.0;
    cj = 0.0;
    aj = 2.0E0 * aj;
    scalar = 3.0;
    for (k = 0; k < NTIMES; k++) {
        cj = aj;
        bj = scalar * cj;
        cj = aj + bj;
        aj = bj + scalar * cj;
    }

    aSumErr = 0.0;
    bSumErr = 0.0;
    cSumErr = 0.0;
    for (j = 0; j < STREAM_ARRAY_SIZE; j++) {
        aSumErr += abs(a[j] - aj);
        bSumErr += abs(b[j] - bj);
        cSumErr += abs(c[j] - cj);
    }
    aAvgErr = aSumErr / (STREAM_TYPE)STREAM_ARRAY_SIZE;
    bAvgErr = bSumErr / (STREAM_TYPE)STREAM_ARRAY_SIZE;
    cAvgErr = cSumErr / (STREAM_TYPE)STREAM_ARRAY_SIZE;

    epsilon = sizeof(STREAM_TYPE) == 4 ? 1.e-6 : 1.e-13;
    err = 0;
    if (abs(aAvgErr / aj) > epsilon) {
        err++;
        printf("Failed Validation on array a[], AvgRelAbsErr > epsilon (%e)\n", epsilon);
    }
    if (abs(bAvgErr / bj) > epsilon) {
        err++;
        printf("Failed Validation on array b[], AvgRelAbsErr > epsilon (%e)\n", epsilon);
    }
    if (abs(cAvgErr / cj) > epsilon) {
        err++;
        printf("Failed Validation on array c[], AvgRelAbsErr > epsilon (%e)\n", epsilon);
    }
    if (err == 0)
        printf("Solution Validates: avg error less than %e on all three arrays\n", epsilon);
}
