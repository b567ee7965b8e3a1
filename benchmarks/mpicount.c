/* mpicount: counts the MPI calls a program makes, for benchmarks/mpicount.py. Built as a
 * shared library with the family's mpicc and preloaded (LD_PRELOAD) into every rank, it
 * interposes the calls a point-to-point or collective benchmark times (the MPI profiling
 * interface: each wrapper counts, then calls PMPI_...) and at MPI_Finalize writes
 * $MPICOUNT_DIR/rank<R>.txt, one line per (call, bytes):
 *
 *   CALL BYTES CALLS TIMED BUFFERS RESIDENT
 *
 * BYTES is count x the datatype's size (Waitall: the request count); TIMED the calls made
 * between an odd and an even MPI_Wtime call of the rank (inside its timer); BUFFERS the
 * distinct buffer addresses (the send buffer for sends and collectives, the receive buffer
 * for receives), counted up to MAXBUF. A Barrier right after a timer closed (the previous
 * counted call was MPI_Wtime, the even one) is counted as "barrier-after-timer": the barrier
 * OSU's collectives put after each timed call. Counts are what the program asked of MPI:
 * noise cannot move them.
 * RESIDENT is the first touch: at the first call of a (call, bytes) on each of its buffers,
 * before MPI sees it, the pages of that buffer wholly beyond the message's bytes that are
 * already resident (mincore(2)), summed over its buffers. A program that fills its whole
 * buffer at the start has them resident; one that fills a size's bytes right before that
 * size (OSU's set_buffer_pt2pt) has none, and its first touch of a larger size then costs
 * page faults (1.3-1.5x in osu_bibw's rate, issue 31). The buffer's end is the largest
 * BYTES any call passed with that address (known at MPI_Finalize), so pages past it (other
 * allocations) never count; at most TOUCH_PAGES are looked at. Memory an allocator hands out
 * again was touched by whoever had it before: compare at sizes whose buffers are fresh pages
 * (MPICH 4.0.2's ranks get 16 KiB buffers from heap its MPI_Init touched; 128 KiB ones are
 * fresh in both families).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAXKEYS 512
#define MAXBUF 256
/* pages looked at beyond a message: 16 (64 KiB of 4 KiB pages) tell a buffer filled whole
 * from one filled size by size at every doubling step up to 64 KiB, with at most 16
 * one-page mincore calls per (call, bytes, buffer) */
#define TOUCH_PAGES 16

enum call { SEND, RECV, ISEND, IRECV, WAITALL, BCAST, ALLREDUCE, ALLTOALL, ALLGATHER,
            BARRIER, BARRIER_AFTER, WTIME };
static const char *NAMES[] = {"send", "recv", "isend", "irecv", "waitall", "bcast",
                              "allreduce", "alltoall", "allgather", "barrier",
                              "barrier-after-timer", "wtime"};

struct counter {
    enum call call;
    long bytes, calls, timed;
    int nbuf;
    const void *bufs[MAXBUF];
    uint32_t resident[MAXBUF]; /* bit i: page i beyond the message resident at first call */
};

static struct counter counters[MAXKEYS];
static int nkeys, overflow;
static int timing;             /* inside the rank's timer: an odd number of MPI_Wtime calls */
static enum call last = WTIME; /* the previous counted call */
static int closed;             /* the previous MPI_Wtime closed a timer */

static uintptr_t page_size(void)
{
    static uintptr_t p;
    if (!p)
        p = (uintptr_t)sysconf(_SC_PAGESIZE);
    return p;
}

/* the first page wholly beyond a message of `bytes` at `buf` */
static uintptr_t first_beyond(const void *buf, long bytes)
{
    uintptr_t p = page_size();
    return ((uintptr_t)buf + (uintptr_t)bytes + p - 1) / p * p;
}

/* which of the TOUCH_PAGES pages beyond the message are resident; one page per call, so an
 * unmapped page (ENOMEM) counts as not resident without hiding its neighbours */
static uint32_t resident_beyond(const void *buf, long bytes)
{
    uint32_t bits = 0;
    uintptr_t first = first_beyond(buf, bytes);
    for (int i = 0; i < TOUCH_PAGES; i++) {
        unsigned char v = 0;
        if (mincore((void *)(first + i * page_size()), page_size(), &v) == 0 && (v & 1))
            bits |= 1u << i;
    }
    return bits;
}

