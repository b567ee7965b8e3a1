/* meta.*: mdtest's metadata operations, as mdtest's POSIX backend does them.
 *
 * Each operation builds the item's full path and hands it to the system call, as mdtest
 * (sprintf, then mkdir/open/stat/rename/unlink/rmdir) and real applications do, so the path
 * walk is inside the timed window. With `at` the calls are relative to open directories: no
 * walk, a faster figure that is not mdtest's. Calls follow mdtest's POSIX backend, one per
 * item, with the flags of the safety below ([...]):
 *   mkdir   mkdir(path, 0775)                     (mdtest's DIRMODE)
 *   create  open(path, O_CREAT | O_RDWR [| O_EXCL | O_NOFOLLOW], 0664) [+ write bytes] + close
 *   stat    stat(path) of files [lstat];  statdir: stat(path) of directories [lstat]
 *   read    open(path, O_RDWR [| O_NOFOLLOW | O_NONBLOCK]) [+ read bytes] + close: mdtest
 *           hands O_RDONLY (0) to its backend's open, which reads IOR flags (IOR_RDONLY is 1)
 *           and so opens O_RDWR (aiori-POSIX.c POSIX_Open)
 *   rename  directories, as mdtest's rename phase: item 0 to "<item 0>-XX", item i to the name
 *           item i-1 had, and "<item 0>-XX" to the name of item n-2: n renames, the same set
 *           of names afterwards
 *   unlink  unlink(path);  rmdir: rmdir(path)
 *
 * Scratch is hostile ground (scratch.c), with no call added to the timed loop: create is
 * O_EXCL (nothing found at an item is ever opened, so never written through), read is
 * O_NOFOLLOW | O_NONBLOCK (a link is refused, a FIFO never waits, nothing is written), stat
 * is lstat and its answer is checked (a regular file with one link, a directory for
 * statdir); mkdir, rmdir, rename and unlink never follow a link at the item. A failed item
 * says what was found there when it is not what the phase made. Before T0 every directory
 * is opened by descriptor from the run's root (each this user's alone: the loop walks full
 * paths through them), and every item is made or checked relative to it. A FIFO or a hard
 * link planted at a read item between that check and the loop is opened without waiting
 * and never written.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "meta.h"

#define DIRMODE 0775
#define FILEMODE 0664
#define PATHLEN 4096

static const char *const OP_NAMES[NB_META_OPS] = {"mkdir", "create", "stat", "statdir",
                                                  "read", "rename", "unlink", "rmdir"};

int nb_meta_op_from_name(const char *name)
{
    for (int i = 0; i < NB_META_OPS; i++)
        if (strcmp(name, OP_NAMES[i]) == 0)
            return i;
    return -1;
}

/* The tree's directories by full path (root/dir): what the timed loop walks. */
static char **full_paths(const nb_meta_args *a)
{
    char **full = calloc(a->ndirs, sizeof *full);
    for (unsigned k = 0; full && k < a->ndirs; k++) {
        if (asprintf(&full[k], "%s/%s", a->root, a->dirs[k]) < 0) {
            full[k] = NULL;
            while (k-- > 0)
                free(full[k]);
            free(full);
            return NULL;
        }
    }
    return full;
}

static void free_paths(const nb_meta_args *a, char **full)
{
    for (unsigned k = 0; full && k < a->ndirs; k++)
        free(full[k]);
    free(full);
}

/* The item's name, and with at == 0 its full path; -1 when it does not fit. */
static int item_name(const nb_meta_args *a, char *const *full, uint64_t i, const char *suffix,
                     char *buf)
{
    int n = a->at ? snprintf(buf, PATHLEN, "%s%llu%s", a->prefix, (unsigned long long)i, suffix)
                  : snprintf(buf, PATHLEN, "%s/%s%llu%s", full[i / a->per_dir], a->prefix,
                             (unsigned long long)i, suffix);
    return n < 0 || n >= PATHLEN ? -1 : 0;
}

static int dirfd_of(const nb_meta_args *a, const int *dfds, uint64_t i)
{
    return a->at ? dfds[i / a->per_dir] : AT_FDCWD;
}

/* What each item is once made: a directory, or a regular file with one link. */
static mode_t kind_of(const nb_meta_args *a)
{
    return a->op == NB_MKDIR || a->op == NB_STATDIR || a->op == NB_RENAME || a->op == NB_RMDIR
           ? S_IFDIR : S_IFREG;
}

