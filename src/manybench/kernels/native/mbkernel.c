/* mbkernel: the built-in kernels as a standalone executable, for slots whose work runs
 * inside a launcher (a variant's `wrap`: ch-run, apptainer, podman ...). No Python: the same
 * C loops as the extension (timing.c, io.c, stream.c, himeno.c, numa.c).
 *
 *   mbkernel run KERNEL key=value...
 *
 * Line protocol on stdin/stdout (kernels/wrapped.py drives it):
 *   -> "started"                    first thing: the wrap's start-up ends here
 *   -> "ready"                      prepared (file opened, data laid out), or
 *   -> "error ERRNO TEXT"           prepare failed (exit 1)
 *   <- "go T0_NS SPIN_NS [SETTLE_NS]"  T0 on CLOCK_REALTIME (settle: rest after the end
 *                                   stamp, as slots sharing a core); EOF cancels (exit 0)
 *   -> "result key=value ... msg=TEXT"   after the end stamp; then exit
 * The wait for T0, the stamps and the timed loop are the slot's own (nb_begin/nb_end), so a
 * wrapped record measures exactly what a plain one does. Parameters are the Python kernels'
 * canonical values (sizes in bytes, durations in ns), checked there.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "himeno.h"
#include "native.h"
#include "stream.h"

#define MAX_ARGS 32
#define NB_STR_(x) #x
#define NB_STR(x) NB_STR_(x)

static int nargs;
static char *keys[MAX_ARGS], *vals[MAX_ARGS];

static const char *arg(const char *key, const char *dflt)
{
    for (int i = 0; i < nargs; i++)
        if (strcmp(keys[i], key) == 0)
            return vals[i];
    return dflt;
}

static void fail(int err, const char *msg);

/* A whole decimal number or nothing: "1GiB" is refused, not read as 1 (the Python side sends
 * canonical values; anything else is a caller's mistake that must not change the work). */
static long long num(const char *key, long long dflt)
{
    const char *v = arg(key, NULL);
    if (!v)
        return dflt;
    char *end, msg[160];
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (end == v || *end || errno) {
        snprintf(msg, sizeof msg, "%s=%.100s: not a whole number", key, v);
        fail(EINVAL, msg);
    }
    return n;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
}

static void fail(int err, const char *msg)
{
    say("error %d %s\n", err ? err : EIO, msg);
    exit(1);
}

/* ---- the kernels: prepare before "ready", run after "go" ---- */

typedef struct {
    nb_io_args io;
    uint64_t duration_ns;
    double cached_fraction;
    int cache_dropped, is_io;
    nb_stream *stream;
    int ntimes;
    int64_t *times;
    nb_himeno *himeno;
    int iterations;
    float gosa, gosa1;
} state;

/* The file root/path, reached as the slots reach it (scratch.c): every directory by
 * descriptor, a link, FIFO, socket or device found there refused by name. A read's file is
 * laid out through the descriptor it was checked with, and read through one that must hold
 * the same inode. */
static void prepare_io(state *s, int write)
{
    char msg[NB_MSG_LEN];
    const char *root = arg("root", NULL), *path = arg("path", NULL);
    if (!root || !path)
        fail(EINVAL, "root= and path= needed");
    s->is_io = 1;
    s->io.write = write;
    s->io.block = (uint64_t)num("block", 1 << 20);
    s->io.size = (uint64_t)num("size", 0);
    s->io.direct = (int)num("direct", 0);
    s->duration_ns = (uint64_t)num("duration_ns", 0);
    int flags = (write ? O_WRONLY | O_CREAT | O_TRUNC : O_RDONLY) | (s->io.direct ? O_DIRECT : 0);
    int laid = -1, e;
    if (write) {
        s->io.fsync_end = (int)num("fsync", 1);
    } else {
        e = nb_scratch_open(root, path, O_RDWR | O_CREAT, 0600, &laid, msg, sizeof msg);
        if (!e)
            e = nb_layout(laid, path, s->io.size, s->io.block, msg, sizeof msg);
        if (e)
            fail(e, msg);
    }
    e = nb_scratch_open(root, path, flags, 0600, &s->io.fd, msg, sizeof msg);
    if (e)
        fail(e, msg);
    if (laid >= 0) {
        struct stat a, b;
        if (fstat(laid, &a) != 0 || fstat(s->io.fd, &b) != 0 || a.st_dev != b.st_dev ||
            a.st_ino != b.st_ino)
            fail(EPERM, "the file was replaced while it was laid out");
        close(laid);
    }
    if (write) { /* as io.py: fio's fallocate=native and fadvise_hint, before T0 */
        int e = num("fallocate", 0) && !s->duration_ns ? nb_preallocate(s->io.fd, s->io.size)
                                                       : 0;
        if (!e)
            e = posix_fadvise(s->io.fd, 0, 0, POSIX_FADV_SEQUENTIAL);
        if (e) {
            nb_fail_msg(msg, sizeof msg, e, "before the writes (fallocate, fadvise)");
            fail(e, msg);
        }
    }
    if (!write) { /* as pagecache.py: drop (fsync + DONTNEED) unless keep, then count */
        uint64_t size = s->io.size, res = 0, pages = 0;
        if (!size) {
            struct stat st;
            size = fstat(s->io.fd, &st) == 0 ? (uint64_t)st.st_size : 0;
        }
        s->cache_dropped = strcmp(arg("cache", "drop"), "drop") == 0;
        int e = 0;
        if (s->cache_dropped && fsync(s->io.fd) != 0)
            e = errno;
        if (!e && s->cache_dropped)
            e = posix_fadvise(s->io.fd, 0, 0, POSIX_FADV_DONTNEED);
        if (!e && size)
            e = nb_resident(s->io.fd, size, &res, &pages);
        if (!e) /* a larger read-ahead window, as fio's fadvise_hint */
            e = posix_fadvise(s->io.fd, 0, 0, POSIX_FADV_SEQUENTIAL);
        if (e) {
            nb_fail_msg(msg, sizeof msg, e, "before the reads (fsync, fadvise, mincore)");
            fail(e, msg);
        }
        s->cached_fraction = pages ? (double)res / (double)pages : 0.0;
        if (s->duration_ns) /* time-based: size is the file's extent, reads wrap */
            s->io.size = 0;
    }
}

