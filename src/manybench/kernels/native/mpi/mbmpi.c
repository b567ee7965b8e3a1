/* mbmpi: manybench's own small MPI test program, for ping-pong and collectives.
 * Built on demand with an MPI family's mpicc (`manybench mpi-build`, kernels/mpi_program.py),
 * never by the package's own build. Prints OSU-like tables that `parse = "osu"` reads:
 *
 *   # manybench MPI Latency Test v3
 *   # Size       Avg Latency(us)
 *   1                       0.18
 *
 *   mbmpi TEST [-m [MIN:]MAX] [-i ITERS] [-x WARMUP] [-f]
 *   TEST: latency bw bibw bcast allgather allreduce alltoall barrier release all
 *
 * Each test makes the MPI calls OSU 7.x's does (osu_latency, osu_bw, osu_bibw, osu_bcast ...),
 * in the same order, on one page-aligned buffer each way, first touched when OSU touches
 * it (point to point: a size's bytes right before that size; collectives: all at once), so
 * their figures can be compared
 * (benchmarks/bench_osu.py counts both sides' calls):
 * latency: ranks 0 and 1 ping-pong, each round trip timed, half the mean round trip;
 * bw: rank 0 sends a window of 64 non-blocking sends from one buffer, rank 1 receives them
 * into one buffer and acks with 1 byte; bibw: both send and receive a window, no ack; each
 * window timed on rank 0, MB = 10^6 B; collectives: each call timed on its own, then an
 * MPI_Barrier outside the timer (barrier: the barrier itself, timed), the mean over the
 * iterations, then avg (min, max with -f) over ranks. Reductions use MPI_FLOAT and MPI_SUM,
 * so their sizes start at 4 bytes (OSU 7's default is MPI_CHAR: run it with `-T mpi_float`).
 * `release` times how far apart the ranks leave an MPI_Barrier (max - min of CLOCK_REALTIME
 * stamps taken right after it, per trial): the peer of a start released at T0
 * (benchmarks/bench_mpi_sync.py).
 * Latencies (ping-pong and collectives) print with 3 decimals (OSU prints 2): a 0.15 us
 * ping-pong or broadcast needs them to show 1%.
 * Sizes: powers of 2 from MIN (default 1) to MAX (default 1 MiB). Iterations and warm-up
 * (untimed iterations first) are OSU's per test, fewer above 8 KiB (see LOOPS); -i and -x
 * set them for every size, as OSU's do.
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WINDOW 64
#define LARGE 8192

/* OSU 7.x's loop counts (c/util/osu_util.h): iterations and warm-up at and below 8 KiB,
 * then above */
struct loops { long iters, warm, iters_large, warm_large; };
static const struct loops LAT = {10000, 100, 1000, 10}, BW = {100, 10, 20, 2},
                          COLL = {1000, 100, 100, 10};

static int rank, nranks, full;
static long min_size = 1, max_size = 1 << 20, iters_opt = -1, warm_opt = -1;

static long iters_for(const struct loops *l, long size)
{
    return iters_opt > 0 ? iters_opt : size > LARGE ? l->iters_large : l->iters;
}

static long warm_for(const struct loops *l, long size)
{
    return warm_opt >= 0 ? warm_opt : size > LARGE ? l->warm_large : l->warm;
}

/* page-aligned, as OSU's buffers; touched (filled) when `fill` >= 0: a first touch inside
 * the timer would count page faults */