static void count(enum call call, long bytes, const void *buf)
{
    if (call == BARRIER && last == WTIME && closed)
        call = BARRIER_AFTER;
    last = call;
    struct counter *c = NULL;
    for (int i = 0; i < nkeys && !c; i++)
        if (counters[i].call == call && counters[i].bytes == bytes)
            c = &counters[i];
    if (!c) {
        if (nkeys == MAXKEYS) {
            overflow = 1;
            return;
        }
        c = &counters[nkeys++];
        c->call = call;
        c->bytes = bytes;
    }
    c->calls++;
    c->timed += timing;
    if (!buf)
        return;
    for (int i = 0; i < c->nbuf; i++)
        if (c->bufs[i] == buf)
            return;
    if (c->nbuf < MAXBUF) {
        c->resident[c->nbuf] = resident_beyond(buf, bytes);
        c->bufs[c->nbuf++] = buf;
    }
}

static long bytes_of(int n, MPI_Datatype type)
{
    int size = 0;
    PMPI_Type_size(type, &size);
    return (long)n * size;
}

double MPI_Wtime(void)
{
    timing = !timing;
    closed = !timing;
    last = WTIME;
    return PMPI_Wtime();
}

int MPI_Send(const void *b, int n, MPI_Datatype t, int d, int tag, MPI_Comm c)
{
    count(SEND, bytes_of(n, t), b);
    return PMPI_Send(b, n, t, d, tag, c);
}

int MPI_Recv(void *b, int n, MPI_Datatype t, int s, int tag, MPI_Comm c, MPI_Status *st)
{
    count(RECV, bytes_of(n, t), b);
    return PMPI_Recv(b, n, t, s, tag, c, st);
}

int MPI_Isend(const void *b, int n, MPI_Datatype t, int d, int tag, MPI_Comm c,
              MPI_Request *r)
{
    count(ISEND, bytes_of(n, t), b);
    return PMPI_Isend(b, n, t, d, tag, c, r);
}

int MPI_Irecv(void *b, int n, MPI_Datatype t, int s, int tag, MPI_Comm c, MPI_Request *r)
{
    count(IRECV, bytes_of(n, t), b);
    return PMPI_Irecv(b, n, t, s, tag, c, r);
}

int MPI_Waitall(int n, MPI_Request r[], MPI_Status st[])
{
    count(WAITALL, n, NULL);
    return PMPI_Waitall(n, r, st);
}

int MPI_Bcast(void *b, int n, MPI_Datatype t, int root, MPI_Comm c)
{
    count(BCAST, bytes_of(n, t), b);
    return PMPI_Bcast(b, n, t, root, c);
}

int MPI_Allreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c)
{
    count(ALLREDUCE, bytes_of(n, t), s);
    return PMPI_Allreduce(s, r, n, t, op, c);
}

int MPI_Alltoall(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt,
                 MPI_Comm c)
{
    count(ALLTOALL, bytes_of(sn, st), s);
    return PMPI_Alltoall(s, sn, st, r, rn, rt, c);
}

int MPI_Allgather(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt,
                  MPI_Comm c)
{
    count(ALLGATHER, bytes_of(sn, st), s);
    return PMPI_Allgather(s, sn, st, r, rn, rt, c);
}

int MPI_Barrier(MPI_Comm c)
{
    count(BARRIER, 0, NULL);
    return PMPI_Barrier(c);
}

/* the buffer's end as the program used it: the largest message any call made with it */
static uintptr_t buffer_end(const void *buf)
{
    long most = 0;
    for (int i = 0; i < nkeys; i++)
        for (int j = 0; j < counters[i].nbuf; j++)
            if (counters[i].bufs[j] == buf && counters[i].bytes > most)
                most = counters[i].bytes;
    return (uintptr_t)buf + (uintptr_t)most;
}

/* RESIDENT of a counter: its buffers' resident pages beyond the message, inside the buffer */
static long resident(const struct counter *c)
{
    long n = 0;
    for (int j = 0; j < c->nbuf; j++) {
        uintptr_t first = first_beyond(c->bufs[j], c->bytes), end = buffer_end(c->bufs[j]);
        for (int i = 0; i < TOUCH_PAGES && first + i * page_size() < end; i++)
            n += (c->resident[j] >> i) & 1;
    }
    return n;
}

int MPI_Finalize(void)
{
    const char *dir = getenv("MPICOUNT_DIR");
    int rank = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char path[4096];
    snprintf(path, sizeof path, "%s/rank%d.txt", dir ? dir : ".", rank);
    FILE *f = fopen(path, "w");
    if (f) {
        for (int i = 0; i < nkeys; i++)
            fprintf(f, "%s %ld %ld %ld %d %ld\n", NAMES[counters[i].call], counters[i].bytes,
                    counters[i].calls, counters[i].timed, counters[i].nbuf,
                    resident(&counters[i]));
        if (overflow)
            fprintf(f, "overflow 0 0 0 0 0\n");
        fclose(f);
    }
    return PMPI_Finalize();
}
