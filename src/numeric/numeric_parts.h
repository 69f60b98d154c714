/*
 * What the three parts of the numeric phase share (numeric.c: one rank; factor_dist.c: the
 * factorization over ranks; solve_dist.c: the solve over ranks). Not for use outside src/numeric/.
 */
#ifndef CANOPY_NUMERIC_PARTS_H
#define CANOPY_NUMERIC_PARTS_H

#include "numeric/numeric.h"

/** The fan-in lists of the forward solve (fan_ptr, fan_blok, fan_cblk) from the structure: every blok, or
 *  with @p cblk_rank only those of the cblks k with cblk_rank[k] == @p me. */
canopy_status numeric_build_fan(numeric *F, const int *cblk_rank, int me, canopy_err *err);
/** The map from A's entries to their places in L and U (first factorization only). */
canopy_status numeric_build_amap(numeric *F, const canopy_csc *A, canopy_err *err);
/** A new factorization: the selected inverse of the last one is gone. */
void numeric_forget_inverse(numeric *F);
/** Per-thread workspaces and ticket locks for the pool of F->exec. */
canopy_status numeric_prepare_threads(numeric *F, canopy_err *err);
/** Free what the distributed solve set up (solve_dist.c builds it, numeric_free frees it). */
void numeric_solve_setup_free(numeric *F);

#endif
