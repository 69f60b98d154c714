/*
 * The solve service (solve/solve.h): rank 0 drives the solves of canopy_solve and of refinement,
 * the other ranks serve them until it says it is done; products with A where it lives; the
 * reductions of refinement over the ranks' own rows.
 */
#include "solve/solve.h"

#include <math.h>

#include "comm/agree.h"
#include "comm/share.h"
#include "matrix/dist_matrix.h"
#include "matrix/matrix.h"
#include "refine/dist_vector.h"

/* rank 0's orders to the serving ranks (solve_serve): { what, operator }, what = nrhs >= 0 a
 * solve, -1 done, -2 - nrhs a product with a distributed matrix; operator = s->trans */
static int order_serving(canopy_solver *s, int what)
{
    int cmd[2] = {what, s->trans};
    comm_quiet_barrier(s->comm);
    MPI_Bcast(cmd, 2, MPI_INT, 0, s->comm);
    return cmd[0];
}

canopy_status solve_apply(canopy_solver *s, cint nrhs, void *y)
{
    if (s->nranks == 1) return numeric_solve(&s->F, nrhs, y, s->A.n, &s->err);
    order_serving(s, (int)nrhs);
    return numeric_solve_dist(&s->F, nrhs, y, &s->err);
}

canopy_status solve_apply_matrix(canopy_solver *s, cint nrhs, double alpha, const void *x, cint ldx, double beta,
                               void *y, cint ldy)
{
    if (s->rhalo != NULL) return distv_spmv(s, s->rhalo, nrhs, alpha, x, beta, y); /* ld = s->rnl */
    if (!distm_active(s)) {
        if (s->trans) matrix_spmv_t(&s->A, nrhs, alpha, x, ldx, beta, y, ldy);
        else matrix_spmv(&s->A, nrhs, alpha, x, ldx, beta, y, ldy);
        return CANOPY_SUCCESS;
    }
    order_serving(s, -2 - (int)nrhs);
    return distm_spmv(s, nrhs, alpha, x, ldx, beta, y, ldy);
}

void solve_reduce(canopy_solver *s, double *v, int count, bool max)
{
    if (s->rhalo == NULL) return;
    if (max)
        for (int i = 0; i < count; i++)
            if (isnan(v[i])) v[i] = INFINITY; /* MPI_MAX need not propagate a NaN */
    if (MPI_Allreduce(MPI_IN_PLACE, v, count, MPI_DOUBLE, max ? MPI_MAX : MPI_SUM, s->comm) != MPI_SUCCESS)
        canopy_err_set(&s->err, CANOPY_ERR_MPI, "reduction over the ranks failed");
}

canopy_status solve_agree(canopy_solver *s)
{
    return s->rhalo != NULL ? comm_agree(s->comm, &s->err) : s->err.status;
}

void solve_serve(canopy_solver *s)
{
    for (;;) {
        int cmd[2] = {-1, 0};
        /* rank 0 may be computing a residual: wait without taking a core */
        comm_quiet_barrier(s->comm);
        MPI_Bcast(cmd, 2, MPI_INT, 0, s->comm);
        if (cmd[0] == -1) break;
        solver_set_trans(s, cmd[1]);
        if (cmd[0] < -1) {
            /* a product with a distributed matrix (solve_apply_matrix) */
            distm_spmv(s, -2 - cmd[0], 0, NULL, 0, 0, NULL, 0);
            continue;
        }
        numeric_solve_dist(&s->F, cmd[0], NULL, &s->err);
    }
    solver_set_trans(s, 0);
}

void solve_serve_end(canopy_solver *s)
{
    order_serving(s, -1);
}

void solve_dist_stats(canopy_solver *s)
{
    /* messages and bytes in one gather: totals and the bytes' summary */
    double mine[2] = {(double)(s->F.solve_counts ? s->F.solve_counts[0] : 0),
                      (double)(s->F.solve_counts ? s->F.solve_counts[1] : 0)};
    comm_summary cs[2];
    canopy_err e = {0};
    comm_summary_allranks_n(s->comm, mine, 2, cs, NULL, &e);
    s->stats.solve_comm_msgs = (int64_t)cs[0].total;
    s->stats.solve_comm_bytes = (int64_t)cs[1].total;
    s->stats.solve_bytes_rank_min = cs[1].min;
    s->stats.solve_bytes_rank_max = cs[1].max;
    s->stats.solve_bytes_rank_median = cs[1].median;
    s->stats.solve_bytes_rank_stddev = cs[1].stddev;
}
