/*
 * Iterative refinement (see refine.h). Static pivoting trades exactness of the factors for a
 * stable static structure; refinement on the original matrix restores the accuracy. Each step
 * costs one product with A and one solve; the loop stops at the tolerance, when the backward
 * error stops halving, or after the step limit, and keeps the best iterate.
 */
#include "refine.h"

#include <complex.h>
#include <math.h>
#include <string.h>

#include "matrix.h"

static double col_inf_norm(canopy_arith arith, cint n, const void *v, size_t off)
{
    double m = 0;
    if (arith == CANOPY_COMPLEX) {
        const double complex *z = (const double complex *)v + off;
        for (cint i = 0; i < n; i++) m = fmax(m, cabs(z[i]));
    } else {
        const double *d = (const double *)v + off;
        for (cint i = 0; i < n; i++) m = fmax(m, fabs(d[i]));
    }
    return m;
}

double refine_backward_error(const canopy_csc *A, double anorm, cint nrhs, const void *b, cint ldb,
                             const void *x, cint ldx, void *r)
{
    cint n = A->n;
    size_t sz = A->arith == CANOPY_COMPLEX ? 2 * sizeof(double) : sizeof(double);
    for (cint k = 0; k < nrhs; k++)
        memcpy((char *)r + (size_t)k * n * sz, (const char *)b + (size_t)k * ldb * sz, (size_t)n * sz);
    matrix_spmv(A, nrhs, -1.0, x, ldx, 1.0, r, n);
    double worst = 0;
    for (cint k = 0; k < nrhs; k++) {
        double rn = col_inf_norm(A->arith, n, r, (size_t)k * n);
        double xn = col_inf_norm(A->arith, n, x, (size_t)k * ldx);
        double bn = col_inf_norm(A->arith, n, b, (size_t)k * ldb);
        double den = anorm * xn + bn;
        double e = den > 0 ? rn / den : (rn > 0 ? INFINITY : 0);
        if (!(e <= worst)) worst = e; /* NaN propagates */
    }
    return worst;
}

canopy_status refine_apply_inverse(canopy_solver *s, cint nrhs, void *b, cint ldb)
{
    size_t sz = s->A.arith == CANOPY_COMPLEX ? 2 * sizeof(double) : sizeof(double);
    void *tmp = canopy_alloc((size_t)s->A.n + 1, sz, "solve workspace", &s->err);
    if (tmp == NULL) return s->err.status;
    scaling_rhs(&s->sc, s->A.arith, nrhs, b, ldb, tmp);
    canopy_free(tmp);
    if (numeric_solve(&s->F, nrhs, b, ldb, &s->err) != CANOPY_SUCCESS) return s->err.status;
    scaling_solution(&s->sc, s->A.arith, nrhs, b, ldb);
    return CANOPY_SUCCESS;
}

canopy_status refine_run(canopy_solver *s, cint nrhs, const void *b, cint ldb, void *x, cint ldx)
{
    cint n = s->A.n;
    size_t sz = s->A.arith == CANOPY_COMPLEX ? 2 * sizeof(double) : sizeof(double);
    size_t cols = (size_t)nrhs;
    void *r = canopy_alloc((size_t)n * cols, sz, "refinement residual", &s->err);
    void *best = canopy_alloc((size_t)n * cols, sz, "refinement iterate", &s->err);
    if (r == NULL || best == NULL) {
        canopy_free(r);
        canopy_free(best);
        return s->err.status;
    }
    double anorm = matrix_norm_inf(&s->A);
    double tol = s->opts.refine_tolerance;
    double berr = refine_backward_error(&s->A, anorm, nrhs, b, ldb, x, ldx, r);
    int steps = 0;
    for (cint k = 0; k < nrhs; k++) memcpy((char *)best + (size_t)k * n * sz, (char *)x + (size_t)k * ldx * sz, (size_t)n * sz);
    while (steps < s->opts.refine_max_iter && berr > tol && isfinite(berr)) {
        /* x <- x + A^{-1} r, using the factors */
        if (refine_apply_inverse(s, nrhs, r, n) != CANOPY_SUCCESS) break;
        if (s->A.arith == CANOPY_COMPLEX) {
            for (cint k = 0; k < nrhs; k++) {
                double complex *xc = (double complex *)x + (size_t)k * ldx;
                const double complex *rc = (const double complex *)r + (size_t)k * n;
                for (cint i = 0; i < n; i++) xc[i] += rc[i];
            }
        } else {
            for (cint k = 0; k < nrhs; k++) {
                double *xc = (double *)x + (size_t)k * ldx;
                const double *rc = (const double *)r + (size_t)k * n;
                for (cint i = 0; i < n; i++) xc[i] += rc[i];
            }
        }
        steps++;
        double e = refine_backward_error(&s->A, anorm, nrhs, b, ldb, x, ldx, r);
        if (e < berr) {
            for (cint k = 0; k < nrhs; k++)
                memcpy((char *)best + (size_t)k * n * sz, (char *)x + (size_t)k * ldx * sz, (size_t)n * sz);
        }
        bool stalled = !(e < 0.5 * berr);
        if (e < berr) berr = e;
        if (stalled) break;
    }
    /* hand back the best iterate seen */
    for (cint k = 0; k < nrhs; k++) memcpy((char *)x + (size_t)k * ldx * sz, (char *)best + (size_t)k * n * sz, (size_t)n * sz);
    canopy_free(r);
    canopy_free(best);
    s->stats.backward_error = berr;
    s->stats.refinement_steps = steps;
    if (s->err.status < 0) return s->err.status;
    if (!(berr <= tol))
        return canopy_err_set(&s->err, CANOPY_WARN_NOT_CONVERGED,
                              "refinement stopped after %d steps at backward error %.3g (tolerance %.3g)", steps, berr, tol);
    return CANOPY_SUCCESS;
}
