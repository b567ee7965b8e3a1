/* meta.*: mdtest's metadata operations, as mdtest's POSIX backend does them.
 *
 * Each operation builds the item's full path and hands it to the system call, as mdtest
 * (sprintf, then mkdir/open/stat/rename/unlink/rmdir) and real applications do, so the path
 * walk is inside the timed window. With `at` the calls are relative to open directories: no
 * walk, a faster figure that is not mdtest's. Calls and flags follow mdtest's POSIX backend:
 *   mkdir   mkdir(path, 0775)                     (mdtest's DIRMODE)
 *   create  open(path, O_CREAT | O_RDWR, 0664) [+ write bytes] + close
 *   stat    stat(path) of files;  statdir: stat(path) of directories
 *   read    open(path, O_RDONLY) [+ read bytes] + close
 *   rename  directories, as mdtest's rename phase: item 0 to "<item 0>-XX", item i to the name
 *           item i-1 had, and "<item 0>-XX" to the name of item n-2: n renames, the same set
 *           of names afterwards
 *   unlink  unlink(path);  rmdir: rmdir(path)
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

/* The item's name, and with at == 0 its full path; -1 when it does not fit. */
static int item_name(const nb_meta_args *a, uint64_t i, const char *suffix, char *buf)
{
    int n = a->at ? snprintf(buf, PATHLEN, "%s%llu%s", a->prefix, (unsigned long long)i, suffix)
                  : snprintf(buf, PATHLEN, "%s/%s%llu%s", a->dirs[i / a->per_dir], a->prefix,
                             (unsigned long long)i, suffix);
    return n < 0 || n >= PATHLEN ? -1 : 0;
}

static int dirfd_of(const nb_meta_args *a, const int *dfds, uint64_t i)
{
    return a->at ? dfds[i / a->per_dir] : AT_FDCWD;
}

