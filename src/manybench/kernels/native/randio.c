/* io.randread / io.randwrite: uniform random, block-aligned reads or writes of one file at a
 * queue depth, through one of three engines:
 *   io_uring  raw io_uring_setup/io_uring_enter (no liburing), as fio's io_uring engine;
 *   aio       Linux native AIO through raw io_setup/io_submit/io_getevents (no libaio), as
 *             fio's libaio engine;
 *   threads   `iodepth` threads each doing pread/pwrite, as fio's psync with numjobs.
 * Per-I/O latency is from submission to the moment its completion is seen. Short transfers
 * are resumed for the remainder (the I/O's latency still runs from its first submission).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "randio.h"
#include "randmap.h"

/* New syscalls share one number on every architecture but alpha. */
#ifndef __NR_io_uring_setup
#define __NR_io_uring_setup 425
#endif
#ifndef __NR_io_uring_enter
#define __NR_io_uring_enter 426
#endif
#ifndef __NR_io_uring_register
#define __NR_io_uring_register 427
#endif

#if defined(__has_include)
#if __has_include(<linux/io_uring.h>)
#include <linux/io_uring.h>
#define HAVE_URING 1
#endif
#if __has_include(<linux/aio_abi.h>) && defined(SYS_io_setup)
#include <linux/aio_abi.h>
#define HAVE_AIO 1
#endif
#endif

/* Opcodes and flags by number, so older kernel headers still build this file. */
enum { OP_READV = 1, OP_WRITEV = 2, OP_READ = 22, OP_WRITE = 23 };
#define SETUP_COOP_TASKRUN (1U << 8)
#define SETUP_SINGLE_ISSUER (1U << 12)
#define SETUP_DEFER_TASKRUN (1U << 13)
#define REGISTER_PROBE 8
#define OP_SUPPORTED (1U << 0)

static const char *const engine_names[NB_RIO_ENGINES] = {"auto", "io_uring", "aio", "threads"};

int nb_rio_engine_from_name(const char *name)
{
    for (int i = 0; i < NB_RIO_ENGINES; i++)
        if (strcmp(name, engine_names[i]) == 0)
            return i;
    return -1;
}

const char *nb_rio_engine_name(int engine)
{
    return engine >= 0 && engine < NB_RIO_ENGINES ? engine_names[engine] : "?";
}

/* ---- what every engine shares ---- */

typedef struct {
    uint64_t off, done; /* offset of the I/O and bytes transferred so far */
    int64_t t_sub;      /* MONOTONIC instant of its (first) submission */
    char *buf;
    struct iovec iov;
} rio_io;

typedef struct {
    const nb_randio_args *a;
    nb_result *r;
    uint64_t nblocks, rng, issued, drops;
    rio_map map; /* randommap: the blocks' order, pass by pass */
    int64_t dl; /* MONOTONIC stop, INT64_MAX = none */
    int stopping;
    rio_io *io;
    unsigned *free_idx, nfree;
    void *bufs;
} rio;

/* fio's loop_cache_invalidate (io_u.c): with invalidate=1, a time-based job whose random map
 * is used up drops the file's cached pages before its next pass, inside its window; so does
 * I/O number i when it opens a pass after the first. Returns 1 when it dropped. */
static int pass_drop(const nb_randio_args *a, uint64_t i)
{
    uint64_t n = a->size / a->block;
    if (!a->drop_each_pass || i == 0 || i % n)
        return 0;
    /* advice: fio ignores its failure too; the record's from_memory says what it did */
    posix_fadvise(a->fd, 0, (off_t)a->size, POSIX_FADV_DONTNEED);
    return 1;
}

static const char *verb(const nb_randio_args *a) { return a->write ? "write" : "read"; }

