/*
 * Fill-reducing orderings of the adjacency graph of A + A^T.
 * perm[k] = original index of the k-th unknown of the new order; iperm is its inverse.
 */
#ifndef CANOPY_ORDER_H
#define CANOPY_ORDER_H

#include <mpi.h>
#include "base/common.h"

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

/** Leaves of the nested dissection: parts of at most this many vertices, ordered by halo
 * approximate minimum fill (the reasons are in src/order/order.c). */
#define ORDER_LEAF_SIZE 120
#define ORDER_LEAF_METHOD 'f'

/** Our sequential SCOTCH ordering strategy (src/order/order.c) into @p buf; snprintf's return. */
int order_strategy_string(char *buf, size_t len, int leaf, char method);

/** Why ordering=ptscotch is refused in a build without PT-SCOTCH. */
#define ORDER_NO_PTSCOTCH                                                                          \
    "this Canopy was built without PT-SCOTCH (configure --with-ptscotch: Debian's libptscotch-dev, " \
    "which is built for Open MPI only)"

/** Whether this build has PT-SCOTCH. */
bool order_have_ptscotch(void);

/**
 * PT-SCOTCH nested dissection of @p G on every rank of @p comm (src/order/ptscotch.c). @p G,
 * @p perm and @p iperm are read and written on rank 0 only (others may pass NULL): the graph is
 * sent out in contiguous vertex ranges, dissected in parallel, and the ordering gathered back.
 * Collective; the status is agreed, so every rank returns the same one.
 */
canopy_status order_ptscotch(MPI_Comm comm, const canopy_csc *G, cint *perm, cint *iperm, canopy_err *err);

/**
 * The same dissection of a graph that every rank holds a slice of: vertices n r / P to
 * n (r + 1) / P - 1 on rank r, @p vert (offsets from 0) and @p edge (global indices, no diagonal),
 * borrowed (the caller frees them). perm / iperm on rank 0 only. Collective; the status is agreed.
 */
canopy_status order_ptscotch_slices(MPI_Comm comm, cint n, cint *vert, cint *edge, cint nedge, cint *perm, cint *iperm,
                                    canopy_err *err);

#endif
