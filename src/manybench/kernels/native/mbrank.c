/* libmbrank.so: preloaded (LD_PRELOAD) into every rank of a parallel task (kernels/mpi_job.py)
 * so that each rank starts its work at T0 with the launcher's start-up, the wire-up and
 * MPI_Init behind it, and tells its slot where it ran and when it started and ended.
 *
 * Built by the package's own build with a plain C compiler: no MPI header is needed, because
 * the three calls it interposes have no MPI types in their signatures (MPI_Init(int *,
 * char ***), MPI_Init_thread(int *, char ***, int, int *), MPI_Finalize(void)); the real
 * ones are found at run time as PMPI_Init, PMPI_Init_thread and PMPI_Finalize (the MPI
 * standard's profiling interface) with dlsym(RTLD_NEXT). So one build serves Open MPI,
 * MPICH, Intel MPI and any other MPI, on every node.
 *
 * Protocol: one line each way over a Unix stream socket in the abstract namespace,
 * "\0" $MANYBENCH_MPI_SOCK "." RANK, where the rank's slot listens (RANK from the launcher's
 * environment: OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK or SLURM_PROCID). Both the name and
 * $MANYBENCH_MPI_TOKEN, the job's proof of membership, come through the launcher's
 * environment, never its command line. The rank speaks only to a listener of its own user
 * (SO_PEERCRED): another user's socket at that name learns nothing and cannot place it.
 *   rank -> slot  hello PID MPI TOKEN HOST   MPI: 1 when the program is MPI-linked;
 *                                        TOKEN "-" when the rank has none
 *   slot -> rank  refused WHY            (then closes) not a rank of this job
 *   slot -> rank  place CPUS MEMS CWD    cpu and memory-node lists ("-": leave as is)
 *   rank -> slot  ready ENTER_NS RETURN_NS   MPI: PMPI_Init's entry and return; else 0 0
 *   slot -> rank  go T0_NS SPIN_NS       T0 in this node's clock; with it (SCM_RIGHTS) the
 *                                        start page: a sealed memfd of the slot's
 *   (start page)  REALTIME_NS MONOTONIC_NS CPU WRITTEN   int64, int64, int32, int32 at
 *                                        offsets 0, 8, 16, 20 (WRITTEN 1 once stamped)
 *   rank -> slot  end REALTIME_NS MONOTONIC_NS CPU   MPI_Finalize's entry, or exit()
 *   rank -> slot  transport KEY:VALUE ...            MPI_Finalize's entry, after end: what
 *                                                     carried its messages (mbtransport.c)
 *   rank -> slot  finalized REALTIME_NS               after PMPI_Finalize
 *   rank -> slot  unfinalized REALTIME_NS MONOTONIC_NS CPU   an MPI program's exit() without
 *                                                     MPI_Finalize
 * The start is stamped as the last thing before the rank returns to its program (from
 * MPI_Init, or from this constructor): stores into the start page, no syscall between the
 * stamp and the return. A line to the slot there woke the slot on the rank's own cpu, so
 * the program's first instants competed with it (9-14 us quiet, up to 1 ms under load).
 * The slot reads the page once the rank is gone: a rank killed before MPI_Finalize has
 * its start on the record, as one that ends well.
 * A program that is not MPI-linked is held in this library's constructor, before its main(),
 * and answers ready at once. Only the rank's first process takes part: the constructor
 * removes MANYBENCH_MPI_SOCK and the token from the environment, so what the rank starts
 * runs untouched. Its socket's descriptor sits above 2: a rank started with stdout or
 * stderr closed neither writes its output into it nor closes it with its stdio.
 * Wrappers named in $MANYBENCH_MPI_PASS (colon-separated program names: env, numactl, a
 * shell, a container launcher ...) are let through, marking MANYBENCH_MPI_INNER=<their pid>:
 * behind a wrapper, the program it execs (same pid) is the rank, and of the programs it
 * starts (other pids: `sh -c "cp in . && prog"`) only an MPI-linked one is, so the helpers
 * around the real program are let through too.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "mbtransport.h"
#include "native.h"

#define EXPORT __attribute__((visibility("default")))
#define LINE 4096

static int sock = -1;     /* the connection to the slot; -1: not taking part */
static int page_fd = -1;  /* the start page the slot sent (with its go line), until mapped */
static int started = 0;   /* released at T0 */
static int ended = 0;     /* the end stamp was sent */