static int rio_init(rio *q, const nb_randio_args *a, nb_result *r, unsigned nio)
{
    memset(q, 0, sizeof *q);
    q->a = a;
    q->r = r;
    q->nblocks = a->size / a->block;
    q->rng = a->seed;
    map_init(&q->map, q->nblocks, a->seed);
    q->dl = INT64_MAX;
    q->io = calloc(nio, sizeof *q->io);
    q->free_idx = calloc(nio, sizeof *q->free_idx);
    /* one buffer per I/O in flight, aligned for O_DIRECT, touched (and for writes filled)
     * now so that no page fault lands in the timed window */
    uint64_t stride = (a->block + NB_ALIGN - 1) / NB_ALIGN * NB_ALIGN;
    q->bufs = q->io && q->free_idx ? nb_alloc_buffer(stride * nio, a->write) : NULL;
    if (!q->bufs)
        return nb_fail(r, ENOMEM, "allocating %u buffers of %llu bytes", nio,
                       (unsigned long long)a->block), r->err;
    for (unsigned i = 0; i < nio; i++) {
        q->io[i].buf = (char *)q->bufs + stride * i;
        q->free_idx[q->nfree++] = nio - 1 - i;
    }
    return 0;
}

static void rio_free(rio *q)
{
    free(q->io);
    free(q->free_idx);
    free(q->bufs);
}

static inline int can_issue(const rio *q)
{
    return !q->stopping && (!q->a->ops || q->issued < q->a->ops);
}

/* A fresh I/O in a free slot, stamped `t`; returns its index. */
static inline unsigned start_io(rio *q, int64_t t)
{
    unsigned i = q->free_idx[--q->nfree];
    rio_io *io = &q->io[i];
    q->drops += pass_drop(q->a, q->issued);
    io->off = (q->a->randommap ? map_index(&q->map, q->issued)
                               : draw_block(&q->rng, q->nblocks)) * q->a->block;
    io->done = 0;
    io->t_sub = t;
    q->issued++;
    return i;
}

/* Accounts a completion (res bytes or -errno) seen at `t`: 1 = the I/O is done, 0 = resubmit
 * the remainder, -1 = failed (recorded; no more I/Os are started). */
static int complete_io(rio *q, rio_io *io, int64_t res, int64_t t)
{
    const nb_randio_args *a = q->a;
    if (res < 0) {
        nb_fail(q->r, (int)-res, "%s of %llu bytes at offset %llu", verb(a),
                (unsigned long long)(a->block - io->done),
                (unsigned long long)(io->off + io->done));
        q->stopping = 1;
        return -1;
    }
    if (res == 0) {
        nb_set_error(q->r, a->write ? EIO : ENODATA,
                     "%s at offset %llu transferred nothing (past the end of the file?)",
                     verb(a), (unsigned long long)(io->off + io->done));
        q->stopping = 1;
        return -1;
    }
    io->done += (uint64_t)res;
    if (io->done < a->block)
        return 0;
    q->r->hist[nb_bucket((uint64_t)(t - io->t_sub))]++;
    q->r->ops++;
    q->r->bytes += a->block;
    NB_PROGRESS(q->r->bytes);
    return 1;
}

/* ---- io_uring ---- */
#ifdef HAVE_URING
typedef struct {
    int fd;
    unsigned *sq_head, *sq_tail, *sq_mask, *sq_array;
    unsigned *cq_head, *cq_tail, *cq_mask;
    struct io_uring_sqe *sqes;
    struct io_uring_cqe *cqes;
    void *sq_ptr, *cq_ptr;
    size_t sq_len, cq_len, sqes_len;
    int op_read, op_write; /* non-vectored where the kernel has them (5.6) */
} uring;

static int uring_enter(int fd, unsigned submit, unsigned wait, unsigned flags)
{
    return (int)syscall(__NR_io_uring_enter, fd, submit, wait, flags, NULL, 0);
}

/* io_uring_setup with fio's flags, dropping those an older kernel refuses. */
static int uring_create(unsigned entries, struct io_uring_params *p)
{
    static const unsigned tries[] = {
        SETUP_COOP_TASKRUN | SETUP_SINGLE_ISSUER | SETUP_DEFER_TASKRUN, SETUP_COOP_TASKRUN, 0};
    int fd = -1;
    for (unsigned i = 0; i < sizeof tries / sizeof *tries; i++) {
        memset(p, 0, sizeof *p);
        p->flags = tries[i];
        fd = (int)syscall(__NR_io_uring_setup, entries, p);
        if (fd >= 0 || errno != EINVAL)
            break;
    }
    return fd;
}

