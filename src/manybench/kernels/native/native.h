/* manybench native kernels: shared declarations.
 *
 * Everything declared here is plain C with no Python in it: module.c (the core calls) and
 * the bind_*.c files (one per kernel family) are the only files that talk to the interpreter,
 * and they drop the GIL around every call that can block or loop. Errors are returned as an
 * errno value plus a one-line message in the result, never by printing.
 */
#ifndef MANYBENCH_NATIVE_H
#define MANYBENCH_NATIVE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

/* Log-linear latency histogram (see API.md): relative bucket width <= 1/32. */
#define HIST_BUCKETS 1920
#define NB_MSG_LEN 256
#define NB_ALIGN 4096 /* buffer alignment: enough for O_DIRECT on any logical block size */

/* What a timed call measured. Times are ns; *_ns REALTIME, mono values MONOTONIC. */
typedef struct {
    int64_t start_ns, end_ns; /* REALTIME first and last instant of timed work */
    int64_t elapsed_ns;       /* MONOTONIC end - start */
    int64_t armed_ns;         /* REALTIME when the call began waiting for T0 */
    int64_t fsync_ns;         /* io.write: time of the final fsync (inside elapsed), else 0 */
    uint64_t submits;         /* randio io_uring/aio: system calls that handed I/Os to the
                                 kernel (batching shows here), else 0 */
    uint64_t ops, bytes;
    int err;                  /* errno, 0 = fine */
    char msg[NB_MSG_LEN];     /* "" = fine */
    uint64_t *hist;           /* HIST_BUCKETS counts, or NULL when the call keeps none */
} nb_result;

/* ---- timing.c ---- */
static inline int64_t nb_clock(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts); /* cannot fail for REALTIME/MONOTONIC with a valid pointer */
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
static inline int64_t nb_now(void) { return nb_clock(CLOCK_REALTIME); }
static inline int64_t nb_mono(void) { return nb_clock(CLOCK_MONOTONIC); }

/* Bucket of a latency of v ns: v < 64 -> v, else 32 sub-buckets per power of two. */
static inline unsigned nb_bucket(uint64_t v)
{
    if (v < 64)
        return (unsigned)v;
    unsigned e = 63u - (unsigned)__builtin_clzll(v);
    return 64u + (e - 6u) * 32u + (unsigned)((v >> (e - 5u)) - 32u);
}

/* Progress of the timed call under way (bytes or ops done so far), for the slot's sampler
 * thread (node/sampler.py) to read at its interval: one relaxed store per operation in the
 * loop (a plain mov on x86), no lock, no syscall. nb_begin resets it before the wait. */
extern uint64_t nb_progress;
#define NB_PROGRESS(v) __atomic_store_n(&nb_progress, (uint64_t)(v), __ATOMIC_RELAXED)
static inline uint64_t nb_progress_now(void)
{
    return __atomic_load_n(&nb_progress, __ATOMIC_RELAXED);
}

int64_t nb_wait_until(int64_t t0_ns, int64_t spin_ns);
int nb_set_timerslack(unsigned long ns);
/* Record the first error: nb_fail writes "<context>: <strerror(err)>", nb_set_error the
 * formatted text as it is. Both are thread-safe (no static strerror buffer). */
