/*
 * Dense partial factorization on a 2D block-cyclic grid of ranks: see grid_dense.h for the layout,
 * the factors' semantics and the order of the messages.
 */
#include "numeric/grid_dense.h"
#include "numeric/numeric.h"
#include "comm/tree.h"
#include "comm/agree.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <cblas.h>
#include <lapacke.h>

/* ---- pure functions ---------------------------------------------------------------------- */

int grid_dense_ntags(const grid_dense *g)
{
    /* per step parity (mod 4, two steps in flight with lookahead and a margin): the diagonal
     * block, the row panel, one column broadcast per root grid row */
    return 4 * (2 + g->pr);
}

int grid_dense_owner(const grid_dense *g, cint i, cint j)
{
    return (int)(i % g->pr) * g->pc + (int)(j % g->pc);
}

cint grid_dense_local_index(cint gidx, cint nb, int p, int q)
{
    if (gidx <= 0) return 0;
    cint gb = gidx / nb; /* whole blocks below gidx: 0..gb-1, then gidx's own block, partly */
    cint held = gb > q ? (gb - q + p - 1) / p : 0;
    cint cnt = held * nb;
    if (gb % p == q) cnt += gidx - gb * nb;
    return cnt;
}

cint grid_dense_count(cint n, cint nb, int p, int q)
{
    return grid_dense_local_index(n, nb, p, q);
}

cint grid_dense_ld(const grid_dense *g, int rank)
{
    cint r = grid_dense_count(g->n, g->nb, g->pr, rank / g->pc);
    return r > 0 ? r : 1;
}

int64_t grid_dense_local_size(const grid_dense *g, int rank)
{
    return (int64_t)grid_dense_count(g->n, g->nb, g->pr, rank / g->pc) *
           grid_dense_count(g->n, g->nb, g->pc, rank % g->pc);
}

int64_t grid_dense_tile_offset(const grid_dense *g, cint i, cint j)
{
    int owner = grid_dense_owner(g, i, j);
    return (int64_t)(j / g->pc) * g->nb * grid_dense_ld(g, owner) + (int64_t)(i / g->pr) * g->nb;
}

canopy_status grid_dense_check(const grid_dense *g, canopy_err *err)
{
    if (g == NULL) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "grid_dense: NULL descriptor");
    if (g->pr < 1 || g->pc < 1 || g->pr > INT_MAX / g->pc)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "grid_dense: bad grid %d x %d", g->pr, g->pc);
    if (g->n < 0 || g->m < 0 || g->m > g->n || g->nb < 1)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "grid_dense: bad sizes n %" CINT_FMT " m %" CINT_FMT
                              " nb %" CINT_FMT, g->n, g->m, g->nb);
    if (g->kind != CANOPY_FACT_LLT && g->kind != CANOPY_FACT_LDLT && g->kind != CANOPY_FACT_LU)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "grid_dense: unknown kind %d", (int)g->kind);
    if (g->steps != NULL) {
        int ok = g->nsteps >= 0 && g->steps[0] == 0 && g->steps[g->nsteps] == g->m;
        for (cint k = 0; ok && k < g->nsteps; k++)
            ok = g->steps[k + 1] > g->steps[k] && (g->steps[k + 1] - 1) / g->nb == g->steps[k] / g->nb;
        if (!ok) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "grid_dense: steps must rise from 0 to m, each inside one tile");
    }
    if (!(g->threshold >= 0))
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "grid_dense: bad threshold %g", g->threshold);
    if (g->comm != MPI_COMM_NULL) {
        int size;
        if (MPI_Comm_size(g->comm, &size) != MPI_SUCCESS)
            return canopy_err_set(err, CANOPY_ERR_MPI, "grid_dense: MPI_Comm_size failed");
        if (size != g->pr * g->pc)
            return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "grid_dense: a %d x %d grid on %d ranks", g->pr, g->pc,
                                  size);
    }
    return CANOPY_SUCCESS;
}

/* ---- the real double instantiation (grid_dense_z.c: the complex one) ------------------------ */

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

#include "numeric/grid_dense_template.c"