static void uring_close(uring *u)
{
    if (u->sqes && u->sqes != MAP_FAILED)
        munmap(u->sqes, u->sqes_len);
    if (u->cq_ptr && u->cq_ptr != MAP_FAILED && u->cq_ptr != u->sq_ptr)
        munmap(u->cq_ptr, u->cq_len);
    if (u->sq_ptr && u->sq_ptr != MAP_FAILED)
        munmap(u->sq_ptr, u->sq_len);
    if (u->fd >= 0)
        close(u->fd);
}

static int uring_open(uring *u, unsigned entries, nb_result *r)
{
    struct io_uring_params p;
    memset(u, 0, sizeof *u);
    u->fd = uring_create(entries, &p);
    if (u->fd < 0)
        return nb_fail(r, errno, "io_uring_setup(%u entries)", entries), r->err;
    u->sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
    u->cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
    if (p.features & IORING_FEAT_SINGLE_MMAP) {
        if (u->cq_len > u->sq_len)
            u->sq_len = u->cq_len;
        u->cq_len = u->sq_len;
    }
    u->sq_ptr = mmap(NULL, u->sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
                     u->fd, IORING_OFF_SQ_RING);
    if (u->sq_ptr == MAP_FAILED)
        goto fail;
    u->cq_ptr = (p.features & IORING_FEAT_SINGLE_MMAP)
                    ? u->sq_ptr
                    : mmap(NULL, u->cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
                           u->fd, IORING_OFF_CQ_RING);
    if (u->cq_ptr == MAP_FAILED)
        goto fail;
    u->sqes_len = p.sq_entries * sizeof(struct io_uring_sqe);
    u->sqes = mmap(NULL, u->sqes_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, u->fd,
                   IORING_OFF_SQES);
    if (u->sqes == MAP_FAILED)
        goto fail;
    char *sq = u->sq_ptr, *cq = u->cq_ptr;
    u->sq_head = (unsigned *)(sq + p.sq_off.head);
    u->sq_tail = (unsigned *)(sq + p.sq_off.tail);
    u->sq_mask = (unsigned *)(sq + p.sq_off.ring_mask);
    u->sq_array = (unsigned *)(sq + p.sq_off.array);
    u->cq_head = (unsigned *)(cq + p.cq_off.head);
    u->cq_tail = (unsigned *)(cq + p.cq_off.tail);
    u->cq_mask = (unsigned *)(cq + p.cq_off.ring_mask);
    u->cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
    /* IORING_OP_READ/WRITE (5.6) when the kernel says it has them, else READV/WRITEV (5.1) */
    u->op_read = OP_READV;
    u->op_write = OP_WRITEV;
    size_t plen = sizeof(struct io_uring_probe) + 256 * sizeof(struct io_uring_probe_op);
    struct io_uring_probe *probe = calloc(1, plen);
    if (probe && syscall(__NR_io_uring_register, u->fd, REGISTER_PROBE, probe, 256) == 0 &&
        probe->last_op >= OP_WRITE && (probe->ops[OP_READ].flags & OP_SUPPORTED) &&
        (probe->ops[OP_WRITE].flags & OP_SUPPORTED)) {
        u->op_read = OP_READ;
        u->op_write = OP_WRITE;
    }
    free(probe);
    return 0;
fail:
    nb_fail(r, errno, "mapping the io_uring rings");
    uring_close(u);
    return r->err;
}

/* Queues I/O i (its remainder when partly done); the next io_uring_enter submits it. */
static void uring_queue(uring *u, rio *q, unsigned i)
{
    rio_io *io = &q->io[i];
    unsigned tail = *u->sq_tail, idx = tail & *u->sq_mask;
    struct io_uring_sqe *sqe = &u->sqes[idx];
    uint64_t len = q->a->block - io->done;
    memset(sqe, 0, sizeof *sqe);
    sqe->fd = q->a->fd;
    sqe->off = io->off + io->done;
    sqe->user_data = i;
    if (u->op_read == OP_READ) {
        sqe->opcode = (uint8_t)(q->a->write ? u->op_write : u->op_read);
        sqe->addr = (uint64_t)(uintptr_t)(io->buf + io->done);
        sqe->len = (uint32_t)len;
    } else {
        io->iov.iov_base = io->buf + io->done;
        io->iov.iov_len = (size_t)len;
        sqe->opcode = (uint8_t)(q->a->write ? u->op_write : u->op_read);
        sqe->addr = (uint64_t)(uintptr_t)&io->iov;
        sqe->len = 1;
    }
    u->sq_array[idx] = idx;
    __atomic_store_n(u->sq_tail, tail + 1, __ATOMIC_RELEASE);
}

