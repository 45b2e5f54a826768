/*
 * Shared math of Bine trees and butterflies (De Sensi et al., "Bine Trees:
 * Enhancing Collective Operations by Optimizing Communication Locality") and
 * of Swing (De Sensi et al., NSDI'24), which uses the same partner distances.
 *
 * Negabinary: v = sum_i b_i (-2)^i. On s bits it represents the 2^s
 * consecutive integers [-(2^s - 1 - m)... m] for some m (see
 * ck_nb_max_positive), so a rank r of a power-of-two p = 2^s maps to the
 * representation of r when r <= that maximum, else of r - p: ranks "right" of
 * 0 keep their positive value, ranks "left" of 0 their negative one.
 */
#ifndef COLLKIT_BINE_H
#define COLLKIT_BINE_H

#include <stdint.h>

/* Negabinary encoding/decoding of an integer (no width limit below 32 bits). */
uint32_t ck_nb_encode(int64_t v);
int64_t ck_nb_decode(uint32_t bits);

/* Largest value representable on s negabinary bits: sum of 4^i for 2i < s. */
int64_t ck_nb_max_positive(int s);

/* Rank r of p (p = 2^s) to its s-bit negabinary representation, by the
 * modulo-p rule above; and back (decoded value mod p). */
uint32_t ck_bine_rank_to_nb(int r, int p, int s);
int ck_bine_nb_to_rank(uint32_t nb, int p);

/* rho(k) = sum_{i=0..k} (-2)^i = 1, -1, 3, -5, 11, -21, ... */
int64_t ck_bine_rho(int k);

/* Butterfly partner of r at step k (distance |rho(k)|): even r -> r + rho(k),
 * odd r -> r - rho(k), mod p. Involutive for even p: the partner's partner at
 * the same step is r. */
int ck_bine_partner(int r, int k, int p);

/* Gray code and its inverse on s bits. The distance-halving Bine tree is the
 * distance-halving binomial tree relabelled: rank r sits at binomial position
 * gray(nb(r)), i.e. r = nb^-1(inverse_gray(position)). */
uint32_t ck_gray(uint32_t x);
uint32_t ck_inverse_gray(uint32_t x);
int ck_bine_tree_position(int r, int p, int s);
int ck_bine_tree_rank(int position, int p, int s);

/* Reverse the lowest s bits of x. */
uint32_t ck_bit_reverse(uint32_t x, int s);

#endif
