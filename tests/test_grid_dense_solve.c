/*
 * The solves with a factor on a 2D block-cyclic grid (src/numeric/grid_dense_solve.h).
 * On one rank: the right-hand sides' layout functions for grids up to 13 x 13, then the 1 x 1
 * grid. On p ranks (tests/test_grid_dense_solve_mpi.sh: 1 to 9, oversubscribed): every grid
 * pr x pc = p. Each case (LL^T, LDL^T, LU; nrhs 1 and 3) factors with grid_dense_factor_d and
 * compares with a sequential factorization and product-form solve by the same kernels on rank 0:
 * m = n: the whole solve (x to 1e-12 relative, backward error ||Ax - b|| / (||A|| ||x|| + ||b||)
 * <= 1e-13); m < n: the forward sweep (rows [0, m) and the updated trailing rows) and the
 * backward sweep given x2. Then an allocation failing on each rank in turn: the same error
 * everywhere, no hang (the script runs under a timeout).
 */
#include "base/config.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include <cblas.h>
#include <lapacke.h>
#include "base/common.h"
#include "numeric/grid_dense.h"
#include "numeric/grid_dense_solve.h"
#include "numeric/numeric.h"
#include "grid_dense_dref.h"
#include "grid_dense_zref.h"

static int rank, size, failures;

#if defined(__GNUC__)
static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#endif
static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "rank %d: FAIL: ", rank);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    failures++;
}

/* the matrices and the sequential reference: grid_dense_dref.h */


/* The sequential product-form forward sweep over the first m columns of F (n x n) on X (n x nrhs):
 * the step's interchanges, L's diagonal tile, the rows below; LDL^T: D on the step's rows. */
static void ref_forward(canopy_factorization kind, cint n, cint m, cint nb, const double *F, const cint *ipiv,
                        const double *dsub, cint nrhs, double *X)
{
    for (cint kb = 0; kb < m; kb += nb) {
        cint ke = CANOPY_MIN(kb + nb, m), w = ke - kb;
        const double *P = F + kb + (size_t)kb * n;
        for (cint r = 0; r < nrhs && kind != CANOPY_FACT_LLT; r++)
            for (cint j = 0; j < w; j++)
                if (ipiv[kb + j] >= 0 && ipiv[kb + j] != j) {
                    double *x = X + (size_t)r * n + kb, t = x[j];
                    x[j] = x[ipiv[kb + j]];
                    x[ipiv[kb + j]] = t;
                }
        cblas_dtrsm(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, kind == CANOPY_FACT_LLT ? CblasNonUnit : CblasUnit,
                    (int)w, (int)nrhs, 1.0, P, (int)n, X + kb, (int)n);
        if (n > ke)
            cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)(n - ke), (int)nrhs, (int)w, -1.0,
                        F + ke + (size_t)kb * n, (int)n, X + kb, (int)n, 1.0, X + ke, (int)n);
        for (cint r = 0; r < nrhs && kind == CANOPY_FACT_LDLT; r++) {
            double *x = X + (size_t)r * n;
            for (cint j = kb; j < ke;) {
                if (ipiv[j] < 0) {
                    double a = F[j + (size_t)j * n], b = dsub[j], c = F[(j + 1) + (size_t)(j + 1) * n];
                    double det = a * c - b * b, x1 = x[j], x2 = x[j + 1];
                    x[j] = (c * x1 - b * x2) / det;
                    x[j + 1] = (a * x2 - b * x1) / det;
                    j += 2;
                } else {
                    x[j] /= F[j + (size_t)j * n];
                    j++;
                }
            }
        }
    }
}

