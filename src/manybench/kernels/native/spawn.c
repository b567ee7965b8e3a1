/* External commands: fork before T0, exec at T0, and kill their process groups on SIGTERM.
 *
 * Protocol: the child reads 16 bytes (t0_ns, spin_ns) from the control pipe; EOF instead
 * means "cancelled" (exit 127). After the wait it writes 16 bytes (start_ns, start_mono_ns)
 * to the stamp pipe and execs; the stamp pipe is close-on-exec, so a successful exec shows
 * as EOF after the stamps and a failed one as 4 more bytes: the errno.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "native.h"

extern char **environ;

/* ---- children the SIGTERM/SIGHUP handler must take down ---- */
#define NB_MAX_CHILDREN 64
static volatile sig_atomic_t children[NB_MAX_CHILDREN]; /* pids = their group ids; 0 = free */
static unsigned next_victim;

static void track_child(pid_t pid)
{
    for (int i = 0; i < NB_MAX_CHILDREN; i++)
        if (children[i] == 0) {
            children[i] = pid;
            return;
        }
    children[next_victim++ % NB_MAX_CHILDREN] = pid; /* full: forget the oldest slot */
}

void nb_forget_child(int pid)
{
    for (int i = 0; i < NB_MAX_CHILDREN; i++)
        if (children[i] == pid)
            children[i] = 0;
}

void nb_track_child(int pid)
{
    track_child(pid);
}

void nb_forget_children(void)
{
    for (int i = 0; i < NB_MAX_CHILDREN; i++)
        children[i] = 0;
}

/* The slot's cgroup.kill, opened ahead: writing "1" kills everything the slot started, a
 * setsid grandchild included (-1: no cgroup). */
static volatile sig_atomic_t kill_fd = -1;

int nb_set_kill_file(const char *path)
{
    int fd = path ? open(path, O_WRONLY | O_CLOEXEC) : -1;
    if (path && fd < 0)
        return errno;
    int old = kill_fd;
    kill_fd = fd;
    if (old >= 0)
        close(old);
    return 0;
}

static void term_handler(int sig)
{
    /* Async-signal-safe only: kill(2), write(2) and _exit(2). Runs even while a C loop holds
     * the slot. The groups of commands already reaped stay listed until the slot has killed
     * their orphans (nb_forget_children), so a SIGTERM in between still takes them. */
    for (int i = 0; i < NB_MAX_CHILDREN; i++)
        if (children[i] > 0)
            kill(-(pid_t)children[i], SIGKILL);
    if (kill_fd >= 0) {
        ssize_t n = write(kill_fd, "1", 1); /* the slot itself is in it: it ends here too */
        (void)n;
    }
    _exit(128 + sig);
}

int nb_install_term_handler(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = term_handler;
    sigfillset(&sa.sa_mask);
    if (sigaction(SIGTERM, &sa, NULL) != 0 || sigaction(SIGHUP, &sa, NULL) != 0)
        return errno;
    return 0;
}