static void *xmalloc(size_t n, int fill)
{
    void *p = NULL;
    if (posix_memalign(&p, (size_t)sysconf(_SC_PAGESIZE), n ? n : 1)) {
        fprintf(stderr, "mbmpi: out of memory (%zu bytes)\n", n);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (fill >= 0)
        memset(p, fill, n ? n : 1);
    return p;
}

/* v3: point-to-point buffers first touched size by size, as OSU's (v2 touched them whole at
 * the start: at 32 KiB-512 KiB, swept from 32 KiB, osu_bibw's rate was 1.3-1.5x v2's on a
 * 2-cpu VM; the same figure once touched as OSU touches them (issue 31)); v2: the calls OSU
 * 7.x makes (v1 sent from 64 buffers and timed collectives back to back) */
static void title(const char *name, const char *columns)
{
    if (rank == 0) {
        printf("\n# manybench MPI %s Test v3\n# Size%s\n", name, columns);
        fflush(stdout);
    }
}

/* a point-to-point size's buffers, filled right before it as OSU's set_buffer_pt2pt */
static void touch(char *sbuf, char *rbuf, long size)
{
    memset(sbuf, 'a', size ? (size_t)size : 1);
    memset(rbuf, 'b', size ? (size_t)size : 1);
}

static void latency(void)
{
    title("Latency", "       Avg Latency(us)");
    char *sbuf = xmalloc(max_size, -1), *rbuf = xmalloc(max_size, -1);
    for (long size = min_size; size <= max_size; size = size ? size * 2 : 1) {
        long n = iters_for(&LAT, size), w = warm_for(&LAT, size);
        double total = 0;
        touch(sbuf, rbuf, size);
        MPI_Barrier(MPI_COMM_WORLD);
        for (long i = 0; i < n + w; i++) {
            if (rank == 0) {
                double t0 = i >= w ? MPI_Wtime() : 0;
                MPI_Send(sbuf, (int)size, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
                MPI_Recv(rbuf, (int)size, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                if (i >= w)
                    total += MPI_Wtime() - t0;
            } else if (rank == 1) {
                MPI_Recv(rbuf, (int)size, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(sbuf, (int)size, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
            }
        }
        if (rank == 0)
            printf("%-10ld%18.3f\n", size, total * 1e6 / (2.0 * n));
    }
    free(sbuf);
    free(rbuf);
}

/* one window each way: bw, rank 0 sends (tag 100) and rank 1 acks (tag 101); bibw, both
 * send and receive (rank 0 sends with tag 100, rank 1 with tag 10), rank 0 waiting for its
 * sends first, rank 1 for its receives, as osu_bibw */
static void window(int both, char *sbuf, char *rbuf, long size, MPI_Request *sreq,
                   MPI_Request *rreq, MPI_Status *st)
{
    int peer = 1 - rank, stag = rank == 0 ? 100 : 10, rtag = rank == 0 ? 10 : 100;
    if (both || rank == 1)
        for (int j = 0; j < WINDOW; j++)
            MPI_Irecv(rbuf, (int)size, MPI_CHAR, peer, rtag, MPI_COMM_WORLD, &rreq[j]);
    if (both || rank == 0)
        for (int j = 0; j < WINDOW; j++)
            MPI_Isend(sbuf, (int)size, MPI_CHAR, peer, stag, MPI_COMM_WORLD, &sreq[j]);
    if (both && rank == 0) {
        MPI_Waitall(WINDOW, sreq, st);
        MPI_Waitall(WINDOW, rreq, st);
    } else if (both) {
        MPI_Waitall(WINDOW, rreq, st);
        MPI_Waitall(WINDOW, sreq, st);
    } else if (rank == 0) {
        MPI_Waitall(WINDOW, sreq, st);
        MPI_Recv(rbuf, 1, MPI_CHAR, 1, 101, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Waitall(WINDOW, rreq, st);
        MPI_Send(sbuf, 1, MPI_CHAR, 0, 101, MPI_COMM_WORLD);
    }
}

static void bandwidth(int both)
{
    title(both ? "Bi-Directional Bandwidth" : "Bandwidth", "      Bandwidth (MB/s)");
    char *sbuf = xmalloc(max_size, -1), *rbuf = xmalloc(max_size, -1);
    MPI_Request sreq[WINDOW], rreq[WINDOW];
    MPI_Status st[WINDOW];      /* not MPI_STATUSES_IGNORE: gcc misreads its size */
    for (long size = min_size ? min_size : 1; size <= max_size; size *= 2) {
        long n = iters_for(&BW, size), w = warm_for(&BW, size);
        double total = 0;
        touch(sbuf, rbuf, size);
        MPI_Barrier(MPI_COMM_WORLD);
        for (long i = 0; i < n + w && rank <= 1; i++) {
            double t0 = rank == 0 && i >= w ? MPI_Wtime() : 0;
            window(both, sbuf, rbuf, size, sreq, rreq, st);
            if (rank == 0 && i >= w)
                total += MPI_Wtime() - t0;
        }
        if (rank == 0)
            printf("%-10ld%18.2f\n", size, size / 1e6 * WINDOW * n * (both ? 2 : 1) / total);
    }
    free(sbuf);
    free(rbuf);
}

enum coll { BCAST, ALLGATHER, ALLREDUCE, ALLTOALL, BARRIER };

static void collective(enum coll c)
{
    static const char *names[] = {"Broadcast Latency", "Allgather Latency",
                                  "Allreduce Latency", "Alltoall Latency", "Barrier Latency"};
    title(names[c], full ? "       Avg Latency(us)   Min Latency(us)   Max Latency(us)  "
                           "Iterations"
                         : "       Avg Latency(us)");
    long per = c == ALLGATHER || c == ALLTOALL ? nranks : 1;
    char *sbuf = xmalloc(max_size * per, 1), *rbuf = xmalloc(max_size * per, 0);
    long lo = c == ALLREDUCE && min_size < 4 ? 4 : min_size;
    for (long size = c == BARRIER ? 0 : lo; size <= max_size; size = size ? size * 2 : 1) {
        long n = iters_for(&COLL, size), w = warm_for(&COLL, size);
        double total = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        for (long i = 0; i < n + w; i++) {
            /* every call timed on its own (warm-up ones too, as OSU), the barrier after it
             * outside the timer: calls back to back would overlap one rank's exit with the
             * next call's entry and time less than a call */
            double t0 = MPI_Wtime();
            switch (c) {
            case BCAST: MPI_Bcast(sbuf, (int)size, MPI_CHAR, 0, MPI_COMM_WORLD); break;
            case ALLGATHER:
                MPI_Allgather(sbuf, (int)size, MPI_CHAR, rbuf, (int)size, MPI_CHAR,
                              MPI_COMM_WORLD);
                break;
            case ALLREDUCE:
                MPI_Allreduce(sbuf, rbuf, (int)(size / 4), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
                break;
            case ALLTOALL:
                MPI_Alltoall(sbuf, (int)size, MPI_CHAR, rbuf, (int)size, MPI_CHAR,
                             MPI_COMM_WORLD);
                break;
            case BARRIER: MPI_Barrier(MPI_COMM_WORLD); break;
            }
            double t1 = MPI_Wtime();
            if (c != BARRIER)
                MPI_Barrier(MPI_COMM_WORLD);
            if (i >= w)
                total += t1 - t0;
        }
        double mine = total * 1e6 / n, sum = 0, lo_t = 0, hi_t = 0;
        MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        MPI_Reduce(&mine, &lo_t, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
        MPI_Reduce(&mine, &hi_t, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            printf("%-10ld%18.3f", size, sum / nranks);
            if (full)
                printf("%18.3f%18.3f%12ld", lo_t, hi_t, n);
            printf("\n");
        }
        if (c == BARRIER)
            break;
    }
    free(sbuf);
    free(rbuf);
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void release(void)
{
    /* per trial: every rank stamps right after leaving the barrier; max - min over ranks */
    long n = iters_opt > 0 ? iters_opt : 100;
    if (rank == 0)
        printf("\n# manybench MPI Barrier Release Test v3\n# Trial      Skew(us)\n");
    for (long i = 0; i < warm_for(&COLL, 0); i++)
        MPI_Barrier(MPI_COMM_WORLD);
    for (long i = 0; i < n; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        int64_t t = now_ns(), lo_t = 0, hi_t = 0;
        MPI_Reduce(&t, &lo_t, 1, MPI_INT64_T, MPI_MIN, 0, MPI_COMM_WORLD);
        MPI_Reduce(&t, &hi_t, 1, MPI_INT64_T, MPI_MAX, 0, MPI_COMM_WORLD);
        if (rank == 0)
            printf("%-10ld%14.3f\n", i, (hi_t - lo_t) / 1e3);
    }
}

static int usage(void)
{
    if (rank == 0)
        fprintf(stderr, "usage: mbmpi latency|bw|bibw|bcast|allgather|allreduce|alltoall|"
                        "barrier|release|all [-m [MIN:]MAX] [-i ITERS] [-x WARMUP] [-f]\n");
    MPI_Finalize();
    return 2;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (argc < 2)
        return usage();
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "-f")) {
            full = 1;
        } else if (i + 1 < argc && !strcmp(argv[i], "-m")) {
            char *colon = strchr(argv[++i], ':');
            if (colon) {
                min_size = atol(argv[i]);
                max_size = atol(colon + 1);
            } else {
                max_size = atol(argv[i]);
            }
        } else if (i + 1 < argc && !strcmp(argv[i], "-i")) {
            iters_opt = atol(argv[++i]);
        } else if (i + 1 < argc && !strcmp(argv[i], "-x")) {
            warm_opt = atol(argv[++i]);
        } else {
            return usage();
        }
    }
    if (min_size < 0 || max_size < 1 || min_size > max_size || max_size > (1L << 26))
        return usage();
    const char *t = argv[1];
    int all = !strcmp(t, "all"), pt2pt = all || !strcmp(t, "latency") || !strcmp(t, "bw") ||
                                         !strcmp(t, "bibw");
    if (pt2pt && nranks < 2) {
        if (rank == 0)
            fprintf(stderr, "mbmpi: %s needs at least 2 ranks\n", t);
        MPI_Finalize();
        return 2;
    }
    int known = 0;
    if (all || !strcmp(t, "latency")) known = 1, latency();
    if (all || !strcmp(t, "bw")) known = 1, bandwidth(0);
    if (all || !strcmp(t, "bibw")) known = 1, bandwidth(1);
    if (all || !strcmp(t, "bcast")) known = 1, collective(BCAST);
    if (all || !strcmp(t, "allgather")) known = 1, collective(ALLGATHER);
    if (all || !strcmp(t, "allreduce")) known = 1, collective(ALLREDUCE);
    if (all || !strcmp(t, "alltoall")) known = 1, collective(ALLTOALL);
    if (all || !strcmp(t, "barrier")) known = 1, collective(BARRIER);
    if (!strcmp(t, "release")) known = 1, release();
    if (!known)
        return usage();
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
