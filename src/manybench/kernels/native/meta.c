/* meta.*: mdtest-like metadata operations on items dir/prefix{first..first+count-1}. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "native.h"

static const char *const OP_NAMES[NB_META_OPS] = {"mkdir", "create", "stat", "unlink", "rmdir"};

int nb_meta_op_from_name(const char *name)
{
    for (int i = 0; i < NB_META_OPS; i++)
        if (strcmp(name, OP_NAMES[i]) == 0)
            return i;
    return -1;
}

/* Item names are made by incrementing the decimal digits in place: no snprintf per op. */
typedef struct {
    char buf[512];
    size_t plen, len; /* prefix length, full length */
} name_gen;

static int name_set(name_gen *g, const char *prefix, uint64_t i)
{
    g->plen = strlen(prefix);
    int n = snprintf(g->buf, sizeof g->buf, "%s%llu", prefix, (unsigned long long)i);
    if (n < 0 || (size_t)n + 21 >= sizeof g->buf) /* room for name_next to grow to 20 digits */
        return ENAMETOOLONG;
    g->len = (size_t)n;
    return 0;
}

static void name_next(name_gen *g)
{
    for (size_t p = g->len; p-- > g->plen;) {
        if (g->buf[p] != '9') {
            g->buf[p]++;
            return;
        }
        g->buf[p] = '0';
    }
    /* all nines: one more digit ("99" -> "100"); name_set left room for it */
    memmove(g->buf + g->plen + 1, g->buf + g->plen, g->len - g->plen + 1);
    g->buf[g->plen] = '1';
    g->len++;
}

static int do_op(int op, int dfd, const char *name)
{
    switch (op) {
    case NB_MKDIR:
        return mkdirat(dfd, name, 0777);
    case NB_CREATE: {
        int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        return fd < 0 ? -1 : close(fd);
    }
    case NB_STAT: {
        struct stat st;
        return fstatat(dfd, name, &st, 0);
    }
    case NB_UNLINK:
        return unlinkat(dfd, name, 0);
    default:
        return unlinkat(dfd, name, AT_REMOVEDIR);
    }
}

/* Makes op's precondition true for one item. Absent-ops accept ENOENT, exist-ops EEXIST
 * (only those: rmdir's EEXIST means "not empty", which must be reported). */
static int prepare_one(int op, int dfd, const char *name)
{
    int rc, ok;
    switch (op) {
    case NB_MKDIR: /* must be absent */
        rc = unlinkat(dfd, name, AT_REMOVEDIR);
        ok = ENOENT;
        break;
    case NB_CREATE:
        rc = unlinkat(dfd, name, 0);
        ok = ENOENT;
        break;
    case NB_RMDIR: /* must exist */
        rc = mkdirat(dfd, name, 0777);
        ok = EEXIST;
        break;
    default: { /* stat, unlink: a file must exist (O_CREAT without O_EXCL never says EEXIST) */
        int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
        rc = fd < 0 ? -1 : close(fd);
        ok = 0;
        break;
    }
    }
    if (rc == 0 || errno == ok)
        return 0;
    return errno;
}

static int open_dir(const char *dir)
{
    return open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

int nb_meta_prepare(int op, const char *dir, const char *prefix, uint64_t first,
                    uint64_t count, char *msg, size_t msglen)
{
    name_gen g;
    if (op < 0 || op >= NB_META_OPS)
        return nb_fail_msg(msg, msglen, EINVAL, "unknown metadata operation");
    if (name_set(&g, prefix, first))
        return nb_fail_msg(msg, msglen, ENAMETOOLONG, "item prefix");
    int dfd = open_dir(dir);
    if (dfd < 0)
        return nb_fail_msg(msg, msglen, errno, "cannot open directory %s", dir);
    int err = 0;
    for (uint64_t i = 0; i < count && !err; i++, name_next(&g)) {
        int e = prepare_one(op, dfd, g.buf);
        if (e)
            err = nb_fail_msg(msg, msglen, e, "preparing %s/%s for %s", dir, g.buf,
                              OP_NAMES[op]);
    }
    if (close(dfd) != 0 && !err)
        err = nb_fail_msg(msg, msglen, errno, "closing directory %s", dir);
    return err;
}

int nb_run_meta(int op, const char *dir, const char *prefix, uint64_t first, uint64_t count,
                int64_t t0_ns, int64_t spin_ns, nb_result *r)
{
    name_gen g;
    if (op < 0 || op >= NB_META_OPS) {
        nb_set_error(r, EINVAL, "unknown metadata operation");
        return r->err;
    }
    if (name_set(&g, prefix, first)) {
        nb_fail(r, ENAMETOOLONG, "item prefix");
        return r->err;
    }
    /* Relative *at() calls on an open directory: the path walk to dir is not timed. */
    int dfd = open_dir(dir);
    if (dfd < 0) {
        nb_fail(r, errno, "cannot open directory %s", dir);
        return r->err;
    }
    r->hist = calloc(HIST_BUCKETS, sizeof *r->hist);
    if (!r->hist) {
        nb_fail(r, ENOMEM, "allocating the latency histogram");
        close(dfd);
        return r->err;
    }
    int64_t s = nb_begin(r, t0_ns, spin_ns), t = s;
    for (uint64_t i = 0; i < count; i++, name_next(&g)) {
        int rc = do_op(op, dfd, g.buf);
        int e = rc != 0 ? errno : 0; /* before anything else can touch errno */
        int64_t t2 = nb_mono();
        if (rc != 0) {
            nb_fail(r, e, "%s %s/%s", OP_NAMES[op], dir, g.buf);
            break;
        }
        r->hist[nb_bucket((uint64_t)(t2 - t))]++;
        r->ops++;
        t = t2;
    }
    nb_end(r, s, t);
    if (close(dfd) != 0)
        nb_fail(r, errno, "closing directory %s", dir);
    return r->err;
}