static int write_all(int fd, const char *buf, uint64_t bytes)
{
    for (uint64_t done = 0; done < bytes;) {
        ssize_t k = write(fd, buf + done, bytes - done);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return k < 0 ? errno : EIO;
        done += (uint64_t)k;
    }
    return 0;
}

/* One file: create or read, with `bytes` written or read. create: O_EXCL, so whatever is
 * found there is never opened; read: O_NOFOLLOW, and O_NONBLOCK so a FIFO never waits. */
static int file_io(int dfd, const char *p, int create, uint64_t bytes, char *buf)
{
    int fd = create ? openat(dfd, p, O_CREAT | O_EXCL | O_RDWR | O_NOFOLLOW | O_CLOEXEC, FILEMODE)
                    : openat(dfd, p, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return -1;
    uint64_t done = 0;
    while (done < bytes) {
        ssize_t k = create ? write(fd, buf + done, bytes - done) : read(fd, buf + done, bytes - done);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            int e = k < 0 ? errno : (create ? EIO : ENODATA);
            close(fd);
            errno = e;
            return -1;
        }
        done += (uint64_t)k;
    }
    return close(fd);
}

/* lstat, as stat costs (the same walk, the link itself not followed), and its answer
 * checked: EPERM when the item is not what the phase made. */
