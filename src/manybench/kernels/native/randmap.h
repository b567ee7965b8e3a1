/* The offsets of io.randread / io.randwrite: fio's default random map (every block once per
 * pass, in a random order) or, with randommap = false, uniform draws with replacement (fio's
 * norandommap). Header-only, so the per-I/O step inlines into each engine's loop.
 *
 * The map is a random permutation of [0, n) per pass, computed, never stored: a keyed
 * bijection of the k-bit integers (2^k >= n: xor a key, multiply by an odd number, xorshift;
 * four rounds), walked until it lands below n (fewer than two steps on average). Each pass
 * has keys of its own from the seed, so passes take the blocks in different orders. fio
 * keeps a bitmap of the blocks done instead (its axmap); either way no block is read twice
 * in a pass.
 */
#ifndef MANYBENCH_RANDMAP_H
#define MANYBENCH_RANDMAP_H

#include <stdint.h>
#include <stdlib.h>

/* splitmix64: a counter through a mixer; cheap, and the same seed gives the same offsets. */
static inline uint64_t next_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* A draw with replacement: uniform in [0, n) by multiply-shift (no modulo bias worth the
 * name). */
static inline uint64_t draw_block(uint64_t *s, uint64_t n)
{
    return (uint64_t)(((unsigned __int128)next_rand(s) * n) >> 64);
}

enum { MAP_ROUNDS = 4 };

typedef struct {
    uint64_t n, mask;          /* blocks; 2^k - 1 */
    unsigned shift;            /* of the xorshift: about k/2, at least 1 */
    uint64_t seed, pass;       /* the keys below are this pass's */
    uint64_t key[MAP_ROUNDS];
} rio_map;

static inline void map_pass(rio_map *m, uint64_t pass)
{
    uint64_t s = m->seed ^ (pass * 0xd1b54a32d192ed03ULL);
    for (int i = 0; i < MAP_ROUNDS; i++)
        m->key[i] = next_rand(&s);
    m->pass = pass;
}

static inline void map_init(rio_map *m, uint64_t n, uint64_t seed)
{
    unsigned k = n > 1 ? 64 - (unsigned)__builtin_clzll(n - 1) : 0;
    m->n = n;
    m->mask = k ? ~0ULL >> (64 - k) : 0;
    m->shift = k / 2 + 1;
    m->seed = seed;
    map_pass(m, 0);
}

/* The block at position x (< n) of the current pass. */
static inline uint64_t map_at(const rio_map *m, uint64_t x)
{
    do {
        for (int i = 0; i < MAP_ROUNDS; i++) {
            x = (x ^ m->key[i]) & m->mask;
            x = (x * ((m->key[i] >> 20) | 1)) & m->mask;
            x ^= x >> m->shift;
        }
    } while (x >= m->n);
    return x;
}

/* The block of the I/O at index i of the run (passes one after the other). */
static inline uint64_t map_index(rio_map *m, uint64_t i)
{
    uint64_t pass = i / m->n;
    if (pass != m->pass)
        map_pass(m, pass);
    return map_at(m, i - pass * m->n);
}

/* Distinct blocks among the first counts[j] draws of each stream seeds[j] (with
 * replacement), replayed after the timed window into a bitmap of the blocks; UINT64_MAX when
 * the bitmap cannot be had. */
static inline uint64_t distinct_draws(uint64_t n, const uint64_t *seeds,
                                      const uint64_t *counts, unsigned streams)
{
    uint64_t *seen = n <= (1ULL << 32) ? calloc((n + 63) / 64, sizeof *seen) : NULL;
    uint64_t distinct = 0;
    if (!seen)
        return UINT64_MAX;
    for (unsigned j = 0; j < streams; j++) {
        uint64_t s = seeds[j];
        for (uint64_t i = 0; i < counts[j]; i++) {
            uint64_t b = draw_block(&s, n), bit = 1ULL << (b & 63);
            distinct += !(seen[b >> 6] & bit);
            seen[b >> 6] |= bit;
        }
    }
    free(seen);
    return distinct;
}

#endif