static const char *RANK_VARS[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
                                  "SLURM_PROCID", NULL};
#define TOKEN_MAX 128 /* the job's token: 64 hex digits */

/* Whether this program is a wrapper to let through ($MANYBENCH_MPI_PASS). */
static int passed(void)
{
    const char *list = getenv("MANYBENCH_MPI_PASS");
    const char *me = program_invocation_short_name;
    if (!list || !me || !*me)
        return 0;
    size_t n = strlen(me);
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, me, n) == 0)
            return 1;
        p += len + (end ? 1 : 0);
    }
    return 0;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    if (sock < 0)
        return;
    char buf[LINE];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n <= 0 || n >= (int)sizeof buf)
        return;
    for (int off = 0; off < n;) {
        ssize_t w = send(sock, buf + off, (size_t)(n - off), MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        off += (int)w;
    }
}

/* Descriptors that came with a byte: the first is kept as the start page (page_fd), any
 * other closed (a recv() without room for them would have closed them all). */
static void keep_fds(struct msghdr *msg)
{
    for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(c) + i * sizeof fd, sizeof fd);
            if (page_fd < 0)
                page_fd = fd;
            else
                close(fd);
        }
    }
}

/* One line from the slot into buf (no newline); 0 at EOF or on an error. One byte at a
 * time: what follows the line is not this reader's. */
static int hear(char *buf, size_t len)
{
    size_t n = 0;
    while (n + 1 < len) {
        union {
            struct cmsghdr align;
            char space[CMSG_SPACE(4 * sizeof(int))];
        } control;
        struct iovec iov = {.iov_base = buf + n, .iov_len = 1};
        struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.space,
                             .msg_controllen = sizeof control.space};
        ssize_t r = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
        if (r < 0 && errno == EINTR)
            continue;
        if (r > 0)
            keep_fds(&msg);
        if (r <= 0)
            return 0;
        if (buf[n] == '\n')
            break;
        n++;
    }
    buf[n] = '\0';
    return 1;
}

static void die(const char *why)
{
    fprintf(stderr, "manybench rank synchronizer: %s\n", why);
    _exit(126);
}

/* "0-3,8" -> a cpu set; 0 when empty or malformed (a negative number or a range backwards:
 * "-9223372036854775808-0" was a loop of 2^63 steps). */
static int parse_cpus(const char *s, cpu_set_t *set)
{
    CPU_ZERO(set);
    int any = 0;
    while (*s) {
        char *end;
        long a = strtol(s, &end, 10), b = a;
        if (end == s)
            return 0;
        if (*end == '-') {
            s = end + 1;
            b = strtol(s, &end, 10);
            if (end == s)
                return 0;
        }
        if (a < 0 || b < a)
            return 0;
        for (long c = a; c <= b && c < CPU_SETSIZE; c++) {
            CPU_SET((int)c, set);
            any = 1;
        }
        s = *end == ',' ? end + 1 : end;
    }
    return any;
}

/* The slot's placement, "place CPUS MEMS CWD" ("-": leave as is; no CWD: stay), read apart
 * from its use so that fuzz/ reaches it. */
struct place {
    int cpus_given, mems_given;
    cpu_set_t cpus;
    nb_nodemask mems;
    const char *cwd; /* inside the line, or NULL */
};

/* NULL, or what in the line (cut up in place) was not understood. */
static const char *parse_place(char *line, struct place *p)
{
    memset(p, 0, sizeof *p);
    char *save = NULL, *word = strtok_r(line, " ", &save);
    char *cpus = strtok_r(NULL, " ", &save), *mems = strtok_r(NULL, " ", &save);
    p->cwd = save && *save ? save : NULL;
    if (!word || strcmp(word, "place") != 0 || !cpus || !mems)
        return "the slot's placement was not understood";
    p->cpus_given = strcmp(cpus, "-") != 0;
    if (p->cpus_given && !parse_cpus(cpus, &p->cpus))
        return "the slot's cpus were not understood";
    p->mems_given = strcmp(mems, "-") != 0;
    if (p->mems_given) {
        cpu_set_t nodes; /* the same list syntax; at most CPU_SETSIZE memory nodes */
        if (!parse_cpus(mems, &nodes))
            return "the slot's memory nodes were not understood";
        for (int n = 0; n < NB_MAX_NODES && n < CPU_SETSIZE; n++)
            if (CPU_ISSET(n, &nodes))
                nb_nodemask_add(&p->mems, n);
    }
    return NULL;
}

