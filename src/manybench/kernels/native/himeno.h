/* cpu.himeno: the Himeno benchmark (himenoBMTxp: Jacobi iterations of a 19-point stencil for
 * Poisson's equation) as a slot kernel. */
#ifndef MANYBENCH_HIMENO_H
#define MANYBENCH_HIMENO_H

#include "native.h"

/* himenoBMTxp's rehearsal: 3 iterations before the measured ones, whose changes to p it
 * keeps: its printed Gosa is after 3 + nn iterations, and so is cpu.himeno's gosa */
#define NB_HIMENO_REHEARSAL 3

typedef struct {
    int mimax, mjmax, mkmax; /* grid points (himeno's MIMAX, MJMAX, MKMAX) */
    int imax, jmax, kmax;    /* MIMAX-1, ...: the interior is 1..imax-2 and so on */
    int threads;             /* OpenMP threads over the i loop; 1 = no OpenMP at all */
    float omega;
    float *mem;              /* one block: p, a[4], b[3], c[3], bnd, wrk1, wrk2; NULL once
                              * released */
    float *p, *a, *b, *c, *bnd, *wrk1, *wrk2; /* into mem; a, b, c hold 4, 3, 3 grids */
    size_t grid;             /* floats per grid */
} nb_himeno;

/* Allocates the grids and initialises them as himeno's initmt (first touch by the threads
 * that will run the loops). Returns 0 or an errno with msg filled. */
int nb_himeno_new(int mimax, int mjmax, int mkmax, int threads, nb_himeno **out, char *msg,
                  size_t msglen);
/* nn Jacobi iterations, untimed (himeno's rehearsal); returns the last gosa. */
float nb_himeno_jacobi(nb_himeno *h, int nn);
/* p back to initmt's values (after a calibration's longer rehearsals). */
void nb_himeno_reset(nb_himeno *h);
/* Waits for T0, runs nn iterations, stamps the end. gosa: the last iteration's residual,
 * gosa1: the first's. r->err = EDOM when gosa is not finite or grew. */
int nb_himeno_run(nb_himeno *h, int nn, int64_t t0_ns, int64_t spin_ns, float *gosa,
                  float *gosa1, nb_result *r);
void nb_himeno_release(nb_himeno *h);

#endif