static void prepare_stream(state *s)
{
    char msg[NB_MSG_LEN] = "";
    s->ntimes = (int)num("ntimes", 10);
    int e = nb_stream_new((uint64_t)num("elements", 20000000), (int)num("threads", 1),
                          &s->stream, msg, sizeof msg);
    if (e)
        fail(e, msg);
    s->times = calloc((size_t)NB_STREAM_KERNELS * (size_t)s->ntimes, sizeof *s->times);
    if (!s->times)
        fail(ENOMEM, "mem.stream: times");
}

/* himeno.py's _calibrate: a rehearsal grown 4x until it lasts 20 ms (or a tenth of the
 * target), then as many iterations as fit in `seconds`. */
static int calibrate(nb_himeno *h, double seconds)
{
    int nn = NB_HIMENO_REHEARSAL;
    double cpu;
    for (;;) {
        int64_t t = nb_mono();
        nb_himeno_jacobi(h, nn);
        cpu = (double)(nb_mono() - t) / 1e9;
        nb_himeno_reset(h);
        double floor = seconds / 10 < 0.02 ? seconds / 10 : 0.02;
        if (cpu >= floor || nn >= 1 << 20)
            break;
        nn *= 4;
    }
    if (cpu <= 0)
        return nn;
    long long n = (long long)(seconds / (cpu / nn));
    return n < 1 ? 1 : n > 0x7fffffff ? 0x7fffffff : (int)n;
}

static void prepare_himeno(state *s)
{
    char msg[NB_MSG_LEN] = "";
    int e = nb_himeno_new((int)num("mimax", 65), (int)num("mjmax", 65), (int)num("mkmax", 129),
                          (int)num("threads", 1), &s->himeno, msg, sizeof msg);
    if (e)
        fail(e, msg);
    s->iterations = (int)num("iterations", 0);
    if (s->iterations == 0)
        s->iterations = calibrate(s->himeno, (double)num("seconds_ns", 1000000000) / 1e9);
    nb_himeno_jacobi(s->himeno, NB_HIMENO_REHEARSAL); /* kept, as himeno.py's _prepare */
}

static void run(const char *kernel, state *s, int64_t t0, int64_t spin, nb_result *r)
{
    if (strcmp(kernel, "null") == 0) {
        nb_run_null(r, t0, spin);
    } else if (s->is_io) {
        s->io.deadline_ns = s->duration_ns ? t0 + (int64_t)s->duration_ns : 0;
        nb_run_io(&s->io, t0, spin, r);
    } else if (s->stream) {
        nb_stream_run(s->stream, s->ntimes, s->times, t0, spin, r);
    } else if (s->himeno) {
        nb_himeno_run(s->himeno, s->iterations, t0, spin, &s->gosa, &s->gosa1, r);
    }
}

/* ---- what the process ran with, as kernels/binding.py reads it back ---- */

static void put_status(const char *field, const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[4096];
    size_t n = strlen(field);
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, field, n) == 0 && line[n] == ':') {
            char *v = line + n + 1;
            v += strspn(v, " \t");
            v[strcspn(v, "\n")] = 0;
            printf(" %s=%s", key, v);
            break;
        }
    }
    if (f)
        fclose(f);
}