static void apply_place(char *line)
{
    struct place p;
    const char *why = parse_place(line, &p);
    if (why)
        die(why);
    if (p.cpus_given && sched_setaffinity(0, sizeof p.cpus, &p.cpus) != 0)
        die("cannot bind to the slot's cpus");
    if (p.mems_given && nb_set_mempolicy(2 /* MPOL_BIND */, &p.mems) != 0)
        die("cannot bind memory to the slot's nodes");
    if (p.cwd && chdir(p.cwd) != 0)
        die("cannot enter the slot's scratch directory");
}

/* The slot's "go T0_NS SPIN_NS": 0 when not understood. Neither is negative: nb_wait_until
 * computes T0 - SPIN, which overflowed for a T0 near INT64_MIN. */
static int parse_go(const char *line, long long *t0, long long *spin)
{
    return sscanf(line, "go %lld %lld", t0, spin) == 2 && *t0 >= 0 && *spin >= 0;
}

/* The start page (the protocol above): written by the rank, read by its slot. */
struct start_page {
    int64_t realtime_ns, monotonic_ns;
    int32_t cpu, written;
};

/* The slot's start page, mapped (its descriptor closed: the mapping holds it) and written
 * once now: the first store to a page faults it in (a shared memory page allocated and
 * zeroed: 6-8 us after the stamp, measured here), which the stamp's stores must not
 * pay after T0. A store, not MAP_POPULATE: that maps a shared page read-only, and the first
 * store faults again. */
static struct start_page *map_page(void)
{
    if (page_fd < 0)
        die("the slot's go came without its start page");
    struct start_page *p = mmap(NULL, sizeof *p, PROT_READ | PROT_WRITE,
                                MAP_SHARED, page_fd, 0);
    close(page_fd);
    page_fd = -1;
    if (p == MAP_FAILED)
        die("cannot map the slot's start page");
    __atomic_store_n(&p->written, 0, __ATOMIC_RELAXED);
    return p;
}

/* Wait for the go, then for T0; stamp the start into the start page: the last thing
 * before the return to the program (clock_gettime and sched_getcpu read the vDSO or the
 * rseq area: no syscall). */
static void hold(void)
{
    char line[LINE];
    if (!hear(line, sizeof line))
        die("the slot went away before T0 (phase cancelled)");
    long long t0 = 0, spin = 0;
    if (!parse_go(line, &t0, &spin))
        die("the slot's go was not understood");
    struct start_page *page = map_page();
    int64_t start = nb_wait_until(t0, spin);
    page->monotonic_ns = nb_mono();
    page->realtime_ns = start;
    page->cpu = sched_getcpu();
    __atomic_store_n(&page->written, 1, __ATOMIC_RELEASE);
    started = 1;
}

static void stamp_end(void)
{
    if (sock < 0 || !started || ended)
        return;
    int64_t rt = nb_now(), mono = nb_mono();
    ended = 1;
    say("end %lld %lld %d\n", (long long)rt, (long long)mono, sched_getcpu());
}

static int mpi_linked = 0;
static int finalized = 0;

static void at_exit(void)
{
    /* a program that is not MPI-linked ends here; an MPI program that exits without
     * MPI_Finalize is a rank that failed, and says so */
    if (sock < 0 || !started || ended)
        return;
    if (!mpi_linked) {
        stamp_end();
        return;
    }
    ended = 1;
    say("unfinalized %lld %lld %d\n", (long long)nb_now(), (long long)nb_mono(), sched_getcpu());
}

/* A descriptor of at least 3 for fd (which is closed): 0-2 are the program's, even when it
 * started with one of them closed. -1 on failure. */
static int above_stdio(int fd)
{
    if (fd < 0 || fd > 2)
        return fd;
    int high = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    close(fd);
    return high;
}

/* The connection to the rank's slot, checked to be held by this user (SO_PEERCRED: the
 * listener's credentials, from the kernel); dies saying why not. */
