/*
 * Fill-reducing orderings of the adjacency graph of A + A^T.
 * perm[k] = original index of the k-th unknown of the new order; iperm is its inverse.
 */
#ifndef CANOPY_ORDER_H
#define CANOPY_ORDER_H

#include "common.h"

/**
 * Compute an ordering of graph @p G (full symmetric pattern, no diagonal, base 0).
 * @param method CANOPY_ORDER_SCOTCH, CANOPY_ORDER_NATURAL or CANOPY_ORDER_USER (then @p user_perm
 *        is checked to be a permutation and copied).
 * @param threads SCOTCH's threads (>= 1). Deterministic for a given input and thread count.
 */
canopy_status order_compute(const canopy_csc *G, canopy_ordering method, const cint *user_perm, int threads,
                            cint *perm, cint *iperm, canopy_err *err);

/**
 * Fill iperm with the inverse of perm; false (iperm clobbered) if perm is not a permutation of
 * 0..n-1, with *bad (if not NULL) the first entry k whose value is out of range or repeated.
 */
bool order_invert(cint n, const cint *perm, cint *iperm, cint *bad);

#endif
