/* The hot loops, compiled for several targets and picked when the extension loads.
 *
 * The package is built for the x86-64 baseline (setup.py: -march=x86-64-v2) so that one
 * install runs on every node; a function marked NB_CLONES is compiled once more for each of
 * NB_CLONE_TARGETS and gcc's resolver (an ifunc, run by the dynamic loader) picks the first
 * this cpu has. OpenMP's outlined loops inside such a function are cloned with it. A build for
 * one processor (MANYBENCH_MARCH=native: NB_NO_CLONES) has no clones: all of it is for that
 * processor. Other compilers and architectures get plain functions.
 */
#ifndef NB_CLONES_H
#define NB_CLONES_H

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(NB_NO_CLONES)
/* best first: the order nb_clone_target() tries them in, as the resolver does */
#define NB_CLONE_TARGETS "arch=x86-64-v4", "arch=x86-64-v3", "default"
#define NB_CLONES __attribute__((target_clones(NB_CLONE_TARGETS)))
#else
#define NB_CLONES
#endif

/* The clone this cpu runs ("x86-64-v4", "x86-64-v3", "default"), "" in a build without
 * clones. The resolver's own rule, asked again (tests compare it with the address the
 * loader bound: kernels/native/module.c's clone_addresses). */
const char *nb_clone_target(void);

#endif
