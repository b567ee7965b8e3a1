/* cpu.dgemm: double-precision matrix products through the system's CBLAS, found with dlopen
 * so that manybench builds and runs without any BLAS and measures whichever one the node has.
 *
 * Two ABIs are handled: the usual 32-bit-integer cblas_dgemm, and ILP64 builds (64-bit
 * integers) such as the OpenBLAS inside numpy's wheels, whose symbols carry a prefix and a
 * suffix (scipy_cblas_dgemm64_) so they can live next to a system BLAS in one process.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dgemm.h"

enum { ROW_MAJOR = 101, NO_TRANS = 111 }; /* CBLAS_ORDER, CBLAS_TRANSPOSE values */

typedef void (*dgemm32_fn)(int, int, int, int, int, int, double, const double *, int,
                           const double *, int, double, double *, int);
typedef void (*dgemm64_fn)(int, int, int, int64_t, int64_t, int64_t, double, const double *,
                           int64_t, const double *, int64_t, double, double *, int64_t);

typedef struct {
    void *handle;
    void *dgemm;
    void (*set_threads)(int);         /* OpenBLAS, MKL: int */
    void (*set_threads_dim)(int64_t); /* BLIS: dim_t */
    int (*get_threads)(void);         /* OpenBLAS */
    nb_blas_info info;
} blas_lib;

static blas_lib libs[NB_BLAS_MAX];
static int nlibs;
static pthread_mutex_t libs_lock = PTHREAD_MUTEX_INITIALIZER;

/* dgemm symbols in the order tried; the prefix and suffix of the one found name the
 * library's other calls (scipy_openblas_set_num_threads64_ beside scipy_cblas_dgemm64_). */
static const struct {
    const char *prefix, *suffix;
    int ilp64;
} flavours[] = {
    {"", "", 0},           /* OpenBLAS, BLIS, netlib CBLAS, MKL (LP64) */
    {"scipy_", "", 0},     /* scipy-openblas32 (scipy wheels) */
    {"", "64_", 1},        /* OpenBLAS ILP64 with suffix (numpy 1.22-1.26 wheels) */
    {"scipy_", "64_", 1},  /* scipy-openblas64 (numpy >= 2 wheels) */
};

static void *sym(void *h, const char *prefix, const char *name, const char *suffix)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s%s%s", prefix, name, suffix);
    return dlsym(h, buf);
}

static const char *const symbol_names[][4] = {
    {"cblas_dgemm", "scipy_cblas_dgemm", "cblas_dgemm64_", "scipy_cblas_dgemm64_"},
    {"openblas_set_num_threads", "scipy_openblas_set_num_threads",
     "openblas_set_num_threads64_", "scipy_openblas_set_num_threads64_"},
};

static int find_dgemm(blas_lib *L, char *msg, size_t msglen)
{
    int f = -1;
    for (int i = 0; i < (int)(sizeof flavours / sizeof *flavours) && f < 0; i++)
        if ((L->dgemm = sym(L->handle, flavours[i].prefix, "cblas_dgemm", flavours[i].suffix)))
            f = i;
    if (f < 0) {
        snprintf(msg, msglen, "%s has no cblas_dgemm (nor an ILP64 or scipy_ variant of it): "
                 "not a CBLAS library", L->info.path);
        return -ENOENT;
    }
    const char *pre = flavours[f].prefix, *suf = flavours[f].suffix;
    L->info.symbol = symbol_names[0][f];
    L->info.ilp64 = flavours[f].ilp64;
    /* OpenBLAS (any flavour), then BLIS, then MKL */
    const char *(*config)(void) = sym(L->handle, pre, "openblas_get_config", suf);
    if ((L->set_threads = sym(L->handle, pre, "openblas_set_num_threads", suf))) {
        L->info.threads = symbol_names[1][f];
    } else if ((L->set_threads_dim = dlsym(L->handle, "bli_thread_set_num_threads"))) {
        L->info.threads = "bli_thread_set_num_threads";
    } else if ((L->set_threads = dlsym(L->handle, "MKL_Set_Num_Threads"))) {
        L->info.threads = "MKL_Set_Num_Threads";
    } else {
        L->info.threads = "";
    }
    const char *(*core)(void) = sym(L->handle, pre, "openblas_get_corename", suf);
    if (core) {
        const char *c = core();
        snprintf(L->info.corename, sizeof L->info.corename, "%s", c ? c : "");
    }
    L->get_threads = sym(L->handle, pre, "openblas_get_num_threads", suf);
    if (!config)
        config = dlsym(L->handle, "bli_info_get_version_str");
    if (config) {
        const char *c = config();
        snprintf(L->info.config, sizeof L->info.config, "%s", c ? c : "");
    }
    /* Unsuffixed symbols with 64-bit integers: Debian's libopenblas64.so.0, BLIS built with
     * --blas-int-size=64. Calling them with 32-bit ints would read garbage sizes. */
    if (!L->info.ilp64 && strstr(L->info.config, "USE64BITINT"))
        L->info.ilp64 = 1;
    int64_t (*int_size)(void) = dlsym(L->handle, "bli_info_get_blas_int_type_size");
    if (!L->info.ilp64 && int_size && int_size() == 64)
        L->info.ilp64 = 1;
    Dl_info where;
    char real[PATH_MAX];
    if (dladdr(L->dgemm, &where) && where.dli_fname && where.dli_fname[0])
        snprintf(L->info.file, sizeof L->info.file, "%s",
                 realpath(where.dli_fname, real) ? real : where.dli_fname);
    else
        snprintf(L->info.file, sizeof L->info.file, "%s", L->info.path);
    return 0;
}

