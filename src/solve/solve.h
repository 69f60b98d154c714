/*
 * The solve service of the phase drivers (src/solve/service.c, solve_direct.c): solves with the
 * factors and products with A wherever they live, on any number of ranks, for canopy_solve and for
 * refinement; the other ranks serve rank 0's solves until it says it is done.
 */
#ifndef CANOPY_SOLVE_H
#define CANOPY_SOLVE_H

#include "solver/solver.h"

/** Solves of canopy_solve / canopy_refine: rank 0 drives (refine.c calls solve_apply), the
 * others serve until rank 0 says it is done. */
void solve_serve(canopy_solver *s);
void solve_serve_end(canopy_solver *s);
/** One solve of y (n x nrhs, ld n, original numbering, on rank 0) with the factors, any rank count. */
canopy_status solve_apply(canopy_solver *s, cint nrhs, void *y);
/** After a solve: its communication figures. */
void solve_dist_stats(canopy_solver *s);
/** Drops the copy of rank 0's scaling that distributed solves keep until the next analysis
 * (solve_direct.c); called wherever the analysis goes, on every rank. */
void solve_direct_forget(canopy_solver *s);

/** canopy_solve_distributed on several ranks, its arguments checked and agreed (nrhs > 0, the
 * same everywhere, n rows in all): the rows go straight to their owners and back
 * (src/solve/solve_direct.c). Collective. */
canopy_status solve_direct(canopy_solver *s, cint n, canopy_arith arith, cint nrhs, cint nloc, const cint *rows,
                               void *b, cint ldb);

/** y = alpha A x + beta y on rank 0 (refinement): A where it lives (several ranks with a
 * distributed matrix: the others take part from solve_serve). While every rank refines
 * its own rows (s->rhalo), x and y are this rank's block rows (leading dimension s->rnl). */
canopy_status solve_apply_matrix(canopy_solver *s, cint nrhs, double alpha, const void *x, cint ldx, double beta,
                               void *y, cint ldy);

/** v[0..count) = the maximum (@p max) or the sum over the ranks, on every rank: refinement over
 * the ranks' own rows (s->rhalo); nothing otherwise. A NaN counts as +infinity. */
void solve_reduce(canopy_solver *s, double *v, int count, bool max);
/** The status agreed over the ranks while they refine their own rows; s->err.status otherwise. */
canopy_status solve_agree(canopy_solver *s);

#endif
