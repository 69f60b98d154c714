/*
 * Iterative refinement (see refine.h). Static pivoting trades exactness of the factors for a
 * stable static structure; refinement on the original matrix restores the accuracy. Classical
 * refinement comes first: each step costs one product with A and one solve, and one or two steps
 * are enough when few pivots were perturbed. When it stops halving the backward error (many
 * perturbed pivots make I - A M^-1 too large for a fixed-point iteration), restarted flexible
 * GMRES preconditioned by the factors takes over: a perturbation of rank r is corrected in about
 * r + 1 iterations. Every iteration of either kind counts as a step against refine_max_iter, and
 * the best iterate is kept.
 */
#include "refine/refine.h"

#include <complex.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "matrix/matrix.h"
#include "solve/solve.h"

/* After perturbed pivots, an x whose A x rounds off by this fraction of b is no solution (see refine_run). */
#define REFINE_SINGULAR_ROUNDING 0.1

/* Largest modulus of a column; NaN propagates (fmax would drop it and hide garbage). */
static double col_inf_norm(canopy_arith arith, cint n, const void *v, size_t off)
{
    double m = 0;
    if (arith == CANOPY_COMPLEX) {
        const double complex *z = (const double complex *)v + off;
        for (cint i = 0; i < n; i++) {
            double a = cabs(z[i]);
            if (!(a <= m)) m = a;
        }
    } else {
        const double *d = (const double *)v + off;
        for (cint i = 0; i < n; i++) {
            double a = fabs(d[i]);
            if (!(a <= m)) m = a;
        }
    }
    return m;
}


/* The length of the vectors refinement works on: n, or this rank's block rows when every rank
 * refines its own rows (a distributed matrix: s->rhalo, src/refine/dist_vector.h). */
static cint vlen(const canopy_solver *s)
{
    return s != NULL && s->rhalo != NULL ? s->rnl : s->A.n;
}

/* Whether every rank got what it allocated (refining over the ranks' own rows, no rank may stop
 * alone: the others would wait for it); one rank refining: mine. */
static bool all_ok(canopy_solver *s, bool mine)
{
    if (s->rhalo == NULL) return mine;
    if (!mine && s->err.status == CANOPY_SUCCESS) canopy_err_set(&s->err, CANOPY_ERR_NOMEM, "refinement workspace");
    return solve_agree(s) == CANOPY_SUCCESS;
}

/* The backward error of x once r holds b - A x; with @p s refining over the ranks, the norms are
 * of the whole columns. */
static double backward_error_of(canopy_solver *s, canopy_arith arith, cint n, double anorm, cint nrhs, const void *b,
                                cint ldb, const void *x, cint ldx, const void *r)
{
    enum { CHUNK = 64 };
    double worst = 0, m[3 * CHUNK];
    for (cint k0 = 0; k0 < nrhs; k0 += CHUNK) {
        int nk = (int)CANOPY_MIN((cint)CHUNK, nrhs - k0);
        for (int t = 0; t < nk; t++) {
            cint k = k0 + t;
            m[3 * t] = col_inf_norm(arith, n, r, (size_t)k * n);
            m[3 * t + 1] = col_inf_norm(arith, n, x, (size_t)k * ldx);
            m[3 * t + 2] = col_inf_norm(arith, n, b, (size_t)k * ldb);
        }
        if (s != NULL && s->rhalo != NULL) solve_reduce(s, m, 3 * nk, true);
        for (int t = 0; t < nk; t++) {
            double den = anorm * m[3 * t + 1] + m[3 * t + 2], rn = m[3 * t];
            double e = den > 0 ? rn / den : (rn > 0 ? INFINITY : 0);
            if (!(e <= worst)) worst = e; /* NaN propagates */
        }
    }
    return worst;
}

static void copy_columns(size_t sz, cint n, cint nrhs, const void *b, cint ldb, void *r)
{
    for (cint k = 0; k < nrhs; k++)
        memcpy((char *)r + (size_t)k * n * sz, (const char *)b + (size_t)k * ldb * sz, (size_t)n * sz);
}

double refine_backward_error(const canopy_csc *A, double anorm, cint nrhs, const void *b, cint ldb,
                             const void *x, cint ldx, void *r)
{
    copy_columns(A->arith == CANOPY_COMPLEX ? 2 * sizeof(double) : sizeof(double), A->n, nrhs, b, ldb, r);
    matrix_spmv(A, nrhs, -1.0, x, ldx, 1.0, r, A->n);
    return backward_error_of(NULL, A->arith, A->n, anorm, nrhs, b, ldb, x, ldx, r);
}