/* Submits the queued SQEs (and waits for `wait` completions); retries what the kernel
 * could not take yet. Returns 0, or an errno that ends the run. */
static int uring_submit(uring *u, unsigned *queued, unsigned *inflight, unsigned wait,
                        uint64_t *submits)
{
    for (;;) {
        int k = uring_enter(u->fd, *queued, wait, IORING_ENTER_GETEVENTS);
        if (k >= 0) {
            *submits += *queued > 0; /* a call that handed new I/Os over, not a bare wait */
            *queued -= (unsigned)k;
            *inflight += (unsigned)k;
            return 0;
        }
        int e = errno;
        if (e == EINTR)
            continue;
        if ((e == EAGAIN || e == EBUSY) && *inflight > 0)
            return 0; /* the caller reaps what completed and submits the rest later */
        return e;
    }
}

/* Returns the MONOTONIC instant of the last completion; leaves the buffers in use (and
 * *busy set) when the ring broke with I/Os still in flight. New I/Os are submitted `batch`
 * at a time (1: each as soon as it is issued, as fio's default iodepth_batch_submit). */
static int64_t uring_loop(uring *u, rio *q, int64_t s, int *busy)
{
    unsigned depth = q->a->iodepth, batch = q->a->batch ? q->a->batch : 1;
    unsigned inflight = 0, queued = 0;
    int64_t t = s;
    int e = 0;
    for (;;) {
        while (!e && q->nfree > 0 && can_issue(q)) {
            uring_queue(u, q, start_io(q, t));
            /* a full batch goes now unless it is the last: that one rides on the wait */
            if (++queued >= batch && q->nfree > 0 && can_issue(q))
                e = uring_submit(u, &queued, &inflight, 0, &q->r->submits);
        }
        if (!e && inflight + queued == 0)
            break;
        /* the rest, and wait for a completion unless one is already there */
        if (!e && (queued > 0 ||
                   *u->cq_head == __atomic_load_n(u->cq_tail, __ATOMIC_ACQUIRE)))
            e = uring_submit(u, &queued, &inflight, 1, &q->r->submits);
        if (e) {
            nb_fail(q->r, e, "io_uring_enter");
            *busy = inflight > 0;
            return nb_mono();
        }
        t = nb_mono();
        unsigned head = *u->cq_head, tail = __atomic_load_n(u->cq_tail, __ATOMIC_ACQUIRE);
        for (; head != tail; head++) {
            struct io_uring_cqe *c = &u->cqes[head & *u->cq_mask];
            unsigned i = (unsigned)c->user_data;
            inflight--;
            if (i < depth && complete_io(q, &q->io[i], c->res, t) == 0) {
                uring_queue(u, q, i); /* a short transfer: the rest, same submit stamp */
                queued++;
            } else if (i < depth) {
                q->free_idx[q->nfree++] = i;
            }
        }
        __atomic_store_n(u->cq_head, head, __ATOMIC_RELEASE);
        if (t >= q->dl)
            q->stopping = 1;
    }
    return t;
}
#endif