void nb_fail(nb_result *r, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void nb_set_error(nb_result *r, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Same for a bare message buffer (calls that return no result dict). */
int nb_fail_msg(char *msg, size_t len, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Stamp armed_ns, wait for T0, stamp start_ns; returns the MONOTONIC start. */
int64_t nb_begin(nb_result *r, int64_t t0_ns, int64_t spin_ns);
/* Stamp end_ns and elapsed_ns given the MONOTONIC instants of start and last work. */
void nb_end(nb_result *r, int64_t start_mono, int64_t last_mono);
void nb_set_settle(int64_t ns); /* rest after every end stamp (0 = none); see timing.c */
void nb_run_null(nb_result *r, int64_t t0_ns, int64_t spin_ns);

/* ---- io.c ---- */
typedef struct {
    int fd, write, fsync_end, direct;
    uint64_t block, size;  /* size 0 = no size limit */
    int64_t deadline_ns;   /* absolute REALTIME stop, 0 = none */
} nb_io_args;

int nb_run_io(const nb_io_args *a, int64_t t0_ns, int64_t spin_ns, nb_result *r);
/* Extends the file open on fd to size bytes (a pattern, fsync'd); label names it in msg. */
int nb_layout(int fd, const char *label, uint64_t size, uint64_t block, char *msg,
              size_t msglen);

/* ---- scratch.c ---- */
/* *out = root/rel opened by descriptor: directories O_NOFOLLOW | O_DIRECTORY from root (made
 * 0700 when flags hold O_CREAT), the file O_NOFOLLOW, then checked: a regular file with one
 * link (O_TRUNC applied after the check); with O_DIRECTORY rel names a directory, made like
 * the others. 0 or an errno, msg saying what was found. */
int nb_scratch_open(const char *root, const char *rel, int flags, int mode, int *out,
                    char *msg, size_t len);
/* *out = the directory root/rel, reached as above (made when `create`); with `private` every
 * directory below root must be this user's and writable by no one else (EPERM otherwise):
 * one that others may change could have an entry swapped for a link between a check and a
 * use by path. */
int nb_scratch_dir(const char *root, const char *rel, int create, int private, int *out,
                   char *msg, size_t len);
/* The last step of nb_scratch_open: name inside the open directory dfd, opened O_NOFOLLOW |
 * O_NONBLOCK and checked (shown: its path, for messages). */
int nb_scratch_openat(int dfd, const char *name, const char *shown, int flags, int mode,
                      int *out, char *msg, size_t len);
/* EPERM with msg naming what *st is when it is not `want` (S_IFDIR; S_IFREG: a regular file
 * with one link), else 0. nb_scratch_check: the same for what lstat finds at dfd/name (an
 * errno when it finds nothing). */
int nb_scratch_refusal(const struct stat *st, mode_t want, const char *shown, char *msg,
                       size_t len);
int nb_scratch_check(int dfd, const char *name, mode_t want, const char *shown, char *msg,
                     size_t len);
const char *nb_scratch_kind(mode_t m); /* "a symbolic link", "a FIFO", ... */
/* Preallocate [0, size) of the open file (fallocate mode 0, as fio); 0, or an errno other
 * than "not supported here" (then nothing is preallocated and 0 is returned). */
int nb_preallocate(int fd, uint64_t size);
void *nb_alloc_buffer(uint64_t block, int fill); /* aligned; filled with a pattern if asked */
/* Pages of [0, size) of the open file fd in the page cache (mincore); 0 or an errno. */
int nb_resident(int fd, uint64_t size, uint64_t *resident, uint64_t *pages);

/* ---- spawn.c ---- */
/* path/argv/envp are ready-made (argv and envp NULL-terminated; envp NULL = inherit). */
int nb_spawn(const char *path, char *const argv[], char *const envp[], const char *cwd,
             int out_fd, int err_fd, int *pid, int *ctl_fd, int *stamp_fd);
int nb_release(int ctl_fd, int64_t t0_ns, int64_t spin_ns);
int nb_read_stamp(int stamp_fd, int64_t *start_ns, int64_t *start_mono_ns, int *child_err);
int nb_install_term_handler(void);
void nb_forget_child(int pid);
void nb_forget_children(void);
void nb_track_child(int pid); /* a group leader the SIGTERM handler must kill too */
int nb_set_kill_file(const char *path);

/* ---- numa.c ---- */
#define NB_MAX_NODES 1024 /* memory nodes a policy mask can name */
/* A set of memory nodes as the policy calls take it. Its size travels with its type, so a
 * call and its caller cannot disagree on it (a length passed beside an array did: the get
 * cleared 135 bytes of a caller's 128). */
typedef struct {
    unsigned long bits[NB_MAX_NODES / (8 * sizeof(unsigned long))];
} nb_nodemask;
#define NB_NODE_BITS (8 * sizeof(unsigned long))
static inline void nb_nodemask_add(nb_nodemask *m, int node)
{
    m->bits[node / NB_NODE_BITS] |= 1UL << (node % NB_NODE_BITS);
}
static inline int nb_nodemask_has(const nb_nodemask *m, int node)
{
    return (int)(m->bits[node / NB_NODE_BITS] >> (node % NB_NODE_BITS) & 1UL);
}
int nb_set_mempolicy(int mode, const nb_nodemask *nodes);
int nb_get_mempolicy(int *mode, nb_nodemask *nodes); /* nodes: all of it written */

#endif