/* refine_backward_error with the solver's A where it lives (several ranks: solve_apply_matrix). */
static double solver_backward_error(canopy_solver *s, double anorm, cint nrhs, const void *b, cint ldb,
                                    const void *x, cint ldx, void *r)
{
    cint n = vlen(s);
    copy_columns(s->A.arith == CANOPY_COMPLEX ? 2 * sizeof(double) : sizeof(double), n, nrhs, b, ldb, r);
    if (solve_apply_matrix(s, nrhs, -1.0, x, ldx, 1.0, r, n) != CANOPY_SUCCESS) return INFINITY;
    return backward_error_of(s, s->A.arith, n, anorm, nrhs, b, ldb, x, ldx, r);
}

canopy_status refine_apply_inverse(canopy_solver *s, cint nrhs, void *b, cint ldb)
{
    cint n = vlen(s);
    /* one rank, no scaling: the solve works on its own permuted copy and writes b only on success */
    if (s->nranks == 1 && s->sc.row == NULL && s->sc.col == NULL && s->sc.row_perm == NULL) {
        if (numeric_solve(&s->F, nrhs, b, ldb, &s->err) != CANOPY_SUCCESS) return s->err.status;
        return s->err.status < 0 ? s->err.status : CANOPY_SUCCESS;
    }
    /* Work on a copy so that a failure (out of memory in the solve) leaves the caller's b intact. */
    size_t sz = s->A.arith == CANOPY_COMPLEX ? 2 * sizeof(double) : sizeof(double);
    void *tmp = canopy_alloc((size_t)n + 1, sz, "solve workspace", &s->err);
    char *y = canopy_alloc((size_t)n * (size_t)nrhs + 1, sz, "solve workspace", &s->err);
    if (!all_ok(s, tmp != NULL && y != NULL)) {
        canopy_free(tmp);
        canopy_free(y);
        return s->err.status;
    }
    for (cint k = 0; k < nrhs; k++) memcpy(y + (size_t)k * n * sz, (char *)b + (size_t)k * ldb * sz, (size_t)n * sz);
    if (s->rhalo != NULL) {
        /* every rank its own rows: straight to the cblk owners and back, scaled there */
        canopy_free(tmp);
        if (solve_direct(s, s->A.n, s->A.arith, nrhs, n, s->rrows, y, n) == CANOPY_SUCCESS)
            for (cint k = 0; k < nrhs; k++) memcpy((char *)b + (size_t)k * ldb * sz, y + (size_t)k * n * sz, (size_t)n * sz);
        canopy_free(y);
        return s->err.status < 0 ? s->err.status : CANOPY_SUCCESS;
    }
    if (s->trans) scaling_rhs_t(&s->sc, s->A.arith, nrhs, y, n);
    else scaling_rhs(&s->sc, s->A.arith, nrhs, y, n, tmp);
    if (solve_apply(s, nrhs, y) == CANOPY_SUCCESS) {
        if (s->trans) scaling_solution_t(&s->sc, s->A.arith, nrhs, y, n, tmp);
        else scaling_solution(&s->sc, s->A.arith, nrhs, y, n);
        for (cint k = 0; k < nrhs; k++) memcpy((char *)b + (size_t)k * ldb * sz, y + (size_t)k * n * sz, (size_t)n * sz);
    }
    canopy_free(tmp);
    canopy_free(y);
    return s->err.status < 0 ? s->err.status : CANOPY_SUCCESS;
}

/* ||op(A)||_inf of the matrix refinement multiplies by: A's, or A^T's (A's one-norm; with a
 * distributed matrix each rank holds whole columns: their sums are exact, the maximum reduced) */
static double solver_norm(canopy_solver *s)
{
    if (!s->trans) return s->nranks > 1 && s->dist != NULL ? s->anorm_input : matrix_norm_inf(&s->A);
    double v = matrix_norm_one(&s->A);
    if (s->nranks > 1 && s->dist != NULL) {
        if (isnan(v)) v = INFINITY;
        if (MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, s->comm) != MPI_SUCCESS)
            canopy_err_set(&s->err, CANOPY_ERR_MPI, "reduction over the ranks failed");
    }
    return v;
}

/* ---- restarted right-preconditioned (flexible) GMRES on one real column ------------------ */