/* ---- Linux AIO ---- */
#ifdef HAVE_AIO
static int aio_loop(aio_context_t ctx, rio *q, int64_t s, int64_t *last, int *busy)
{
    unsigned depth = q->a->iodepth, inflight = 0, npend = 0;
    unsigned batch = q->a->batch ? q->a->batch : 1;
    struct iocb *cbs = calloc(depth, sizeof *cbs), **pend = calloc(depth, sizeof *pend);
    struct io_event *ev = calloc(depth, sizeof *ev);
    int64_t t = s;
    if (!cbs || !pend || !ev) {
        nb_fail(q->r, ENOMEM, "allocating AIO control blocks");
        goto out;
    }
    for (;;) {
        while (q->nfree > 0 && can_issue(q))
            pend[npend++] = &cbs[start_io(q, t)];
        for (unsigned k = 0; k < npend; k++) { /* (re)fill the control blocks to submit */
            unsigned i = (unsigned)(pend[k] - cbs);
            rio_io *io = &q->io[i];
            memset(pend[k], 0, sizeof *pend[k]);
            pend[k]->aio_data = i;
            pend[k]->aio_lio_opcode = q->a->write ? IOCB_CMD_PWRITE : IOCB_CMD_PREAD;
            pend[k]->aio_fildes = (uint32_t)q->a->fd;
            pend[k]->aio_buf = (uint64_t)(uintptr_t)(io->buf + io->done);
            pend[k]->aio_nbytes = q->a->block - io->done;
            pend[k]->aio_offset = (int64_t)(io->off + io->done);
        }
        if (inflight + npend == 0)
            break;
        /* `batch` control blocks per io_submit (1: one each, as fio's default); io_submit
         * plugs the block queue around larger batches, which delays their dispatch */
        while (npend > 0) {
            long want = npend < batch ? (long)npend : (long)batch;
            long k = syscall(SYS_io_submit, ctx, want, pend);
            q->r->submits += k > 0;
            if (k < 0) {
                int e = errno;
                if (e == EINTR)
                    continue;
                if (e == EAGAIN && inflight > 0)
                    break; /* reap first, submit the rest after */
                nb_fail(q->r, e, "io_submit of %ld %ss", want, verb(q->a));
                q->stopping = 1;
                for (unsigned j = 0; j < npend; j++) /* never submitted */
                    q->free_idx[q->nfree++] = (unsigned)(pend[j] - cbs);
                npend = 0;
                break;
            }
            memmove(pend, pend + k, (npend - (unsigned)k) * sizeof *pend);
            npend -= (unsigned)k;
            inflight += (unsigned)k;
            if (k < want)
                break;
        }
        if (inflight == 0)
            continue;
        long n = syscall(SYS_io_getevents, ctx, 1L, (long)depth, ev, NULL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            nb_fail(q->r, errno, "io_getevents");
            *busy = 1;
            t = nb_mono();
            goto out;
        }
        t = nb_mono();
        for (long j = 0; j < n; j++) {
            unsigned i = (unsigned)ev[j].data;
            inflight--;
            if (i >= depth)
                continue;
            if (complete_io(q, &q->io[i], (int64_t)ev[j].res, t) == 0)
                pend[npend++] = &cbs[i];
            else
                q->free_idx[q->nfree++] = i;
        }
        if (t >= q->dl)
            q->stopping = 1;
    }
out:
    *last = t;
    if (!*busy) {
        free(cbs);
        free(pend);
    }
    free(ev);
    return q->r->err;
}
#endif

/* ---- threads: iodepth threads of pread/pwrite ---- */

typedef struct rio_shared rio_shared;
typedef struct {
    pthread_t tid;
    rio_shared *sh;
    unsigned idx;
    char *buf;
    uint64_t rng;
    rio_map map; /* randommap: the blocks of the shared index's passes */
    nb_result r;
    int64_t last;
} rio_worker;

struct rio_shared {
    const nb_randio_args *a;
    uint64_t nblocks;
    int64_t dl;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int go; /* 0 wait, 1 run, 2 give up */
    atomic_uint_fast64_t claimed, drops;
    atomic_uint_fast64_t dropped; /* drop_each_pass: the last pass whose drop is done */
    atomic_int stop;
};

/* A later pass's reads wait for its drop, done by the thread that opens the pass (after the
 * pass before's): else the other threads read the pass's first blocks from the pages of the
 * pass before, as no single fio job can. */
static void pass_gate(rio_shared *sh, uint64_t i)
{
    uint64_t pass = i / sh->nblocks;
    if (i % sh->nblocks == 0) {
        while (atomic_load(&sh->dropped) < pass - 1)
            sched_yield();
        atomic_fetch_add(&sh->drops, (uint64_t)pass_drop(sh->a, i));
        atomic_store(&sh->dropped, pass);
        return;
    }
    while (atomic_load(&sh->dropped) < pass)
        sched_yield();
}

/* Thread i's draws: a stream of its own. */
static uint64_t thread_seed(const nb_randio_args *a, unsigned i)
{
    return a->seed + 0x632be59bd9b4e019ULL * i;
}