int nb_blas_load(const char *path, nb_blas_info *info, char *msg, size_t msglen)
{
    int idx = -1;
    pthread_mutex_lock(&libs_lock);
    for (int i = 0; i < nlibs && idx < 0; i++)
        if (strcmp(libs[i].info.path, path) == 0)
            idx = i;
    if (idx < 0) {
        if (nlibs == NB_BLAS_MAX) {
            idx = -nb_fail_msg(msg, msglen, EMFILE, "more than %d BLAS libraries loaded",
                               NB_BLAS_MAX);
            goto out;
        }
        blas_lib L = {0};
        snprintf(L.info.path, sizeof L.info.path, "%s", path);
        dlerror();
        L.handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!L.handle) {
            const char *why = dlerror();
            snprintf(msg, msglen, "%s", why ? why : "dlopen failed");
            idx = -ENOENT;
            goto out;
        }
        int e = find_dgemm(&L, msg, msglen);
        if (e) {
            dlclose(L.handle); /* nothing of it ran: safe to close */
            idx = e;
            goto out;
        }
        libs[nlibs] = L;
        idx = nlibs++;
    }
    *info = libs[idx].info;
out:
    pthread_mutex_unlock(&libs_lock);
    return idx;
}

int nb_blas_set_threads(int lib, int threads)
{
    if (lib < 0 || lib >= nlibs || threads < 1)
        return 0;
    blas_lib *L = &libs[lib];
    if (L->set_threads)
        L->set_threads(threads);
    else if (L->set_threads_dim)
        L->set_threads_dim(threads);
    else
        return 0;
    return 1;
}

int nb_blas_get_threads(int lib)
{
    if (lib < 0 || lib >= nlibs || !libs[lib].get_threads)
        return -1;
    return libs[lib].get_threads();
}

struct nb_dgemm {
    const blas_lib *lib;
    uint64_t n;
    double *m[3]; /* A, B, C */
};

static void fill(double *a, uint64_t count, uint64_t seed)
{
    uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 0x2545f4914f6cdd1dULL;
    for (uint64_t i = 0; i < count; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        a[i] = (double)(x >> 11) * (2.0 / 9007199254740992.0) - 1.0; /* [-1, 1) */
    }
}

int nb_dgemm_new(int lib, uint64_t n, uint64_t seed, nb_dgemm **out, char *msg, size_t msglen)
{
    *out = NULL;
    if (lib < 0 || lib >= nlibs) {
        snprintf(msg, msglen, "no BLAS library %d loaded", lib);
        return EINVAL;
    }
    if (n == 0 || n > ((uint64_t)1 << 24)) { /* n*n*8 cannot overflow; memory runs out first */
        snprintf(msg, msglen, "matrix size n = %llu out of range", (unsigned long long)n);
        return EINVAL;
    }
    nb_dgemm *d = calloc(1, sizeof *d);
    if (!d)
        return nb_fail_msg(msg, msglen, ENOMEM, "allocating the dgemm state");
    d->lib = &libs[lib];
    d->n = n;
    size_t bytes = (size_t)(n * n * 8);
    for (int i = 0; i < 3; i++) {
        void *p = NULL;
        int rc = posix_memalign(&p, 64, bytes);
        if (rc) {
            nb_dgemm_free(d);
            return nb_fail_msg(msg, msglen, rc,
                               "allocating three %llu x %llu matrices (%.1f MiB)",
                               (unsigned long long)n, (unsigned long long)n,
                               3.0 * (double)bytes / 1048576);
        }
        d->m[i] = p;
        fill(d->m[i], n * n, seed * 3 + (uint64_t)i + 1); /* first touch: every page now */
    }
    *out = d;
    return 0;
}

void nb_dgemm_free(nb_dgemm *d)
{
    if (!d)
        return;
    for (int i = 0; i < 3; i++)
        free(d->m[i]);
    free(d);
}

uint64_t nb_dgemm_n(const nb_dgemm *d) { return d->n; }

const double *nb_dgemm_matrix(const nb_dgemm *d, int which)
{
    return which >= 0 && which < 3 ? d->m[which] : NULL;
}

static inline void call(const nb_dgemm *d, double alpha, double beta)
{
    const blas_lib *L = d->lib;
    if (L->info.ilp64) {
        int64_t n = (int64_t)d->n;
        ((dgemm64_fn)L->dgemm)(ROW_MAJOR, NO_TRANS, NO_TRANS, n, n, n, alpha, d->m[0], n,
                               d->m[1], n, beta, d->m[2], n);
    } else {
        int n = (int)d->n;
        ((dgemm32_fn)L->dgemm)(ROW_MAJOR, NO_TRANS, NO_TRANS, n, n, n, alpha, d->m[0], n,
                               d->m[1], n, beta, d->m[2], n);
    }
}

int64_t nb_dgemm_time(nb_dgemm *d, uint64_t count, double alpha, double beta)
{
    int64_t s = nb_mono();
    for (uint64_t i = 0; i < count; i++)
        call(d, alpha, beta);
    return nb_mono() - s;
}

int nb_run_dgemm(nb_dgemm *d, uint64_t repeat, double alpha, double beta, int64_t t0_ns,
                 int64_t spin_ns, nb_result *r)
{
    r->hist = calloc(HIST_BUCKETS, sizeof *r->hist);
    if (!r->hist)
        return nb_fail(r, ENOMEM, "allocating the latency histogram"), r->err;
    int64_t s = nb_begin(r, t0_ns, spin_ns), t = s;
    for (uint64_t i = 0; i < repeat; i++) {
        call(d, alpha, beta);
        int64_t t2 = nb_mono();
        r->hist[nb_bucket((uint64_t)(t2 - t))]++;
        NB_PROGRESS(i + 1);
        t = t2;
    }
    nb_end(r, s, t);
    r->ops = repeat;
    return r->err;
}