/* a . b over the whole vectors (the ranks' rows summed when they refine their own rows) */
static double dot(canopy_solver *s, cint n, const double *a, const double *b)
{
    double d = 0;
    for (cint i = 0; i < n; i++) d += a[i] * b[i];
    if (s->rhalo != NULL) solve_reduce(s, &d, 1, false);
    return d;
}

typedef struct gmres_ws {
    cint n, m;
    double *V, *Z, *H, *cs, *sn, *g, *y, *r, *w;
} gmres_ws;

static void gmres_free(gmres_ws *g)
{
    canopy_free(g->V);
    canopy_free(g->Z);
    canopy_free(g->H);
    canopy_free(g->cs);
    canopy_free(g->sn);
    canopy_free(g->g);
    canopy_free(g->y);
    canopy_free(g->r);
    canopy_free(g->w);
}

static bool gmres_alloc(gmres_ws *g, cint n, cint m, canopy_err *err)
{
    memset(g, 0, sizeof *g);
    g->n = n;
    g->m = m;
    size_t nm1 = (size_t)n * ((size_t)m + 1), mm = ((size_t)m + 1) * ((size_t)m + 1);
    g->V = canopy_alloc(nm1, sizeof(double), "GMRES basis", err);
    g->Z = canopy_alloc(nm1, sizeof(double), "GMRES preconditioned basis", err);
    g->H = canopy_calloc(mm, sizeof(double), "GMRES Hessenberg matrix", err);
    g->cs = canopy_alloc((size_t)m + 1, sizeof(double), "GMRES rotations", err);
    g->sn = canopy_alloc((size_t)m + 1, sizeof(double), "GMRES rotations", err);
    g->g = canopy_alloc((size_t)m + 2, sizeof(double), "GMRES residual", err);
    g->y = canopy_alloc((size_t)m + 1, sizeof(double), "GMRES coefficients", err);
    g->r = canopy_alloc((size_t)n + 1, sizeof(double), "GMRES residual", err);
    g->w = canopy_alloc((size_t)n + 1, sizeof(double), "GMRES work", err);
    if (!g->V || !g->Z || !g->H || !g->cs || !g->sn || !g->g || !g->y || !g->r || !g->w) {
        gmres_free(g);
        return false;
    }
    return true;
}

/*
 * Improve column x (b its right-hand side) by restarted FGMRES until its backward error reaches
 * tol or *budget iterations are spent. Returns the backward error reached (x holds the best).
 */
