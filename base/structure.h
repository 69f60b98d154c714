/*
 * The block structure of the factor: the vocabulary that the analysis (src/symbolic/) builds and
 * the planning (sched/), the messages (comm/) and every later phase read.
 *
 * Block structure (all indices in the NEW, permuted numbering):
 *  - the columns are cut into ncblk column blocks ("cblk"): cblk k owns columns
 *    cblk_fcol[k] .. cblk_fcol[k+1]-1 (width w_k);
 *  - cblk k has bloks cblk_fblok[k] .. cblk_fblok[k+1]-1; the first is the dense w_k x w_k diagonal
 *    block (rows = its own columns); the others are off-diagonal bloks: row intervals
 *    blok_frow[b] .. blok_lrow[b], increasing and disjoint, each contained in the columns of ONE
 *    later cblk, blok_fcblk[b] ("facing" cblk);
 *  - closure: for off-diagonal bloks b1 <= b2 of cblk k, the rows of b2 are inside one blok of the
 *    cblk facing b1 (or inside that cblk's diagonal block). So every update of cblk k lands in
 *    whole row intervals of its targets: no index scatter per entry is ever needed;
 *  - the coefficients of cblk k form a column-major panel of cblk_stride[k] rows and w_k columns,
 *    rows in blok order; blok b starts at panel row blok_coefrow[b] (0 for the diagonal block);
 *    cblk_coef[k] is the panel's offset (in scalars) in one array of cblk_coef[ncblk] scalars.
 */
#ifndef CANOPY_STRUCTURE_H
#define CANOPY_STRUCTURE_H

#include "base/common.h"

typedef struct symbolic {
    cint n;
    cint ncblk;
    cint nblok;
    cint *cblk_fcol;        /**< [ncblk+1] */
    cint *cblk_fblok;       /**< [ncblk+1] */
    cint *cblk_stride;      /**< [ncblk] rows of the panel */
    cint *cblk_parent;      /**< [ncblk] cblk facing the first off-diagonal blok, -1 for roots */
    int64_t *cblk_coef;     /**< [ncblk+1] panel offsets, in scalars */
    cint *blok_frow;        /**< [nblok] */
    cint *blok_lrow;        /**< [nblok] inclusive */
    cint *blok_fcblk;       /**< [nblok] facing cblk (k itself for the diagonal block) */
    cint *blok_coefrow;     /**< [nblok] first panel row of the blok */
    cint *col2cblk;         /**< [n] */
    cint *perm;             /**< [n] perm[new] = old: ordering composed with the postorder */
    cint *iperm;            /**< [n] iperm[old] = new */
    int64_t nnz_l;          /**< entries of L, diagonal included (panel lower parts) */
    double flops_llt;       /**< predicted flops of LL^T (sum over columns of count^2) */
    double flops_lu;        /**< predicted flops of LU */
    size_t max_update_rows; /**< largest stride - coefrow(b) over off-diagonal bloks b (buffer rows) */
    size_t max_update_buf;  /**< largest (stride - coefrow(b)) * height(b): update buffer, in scalars */
    cint max_width;         /**< widest cblk */
} symbolic;

/** End of the facing group of cblk k that starts at blok b: its bloks all face one cblk. */
static inline cint symbolic_group_end(const symbolic *S, cint k, cint b)
{
    cint e = b + 1, bend = S->cblk_fblok[k + 1];
    while (e < bend && S->blok_fcblk[e] == S->blok_fcblk[b]) e++;
    return e;
}

/** Panel rows of the facing group of cblk k that starts at blok b. */
static inline cint symbolic_group_rows(const symbolic *S, cint k, cint b)
{
    cint e = symbolic_group_end(S, k, b);
    return (e < S->cblk_fblok[k + 1] ? S->blok_coefrow[e] : S->cblk_stride[k]) - S->blok_coefrow[b];
}

/** Entries of the largest panel (stride x width of any cblk): one rank's panel workspace. */
static inline double symbolic_max_panel(const symbolic *S)
{
    double m = 0;
    for (cint k = 0; k < S->ncblk; k++) {
        double e = (double)S->cblk_stride[k] * (double)(S->cblk_fcol[k + 1] - S->cblk_fcol[k]);
        if (e > m) m = e;
    }
    return m;
}

/** Free the arrays of S and zero it (NULL-safe). */
void symbolic_free(symbolic *S);

#endif
