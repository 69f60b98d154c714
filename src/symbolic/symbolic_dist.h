/*
 * The symbolic factorization over ranks: the same analysis as symbolic_analyze (symbolic.h), from
 * the graph's slices where the columns live. No rank holds the whole graph: each holds its slice,
 * a few arrays of n entries (the tree, the counts, the orderings) and, on rank 0 at the end, the
 * block structure, which api_analyze_dist then shares. The result is the one-rank analysis', bit for
 * bit, whatever the number of ranks.
 */
#ifndef CANOPY_SYMBOLIC_DIST_H
#define CANOPY_SYMBOLIC_DIST_H

#include <mpi.h>

#include "symbolic/symbolic.h"

/** One rank's slice of a symmetric graph: the whole adjacency of some of its vertices. */
typedef struct symbolic_slice {
    cint n;           /**< order of the whole graph */
    cint first, nv;   /**< this rank's vertices: first .. first + nv - 1 (original numbering) */
    const cint *vert; /**< [nv + 1] offsets of their neighbours in edge */
    const cint *edge; /**< neighbours, original numbering, no diagonal */
} symbolic_slice;

/**
 * Elimination tree of G(perm, perm) (ip = the inverse ordering, on every rank) into parent[n] on
 * every rank. Each rank builds the forest of its own edges; forests are merged pairwise up a
 * binomial tree (the etree of a union of edge sets is the etree of the union of their etrees).
 * Collective.
 */
canopy_status symbolic_etree_dist(MPI_Comm comm, const symbolic_slice *G, const cint *ip, cint *parent,
                                  canopy_err *err);

/**
 * Column counts of L for G(perm, perm) with its etree and postorder (every rank): each rank adds
 * Gilbert-Ng-Peyton's deltas of the rows it holds; the deltas are summed over the ranks.
 * Collective.
 */
canopy_status symbolic_colcounts_dist(MPI_Comm comm, const symbolic_slice *G, const cint *ip, const cint *parent,
                                      const cint *post, cint *colcount, canopy_err *err);

/**
 * The block structure of the partition C (every rank) on rank 0, as symbolic_build_blocks builds
 * it from G(C->perm, C->perm). The cblks are cut into ranges of about equal entries; the entries
 * of A go to their range's rank, which merges its cblks in order once the rank before has handed
 * over the structures still open (their parent lies further on), and the bloks are gathered on
 * rank 0. Other ranks' S is left empty. Collective.
 */
canopy_status symbolic_blocks_dist(MPI_Comm comm, const symbolic_slice *G, const symbolic_columns *C, symbolic *S,
                                   canopy_err *err);

/**
 * The whole analysis (symbolic_analyze, or symbolic_analyze_unsplit with @p cut) over the ranks;
 * @p perm on every rank. S (and *cut) are set on rank 0 only. Collective; the status is agreed.
 */
canopy_status symbolic_analyze_dist(MPI_Comm comm, const symbolic_slice *G, const cint *perm,
                                    const symbolic_opts *opts, symbolic *S, unsigned char **cut, canopy_err *err);

#endif