static double gmres_column(canopy_solver *s, gmres_ws *g, double anorm, const double *b, double *x,
                           double tol, int *budget)
{
    cint n = g->n, m = g->m;
    double *H = g->H;
#define HH(i, j) H[(size_t)(j) * ((size_t)m + 1) + (i)]
    double berr = solver_backward_error(s, anorm, 1, b, n, x, n, g->r);
    while (*budget > 0 && berr > tol && isfinite(berr)) {
        double beta = sqrt(dot(s, n, g->r, g->r));
        if (!(beta > 0)) break;
        double bx[2] = {0, 0};
        for (cint i = 0; i < n; i++) {
            bx[0] = fmax(bx[0], fabs(b[i]));
            bx[1] = fmax(bx[1], fabs(x[i]));
        }
        if (s->rhalo != NULL) solve_reduce(s, bx, 2, true);
        double bn = bx[0], xn = bx[1];
        /* ||r||_inf <= ||r||_2: reaching this 2-norm target is enough for the backward error */
        double target = 0.5 * tol * (anorm * xn + bn);
        for (cint i = 0; i < n; i++) g->V[i] = g->r[i] / beta;
        for (cint i = 0; i <= m; i++) g->g[i] = 0;
        g->g[0] = beta;
        cint k = 0;
        while (k < m && *budget > 0) {
            double *v = g->V + (size_t)k * n, *z = g->Z + (size_t)k * n, *vn = g->V + (size_t)(k + 1) * n;
            memcpy(z, v, (size_t)n * sizeof *z);
            if (refine_apply_inverse(s, 1, z, n) != CANOPY_SUCCESS) return berr;
            if (solve_apply_matrix(s, 1, 1.0, z, n, 0.0, vn, n) != CANOPY_SUCCESS) return berr;
            (*budget)--;
            for (cint i = 0; i <= k; i++) { /* modified Gram-Schmidt */
                double h = dot(s, n, vn, g->V + (size_t)i * n);
                HH(i, k) = h;
                for (cint t = 0; t < n; t++) vn[t] -= h * g->V[(size_t)i * n + t];
            }
            double h = sqrt(dot(s, n, vn, vn));
            HH(k + 1, k) = h;
            if (h > 0)
                for (cint t = 0; t < n; t++) vn[t] /= h;
            for (cint i = 0; i < k; i++) { /* previous rotations */
                double a = HH(i, k), c = HH(i + 1, k);
                HH(i, k) = g->cs[i] * a + g->sn[i] * c;
                HH(i + 1, k) = -g->sn[i] * a + g->cs[i] * c;
            }
            double a = HH(k, k), c = HH(k + 1, k), rr = hypot(a, c);
            g->cs[k] = rr > 0 ? a / rr : 1;
            g->sn[k] = rr > 0 ? c / rr : 0;
            HH(k, k) = rr;
            HH(k + 1, k) = 0;
            g->g[k + 1] = -g->sn[k] * g->g[k];
            g->g[k] = g->cs[k] * g->g[k];
            k++;
            if (fabs(g->g[k]) <= target || h == 0) break;
        }
        /* x += Z y with H(0:k,0:k) y = g(0:k) */
        for (cint i = k - 1; i >= 0; i--) {
            double t = g->g[i];
            for (cint j = i + 1; j < k; j++) t -= HH(i, j) * g->y[j];
            g->y[i] = HH(i, i) != 0 ? t / HH(i, i) : 0;
        }
        memcpy(g->w, x, (size_t)n * sizeof *x);
        for (cint j = 0; j < k; j++)
            for (cint t = 0; t < n; t++) g->w[t] += g->y[j] * g->Z[(size_t)j * n + t];
        double e = solver_backward_error(s, anorm, 1, b, n, g->w, n, g->r);
        if (!(e < berr)) break; /* no progress: round-off floor reached */
        memcpy(x, g->w, (size_t)n * sizeof *x);
        berr = e;
    }
#undef HH
    return berr;
}

/* GMRES phase over every column (real arithmetic); returns the worst backward error. */
static double gmres_phase(canopy_solver *s, double anorm, cint nrhs, const double *b, cint ldb, double *x,
                          cint ldx, double tol, int *steps)
{
    cint n = vlen(s);
    int left = s->opts.refine_max_iter - *steps;
    cint m = left < 30 ? left : 30;
    gmres_ws g;
    if (m < 1) return INFINITY;
    bool have = gmres_alloc(&g, n, m, &s->err);
    if (!all_ok(s, have)) {
        if (have) gmres_free(&g);
        return INFINITY;
    }
    double *xc = canopy_alloc((size_t)n + 1, sizeof(double), "GMRES iterate", &s->err);
    double *bc = canopy_alloc((size_t)n + 1, sizeof(double), "GMRES right-hand side", &s->err);
    if (!all_ok(s, xc != NULL && bc != NULL)) {
        canopy_free(xc);
        canopy_free(bc);
        xc = bc = NULL;
    }
    double worst = 0;
    int most = 0;
    for (cint k = 0; k < nrhs && xc && bc; k++) {
        memcpy(xc, x + (size_t)k * ldx, (size_t)n * sizeof *xc);
        memcpy(bc, b + (size_t)k * ldb, (size_t)n * sizeof *bc);
        int budget = left;
        double e = gmres_column(s, &g, anorm, bc, xc, tol, &budget);
        memcpy(x + (size_t)k * ldx, xc, (size_t)n * sizeof *xc);
        worst = fmax(worst, e);
        most = left - budget > most ? left - budget : most;
    }
    if (!xc || !bc) worst = INFINITY;
    *steps += most;
    canopy_free(xc);
    canopy_free(bc);
    gmres_free(&g);
    return worst;
}