static int connect_slot(const struct sockaddr_un *addr, int n, const char *rank)
{
    int fd = above_stdio(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (fd < 0)
        die("cannot make a socket");
    socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
    char why[LINE];
    if (connect(fd, (const struct sockaddr *)addr, len) != 0) {
        snprintf(why, sizeof why, "rank %s: no slot of this phase waits for it on this node "
                 "(the launcher placed it elsewhere than the plan's placement): %s", rank,
                 strerror(errno));
        die(why);
    }
    struct ucred cred;
    socklen_t clen = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) != 0) {
        snprintf(why, sizeof why, "rank %s: cannot tell who listens for it: %s", rank,
                 strerror(errno));
        die(why);
    }
    if (cred.uid != geteuid()) {
        snprintf(why, sizeof why, "rank %s: the socket it connects to is held by uid %u, "
                 "not by this user (uid %u): refused, nothing said", rank,
                 (unsigned)cred.uid, (unsigned)geteuid());
        die(why);
    }
    return fd;
}

__attribute__((constructor)) static void mbrank_init(void)
{
    const char *prefix = getenv("MANYBENCH_MPI_SOCK");
    if (!prefix || !*prefix)
        return;
    const char *rank = NULL;
    for (const char **v = RANK_VARS; *v && !rank; v++)
        rank = getenv(*v);
    if (!rank)
        return; /* not a rank: a launcher's own process */
    int mpi = dlsym(RTLD_DEFAULT, "PMPI_Init") != NULL;
    const char *inner = getenv("MANYBENCH_MPI_INNER");
    if (inner && atoi(inner) != (int)getpid() && !mpi)
        return; /* a helper a wrapper started: not the rank's program */
    if (passed()) {
        char pid[32];
        snprintf(pid, sizeof pid, "%d", (int)getpid());
        setenv("MANYBENCH_MPI_INNER", pid, 1);
        return;
    }
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    int n = snprintf(addr.sun_path + 1, sizeof addr.sun_path - 1, "%s.%s", prefix, rank);
    if (n <= 0 || n >= (int)sizeof addr.sun_path - 1)
        die("MANYBENCH_MPI_SOCK too long");
    char token[TOKEN_MAX + 1] = "-";
    const char *given = getenv("MANYBENCH_MPI_TOKEN");
    if (given && *given && strlen(given) <= TOKEN_MAX && !strpbrk(given, " \t\r\n"))
        snprintf(token, sizeof token, "%s", given);
    unsetenv("MANYBENCH_MPI_SOCK"); /* what this rank starts runs untouched */
    unsetenv("MANYBENCH_MPI_TOKEN");
    sock = connect_slot(&addr, n, rank);
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    mpi_linked = mpi;
    say("hello %d %d %s %s\n", (int)getpid(), mpi, token, host[0] ? host : "-");
    char line[LINE];
    if (!hear(line, sizeof line))
        die("the slot closed the connection");
    if (strncmp(line, "refused", 7) == 0) {
        char why[LINE + 64];
        snprintf(why, sizeof why, "rank %s: the slot %s", rank, line);
        die(why);
    }
    apply_place(line);
    atexit(at_exit);
    if (!mpi) { /* nothing to wire up: held here, before main */
        say("ready 0 0\n");
        hold();
    }
}

typedef int (*init_fn)(int *, char ***);
typedef int (*init_thread_fn)(int *, char ***, int, int *);
typedef int (*finalize_fn)(void);

static void *real(const char *name)
{
    void *f = dlsym(RTLD_NEXT, name);
    if (!f) {
        char why[LINE];
        snprintf(why, sizeof why, "%s not found in the MPI library", name);
        die(why);
    }
    return f;
}

/* After the real MPI_Init: ready, then held until T0. */
static void after_init(int64_t enter)
{
    if (sock < 0 || started)
        return;
    nb_transport_init();   /* collective: every rank of the job is here */
    say("ready %lld %lld\n", (long long)enter, (long long)nb_now());
    hold();
}

EXPORT int MPI_Init(int *argc, char ***argv)
{
    int64_t enter = nb_now();
    int rc = ((init_fn)real("PMPI_Init"))(argc, argv);
    after_init(enter);
    return rc;
}

EXPORT int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int64_t enter = nb_now();
    int rc = ((init_thread_fn)real("PMPI_Init_thread"))(argc, argv, required, provided);
    after_init(enter);
    return rc;
}

EXPORT int MPI_Finalize(void)
{
    stamp_end();
    if (sock >= 0 && mpi_linked) {
        char line[LINE];
        if (nb_transport_line(line, sizeof line))
            say("%s", line);
    }
    int rc = ((finalize_fn)real("PMPI_Finalize"))();
    finalized = 1;
    if (sock >= 0)
        say("finalized %lld\n", (long long)nb_now());
    return rc;
}
