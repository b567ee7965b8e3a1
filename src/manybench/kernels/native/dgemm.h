/* cpu.dgemm: C = alpha*A*B + beta*C through a CBLAS found at run time (dlopen). */
#ifndef MANYBENCH_DGEMM_H
#define MANYBENCH_DGEMM_H

#include <stdint.h>

#include "native.h"

#define NB_BLAS_MAX 16 /* distinct libraries one process may load */

/* What nb_blas_load found; the library stays loaded for the life of the process (a BLAS
 * with a thread pool is not safe to dlclose). */
typedef struct {
    char path[512];      /* the name given to dlopen */
    char file[4096];     /* the file the dgemm symbol lives in (realpath when known) */
    const char *symbol;  /* e.g. cblas_dgemm, scipy_cblas_dgemm64_ */
    int ilp64;           /* 64-bit integer arguments */
    const char *threads; /* how the thread count is set: a symbol name, or "" (env only) */
    char config[256];    /* openblas_get_config() and the like, "" when unknown */
    char corename[64];   /* openblas_get_corename(): the kernels it runs, "" when unknown */
} nb_blas_info;

/* Loads `path` (a file or a soname) and finds its dgemm; returns the library's index >= 0,
 * or -errno with the reason in msg. */
int nb_blas_load(const char *path, nb_blas_info *info, char *msg, size_t msglen);
/* Sets the library's thread count when it has a call for that; returns 1 if it did. */
int nb_blas_set_threads(int lib, int threads);
/* The thread count the library says it uses (openblas_get_num_threads), -1 when unknown. */
int nb_blas_get_threads(int lib);

typedef struct nb_dgemm nb_dgemm;
/* Three n x n row-major matrices, aligned, filled (pseudo-random in [-1, 1) from seed);
 * returns 0 or an errno with the reason in msg. */
int nb_dgemm_new(int lib, uint64_t n, uint64_t seed, nb_dgemm **out, char *msg, size_t msglen);
void nb_dgemm_free(nb_dgemm *d);
uint64_t nb_dgemm_n(const nb_dgemm *d);
/* 0 = A, 1 = B, 2 = C: n*n doubles, row-major. */
const double *nb_dgemm_matrix(const nb_dgemm *d, int which);
/* `count` untimed calls (warm-up, calibration): MONOTONIC ns they took. */
int64_t nb_dgemm_time(nb_dgemm *d, uint64_t count, double alpha, double beta);
/* The timed loop: `repeat` dgemm calls between nb_begin and nb_end, per-call times in hist. */
int nb_run_dgemm(nb_dgemm *d, uint64_t repeat, double alpha, double beta, int64_t t0_ns,
                 int64_t spin_ns, nb_result *r);

#endif