/* The backward sweep: rows [m, n) of X are x2, rows [0, m) become x1. */
static void ref_backward(canopy_factorization kind, cint n, cint m, cint nb, const double *F, const cint *ipiv,
                         cint nrhs, double *X)
{
    cint nsteps = (m + nb - 1) / nb;
    for (cint k = nsteps - 1; k >= 0; k--) {
        cint kb = k * nb, ke = CANOPY_MIN(kb + nb, m), w = ke - kb;
        const double *P = F + kb + (size_t)kb * n;
        if (kind == CANOPY_FACT_LU) {
            if (n > ke)
                cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)w, (int)nrhs, (int)(n - ke), -1.0,
                            F + kb + (size_t)ke * n, (int)n, X + ke, (int)n, 1.0, X + kb, (int)n);
            cblas_dtrsm(CblasColMajor, CblasLeft, CblasUpper, CblasNoTrans, CblasNonUnit, (int)w, (int)nrhs, 1.0, P,
                        (int)n, X + kb, (int)n);
        } else {
            if (n > ke)
                cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, (int)w, (int)nrhs, (int)(n - ke), -1.0,
                            F + ke + (size_t)kb * n, (int)n, X + ke, (int)n, 1.0, X + kb, (int)n);
            cblas_dtrsm(CblasColMajor, CblasLeft, CblasLower, CblasTrans, kind == CANOPY_FACT_LLT ? CblasNonUnit : CblasUnit,
                        (int)w, (int)nrhs, 1.0, P, (int)n, X + kb, (int)n);
            for (cint r = 0; r < nrhs && kind == CANOPY_FACT_LDLT; r++)
                for (cint j = w - 1; j >= 0; j--)
                    if (ipiv[kb + j] >= 0 && ipiv[kb + j] != j) {
                        double *x = X + (size_t)r * n + kb, t = x[j];
                        x[j] = x[ipiv[kb + j]];
                        x[ipiv[kb + j]] = t;
                    }
        }
    }
}

/* ---- pure functions ---------------------------------------------------------------------- */

static void test_pure(void)
{
    static const int dims[] = {1, 2, 3, 5, 13};
    static const cint ns[] = {0, 1, 15, 16, 17, 157};
    static const cint nbs[] = {1, 4, 16};
    int ncases = 0;
    for (size_t a = 0; a < sizeof dims / sizeof *dims; a++)
        for (size_t b = 0; b < sizeof dims / sizeof *dims; b++)
            for (size_t x = 0; x < sizeof ns / sizeof *ns; x++)
                for (size_t y = 0; y < sizeof nbs / sizeof *nbs; y++) {
                    grid_dense g = {.comm = MPI_COMM_NULL, .pr = dims[a], .pc = dims[b], .n = ns[x], .m = ns[x],
                                    .nb = nbs[y], .kind = CANOPY_FACT_LU};
                    int np = g.pr * g.pc;
                    cint total = 0;
                    ncases++;
                    unsigned char **mark = calloc((size_t)np, sizeof *mark);
                    for (int q = 0; q < np; q++) {
                        cint r = grid_dense_rhs_rows(&g, q);
                        total += r;
                        if (q % g.pc != 0 && r != 0) fail("rank %d off grid column 0 holds %" CINT_FMT " rows", q, r);
                        if (q % g.pc == 0 && r != grid_dense_count(g.n, g.nb, g.pr, q / g.pc))
                            fail("rank %d: rhs rows differ from its factor rows", q);
                        if (grid_dense_rhs_ld(&g, q) < CANOPY_MAX(1, r)) fail("rank %d: ld below its rows", q);
                        mark[q] = calloc((size_t)r + 1, 1);
                    }
                    if (total != g.n) fail("%dx%d n %" CINT_FMT ": rhs rows sum to %" CINT_FMT, g.pr, g.pc, g.n, total);
                    for (cint i = 0; i < g.n; i++) {
                        int q = grid_dense_rhs_owner(&g, i);
                        cint l = grid_dense_rhs_local_row(&g, i);
                        if (q != grid_dense_owner(&g, i / g.nb, 0)) fail("row %" CINT_FMT ": owner %d", i, q);
                        else if (l < 0 || l >= grid_dense_rhs_rows(&g, q)) fail("row %" CINT_FMT ": local row %" CINT_FMT, i, l);
                        else if (mark[q][l]++) fail("row %" CINT_FMT ": local row %" CINT_FMT " held twice", i, l);
                        else if (l != grid_dense_local_index(i, g.nb, g.pr, q / g.pc))
                            fail("row %" CINT_FMT ": local row differs from the factor's", i);
                    }
                    for (int q = 0; q < np; q++) free(mark[q]);
                    free(mark);
                }
    printf("rhs layout: %d grids x sizes checked\n", ncases);
}

