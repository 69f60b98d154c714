/*
 * Refinement of a distributed matrix (refine/refine.h): every rank refines its own block rows,
 * the user's rows moved there and back (refine/dist_vector.h).
 */
#include "refine/refine.h"

#include "comm/agree.h"
#include "matrix/dist_matrix.h"
#include "refine/dist_vector.h"

canopy_status refine_dist(canopy_solver *s, cint nrhs, cint nloc, const cint *rows, const void *b, cint ldb,
                              void *x, cint ldx)
{
    const cint n = s->A.n, c0 = distm_first_col(n, s->nranks, s->rank);
    const cint nl = distm_first_col(n, s->nranks, s->rank + 1) - c0;
    const size_t vs = s->A.arith == CANOPY_COMPLEX ? 2 * sizeof(double) : sizeof(double);
    distv_plan plan;
    distv_halo halo;
    if (distv_plan_build(s, nloc, rows, &plan) < 0) return s->err.status;
    if (distv_halo_build(s, nrhs, &halo) < 0) {
        distv_plan_free(&plan);
        return s->err.status;
    }
    void *bl = canopy_alloc((size_t)nl * nrhs + 1, vs, "refinement right-hand side", &s->err);
    void *xl = canopy_alloc((size_t)nl * nrhs + 1, vs, "refinement iterate", &s->err);
    cint *own = canopy_alloc((size_t)nl + 1, sizeof(cint), "refinement rows", &s->err);
    if (own)
        for (cint i = 0; i < nl; i++) own[i] = c0 + i;
    if (comm_agree(s->comm, &s->err) == CANOPY_SUCCESS && distv_to_blocks(s, &plan, nrhs, b, ldb, bl) == CANOPY_SUCCESS &&
        distv_to_blocks(s, &plan, nrhs, x, ldx, xl) == CANOPY_SUCCESS) {
        s->rhalo = &halo;
        s->rnl = nl;
        s->rrows = own;
        canopy_status st = refine_run(s, nrhs, bl, nl, xl, nl);
        s->rhalo = NULL;
        s->rrows = NULL;
        /* a warning (not converged) still hands back the best iterate */
        canopy_err keep = s->err;
        if (st >= 0 || st == CANOPY_WARN_NOT_CONVERGED) {
            canopy_err_clear(&s->err);
            if (distv_from_blocks(s, &plan, nrhs, xl, x, ldx) == CANOPY_SUCCESS) s->err = keep;
        }
    }
    canopy_free(bl);
    canopy_free(xl);
    canopy_free(own);
    distv_halo_free(&halo);
    distv_plan_free(&plan);
    return s->err.status;
}
