/*
 * Triangular solves with a factor on a 2D block-cyclic grid: see grid_dense_solve.h for the
 * right-hand sides' layout and the order of the messages.
 */
#include "numeric/grid_dense_solve.h"
#include "comm/tree.h"
#include "comm/agree.h"

#include <limits.h>
#include <string.h>
#include <cblas.h>

/* ---- pure functions ---------------------------------------------------------------------- */

int grid_dense_solve_ntags(const grid_dense *g)
{
    (void)g;
    return 4; /* a step's sum, its broadcast, the store at grid column 0, the trailing rows */
}

int grid_dense_rhs_owner(const grid_dense *g, cint gi)
{
    return (int)((gi / g->nb) % g->pr) * g->pc;
}

cint grid_dense_rhs_rows(const grid_dense *g, int rank)
{
    return rank % g->pc == 0 ? grid_dense_count(g->n, g->nb, g->pr, rank / g->pc) : 0;
}

cint grid_dense_rhs_ld(const grid_dense *g, int rank)
{
    cint r = grid_dense_rhs_rows(g, rank);
    return r > 0 ? r : 1;
}

cint grid_dense_rhs_local_row(const grid_dense *g, cint gi)
{
    return grid_dense_local_index(gi, g->nb, g->pr, (int)((gi / g->nb) % g->pr));
}

/* ---- the real double instantiation (grid_dense_solve_z.c: the complex one) ------------------------ */

#define SCALAR double
#define KSFX(name) name##_d
#define K_ONE 1.0
#define K_MONE (-1.0)
#define K_BS(x) (x)
#define K_GEMM cblas_dgemm
#define K_TRSM cblas_dtrsm
#define K_POTRF LAPACKE_dpotrf_work
#define K_LAPACK_PTR(p) (p)
#define K_TRANS_H CblasTrans
#define K_REAL(x) (x)
#define K_MPI_MULT 1

#include "numeric/grid_dense_solve_template.c"