static const char *kname(canopy_factorization k)
{
    return k == CANOPY_FACT_LLT ? "LLt" : k == CANOPY_FACT_LDLT ? "LDLt" : "LU";
}

static double worst_diff, worst_berr;

static double rel_diff(cint rows, cint nrhs, const double *X, const double *R, cint ld)
{
    double d = 0, s = 0;
    for (cint r = 0; r < nrhs; r++)
        for (cint i = 0; i < rows; i++) {
            d = fmax(d, fabs(X[i + (size_t)r * ld] - R[i + (size_t)r * ld]));
            s = fmax(s, fabs(R[i + (size_t)r * ld]));
        }
    return s > 0 ? d / s : d;
}

/* One case on grid pr x pc. */
static void run_case(int pr, int pc, canopy_factorization kind, cint n, cint m, cint nb, cint nrhs, unsigned seed)
{
    grid_dense g = {.comm = MPI_COMM_WORLD, .pr = pr, .pc = pc, .n = n, .m = m, .nb = nb, .kind = kind,
                    .threshold = 1e-10, .tag = 200, .lookahead = 1};
    char what[160];
    snprintf(what, sizeof what, "%dx%d %s n %" CINT_FMT " m %" CINT_FMT " nb %" CINT_FMT " nrhs %" CINT_FMT, pr, pc,
             kname(kind), n, m, nb, nrhs);
    double *A = NULL, *F = NULL, *B = NULL, *X = NULL, *G = NULL;
    cint *rpiv = NULL;
    double *rdsub = NULL;
    size_t nn = (size_t)n * n, nr = (size_t)n * nrhs;
    if (rank == 0) {
        A = make_matrix(kind, n, seed);
        F = malloc(nn * sizeof *F + 8);
        memcpy(F, A, nn * sizeof *F);
        rpiv = calloc((size_t)m + 1, sizeof *rpiv);
        rdsub = calloc((size_t)m + 1, sizeof *rdsub);
        ref_factor(kind, n, m, nb, F, rpiv, rdsub, g.threshold);
        B = malloc(nr * sizeof *B + 8);
        X = malloc(nr * sizeof *X + 8);
        G = malloc(nr * sizeof *G + 8);
        rng_state = seed * 7u + 3u;
        for (size_t i = 0; i < nr; i++) B[i] = rnd();
    }
    double *loc = malloc((size_t)grid_dense_local_size(&g, rank) * sizeof *loc + 8);
    cint *ipiv = calloc((size_t)m + 1, sizeof *ipiv);
    double *dsub = calloc((size_t)m + 1, sizeof *dsub);
    cint ld = grid_dense_rhs_ld(&g, rank) + 3; /* a leading dimension above the rows */
    double *rhs = calloc((size_t)ld * (size_t)nrhs + 8, sizeof *rhs);
    canopy_err e = {0};
    size_t mem0 = canopy_mem_current();
    if (grid_dense_scatter_d(&g, 0, A, n, loc, &e) != CANOPY_SUCCESS) fail("%s: scatter: %s", what, e.msg);
    if (grid_dense_factor_d(&g, loc, ipiv, dsub, NULL, &e) < 0) fail("%s: factor: %s", what, e.msg);
    if (grid_dense_rhs_scatter_d(&g, 0, B, n, nrhs, rhs, ld, &e) != CANOPY_SUCCESS) fail("%s: rhs scatter: %s", what, e.msg);
    if (m == n) {
        if (grid_dense_solve_d(&g, loc, ipiv, dsub, nrhs, rhs, ld, &e) != CANOPY_SUCCESS) fail("%s: solve: %s", what, e.msg);
        if (grid_dense_rhs_gather_d(&g, 0, rhs, ld, nrhs, G, n, &e) != CANOPY_SUCCESS) fail("%s: gather: %s", what, e.msg);
        if (rank == 0) {
            memcpy(X, B, nr * sizeof *X);
            ref_forward(kind, n, m, nb, F, rpiv, rdsub, nrhs, X);
            ref_backward(kind, n, m, nb, F, rpiv, nrhs, X);
            double d = rel_diff(n, nrhs, G, X, n);
            worst_diff = fmax(worst_diff, d);
            if (!(d <= 1e-12)) fail("%s: x differs from the sequential solve by %.3g", what, d);
            /* backward error, column by column, infinity norms */
            double anorm = 0;
            for (cint i = 0; i < n; i++) {
                double s = 0;
                for (cint j = 0; j < n; j++) s += fabs(A[i + (size_t)j * n]);
                anorm = fmax(anorm, s);
            }
            for (cint r = 0; r < nrhs; r++) {
                const double *x = G + (size_t)r * n, *b = B + (size_t)r * n;
                double xn = 0, bn = 0, rn = 0;
                for (cint i = 0; i < n; i++) {
                    double s = -b[i];
                    for (cint j = 0; j < n; j++) s += A[i + (size_t)j * n] * x[j];
                    rn = fmax(rn, fabs(s));
                    xn = fmax(xn, fabs(x[i]));
                    bn = fmax(bn, fabs(b[i]));
                }
                double berr = rn / (anorm * xn + bn);
                worst_berr = fmax(worst_berr, berr);
                if (!(berr <= 1e-13)) fail("%s: backward error %.3g (column %" CINT_FMT ")", what, berr, r);
            }
        }
    } else {
        /* forward: rows [0, m) and the trailing rows passed up */
        if (grid_dense_forward_d(&g, loc, ipiv, dsub, nrhs, rhs, ld, &e) != CANOPY_SUCCESS) fail("%s: forward: %s", what, e.msg);
        if (grid_dense_rhs_gather_d(&g, 0, rhs, ld, nrhs, G, n, &e) != CANOPY_SUCCESS) fail("%s: gather: %s", what, e.msg);
        if (rank == 0) {
            memcpy(X, B, nr * sizeof *X);
            ref_forward(kind, n, m, nb, F, rpiv, rdsub, nrhs, X);
            double d1 = rel_diff(m, nrhs, G, X, n), d2 = rel_diff(n - m, nrhs, G + m, X + m, n);
            worst_diff = fmax(worst_diff, fmax(d1, d2));
            if (!(d1 <= 1e-12) || !(d2 <= 1e-12))
                fail("%s: forward differs from the sequential one by %.3g (rows < m), %.3g (trailing rows)", what, d1, d2);
            /* a given x2 on the trailing rows, the forward's y1 above */
            for (cint r = 0; r < nrhs; r++)
                for (cint i = m; i < n; i++) X[i + (size_t)r * n] = G[i + (size_t)r * n] = rnd();
            for (cint r = 0; r < nrhs; r++)
                for (cint i = 0; i < m; i++) G[i + (size_t)r * n] = X[i + (size_t)r * n];
        }
        if (grid_dense_rhs_scatter_d(&g, 0, G, n, nrhs, rhs, ld, &e) != CANOPY_SUCCESS) fail("%s: rhs scatter: %s", what, e.msg);
        if (grid_dense_backward_d(&g, loc, ipiv, dsub, nrhs, rhs, ld, &e) != CANOPY_SUCCESS) fail("%s: backward: %s", what, e.msg);
        if (rank == 0) memset(G, 0, nr * sizeof *G);
        if (grid_dense_rhs_gather_d(&g, 0, rhs, ld, nrhs, G, n, &e) != CANOPY_SUCCESS) fail("%s: gather: %s", what, e.msg);
        if (rank == 0) {
            ref_backward(kind, n, m, nb, F, rpiv, nrhs, X);
            double d1 = rel_diff(m, nrhs, G, X, n), d2 = rel_diff(n - m, nrhs, G + m, X + m, n);
            worst_diff = fmax(worst_diff, d1);
            if (!(d1 <= 1e-12)) fail("%s: backward x1 differs from the sequential one by %.3g", what, d1);
            if (d2 != 0) fail("%s: the backward sweep changed x2 (%.3g)", what, d2);
        }
    }
    if (canopy_mem_current() != mem0) fail("%s: %zu bytes not given back", what, canopy_mem_current() - mem0);
    free(A);
    free(F);
    free(B);
    free(X);
    free(G);
    free(rpiv);
    free(rdsub);
    free(loc);
    free(ipiv);
    free(dsub);
    free(rhs);
}