static void put_mempolicy(void)
{
    static const char *names[] = {"default", "preferred", "bind", "interleave", "local",
                                  "preferred_many", "weighted_interleave"};
    nb_nodemask mask;
    int mode = 0;
    if (nb_get_mempolicy(&mode, &mask) != 0)
        return;
    mode &= 0xff;
    if (mode < 7)
        printf(" mempolicy=%s", names[mode]);
    else
        printf(" mempolicy=%d", mode);
    if (mode == 0)
        return;
    /* the nodes as a Linux list: "0-1,3" */
    char sep = ':';
    for (int i = 0; i < NB_MAX_NODES; i++) {
        if (!nb_nodemask_has(&mask, i))
            continue;
        int j = i;
        while (j + 1 < NB_MAX_NODES && nb_nodemask_has(&mask, j + 1))
            j++;
        printf(j > i ? "%c%d-%d" : "%c%d", sep, i, j);
        sep = ',';
        i = j;
    }
}

static void put_result(const state *s, const nb_result *r, int64_t cpu_ns)
{
    printf("result start_ns=%" PRId64 " end_ns=%" PRId64 " elapsed_ns=%" PRId64
           " armed_ns=%" PRId64 " ops=%" PRIu64 " bytes=%" PRIu64 " errno=%d fsync_ns=%" PRId64
           " cpu_ns=%" PRId64,
           r->start_ns, r->end_ns, r->elapsed_ns, r->armed_ns, r->ops, r->bytes, r->err,
           r->fsync_ns, cpu_ns);
    put_status("Cpus_allowed_list", "cpus_allowed");
    put_status("Mems_allowed_list", "mems_allowed");
    put_mempolicy();
    if (s->is_io && !s->io.write)
        printf(" cache_dropped=%d cached_fraction=%.6f", s->cache_dropped, s->cached_fraction);
    if (s->himeno)
        printf(" gosa=%.9g gosa1=%.9g iterations=%d", s->gosa, s->gosa1, s->iterations);
    for (int j = 0; s->stream && j < NB_STREAM_KERNELS; j++) {
        printf(" times%d=", j);
        for (int k = 0; k < s->ntimes; k++)
            printf(k ? ",%" PRId64 : "%" PRId64, s->times[j * s->ntimes + k]);
    }
    if (r->hist) { /* sparse: bucket:count,... */
        char sep = '=';
        printf(" hist");
        for (int b = 0; b < HIST_BUCKETS; b++)
            if (r->hist[b]) {
                printf("%c%d:%" PRIu64, sep, b, r->hist[b]);
                sep = ',';
            }
        if (sep == '=')
            printf("=");
    }
    printf(" msg=%s\n", r->msg); /* last: the text may hold spaces */
    fflush(stdout);
}

static int64_t cpu_now(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (int64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL +
           (int64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL;
}

int main(int argc, char **argv)
{
    if (argc < 3 || strcmp(argv[1], "run") != 0) {
        fprintf(stderr, "usage: mbkernel run KERNEL key=value...\n"
                        "  KERNEL: null io.write io.read mem.stream cpu.himeno\n");
        return 2;
    }
    say("started\n");
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the slot that launched the wrap */
    nb_set_timerslack(1);             /* as the slots: the sleep to T0 is not rounded up */
    const char *kernel = argv[2];
    if (argc - 3 > MAX_ARGS)
        fail(E2BIG, "too many arguments (at most " NB_STR(MAX_ARGS) " key=value)");
    for (int i = 3; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        if (!eq)
            fail(EINVAL, "arguments are key=value");
        *eq = 0;
        keys[nargs] = argv[i];
        vals[nargs++] = eq + 1;
    }
    state s = {0};
    if (strcmp(kernel, "io.write") == 0 || strcmp(kernel, "io.read") == 0)
        prepare_io(&s, kernel[3] == 'w');
    else if (strcmp(kernel, "mem.stream") == 0)
        prepare_stream(&s);
    else if (strcmp(kernel, "cpu.himeno") == 0)
        prepare_himeno(&s);
    else if (strcmp(kernel, "null") != 0)
        fail(EINVAL, "unknown kernel");
    say("ready\n");

    char line[256];
    long long t0, spin, settle = 0;
    if (!fgets(line, sizeof line, stdin))
        return 0; /* cancelled before go */
    if (sscanf(line, "go %lld %lld %lld", &t0, &spin, &settle) < 2)
        fail(EINVAL, "expected: go T0_NS SPIN_NS [SETTLE_NS]");
    nb_set_settle(settle); /* as the slot: a core's other slots start before this reports */
    nb_result r = {0};
    int64_t cpu0 = cpu_now();
    run(kernel, &s, t0, spin, &r);
    put_result(&s, &r, cpu_now() - cpu0);
    if (s.is_io && close(s.io.fd) != 0 && !r.err) /* deferred write errors (NFS) show here */
        say("error %d closing the file\n", errno);
    return 0;
}
