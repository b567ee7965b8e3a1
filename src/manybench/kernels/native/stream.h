/* mem.stream: McCalpin's STREAM (Copy, Scale, Add, Triad) as a slot kernel. */
#ifndef MANYBENCH_STREAM_H
#define MANYBENCH_STREAM_H

#include "native.h"

#define NB_STREAM_KERNELS 4 /* Copy, Scale, Add, Triad, in STREAM's order */

typedef struct {
    double *a, *b, *c; /* one block from a, back to back as stream.c's; NULL once released */
    uint64_t n;        /* elements per array */
    int threads;       /* OpenMP threads; 1 = plain loops, no OpenMP at all */
    int dirty;         /* the arrays hold a run's results: reset before the next run */
} nb_stream;

/* Allocates a, b, c and first-touches them with the threads that will run the loops
 * (STREAM's parallel initialisation). Returns 0 or an errno with msg filled. */
int nb_stream_new(uint64_t n, int threads, nb_stream **out, char *msg, size_t msglen);
/* Waits for T0, runs ntimes iterations of the four kernels, stamps the end, then checks the
 * arrays as STREAM's checkSTREAMresults (a failure is r->err = EDOM with the reason).
 * times_ns[kernel * ntimes + k]: MONOTONIC duration of kernel in iteration k. */
int nb_stream_run(nb_stream *s, int ntimes, int64_t *times_ns, int64_t t0_ns, int64_t spin_ns,
                  nb_result *r);
void nb_stream_release(nb_stream *s); /* frees the arrays; the struct stays valid */

#endif