static void worker_loop(rio_worker *w, int64_t t)
{
    rio_shared *sh = w->sh;
    const nb_randio_args *a = sh->a;
    while (!atomic_load_explicit(&sh->stop, memory_order_relaxed)) {
        /* the map's index is shared: the threads take the blocks of one pass between them,
         * as the I/Os in flight of fio's one job do */
        uint64_t i = a->ops || a->randommap ? atomic_fetch_add(&sh->claimed, 1) : 0;
        if (a->ops && i >= a->ops)
            break;
        if (a->drop_each_pass && i >= sh->nblocks)
            pass_gate(sh, i);
        uint64_t blk = a->randommap ? map_index(&w->map, i) : draw_block(&w->rng, sh->nblocks);
        uint64_t off = blk * a->block, done = 0;
        while (done < a->block) {
            ssize_t k = a->write ? pwrite(a->fd, w->buf + done, a->block - done,
                                          (off_t)(off + done))
                                 : pread(a->fd, w->buf + done, a->block - done,
                                         (off_t)(off + done));
            if (k < 0 && errno == EINTR)
                continue;
            if (k <= 0) {
                if (k < 0)
                    nb_fail(&w->r, errno, "%s of %llu bytes at offset %llu", verb(a),
                            (unsigned long long)(a->block - done),
                            (unsigned long long)(off + done));
                else
                    nb_set_error(&w->r, a->write ? EIO : ENODATA,
                                 "%s at offset %llu transferred nothing (past the end of the "
                                 "file?)", verb(a), (unsigned long long)(off + done));
                atomic_store(&sh->stop, 1);
                w->last = nb_mono();
                return;
            }
            done += (uint64_t)k;
        }
        int64_t t2 = nb_mono();
        w->r.hist[nb_bucket((uint64_t)(t2 - t))]++;
        w->r.ops++;
        w->r.bytes += a->block;
        /* threads share the one counter: an atomic add per I/O (far below an I/O's cost) */
        __atomic_fetch_add(&nb_progress, a->block, __ATOMIC_RELAXED);
        t = t2;
        if (t >= sh->dl)
            break;
    }
    w->last = t;
}

static void *worker_main(void *arg)
{
    rio_worker *w = arg;
    rio_shared *sh = w->sh;
    pthread_mutex_lock(&sh->lock);
    while (sh->go == 0)
        pthread_cond_wait(&sh->cond, &sh->lock);
    int go = sh->go;
    pthread_mutex_unlock(&sh->lock);
    if (go == 1)
        worker_loop(w, nb_mono());
    return NULL;
}