canopy_status refine_run(canopy_solver *s, cint nrhs, const void *b, cint ldb, void *x, cint ldx)
{
    cint n = vlen(s);
    size_t sz = s->A.arith == CANOPY_COMPLEX ? 2 * sizeof(double) : sizeof(double);
    size_t cols = (size_t)nrhs;
    void *r = canopy_alloc((size_t)n * cols, sz, "refinement residual", &s->err);
    void *best = canopy_alloc((size_t)n * cols, sz, "refinement iterate", &s->err);
    if (!all_ok(s, r != NULL && best != NULL)) {
        canopy_free(r);
        canopy_free(best);
        return s->err.status;
    }
    double anorm = solver_norm(s);
    double tol = s->opts.refine_tolerance;
    double berr = solver_backward_error(s, anorm, nrhs, b, ldb, x, ldx, r);
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
        double e = solver_backward_error(s, anorm, nrhs, b, ldb, x, ldx, r);
        if (e < berr) {
            for (cint k = 0; k < nrhs; k++)
                memcpy((char *)best + (size_t)k * n * sz, (char *)x + (size_t)k * ldx * sz, (size_t)n * sz);
        }
        bool stalled = !(e < 0.5 * berr);
        if (e < berr) berr = e;
        if (stalled) break;
    }
    /* classical refinement stalled above the tolerance: flexible GMRES from the best iterate */
    if (berr > tol && steps < s->opts.refine_max_iter && s->A.arith == CANOPY_REAL && s->err.status >= 0) {
        for (cint k = 0; k < nrhs; k++)
            memcpy((char *)x + (size_t)k * ldx * sz, (char *)best + (size_t)k * n * sz, (size_t)n * sz);
        double e = gmres_phase(s, anorm, nrhs, b, ldb, x, ldx, tol, &steps);
        if (e < berr) {
            berr = e;
            for (cint k = 0; k < nrhs; k++)
                memcpy((char *)best + (size_t)k * n * sz, (char *)x + (size_t)k * ldx * sz, (size_t)n * sz);
        }
    }
    /* hand back the best iterate seen */
    for (cint k = 0; k < nrhs; k++) memcpy((char *)x + (size_t)k * ldx * sz, (char *)best + (size_t)k * n * sz, (size_t)n * sz);
    /* Perturbed pivots: the matrix may be singular. A huge x keeps the normwise backward error small
     * even when b is not in A's range (a singular A is arbitrarily close to regular ones). No
     * residual tells them apart once the rounding of A x itself, DBL_EPSILON ||A|| ||x||, nears ||b||
     * ([[1, 2], [3, 6]] x = [1, 1] refined to x = [9e15, -4.5e15] had a computed residual of 0);
     * below that, an ill-conditioned regular matrix's x is legitimate even with a residual of
     * 1e-3 ||b|| (so is SciPy's, on cryg2500). So x is a solution when its backward error reaches
     * the tolerance and that rounding stays below a tenth of b, column by column. */
    double rounding = 0;
    if (s->stats.perturbed_pivots > 0 && berr <= tol && s->err.status >= 0) {
        for (cint k = 0; k < nrhs; k++) {
            double m[2] = {col_inf_norm(s->A.arith, n, x, (size_t)k * ldx), col_inf_norm(s->A.arith, n, b, (size_t)k * ldb)};
            if (s->rhalo != NULL) solve_reduce(s, m, 2, true);
            double q = m[1] > 0 ? DBL_EPSILON * anorm * m[0] / m[1] : (m[0] > 0 ? INFINITY : 0);
            if (!(q <= rounding)) rounding = q;
        }
    }
    canopy_free(r);
    canopy_free(best);
    s->stats.backward_error = berr;
    s->stats.refinement_steps = steps;
    if (s->err.status < 0) return s->err.status;
    bool solved = berr <= tol && rounding < REFINE_SINGULAR_ROUNDING;
    if (!solved && s->opts.strict && s->stats.perturbed_pivots > 0)
        return canopy_err_set(&s->err, CANOPY_ERR_SINGULAR,
                              "the factorization perturbed %" PRId64 " pivots and %s: the matrix is numerically "
                              "singular and b is not in its range (option strict=on)",
                              s->stats.perturbed_pivots, berr <= tol ? "x is too large for its residual to tell it from rounding" :
                              "refinement did not reach its tolerance");
    if (!(berr <= tol))
        return canopy_err_set(&s->err, CANOPY_WARN_NOT_CONVERGED,
                              "refinement stopped after %d steps at backward error %.3g (tolerance %.3g)", steps, berr, tol);
    if (!solved)
        return canopy_err_set(&s->err, CANOPY_WARN_NOT_CONVERGED,
                              "the factorization perturbed %" PRId64 " pivots and A x rounds off by %.3g times b: the "
                              "matrix is numerically singular and b is not in its range (backward error %.3g, reached "
                              "only by a huge x)", s->stats.perturbed_pivots, rounding, berr);
    return CANOPY_SUCCESS;
}
