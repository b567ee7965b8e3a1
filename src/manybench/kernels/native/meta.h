/* meta.*: mdtest's metadata operations on one slot's items, by full path (as mdtest and
 * applications walk them) or, as the fast variant, relative to open directories (*at calls).
 * Everything before T0 goes by descriptor from the run's scratch root; what is found where an
 * item goes is checked (scratch.c's rule). */
#ifndef MANYBENCH_META_H
#define MANYBENCH_META_H

#include <stdint.h>

#include "native.h"

enum nb_meta_op {
    NB_MKDIR, NB_CREATE, NB_STAT, NB_STATDIR, NB_READ, NB_RENAME, NB_UNLINK, NB_RMDIR,
    NB_META_OPS
};

typedef struct {
    int op;
    const char *root;        /* the run's scratch root: every directory reached from it */
    const char *const *dirs; /* the tree's directories, relative to root; item i lives in
                                dirs[i / per_dir] */
    unsigned ndirs;
    const char *prefix;      /* item names: prefix + decimal number ("file.mdtest.3.17") */
    uint64_t per_dir;        /* items per directory */
    uint64_t first, count;   /* this slot's items: first .. first + count - 1 */
    uint64_t bytes;          /* create: written to each file; read: read from each (0: none) */
    int at;                  /* 1: *at() on open directories, no path walk (not mdtest's) */
} nb_meta_args;

int nb_meta_op_from_name(const char *name); /* -1 when unknown */
/* Makes the operation's precondition true for every item (absent for mkdir/create, present
 * for the others, files written to `bytes` for read), untimed. 0 or errno with msg. */
int nb_meta_prepare(const nb_meta_args *a, char *msg, size_t msglen);
/* The timed loop: one operation per item, per-operation latency histogram. */
int nb_run_meta(const nb_meta_args *a, int64_t t0_ns, int64_t spin_ns, nb_result *r);

#endif