static int threads_run(const nb_randio_args *a, int64_t t0_ns, int64_t spin_ns, nb_result *r,
                       int64_t *start, int64_t *last, nb_randio_out *out)
{
    unsigned n = a->iodepth;
    rio_shared sh = {.a = a, .nblocks = a->size / a->block, .dl = INT64_MAX, .go = 0};
    pthread_mutex_init(&sh.lock, NULL);
    pthread_cond_init(&sh.cond, NULL);
    atomic_init(&sh.claimed, 0);
    atomic_init(&sh.drops, 0);
    atomic_init(&sh.dropped, 0);
    atomic_init(&sh.stop, 0);
    uint64_t stride = (a->block + NB_ALIGN - 1) / NB_ALIGN * NB_ALIGN;
    rio_worker *w = calloc(n, sizeof *w);
    char *bufs = w ? nb_alloc_buffer(stride * n, a->write) : NULL;
    unsigned started = 1; /* worker 0 is this thread */
    if (!bufs) {
        nb_fail(r, ENOMEM, "allocating %u buffers of %llu bytes", n,
                (unsigned long long)a->block);
        goto out;
    }
    for (unsigned i = 0; i < n; i++) {
        w[i].sh = &sh;
        w[i].idx = i;
        w[i].buf = bufs + stride * i;
        w[i].rng = thread_seed(a, i); /* distinct_draws below replays it */
        map_init(&w[i].map, sh.nblocks, a->seed);        /* one map: the same keys */
        w[i].r.hist = calloc(HIST_BUCKETS, sizeof *w[i].r.hist);
        if (!w[i].r.hist) {
            nb_fail(r, ENOMEM, "allocating latency histograms");
            goto out;
        }
    }
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    for (; started < n; started++) {
        int e = pthread_create(&w[started].tid, &attr, worker_main, &w[started]);
        if (e) {
            nb_fail(r, e, "starting %u I/O threads (iodepth)", n);
            break;
        }
    }
    pthread_attr_destroy(&attr);
    if (r->err) { /* release the threads that did start, without doing any I/O */
        pthread_mutex_lock(&sh.lock);
        sh.go = 2;
        pthread_cond_broadcast(&sh.cond);
        pthread_mutex_unlock(&sh.lock);
        goto join;
    }
    int64_t s = nb_begin(r, t0_ns, spin_ns);
    *start = s;
    pthread_mutex_lock(&sh.lock);
    sh.dl = a->deadline_ns ? s + (a->deadline_ns - r->start_ns) : INT64_MAX;
    sh.go = 1;
    pthread_cond_broadcast(&sh.cond);
    pthread_mutex_unlock(&sh.lock);
    worker_loop(&w[0], s);
join:
    for (unsigned i = 1; i < started; i++)
        pthread_join(w[i].tid, NULL);
    if (r->err)
        goto out;
    *last = *start;
    for (unsigned i = 0; i < n; i++) {
        if (w[i].r.err && !r->err) {
            r->err = w[i].r.err;
            memcpy(r->msg, w[i].r.msg, sizeof r->msg);
        }
        r->ops += w[i].r.ops;
        r->bytes += w[i].r.bytes;
        for (int b = 0; b < HIST_BUCKETS; b++)
            r->hist[b] += w[i].r.hist[b];
        if (w[i].last > *last)
            *last = w[i].last;
    }
    if (!a->randommap) { /* each thread's draws replayed (its stream, its I/Os) */
        uint64_t *seeds = calloc(2 * (size_t)n, sizeof *seeds);
        for (unsigned i = 0; seeds && i < n; i++) {
            seeds[i] = thread_seed(a, i);
            seeds[n + i] = w[i].r.ops;
        }
        out->distinct = seeds ? distinct_draws(sh.nblocks, seeds, seeds + n, n) : UINT64_MAX;
        free(seeds);
    }
    out->drops = atomic_load(&sh.drops);
out:
    for (unsigned i = 0; w && i < n; i++)
        free(w[i].r.hist);
    free(w);
    free(bufs);
    pthread_cond_destroy(&sh.cond);
    pthread_mutex_destroy(&sh.lock);
    return r->err;
}

/* ---- probing and the entry point ---- */

int nb_randio_probe(int engine, unsigned iodepth, char *msg, size_t msglen)
{
    int err = 0;
    if (engine == NB_RIO_AUTO || engine == NB_RIO_URING) {
#ifdef HAVE_URING
        struct io_uring_params p;
        int fd = uring_create(iodepth, &p);
        if (fd >= 0) {
            close(fd);
            return NB_RIO_URING;
        }
        err = nb_fail_msg(msg, msglen, errno, "io_uring_setup(%u entries)", iodepth);
#else
        err = ENOSYS;
        snprintf(msg, msglen, "io_uring: built without <linux/io_uring.h>");
#endif
        if (engine == NB_RIO_URING)
            return -err;
    }
    if (engine == NB_RIO_AUTO || engine == NB_RIO_AIO) {
#ifdef HAVE_AIO
        aio_context_t ctx = 0;
        if (syscall(SYS_io_setup, iodepth, &ctx) == 0) {
            syscall(SYS_io_destroy, ctx);
            return NB_RIO_AIO;
        }
        err = nb_fail_msg(msg, msglen, errno, "io_setup(%u)", iodepth);
#else
        err = ENOSYS;
        snprintf(msg, msglen, "aio: built without <linux/aio_abi.h>");
#endif
        if (engine == NB_RIO_AIO)
            return -err;
    }
    if (engine == NB_RIO_AUTO || engine == NB_RIO_THREADS)
        return NB_RIO_THREADS;
    snprintf(msg, msglen, "unknown engine %d", engine);
    return -EINVAL;
}

