/* OpenMP helpers shared by the stream and himeno families (their files only).
 *
 * A slot is a persistent process whose affinity changes from phase to phase (the slot sets
 * it on its main thread before prepare). libgomp's pool threads inherit the mask of the
 * thread that created them and keep it for good, so after a change they would run on cpus
 * the slot no longer owns. nb_omp_follow() gives every pool thread the calling thread's
 * current mask (not one cpu each: slots sharing a NUMA node's mask would pile their thread
 * 0s onto the same cpu). Called before the wait, never inside a timed window.
 */
#ifndef MANYBENCH_NB_OMP_H
#define MANYBENCH_NB_OMP_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <omp.h>
#include <sched.h>

static inline void nb_omp_follow(int threads)
{
    cpu_set_t set;
    omp_set_num_threads(threads);
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return; /* more cpus than a cpu_set_t holds: leave the pool as it is */
#pragma omp parallel num_threads(threads)
    sched_setaffinity(0, sizeof set, &set); /* 0 = the calling (pool) thread */
}

#endif