/* One file: create or read, with `bytes` written or read. */
static int file_io(int dfd, const char *p, int create, uint64_t bytes, char *buf)
{
    int fd = create ? openat(dfd, p, O_CREAT | O_RDWR | O_CLOEXEC, FILEMODE)
                    : openat(dfd, p, O_RDONLY | O_CLOEXEC);
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

static int do_op(const nb_meta_args *a, int dfd, const char *p, char *buf)
{
    struct stat st;
    switch (a->op) {
    case NB_MKDIR:
        return mkdirat(dfd, p, DIRMODE);
    case NB_CREATE:
        return file_io(dfd, p, 1, a->bytes, buf);
    case NB_STAT:
    case NB_STATDIR:
        return fstatat(dfd, p, &st, 0);
    case NB_READ:
        return file_io(dfd, p, 0, a->bytes, buf);
    case NB_UNLINK:
        return unlinkat(dfd, p, 0);
    default:
        return unlinkat(dfd, p, AT_REMOVEDIR);
    }
}

/* Opens the tree's directories for `at`; NULL (errno set) on failure. */
static int *open_dirs(const nb_meta_args *a)
{
    int *dfds = calloc(a->ndirs ? a->ndirs : 1, sizeof *dfds);
    if (!dfds)
        return NULL;
    for (unsigned k = 0; k < a->ndirs; k++) {
        dfds[k] = open(a->dirs[k], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfds[k] < 0) {
            int e = errno;
            while (k-- > 0)
                close(dfds[k]);
            free(dfds);
            errno = e;
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
    if (a->op < 0 || a->op >= NB_META_OPS || !a->ndirs || !a->per_dir)
        return EINVAL;
    if (a->count && (a->first + a->count - 1) / a->per_dir >= a->ndirs)
        return EINVAL; /* an item past the last directory of the tree */
    return 0;
}

/* Makes one item what the operation needs before T0 (always by full path). */
static int prepare_one(const nb_meta_args *a, uint64_t i, char *buf)
{
    char p[PATHLEN];
    nb_meta_args full = *a;
    full.at = 0;
    if (item_name(&full, i, "", p))
        return ENAMETOOLONG;
    int rc = 0, ok = 0;
    switch (a->op) {
    case NB_MKDIR: /* must be absent */
        rc = rmdir(p);
        ok = ENOENT;
        break;
    case NB_CREATE:
        rc = unlink(p);
        ok = ENOENT;
        break;
    case NB_STATDIR: /* must be a directory */
    case NB_RMDIR:
    case NB_RENAME:
        rc = mkdir(p, DIRMODE);
        ok = EEXIST;
        if (a->op == NB_RENAME && i == a->first && (rc == 0 || errno == ok)) {
            char x[PATHLEN]; /* a rename phase cut short leaves "<item 0>-XX" */
            if (item_name(&full, i, "-XX", x))
                return ENAMETOOLONG;
            return rmdir(x) == 0 || errno == ENOENT ? 0 : errno;
        }
        break;
    default: { /* stat, read, unlink: a file, read: at least `bytes` long */
        struct stat st;
        if (stat(p, &st) == 0 && S_ISREG(st.st_mode) &&
            (a->op != NB_READ || (uint64_t)st.st_size >= a->bytes))
            return 0;
        rc = file_io(AT_FDCWD, p, 1, a->op == NB_READ ? a->bytes : 0, buf);
        break;
    }
    }
    return rc == 0 || errno == ok ? 0 : errno;
}

int nb_meta_prepare(const nb_meta_args *a, char *msg, size_t msglen)
{
    if (check_args(a))
        return nb_fail_msg(msg, msglen, EINVAL, "bad metadata arguments");
    char *buf = a->bytes ? nb_alloc_buffer(a->bytes, 1) : NULL;
    if (a->bytes && !buf)
        return nb_fail_msg(msg, msglen, ENOMEM, "allocating %llu bytes",
                           (unsigned long long)a->bytes);
    int err = 0;
    for (uint64_t i = a->first; i < a->first + a->count && !err; i++) {
        int e = prepare_one(a, i, buf);
        if (e)
            err = nb_fail_msg(msg, msglen, e, "preparing %s%llu in %s for %s", a->prefix,
                              (unsigned long long)i, a->dirs[i / a->per_dir], OP_NAMES[a->op]);
    }
    free(buf);
    return err;
}

/* mdtest's rename chain over this slot's items (see the top of this file). */
static int rename_loop(const nb_meta_args *a, const int *dfds, int64_t s, nb_result *r,
                       int64_t *last_t)
{
    char item[PATHLEN], prev[PATHLEN], first[PATHLEN];
    int prev_fd = AT_FDCWD, first_fd = dirfd_of(a, dfds, a->first);
    int64_t t = s;
    if (item_name(a, a->first, "-XX", first))
        return nb_fail(r, ENAMETOOLONG, "item name"), r->err;
    strcpy(prev, first);
    prev_fd = first_fd;
    for (uint64_t k = 0; k < a->count; k++) {
        uint64_t i = a->first + k;
        int fd = dirfd_of(a, dfds, i);
        if (k == a->count - 1) {
            strcpy(item, first);
            fd = first_fd;
        } else if (item_name(a, i, "", item)) {
            nb_fail(r, ENAMETOOLONG, "item name");
            break;
        }
        int rc = renameat(fd, item, prev_fd, prev);
        int e = rc != 0 ? errno : 0;
        int64_t t2 = nb_mono();
        if (rc != 0) {
            nb_fail(r, e, "rename %s to %s", item, prev);
            break;
        }
        r->hist[nb_bucket((uint64_t)(t2 - t))]++;
        r->ops++;
        NB_PROGRESS(r->ops);
        t = t2;
        strcpy(prev, item);
        prev_fd = fd;
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
    int *dfds = a->at ? open_dirs(a) : NULL;
    r->hist = calloc(HIST_BUCKETS, sizeof *r->hist);
    if ((a->bytes && !buf) || (a->at && !dfds) || !r->hist) {
        nb_fail(r, a->at && !dfds ? errno : ENOMEM, a->at && !dfds
                ? "opening the tree's directories" : "allocating buffers");
        goto out;
    }
    char p[PATHLEN];
    int64_t s = nb_begin(r, t0_ns, spin_ns), t = s;
    if (a->op == NB_RENAME) {
        if (a->count > 1) /* mdtest renames nothing for a single item */
            rename_loop(a, dfds, s, r, &t);
    } else {
        for (uint64_t i = a->first; i < a->first + a->count; i++) {
            if (item_name(a, i, "", p)) {
                nb_fail(r, ENAMETOOLONG, "item name");
                break;
            }
            int rc = do_op(a, dirfd_of(a, dfds, i), p, buf);
            int e = rc != 0 ? errno : 0; /* before anything else can touch errno */
            int64_t t2 = nb_mono();
            if (rc != 0) {
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
    free(buf);
    return r->err;
}
