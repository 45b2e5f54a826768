/*
 * The one hash of collkit's C: 64-bit FNV-1a, for seeds that must come out
 * the same on every rank and in every run (collkit-bench's program pacer and
 * slow-launch test hook, the preload autotuner's class table and exploration
 * offsets). Header-only, no MPI. tests/python/test_launches.py computes it
 * independently in Python.
 */
#ifndef COLLKIT_CK_HASH_H
#define COLLKIT_CK_HASH_H

#include <stddef.h>
#include <stdint.h>

#define CK_FNV1A_BASIS 14695981039346656037ULL
#define CK_FNV1A_PRIME 1099511628211ULL

static inline uint64_t ck_fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = (const unsigned char *)data;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * CK_FNV1A_PRIME;
    return h;
}

static inline uint64_t ck_fnv1a_str(uint64_t h, const char *s)
{
    for (; *s; s++) h = (h ^ (unsigned char)*s) * CK_FNV1A_PRIME;
    return h;
}

/* v's eight bytes, least significant first: the same on every rank. */
static inline uint64_t ck_fnv1a_u64(uint64_t h, uint64_t v)
{
    for (int i = 0; i < 8; i++) h = (h ^ ((v >> (8 * i)) & 0xffu)) * CK_FNV1A_PRIME;
    return h;
}

#endif