static int check_args(const nb_randio_args *a, nb_result *r)
{
    if (a->block == 0)
        nb_set_error(r, EINVAL, "block must be at least 1 byte");
    else if (a->size < a->block)
        nb_set_error(r, EINVAL, "size (%llu bytes) must hold at least one block (%llu bytes)",
                     (unsigned long long)a->size, (unsigned long long)a->block);
    else if (a->iodepth == 0)
        nb_set_error(r, EINVAL, "iodepth must be at least 1");
    else if (!a->ops && !a->deadline_ns)
        nb_set_error(r, EINVAL, "random I/O needs a number of ops or a deadline");
    else if (a->engine <= NB_RIO_AUTO || a->engine >= NB_RIO_ENGINES)
        nb_set_error(r, EINVAL, "engine must be io_uring, aio or threads");
    return r->err;
}

static void end_fsync(const nb_randio_args *a, nb_result *r, int64_t *last)
{
    if (!a->write || !a->fsync_end || r->err)
        return;
    int rc = fsync(a->fd);
    int64_t t2 = nb_mono();
    if (rc != 0)
        nb_fail(r, errno, "fsync after %llu bytes", (unsigned long long)r->bytes);
    r->fsync_ns = t2 - *last;
    *last = t2;
}

int nb_run_randio(const nb_randio_args *a, int64_t t0_ns, int64_t spin_ns, nb_result *r,
                  nb_randio_out *out)
{
    out->distinct = UINT64_MAX;
    out->drops = 0;
    if (check_args(a, r))
        return r->err;
    r->hist = calloc(HIST_BUCKETS, sizeof *r->hist);
    if (!r->hist)
        return nb_fail(r, ENOMEM, "allocating the latency histogram"), r->err;
    int64_t s = 0, last = 0;
    if (a->engine == NB_RIO_THREADS) {
        if (threads_run(a, t0_ns, spin_ns, r, &s, &last, out) == 0 || s) {
            end_fsync(a, r, &last);
            nb_end(r, s, last);
        }
        if (a->randommap) /* indices 0..ops-1 of the passes: a pass's blocks are distinct */
            out->distinct = r->ops < a->size / a->block ? r->ops : a->size / a->block;
        return r->err;
    }
    rio q;
    if (rio_init(&q, a, r, a->iodepth)) {
        rio_free(&q);
        return r->err;
    }
    int busy = 0; /* the kernel may still write into the buffers: leak them, never free */
#ifdef HAVE_URING
    if (a->engine == NB_RIO_URING) {
        uring u;
        if (uring_open(&u, a->iodepth, r) == 0) {
            s = nb_begin(r, t0_ns, spin_ns);
            q.dl = a->deadline_ns ? s + (a->deadline_ns - r->start_ns) : INT64_MAX;
            last = uring_loop(&u, &q, s, &busy);
            end_fsync(a, r, &last);
            nb_end(r, s, last);
            if (!busy)
                uring_close(&u);
        }
    }
#else
    if (a->engine == NB_RIO_URING)
        nb_set_error(r, ENOSYS, "io_uring: built without <linux/io_uring.h>");
#endif
#ifdef HAVE_AIO
    if (a->engine == NB_RIO_AIO) {
        aio_context_t ctx = 0;
        if (syscall(SYS_io_setup, a->iodepth, &ctx) != 0) {
            nb_fail(r, errno, "io_setup(%u)", a->iodepth);
        } else {
            s = nb_begin(r, t0_ns, spin_ns);
            q.dl = a->deadline_ns ? s + (a->deadline_ns - r->start_ns) : INT64_MAX;
            aio_loop(ctx, &q, s, &last, &busy);
            end_fsync(a, r, &last);
            nb_end(r, s, last);
            if (!busy)
                syscall(SYS_io_destroy, ctx);
        }
    }
#else
    if (a->engine == NB_RIO_AIO)
        nb_set_error(r, ENOSYS, "aio: built without <linux/aio_abi.h>");
#endif
    if (a->randommap)
        out->distinct = q.issued < q.nblocks ? q.issued : q.nblocks;
    else /* the one stream's draws replayed, after the window */
        out->distinct = distinct_draws(q.nblocks, &a->seed, &q.issued, 1);
    out->drops = q.drops;
    if (!busy)
        rio_free(&q);
    return r->err;
}
