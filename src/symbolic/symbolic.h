/*
 * Symbolic factorization: elimination tree, postorder, column counts, supernodes, amalgamation,
 * and the block structure of the factor that every later phase works on.
 * The block structure itself is base/structure.h.
 */
#ifndef CANOPY_SYMBOLIC_H
#define CANOPY_SYMBOLIC_H

#include "base/common.h"
#include "base/structure.h"


/** Tuning of the analysis. */
typedef struct symbolic_opts {
    int amalgamation;          /**< 0: fundamental supernodes only */
    double amalgamation_fill;  /**< extra zeros allowed, fraction of a merged supernode's entries */
    cint split_size;           /**< cut cblks wider than this (0: no cut) */
    double split_share;        /**< > 0: only cut cblks whose subtree holds at least this fraction of
                                    the flops (the shared top of the tree); 0: cut every wide cblk */
} symbolic_opts;

/* ---- pieces (each usable and tested on its own) ------------------------------------------ */

/** Elimination tree of the graph G (full symmetric pattern, any diagonal ignored). parent[j] = -1 for roots. */
canopy_status symbolic_etree(const canopy_csc *G, cint *parent, canopy_err *err);

/** Postorder of a forest: post[k] = k-th node; children before parents, deterministic. */
canopy_status symbolic_postorder(cint n, const cint *parent, cint *post, canopy_err *err);

/**
 * Column counts of L (diagonal included) in near-linear time (Gilbert-Ng-Peyton), for the graph G
 * whose etree is @p parent and postorder @p post.
 */
canopy_status symbolic_colcounts(const canopy_csc *G, const cint *parent, const cint *post,
                                 cint *colcount, canopy_err *err);

/** One entry (i, j), i > j, of Gilbert-Ng-Peyton's walk in postorder (symbolic_colcounts; the
 * distributed counts walk only the rows they hold): the leaf and least-common-ancestor deltas. */
void symbolic_colcount_entry(cint i, cint j, const cint *first, cint *maxfirst, cint *prevleaf, cint *anc,
                             cint *delta);

/**
 * Fundamental supernodes of a postordered etree with column counts: on return *nsuper and
 * super_fcol[0..nsuper] (column ranges). Columns must already be in postorder.
 */
canopy_status symbolic_supernodes(cint n, const cint *parent, const cint *colcount, cint *nsuper,
                                  cint *super_fcol, canopy_err *err);

/**
 * Build the block structure for the column partition part_fcol[0..npart] of the graph G given in
 * the final numbering (G already permuted). Works for any partition into consecutive columns
 * (the result is closed, see above); fills every field of @p S except perm/iperm.
 */
canopy_status symbolic_build_blocks(const canopy_csc *G, cint npart, const cint *part_fcol,
                                    symbolic *S, canopy_err *err);

/** Cut the blocks of the partition fcol[0..npart] wider than @p split (and with keep[k] != 0, when
 * keep is given) into near-equal consecutive pieces: out[0..return] (out holds n + 1 entries). */
cint symbolic_split_partition(cint npart, const cint *fcol, cint split, const unsigned char *keep, cint *out);

/**
 * The structure of @p Su with its cblks k that have cut[k] != 0 (all when cut is NULL) split into
 * pieces of at most @p width columns (0: none), without the graph: each piece keeps its cblk's
 * rows (see blocks.c). Cheap (linear in the bloks), so the plan can compare widths. S gets its
 * own copy of perm/iperm.
 */
canopy_status symbolic_resplit(const symbolic *Su, const unsigned char *cut, cint width, symbolic *S, canopy_err *err);

/**
 * The whole analysis: G (original numbering) with fill-reducing @p perm -> etree, postorder,
 * column counts, supernodes, amalgamation, splitting -> block structure. S->perm/iperm receive the
 * composed ordering.
 */
canopy_status symbolic_analyze(const canopy_csc *G, const cint *perm, const symbolic_opts *opts,
                               symbolic *S, canopy_err *err);

/**
 * The same analysis without the split: @p S has the whole blocks, and *cut (canopy_alloc'ed,
 * S->ncblk entries) flags the ones opts->split_share selects (all when it is 0), for
 * symbolic_resplit at widths the caller compares. opts->split_size is not used.
 */
canopy_status symbolic_analyze_unsplit(const canopy_csc *G, const cint *perm, const symbolic_opts *opts,
                                       symbolic *S, unsigned char **cut, canopy_err *err);

/* ---- the steps the one-rank and the distributed analysis share --------------------------- */

/** Arguments of an analysis of order @p n; inverts the ordering into @p iperm (n entries) and says
 * which entry is wrong when it is not a permutation. */
canopy_status symbolic_check_args(cint n, const cint *perm, const symbolic_opts *opts, cint *iperm, canopy_err *err);

/** The columns' final order and partition: what the analysis settles from the tree and the
 * counts alone, before the block structure. */
typedef struct symbolic_columns {
    cint n, npart, ngroup;
    cint *part_fcol;     /**< [npart+1] the column blocks, final numbering */
    cint *perm, *iperm;  /**< final ordering: perm[new] = old */
    unsigned char *cut;  /**< [ngroup] with want_cut: the whole groups the split would cut */
} symbolic_columns;

/**
 * From the etree @p parent, its @p post order and the column counts @p colcount of G(perm, perm):
 * supernodes, amalgamation, the split (or, with @p want_cut, whole blocks and the flags of those
 * the split would cut) and the final ordering. Needs no graph: O(n).
 */
canopy_status symbolic_columns_plan(cint n, const cint *perm, const cint *parent, const cint *post,
                                    const cint *colcount, const symbolic_opts *opts, bool want_cut,
                                    symbolic_columns *C, canopy_err *err);
void symbolic_columns_free(symbolic_columns *C);

/**
 * The block structure from each cblk's off-diagonal bloks given in cblk order: cblk k has
 * nblok[k] of them, their first and last rows in frow/lrow (one after the other over k). Fills
 * every field of @p S but perm/iperm, as symbolic_build_blocks does from the graph.
 */
canopy_status symbolic_blocks_from_bloks(symbolic *S, cint n, cint npart, const cint *part_fcol, const cint *nblok,
                                         const cint *frow, const cint *lrow, canopy_err *err);

/** Cut the sorted rows rows[0..len) of the cblk ending at column @p lcol into bloks: a new blok
 * at each gap or cblk boundary. Writes frow/lrow pairs (at most len) and returns their count. */
cint symbolic_cut_bloks(const cint *col2cblk, const cint *rows, cint len, cint *frow, cint *lrow);

/** Permute a graph symmetrically: B = G(perm, perm), sorted. */
canopy_status symbolic_permute_graph(const canopy_csc *G, const cint *perm, const cint *iperm,
                                     canopy_csc *B, canopy_err *err);


#endif