/* ---- small helpers, all async-signal-safe ---- */
static int write_full(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t k = write(fd, c, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return k < 0 ? errno : EIO;
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

static ssize_t read_full(int fd, void *p, size_t n) /* bytes read before EOF, or -1 */
{
    size_t got = 0;
    while (got < n) {
        ssize_t k = read(fd, (char *)p + got, n - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -1;
        if (k == 0)
            break;
        got += (size_t)k;
    }
    return (ssize_t)got;
}

/* Closes fds first..last; last < 0 means every fd from first on. */
static void close_fds(int first, int last, int maxfd)
{
    if (last >= 0 && first > last)
        return;
#ifdef SYS_close_range
    if (syscall(SYS_close_range, (unsigned)first, last < 0 ? ~0u : (unsigned)last, 0u) == 0)
        return;
#endif
    for (int fd = first; (last < 0 || fd <= last) && fd < maxfd; fd++)
        close(fd); /* old kernel: up to the descriptor limit */
}

/* ---- the child between fork and exec ---- */
struct child_plan {
    const char *path, *cwd;
    char *const *argv, *const *envp;
    int ctl, stamp, out, err, maxfd;
};

static int dup_high(int fd) { return fd < 0 ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 3); }

static int open_null(int flags)
{
    int fd = open("/dev/null", flags | O_CLOEXEC);
    int hi = dup_high(fd);
    if (fd >= 0)
        close(fd);
    return hi;
}

static void __attribute__((noreturn)) child_main(const struct child_plan *p)
{
    int setup_err = 0;
    /* Default dispositions and an empty mask: Python ignores SIGPIPE and SIGXFSZ, and its
     * handlers (or ours) must not run in a child that is waiting to exec. */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (int s = 1; s < NSIG; s++)
        if (s != SIGKILL && s != SIGSTOP)
            sigaction(s, &dfl, NULL); /* EINVAL for the few reserved numbers: harmless */
    /* Until exec, a parent that stopped listening must not kill us with SIGPIPE; ignored
     * (not blocked) so nothing stays pending into the command. */
    struct sigaction ign = dfl;
    ign.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ign, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (setpgid(0, 0) != 0)
        setup_err = errno;

    /* Move what we keep above 2 first, so the dup2 onto 0..2 below cannot clobber it. */
    int ctl = dup_high(p->ctl), stamp = dup_high(p->stamp);
    int out = p->out >= 0 ? dup_high(p->out) : open_null(O_WRONLY);
    int err = p->err >= 0 ? dup_high(p->err) : open_null(O_WRONLY);
    int in = open_null(O_RDONLY);
    if (ctl < 0 || stamp < 0)
        _exit(127); /* cannot even talk to the parent */
    if (!setup_err && (out < 0 || err < 0 || in < 0))
        setup_err = errno;
    if (!setup_err && (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0))
        setup_err = errno;
    /* Keep nothing else: a waiting child holding another child's control pipe would make
     * that pipe's cancel (close) invisible. */
    int lo = ctl < stamp ? ctl : stamp, hi = ctl < stamp ? stamp : ctl;
    close_fds(3, lo - 1, p->maxfd);
    close_fds(lo + 1, hi - 1, p->maxfd);
    close_fds(hi + 1, -1, p->maxfd);
    if (!setup_err && p->cwd && chdir(p->cwd) != 0)
        setup_err = errno;

    int64_t go[2];
    if (read_full(ctl, go, sizeof go) != (ssize_t)sizeof go)
        _exit(127); /* control closed without a release: cancelled */
    int64_t stamps[2];
    stamps[0] = nb_wait_until(go[0], go[1]);
    stamps[1] = nb_mono();
    write_full(stamp, stamps, sizeof stamps); /* nobody reading: run the command anyway */
    sigaction(SIGPIPE, &dfl, NULL);
    if (!setup_err) {
        execve(p->path, p->argv, p->envp ? p->envp : environ);
        setup_err = errno;
    }
    int32_t e = setup_err;
    write_full(stamp, &e, sizeof e);
    _exit(127);
}

/* PATH search before fork (the child must not allocate). Returns malloc'd path or NULL. */
static char *resolve(const char *path, char *const envp[])
{
    if (strchr(path, '/'))
        return strdup(path);
    const char *sp = NULL;
    for (char *const *e = envp ? envp : environ; e && *e; e++)
        if (strncmp(*e, "PATH=", 5) == 0)
            sp = *e + 5;
    if (!sp)
        sp = "/usr/local/bin:/usr/bin:/bin";
    size_t plen = strlen(path);
    while (1) {
        const char *end = strchr(sp, ':');
        size_t dlen = end ? (size_t)(end - sp) : strlen(sp);
        char *cand = malloc(dlen + plen + 3);
        if (!cand)
            return NULL;
        memcpy(cand, dlen ? sp : ".", dlen ? dlen : 1);
        size_t at = dlen ? dlen : 1;
        cand[at] = '/';
        memcpy(cand + at + 1, path, plen + 1);
        struct stat st; /* access(X_OK) passes a searchable directory too */
        if (access(cand, X_OK) == 0 && stat(cand, &st) == 0 && S_ISREG(st.st_mode))
            return cand;
        free(cand);
        if (!end)
            return strdup(path); /* not found: exec reports ENOENT to the caller */
        sp = end + 1;
    }
}

int nb_spawn(const char *path, char *const argv[], char *const envp[], const char *cwd,
             int out_fd, int err_fd, int *pid, int *ctl_fd, int *stamp_fd)
{
    int ctl[2], st[2], e;
    struct rlimit rl;
    int maxfd = 65536;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur < (rlim_t)maxfd)
        maxfd = (int)rl.rlim_cur;
    char *full = resolve(path, envp);
    if (!full)
        return ENOMEM;
    /* close-on-exec everywhere: no other child may inherit these ends. */
    if (pipe2(ctl, O_CLOEXEC) != 0) {
        e = errno;
        free(full);
        return e;
    }
    if (pipe2(st, O_CLOEXEC) != 0) {
        e = errno;
        close(ctl[0]);
        close(ctl[1]);
        free(full);
        return e;
    }
    struct child_plan plan = {full, cwd, argv, envp, ctl[0], st[1], out_fd, err_fd, maxfd};
    pid_t p = fork();
    if (p == 0)
        child_main(&plan);
    e = p < 0 ? errno : 0;
    free(full);
    close(ctl[0]);
    close(st[1]);
    if (p < 0) {
        close(ctl[1]);
        close(st[0]);
        return e;
    }
    setpgid(p, p); /* also in the parent, so a group kill right away cannot miss it */
    track_child(p);
    *pid = p;
    *ctl_fd = ctl[1];
    *stamp_fd = st[0];
    return 0;
}

int nb_release(int ctl_fd, int64_t t0_ns, int64_t spin_ns)
{
    int64_t go[2] = {t0_ns, spin_ns};
    return write_full(ctl_fd, go, sizeof go);
}

int nb_read_stamp(int stamp_fd, int64_t *start_ns, int64_t *start_mono_ns, int *child_err)
{
    unsigned char buf[20];
    ssize_t n = read_full(stamp_fd, buf, sizeof buf);
    if (n < 0)
        return errno;
    *start_ns = *start_mono_ns = 0;
    *child_err = 0;
    if (n < 16) { /* the child exited before T0: cancelled or killed */
        *child_err = ECANCELED;
        return 0;
    }
    int64_t st[2];
    memcpy(st, buf, sizeof st);
    *start_ns = st[0];
    *start_mono_ns = st[1];
    if (n == 20) {
        int32_t e;
        memcpy(&e, buf + 16, sizeof e);
        *child_err = e ? e : EIO;
    }
    return 0;
}