static int stat_item(int dfd, const char *p, mode_t want)
{
    struct stat st;
    if (fstatat(dfd, p, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return -1;
    if ((st.st_mode & S_IFMT) != want || (want == S_IFREG && st.st_nlink != 1)) {
        errno = EPERM;
        return -1;
    }
    return 0;
}

static int do_op(const nb_meta_args *a, int dfd, const char *p, char *buf)
{
    switch (a->op) {
    case NB_MKDIR:
        return mkdirat(dfd, p, DIRMODE);
    case NB_CREATE:
        return file_io(dfd, p, 1, a->bytes, buf);
    case NB_STAT:
        return stat_item(dfd, p, S_IFREG);
    case NB_STATDIR:
        return stat_item(dfd, p, S_IFDIR);
    case NB_READ:
        return file_io(dfd, p, 0, a->bytes, buf);
    case NB_UNLINK:
        return unlinkat(dfd, p, 0);
    default:
        return unlinkat(dfd, p, AT_REMOVEDIR);
    }
}

/* For a failed item, after the timed window: 1 with msg naming what is at dfd/p when it is
 * not `want` (a link, a FIFO, a file with two links), else 0 (the call's errno says it). */
static int found_instead(int dfd, const char *p, const char *dir, mode_t want, char *msg,
                         size_t len)
{
    char shown[PATHLEN * 2];
    snprintf(shown, sizeof shown, "%s%s%s", dir ? dir : "", dir ? "/" : "", p);
    return nb_scratch_check(dfd, p, want, shown, msg, len) == EPERM;
}

/* Opens the tree's directories by descriptor from the root (each this user's alone); NULL
 * with the error in msg. */
static int *open_dirs(const nb_meta_args *a, int *err, char *msg, size_t len)
{
    int *dfds = calloc(a->ndirs ? a->ndirs : 1, sizeof *dfds);
    if (!dfds) {
        *err = nb_fail_msg(msg, len, ENOMEM, "opening the tree's directories");
        return NULL;
    }
    for (unsigned k = 0; k < a->ndirs; k++) {
        *err = nb_scratch_dir(a->root, a->dirs[k], 0, 1, &dfds[k], msg, len);
        if (*err) {
            while (k-- > 0)
                close(dfds[k]);
            free(dfds);
            return NULL;
        }
    }
    return dfds;
}

static void close_dirs(const nb_meta_args *a, int *dfds)
{
    for (unsigned k = 0; dfds && k < a->ndirs; k++)
        close(dfds[k]);
    free(dfds);
}

static int check_args(const nb_meta_args *a)
{
    if (a->op < 0 || a->op >= NB_META_OPS || !a->ndirs || !a->per_dir || !a->root)
        return EINVAL;
    if (a->count && (a->first + a->count - 1) / a->per_dir >= a->ndirs)
        return EINVAL; /* an item past the last directory of the tree */
    return 0;
}

/* An item that must be absent (mkdir, create): removed when it is what the phase makes,
 * refused (EPERM, msg) when anything else is there. */
static int make_absent(int dfd, const char *name, mode_t want, const char *shown, char *msg,
                       size_t len)
{
    int e = nb_scratch_check(dfd, name, want, shown, msg, len);
    if (e)
        return e == ENOENT ? 0 : e;
    if (unlinkat(dfd, name, want == S_IFDIR ? AT_REMOVEDIR : 0) == 0 || errno == ENOENT)
        return 0;
    return errno;
}

/* An item that must be a directory: made, or checked to be one. */
static int make_dir(int dfd, const char *name, const char *shown, char *msg, size_t len)
{
    if (mkdirat(dfd, name, DIRMODE) == 0)
        return 0;
    if (errno != EEXIST)
        return errno;
    return nb_scratch_check(dfd, name, S_IFDIR, shown, msg, len);
}

/* An item that must be a regular file with one link, at least `bytes` long: checked, made
 * (O_EXCL) when absent, written when short; never opened through what was planted. */
static int make_file(int dfd, const char *name, uint64_t bytes, char *buf, const char *shown,
                     char *msg, size_t len)
{
    struct stat st;
    int fd;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        int e = nb_scratch_refusal(&st, S_IFREG, shown, msg, len);
        if (e || (uint64_t)st.st_size >= bytes)
            return e;
        if ((e = nb_scratch_openat(dfd, name, shown, O_WRONLY, 0, &fd, msg, len)) != 0)
            return e;
    } else if (errno != ENOENT) {
        return errno;
    } else if ((fd = openat(dfd, name, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC,
                            FILEMODE)) < 0) {
        return errno;
    }
    int e = write_all(fd, buf, bytes);
    return close(fd) != 0 && !e ? errno : e;
}

/* Makes one item what the operation needs before T0, relative to its directory's
 * descriptor; an errno, with msg set when what was found is refused. */
static int prepare_one(const nb_meta_args *a, int dfd, const char *dir, uint64_t i, char *buf,
                       char *msg, size_t len)
{
    char name[PATHLEN], shown[PATHLEN * 2];
    nb_meta_args rel = *a;
    rel.at = 1;
    if (item_name(&rel, NULL, i, "", name))
        return ENAMETOOLONG;
    snprintf(shown, sizeof shown, "%s/%s", dir, name);
    switch (a->op) {
    case NB_MKDIR: /* must be absent */
        return make_absent(dfd, name, S_IFDIR, shown, msg, len);
    case NB_CREATE:
        return make_absent(dfd, name, S_IFREG, shown, msg, len);
    case NB_STATDIR: /* must be a directory */
    case NB_RMDIR:
    case NB_RENAME: {
        int e = make_dir(dfd, name, shown, msg, len);
        if (e || a->op != NB_RENAME || i != a->first)
            return e;
        /* a rename phase cut short leaves "<item 0>-XX" */
        if (item_name(&rel, NULL, i, "-XX", name))
            return ENAMETOOLONG;
        snprintf(shown, sizeof shown, "%s/%s", dir, name);
        return make_absent(dfd, name, S_IFDIR, shown, msg, len);
    }
    default: /* stat, read, unlink: a file, read: at least `bytes` long */
        return make_file(dfd, name, a->op == NB_READ ? a->bytes : 0, buf, shown, msg, len);
    }
}

int nb_meta_prepare(const nb_meta_args *a, char *msg, size_t msglen)
{
    if (check_args(a))
        return nb_fail_msg(msg, msglen, EINVAL, "bad metadata arguments");
    char *buf = a->bytes ? nb_alloc_buffer(a->bytes, 1) : NULL;
    if (a->bytes && !buf)
        return nb_fail_msg(msg, msglen, ENOMEM, "allocating %llu bytes",
                           (unsigned long long)a->bytes);
    char **full = full_paths(a);
    int err = full ? 0 : nb_fail_msg(msg, msglen, ENOMEM, "the tree's paths");
    int dfd = -1;
    uint64_t k = UINT64_MAX; /* the directory open as dfd */
    for (uint64_t i = a->first; i < a->first + a->count && !err; i++) {
        if (i / a->per_dir != k) { /* each directory by descriptor from the root */
            if (dfd >= 0)
                close(dfd);
            dfd = -1;
            k = i / a->per_dir;
            if ((err = nb_scratch_dir(a->root, a->dirs[k], 0, 1, &dfd, msg, msglen)) != 0)
                break;
        }
        msg[0] = 0;
        int e = prepare_one(a, dfd, full[k], i, buf, msg, msglen);
        if (e && !msg[0])
            err = nb_fail_msg(msg, msglen, e, "preparing %s%llu in %s for %s", a->prefix,
                              (unsigned long long)i, full[k], OP_NAMES[a->op]);
        else
            err = e;
    }
    if (dfd >= 0)
        close(dfd);
    free_paths(a, full);
    free(buf);
    return err;
}

/* mdtest's rename chain over this slot's items (see the top of this file). */
static int rename_loop(const nb_meta_args *a, char *const *full, const int *dfds, int64_t s,
                       nb_result *r, int64_t *last_t)
{
    char item[PATHLEN], prev[PATHLEN], first[PATHLEN];
    int prev_fd = AT_FDCWD, first_fd = dirfd_of(a, dfds, a->first);
    const char *first_dir = a->at ? full[a->first / a->per_dir] : NULL, *prev_dir;
    int64_t t = s;
    if (item_name(a, full, a->first, "-XX", first))
        return nb_fail(r, ENAMETOOLONG, "item name"), r->err;
    strcpy(prev, first);
    prev_fd = first_fd;
    prev_dir = first_dir;
    for (uint64_t k = 0; k < a->count; k++) {
        uint64_t i = a->first + k;
        int fd = dirfd_of(a, dfds, i);
        const char *dir = a->at ? full[i / a->per_dir] : NULL;
        if (k == a->count - 1) {
            strcpy(item, first);
            fd = first_fd;
            dir = first_dir;
        } else if (item_name(a, full, i, "", item)) {
            nb_fail(r, ENAMETOOLONG, "item name");
            break;
        }
        int rc = renameat(fd, item, prev_fd, prev);
        int e = rc != 0 ? errno : 0;
        int64_t t2 = nb_mono();
        if (rc != 0) { /* the source a directory, the target absent: else say what is there */
            char msg[NB_MSG_LEN];
            if (found_instead(fd, item, dir, S_IFDIR, msg, sizeof msg) ||
                (e != ENOENT && found_instead(prev_fd, prev, prev_dir, S_IFDIR, msg, sizeof msg)))
                nb_set_error(r, EPERM, "%s", msg);
            else
                nb_fail(r, e, "rename %s to %s", item, prev);
            break;
        }
        r->hist[nb_bucket((uint64_t)(t2 - t))]++;
        r->ops++;
        NB_PROGRESS(r->ops);
        t = t2;
        strcpy(prev, item);
        prev_fd = fd;
        prev_dir = dir;
    }
    *last_t = t;
    return r->err;
}

int nb_run_meta(const nb_meta_args *a, int64_t t0_ns, int64_t spin_ns, nb_result *r)
{
    if (check_args(a)) {
        nb_set_error(r, EINVAL, "bad metadata arguments");
        return r->err;
    }
    char *buf = a->bytes ? nb_alloc_buffer(a->bytes, a->op == NB_CREATE) : NULL;
    char **full = full_paths(a);
    int *dfds = NULL;
    r->hist = calloc(HIST_BUCKETS, sizeof *r->hist);
    if ((a->bytes && !buf) || !full || !r->hist) {
        nb_fail(r, ENOMEM, "allocating buffers");
        goto out;
    }
    if (a->at) {
        char msg[NB_MSG_LEN];
        int e;
        if (!(dfds = open_dirs(a, &e, msg, sizeof msg))) {
            nb_set_error(r, e, "%s", msg);
            goto out;
        }
    }
    char p[PATHLEN];
    int64_t s = nb_begin(r, t0_ns, spin_ns), t = s;
    if (a->op == NB_RENAME) {
        if (a->count > 1) /* mdtest renames nothing for a single item */
            rename_loop(a, full, dfds, s, r, &t);
    } else {
        for (uint64_t i = a->first; i < a->first + a->count; i++) {
            if (item_name(a, full, i, "", p)) {
                nb_fail(r, ENAMETOOLONG, "item name");
                break;
            }
            int dfd = dirfd_of(a, dfds, i);
            int rc = do_op(a, dfd, p, buf);
            int e = rc != 0 ? errno : 0; /* before anything else can touch errno */
            int64_t t2 = nb_mono();
            if (rc != 0) {
                char msg[NB_MSG_LEN];
                if (found_instead(dfd, p, a->at ? full[i / a->per_dir] : NULL, kind_of(a), msg,
                                  sizeof msg))
                    nb_set_error(r, EPERM, "%s", msg);
                else
                    nb_fail(r, e, "%s %s", OP_NAMES[a->op], p);
                break;
            }
            r->hist[nb_bucket((uint64_t)(t2 - t))]++;
            r->ops++;
            NB_PROGRESS(r->ops);
            t = t2;
        }
    }
    nb_end(r, s, t);
out:
    close_dirs(a, dfds);
    free_paths(a, full);
    free(buf);
    return r->err;
}
