/* io.randread / io.randwrite: block-aligned random I/O at a queue depth, three engines. */
#ifndef MANYBENCH_RANDIO_H
#define MANYBENCH_RANDIO_H

#include <stdint.h>

#include "native.h"

/* Engines, in the order `auto` tries them. */
enum { NB_RIO_AUTO, NB_RIO_URING, NB_RIO_AIO, NB_RIO_THREADS, NB_RIO_ENGINES };

typedef struct {
    int fd, write, fsync_end;
    int engine;          /* NB_RIO_URING, NB_RIO_AIO or NB_RIO_THREADS (not AUTO) */
    unsigned iodepth;    /* I/Os in flight (threads: this many threads) */
    unsigned batch;      /* io_uring, aio: new I/Os per submission call (0 = 1) */
    uint64_t block;      /* bytes per I/O; offsets are multiples of it */
    uint64_t size;       /* region: offsets in [0, size / block * block) */
    uint64_t ops;        /* I/Os to do; 0 = until the deadline */
    int64_t deadline_ns; /* absolute REALTIME stop, 0 = none */
    uint64_t seed;       /* offsets: the same seed gives the same sequence (per thread) */
    int randommap;       /* 1: each block once per pass (fio's default); 0: with replacement */
    int drop_each_pass;  /* randommap: drop the file's cached pages before each later pass */
} nb_randio_args;

/* What a run reports besides nb_result. */
typedef struct {
    uint64_t distinct; /* the blocks the I/Os fell on, each counted once; UINT64_MAX: unknown */
    uint64_t drops;    /* drop_each_pass: the drops done inside the window */
} nb_randio_out;

int nb_rio_engine_from_name(const char *name); /* -1 when unknown */
const char *nb_rio_engine_name(int engine);
/* The engine `engine` (AUTO: the first this kernel allows) can run at `iodepth`: returns
 * it, or -errno with the reason in msg (only when a named engine is refused). */
int nb_randio_probe(int engine, unsigned iodepth, char *msg, size_t msglen);
/* Buffers, rings and threads are set up before the wait; per-I/O latency is submit ->
 * completion; `out` filled after the window. Returns r->err. */
int nb_run_randio(const nb_randio_args *a, int64_t t0_ns, int64_t spin_ns, nb_result *r,
                  nb_randio_out *out);

#endif