/* An allocation failing on rank @p victim: every rank returns out of memory, nobody hangs, and the
 * next solve succeeds. */
static void run_nomem(int pr, int pc, int victim, int dir)
{
    grid_dense g = {.comm = MPI_COMM_WORLD, .pr = pr, .pc = pc, .n = 60, .m = 40, .nb = 8,
                    .kind = CANOPY_FACT_LU, .threshold = 1e-10, .tag = 100, .lookahead = 1};
    double *loc = calloc((size_t)grid_dense_local_size(&g, rank) + 1, sizeof *loc);
    cint ipiv[60];
    for (int i = 0; i < 60; i++) ipiv[i] = i % 8;
    for (int64_t i = 0, ldf = grid_dense_ld(&g, rank); i < grid_dense_local_size(&g, rank); i += ldf + 1) loc[i] = 1;
    cint ld = grid_dense_rhs_ld(&g, rank);
    double *rhs = calloc((size_t)ld * 2 + 1, sizeof *rhs);
    canopy_err e = {0};
    const char *label = victim % 2 ? "grid_dense solve partial sums" : "grid_dense solve buffers";
    if (victim % 2 && victim % pc == 0) label = "grid_dense solve members"; /* grid column 0 has no partial sums */
    if (rank == victim) canopy_alloc_fail_named(label, 0);
    canopy_status st = dir ? grid_dense_backward_d(&g, loc, ipiv, NULL, 2, rhs, ld, &e)
                           : grid_dense_forward_d(&g, loc, ipiv, NULL, 2, rhs, ld, &e);
    int happened = rank == victim ? !canopy_alloc_fail_named_pending() : 0;
    canopy_alloc_fail_named(NULL, 0);
    MPI_Allreduce(MPI_IN_PLACE, &happened, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (!happened) fail("%dx%d: the injected failure (%s) on rank %d did not happen", pr, pc, label, victim);
    if (st != CANOPY_ERR_NOMEM) fail("%dx%d, failure on rank %d: status %d (%s)", pr, pc, victim, (int)st, e.msg);
    st = dir ? grid_dense_backward_d(&g, loc, ipiv, NULL, 2, rhs, ld, &e)
             : grid_dense_forward_d(&g, loc, ipiv, NULL, 2, rhs, ld, &e);
    if (st != CANOPY_SUCCESS) fail("%dx%d: the solve after the failure: %s", pr, pc, e.msg);
    if (canopy_mem_current() != 0) fail("%dx%d: %zu bytes not given back", pr, pc, canopy_mem_current());
    free(loc);
    free(rhs);
}

/* ---- complex double (grid_dense_factor_z and the _z solves) ------------------------------- */

static double worst_zdiff, worst_zberr;

/* One complex case on grid pr x pc (LL^T Hermitian positive definite, LDL^T complex symmetric, LU),
 * as run_case: m = n the whole solve against zref and its backward error; m < n the forward sweep
 * and the backward sweep given x2. */
static void run_case_z(int pr, int pc, canopy_factorization kind, cint n, cint m, cint nb, cint nrhs, unsigned seed)
{
    grid_dense g = {.comm = MPI_COMM_WORLD, .pr = pr, .pc = pc, .n = n, .m = m, .nb = nb, .kind = kind,
                    .threshold = 1e-10, .tag = 200, .lookahead = 1};
    char what[160];
    snprintf(what, sizeof what, "%dx%d complex %s n %" CINT_FMT " m %" CINT_FMT " nb %" CINT_FMT " nrhs %" CINT_FMT,
             pr, pc, kname(kind), n, m, nb, nrhs);
    zscalar *A = NULL, *F = NULL, *B = NULL, *X = NULL, *G = NULL, *rdsub = NULL;
    cint *rpiv = NULL;
    size_t nn = (size_t)n * n, nr = (size_t)n * nrhs;
    if (rank == 0) {
        A = zmake_matrix(kind, n, seed);
        F = malloc(nn * sizeof *F + 16);
        memcpy(F, A, nn * sizeof *F);
        rpiv = calloc((size_t)m + 1, sizeof *rpiv);
        rdsub = calloc((size_t)m + 1, sizeof *rdsub);
        if (zref_factor(kind, n, m, nb, F, rpiv, rdsub, g.threshold) < 0) fail("%s: the reference failed", what);
        B = malloc(nr * sizeof *B + 16);
        X = malloc(nr * sizeof *X + 16);
        G = malloc(nr * sizeof *G + 16);
        zrng_state = seed * 7u + 3u;
        for (size_t i = 0; i < nr; i++) B[i] = zrnd();
    }
    zscalar *loc = malloc((size_t)grid_dense_local_size(&g, rank) * sizeof *loc + 16);
    zscalar *dsub = calloc((size_t)m + 1, sizeof *dsub);
    cint *ipiv = calloc((size_t)m + 1, sizeof *ipiv);
    cint ld = grid_dense_rhs_ld(&g, rank) + 3;
    zscalar *rhs = calloc((size_t)ld * (size_t)nrhs + 8, sizeof *rhs);
    canopy_err e = {0};
    size_t mem0 = canopy_mem_current();
    if (grid_dense_scatter_z(&g, 0, A, n, loc, &e) != CANOPY_SUCCESS) fail("%s: scatter: %s", what, e.msg);
    if (grid_dense_factor_z(&g, loc, ipiv, dsub, NULL, &e) < 0) fail("%s: factor: %s", what, e.msg);
    if (grid_dense_rhs_scatter_z(&g, 0, B, n, nrhs, rhs, ld, &e) != CANOPY_SUCCESS) fail("%s: rhs scatter: %s", what, e.msg);
    if (m == n) {
        if (grid_dense_solve_z(&g, loc, ipiv, dsub, nrhs, rhs, ld, &e) != CANOPY_SUCCESS) fail("%s: solve: %s", what, e.msg);
        if (grid_dense_rhs_gather_z(&g, 0, rhs, ld, nrhs, G, n, &e) != CANOPY_SUCCESS) fail("%s: gather: %s", what, e.msg);
        if (rank == 0) {
            memcpy(X, B, nr * sizeof *X);
            zref_forward(kind, n, m, nb, F, rpiv, rdsub, nrhs, X);
            zref_backward(kind, n, m, nb, F, rpiv, nrhs, X);
            double d = zrel_diff(n, nrhs, G, X, n);
            worst_zdiff = fmax(worst_zdiff, d);
            if (!(d <= 1e-12)) fail("%s: x differs from the sequential solve by %.3g", what, d);
            /* backward error against A itself (the whole Hermitian / symmetric matrix) */
            double anorm = 0;
            for (cint i = 0; i < n; i++) {
                double s = 0;
                for (cint j = 0; j < n; j++) s += cabs(A[i + (size_t)j * n]);
                anorm = fmax(anorm, s);
            }
            for (cint r = 0; r < nrhs; r++) {
                const zscalar *x = G + (size_t)r * n, *b = B + (size_t)r * n;
                double xn = 0, bn = 0, rn = 0;
                for (cint i = 0; i < n; i++) {
                    zscalar s = -b[i];
                    for (cint j = 0; j < n; j++) s += A[i + (size_t)j * n] * x[j];
                    rn = fmax(rn, cabs(s));
                    xn = fmax(xn, cabs(x[i]));
                    bn = fmax(bn, cabs(b[i]));
                }
                double berr = rn / (anorm * xn + bn);
                worst_zberr = fmax(worst_zberr, berr);
                if (!(berr <= 1e-13)) fail("%s: backward error %.3g (column %" CINT_FMT ")", what, berr, r);
            }
        }
    } else {
        if (grid_dense_forward_z(&g, loc, ipiv, dsub, nrhs, rhs, ld, &e) != CANOPY_SUCCESS) fail("%s: forward: %s", what, e.msg);
        if (grid_dense_rhs_gather_z(&g, 0, rhs, ld, nrhs, G, n, &e) != CANOPY_SUCCESS) fail("%s: gather: %s", what, e.msg);
        if (rank == 0) {
            memcpy(X, B, nr * sizeof *X);
            zref_forward(kind, n, m, nb, F, rpiv, rdsub, nrhs, X);
            double d1 = zrel_diff(m, nrhs, G, X, n), d2 = zrel_diff(n - m, nrhs, G + m, X + m, n);
            worst_zdiff = fmax(worst_zdiff, fmax(d1, d2));
            if (!(d1 <= 1e-12) || !(d2 <= 1e-12))
                fail("%s: forward differs from the sequential one by %.3g (rows < m), %.3g (trailing rows)", what, d1, d2);
            for (cint r = 0; r < nrhs; r++)
                for (cint i = m; i < n; i++) X[i + (size_t)r * n] = G[i + (size_t)r * n] = zrnd();
            for (cint r = 0; r < nrhs; r++)
                for (cint i = 0; i < m; i++) G[i + (size_t)r * n] = X[i + (size_t)r * n];
        }
        if (grid_dense_rhs_scatter_z(&g, 0, G, n, nrhs, rhs, ld, &e) != CANOPY_SUCCESS) fail("%s: rhs scatter: %s", what, e.msg);
        if (grid_dense_backward_z(&g, loc, ipiv, dsub, nrhs, rhs, ld, &e) != CANOPY_SUCCESS) fail("%s: backward: %s", what, e.msg);
        if (rank == 0) memset(G, 0, nr * sizeof *G);
        if (grid_dense_rhs_gather_z(&g, 0, rhs, ld, nrhs, G, n, &e) != CANOPY_SUCCESS) fail("%s: gather: %s", what, e.msg);
        if (rank == 0) {
            zref_backward(kind, n, m, nb, F, rpiv, nrhs, X);
            double d1 = zrel_diff(m, nrhs, G, X, n), d2 = zrel_diff(n - m, nrhs, G + m, X + m, n);
            worst_zdiff = fmax(worst_zdiff, d1);
            if (!(d1 <= 1e-12)) fail("%s: backward x1 differs from the sequential one by %.3g", what, d1);
            if (d2 != 0) fail("%s: the backward sweep changed x2 (%.3g)", what, d2);
        }
    }
    if (canopy_mem_current() != mem0) fail("%s: %zu bytes not given back", what, canopy_mem_current() - mem0);
    free(A);
    free(F);
    free(B);
    free(X);
    free(G);
    free(rpiv);
    free(rdsub);
    free(loc);
    free(ipiv);
    free(dsub);
    free(rhs);
}

/* A complex solve of @p kind (forward or backward) with an allocation failing on rank @p victim:
 * out of memory everywhere, then a run through. */
static void run_nomem_z(int pr, int pc, canopy_factorization kind, int victim, int dir)
{
    grid_dense g = {.comm = MPI_COMM_WORLD, .pr = pr, .pc = pc, .n = 60, .m = 40, .nb = 8,
                    .kind = kind, .threshold = 1e-10, .tag = 100, .lookahead = 1};
    zscalar *loc = calloc((size_t)grid_dense_local_size(&g, rank) + 1, sizeof *loc), dsub[60] = {0};
    cint ipiv[60], ldf = grid_dense_ld(&g, rank);
    for (int i = 0; i < 60; i++) ipiv[i] = i % 8;
    for (cint gj = 0; gj < 60; gj++) /* the identity */
        if (grid_dense_owner(&g, gj / 8, gj / 8) == rank)
            loc[grid_dense_tile_offset(&g, gj / 8, gj / 8) + gj % 8 + (int64_t)(gj % 8) * ldf] = 1;
    cint ld = grid_dense_rhs_ld(&g, rank);
    zscalar *rhs = calloc((size_t)ld * 2 + 1, sizeof *rhs);
    canopy_err e = {0};
    const char *label = victim % 2 ? "grid_dense solve partial sums" : "grid_dense solve buffers";
    if (victim % 2 && victim % pc == 0) label = "grid_dense solve members";
    if (rank == victim) canopy_alloc_fail_named(label, 0);
    canopy_status st = dir ? grid_dense_backward_z(&g, loc, ipiv, dsub, 2, rhs, ld, &e)
                           : grid_dense_forward_z(&g, loc, ipiv, dsub, 2, rhs, ld, &e);
    int happened = rank == victim ? !canopy_alloc_fail_named_pending() : 0;
    canopy_alloc_fail_named(NULL, 0);
    MPI_Allreduce(MPI_IN_PLACE, &happened, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (!happened) fail("%dx%d complex %s: the injected failure (%s) on rank %d did not happen", pr, pc, kname(kind), label, victim);
    if (st != CANOPY_ERR_NOMEM)
        fail("%dx%d complex %s, failure on rank %d: status %d (%s)", pr, pc, kname(kind), victim, (int)st, e.msg);
    st = dir ? grid_dense_backward_z(&g, loc, ipiv, dsub, 2, rhs, ld, &e)
             : grid_dense_forward_z(&g, loc, ipiv, dsub, 2, rhs, ld, &e);
    if (st != CANOPY_SUCCESS) fail("%dx%d complex %s: the solve after the failure: %s", pr, pc, kname(kind), e.msg);
    if (canopy_mem_current() != 0) fail("%dx%d: %zu bytes not given back", pr, pc, canopy_mem_current());
    free(loc);
    free(rhs);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size == 1) test_pure();
    static const canopy_factorization kinds[] = {CANOPY_FACT_LLT, CANOPY_FACT_LDLT, CANOPY_FACT_LU};
    int ncases = 0;
    for (int pr = 1; pr <= size; pr++) {
        if (size % pr) continue;
        int pc = size / pr;
        for (int k = 0; k < 3; k++)
            for (cint nrhs = 1; nrhs <= 3; nrhs += 2) {
                run_case(pr, pc, kinds[k], 157, 157, 16, nrhs, 11u + (unsigned)k);
                run_case(pr, pc, kinds[k], 157, 100, 16, nrhs, 11u + (unsigned)k);
                run_case(pr, pc, kinds[k], 50, 23, 7, nrhs, 21u + (unsigned)k); /* a partial last step */
                run_case(pr, pc, kinds[k], 40, 0, 8, nrhs, 31u);
                run_case(pr, pc, kinds[k], 5, 5, 16, nrhs, 41u); /* one tile smaller than nb */
                ncases += 5;
            }
        for (int v = 0; v < size; v++)
            for (int dir = 0; dir < 2; dir++) run_nomem(pr, pc, v, dir);
        /* complex: one n, m = n and m < n (a partial last step), each kind */
        for (int k = 0; k < 3; k++) {
            run_case_z(pr, pc, kinds[k], 97, 97, 16, 3, 61u + (unsigned)k);
            run_case_z(pr, pc, kinds[k], 97, 97, 16, 1, 64u + (unsigned)k);
            run_case_z(pr, pc, kinds[k], 97, 61, 16, 2, 61u + (unsigned)k);
            run_case_z(pr, pc, kinds[k], 97, 45, 7, 3, 71u + (unsigned)k);
            ncases += 4;
            run_nomem_z(pr, pc, kinds[k], size - 1, k % 2);
        }
    }
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%d ranks: %d cases over its grid shapes, worst relative difference %.3g, worst backward error %.3g; complex %.3g, %.3g: %s\n",
               size, ncases, worst_diff, worst_berr, worst_zdiff, worst_zberr, total ? "FAILED" : "ok");
    MPI_Finalize();
    return total ? 1 : 0;
}
