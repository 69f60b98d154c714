/*
 * The dense partial factorization on a 2D block-cyclic grid (src/numeric/grid_dense.h).
 * On one rank: the pure functions (ownership, local sizes, tile offsets) for grids up to 32 x 32,
 * then the 1 x 1 grid. On p ranks (tests/test_grid_dense_mpi.sh: 1 to 9, oversubscribed): every grid
 * pr x pc = p. Each case (LL^T of an SPD matrix, LDL^T of a symmetric indefinite one, LU of an
 * unsymmetric one; m = n and m < n, with and without lookahead, n not a multiple of nb) is
 * scattered from rank 0, factored, gathered and compared with a sequential factorization by the
 * same kernels with the same per-step pivoting (max relative difference <= 1e-12, the same pivots
 * and perturbed count); a full factorization is also checked by a product-form solve (backward
 * error). Then a tiny pivot (perturbed, the same count everywhere), LL^T of an indefinite matrix
 * (the same NOT_SPD column on every rank) and an allocation failing on each rank in turn (the
 * same error everywhere, no hang: the script runs under a timeout).
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

/* ---- pure functions ---------------------------------------------------------------------- */

static void test_pure(void)
{
    static const int dims[] = {1, 2, 3, 5, 8, 13, 32};
    static const cint ns[] = {0, 1, 15, 16, 17, 157, 200};
    static const cint nbs[] = {1, 4, 16, 64};
    int nd = (int)(sizeof dims / sizeof *dims), ncases = 0;
    for (int a = 0; a < nd; a++)
        for (int b = 0; b < nd; b++)
            for (size_t x = 0; x < sizeof ns / sizeof *ns; x++)
                for (size_t y = 0; y < sizeof nbs / sizeof *nbs; y++) {
                    grid_dense g = {.comm = MPI_COMM_NULL, .pr = dims[a], .pc = dims[b], .n = ns[x], .m = ns[x],
                                    .nb = nbs[y], .kind = CANOPY_FACT_LU};
                    int np = g.pr * g.pc;
                    cint n = g.n, nb = g.nb, nt = (n + nb - 1) / nb;
                    ncases++;
                    if (grid_dense_check(&g, NULL) != CANOPY_SUCCESS) fail("check refuses a valid grid");
                    int64_t total = 0;
                    unsigned char **mark = calloc((size_t)np, sizeof *mark);
                    for (int q = 0; q < np; q++) {
                        int64_t s = grid_dense_local_size(&g, q);
                        total += s;
                        mark[q] = calloc((size_t)s + 1, 1);
                        if (grid_dense_ld(&g, q) < 1) fail("ld < 1");
                    }
                    if (total != (int64_t)n * n)
                        fail("%dx%d n %" CINT_FMT " nb %" CINT_FMT ": local sizes sum to %" PRId64, g.pr, g.pc, n,
                             nb, total);
                    /* every tile owned once, inside its owner's array, disjoint from the others */
                    for (cint TJ = 0; TJ < nt; TJ++)
                        for (cint TI = 0; TI < nt; TI++) {
                            int q = grid_dense_owner(&g, TI, TJ);
                            if (q < 0 || q >= np || q / g.pc != TI % g.pr || q % g.pc != TJ % g.pc) {
                                fail("tile (%" CINT_FMT ", %" CINT_FMT ") owner %d", TI, TJ, q);
                                continue;
                            }
                            int64_t off = grid_dense_tile_offset(&g, TI, TJ), s = grid_dense_local_size(&g, q);
                            cint ld = grid_dense_ld(&g, q);
                            cint h = CANOPY_MIN(nb, n - TI * nb), w = CANOPY_MIN(nb, n - TJ * nb);
                            if (grid_dense_local_index(TI * nb, nb, g.pr, q / g.pc) + (int64_t)ld *
                                    grid_dense_local_index(TJ * nb, nb, g.pc, q % g.pc) != off)
                                fail("tile offset disagrees with the local indices");
                            for (cint jj = 0; jj < w; jj++)
                                for (cint ii = 0; ii < h; ii++) {
                                    int64_t o = off + ii + (int64_t)jj * ld;
                                    if (o < 0 || o >= s) {
                                        fail("%dx%d n %" CINT_FMT " nb %" CINT_FMT ": tile (%" CINT_FMT ", %" CINT_FMT
                                             ") outside its owner's array", g.pr, g.pc, n, nb, TI, TJ);
                                        jj = w;
                                        break;
                                    }
                                    if (mark[q][o]++) fail("entry %" PRId64 " of rank %d held twice", o, q);
                                }
                        }
                    for (int q = 0; q < np; q++) {
                        int64_t s = grid_dense_local_size(&g, q);
                        for (int64_t o = 0; o < s; o++)
                            if (mark[q][o] != 1) {
                                fail("entry %" PRId64 " of rank %d held by no tile", o, q);
                                break;
                            }
                        free(mark[q]);
                    }
                    free(mark);
                }
    printf("pure functions: %d grids x sizes checked\n", ncases);
}

/* the matrices and the sequential reference: grid_dense_dref.h */

/* x = A^-1 b with a full factorization in product form (the step's interchanges on its rows of x
 * before its block is used, as numeric_solve does per cblk): independent of the reference. */
static void prod_solve(canopy_factorization kind, cint n, cint nb, const double *F, const cint *ipiv,
                       const double *dsub, double *x)
{
    cint nt = (n + nb - 1) / nb;
    for (cint k = 0; k < nt; k++) {
        cint kb = k * nb, ke = CANOPY_MIN(kb + nb, n), w = ke - kb;
        if (kind != CANOPY_FACT_LLT)
            for (cint j = 0; j < w; j++)
                if (ipiv[kb + j] >= 0 && ipiv[kb + j] != j) {
                    double t = x[kb + j];
                    x[kb + j] = x[kb + ipiv[kb + j]];
                    x[kb + ipiv[kb + j]] = t;
                }
        const double *P = F + kb + (size_t)kb * n;
        cblas_dtrsv(CblasColMajor, CblasLower, CblasNoTrans, kind == CANOPY_FACT_LLT ? CblasNonUnit : CblasUnit, (int)w,
                    P, (int)n, x + kb, 1);
        cblas_dgemv(CblasColMajor, CblasNoTrans, (int)(n - ke), (int)w, -1.0, F + ke + (size_t)kb * n, (int)n, x + kb,
                    1, 1.0, x + ke, 1);
    }
    if (kind == CANOPY_FACT_LDLT)
        for (cint j = 0; j < n;) {
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
    for (cint k = nt - 1; k >= 0; k--) {
        cint kb = k * nb, ke = CANOPY_MIN(kb + nb, n), w = ke - kb;
        const double *P = F + kb + (size_t)kb * n;
        if (kind == CANOPY_FACT_LU) {
            cblas_dgemv(CblasColMajor, CblasNoTrans, (int)w, (int)(n - ke), -1.0, F + kb + (size_t)ke * n, (int)n,
                        x + ke, 1, 1.0, x + kb, 1);
            cblas_dtrsv(CblasColMajor, CblasUpper, CblasNoTrans, CblasNonUnit, (int)w, P, (int)n, x + kb, 1);
        } else {
            cblas_dgemv(CblasColMajor, CblasTrans, (int)(n - ke), (int)w, -1.0, F + ke + (size_t)kb * n, (int)n, x + ke,
                        1, 1.0, x + kb, 1);
            cblas_dtrsv(CblasColMajor, CblasLower, CblasTrans, kind == CANOPY_FACT_LLT ? CblasNonUnit : CblasUnit,
                        (int)w, P, (int)n, x + kb, 1);
            for (cint j = w - 1; j >= 0 && kind == CANOPY_FACT_LDLT; j--)
                if (ipiv[kb + j] >= 0 && ipiv[kb + j] != j) {
                    double t = x[kb + j];
                    x[kb + j] = x[kb + ipiv[kb + j]];
                    x[kb + ipiv[kb + j]] = t;
                }
        }
    }
}

static const char *kname(canopy_factorization k)
{
    return k == CANOPY_FACT_LLT ? "LLt" : k == CANOPY_FACT_LDLT ? "LDLt" : "LU";
}

/* Worst figures over the cases, printed at the end. */
static double worst_diff, worst_berr;

/* One case on grid pr x pc; @p tweak: 1 = a zero column inside the first tile (a perturbed pivot),
 * 2 = LL^T of an indefinite matrix. Returns the agreed status. */
static canopy_status run_case(int pr, int pc, canopy_factorization kind, cint n, cint m, cint nb, int lookahead,
                              int tweak, unsigned seed)
{
    grid_dense g = {.comm = MPI_COMM_WORLD, .pr = pr, .pc = pc, .n = n, .m = m, .nb = nb, .kind = kind,
                    .threshold = 1e-10, .tag = 100, .lookahead = lookahead};
    char what[160];
    snprintf(what, sizeof what, "%dx%d %s n %" CINT_FMT " m %" CINT_FMT " nb %" CINT_FMT " lookahead %d%s", pr, pc,
             kname(kind), n, m, nb, lookahead, tweak == 1 ? " tiny pivot" : tweak == 2 ? " indefinite" : "");
    double *A = NULL, *R = NULL, *G = NULL;
    cint *rpiv = NULL;
    double *rdsub = NULL;
    int64_t rcnt = 0;
    if (rank == 0) {
        A = make_matrix(kind, n, seed);
        if (tweak == 1 && n > 5)
            for (cint i = 0; i < CANOPY_MIN(nb, n); i++) {
                A[i + 5 * (size_t)n] = 0;
                if (kind != CANOPY_FACT_LU) A[5 + (size_t)i * n] = 0;
            }
        if (tweak == 2 && n > 40) A[40 + 40 * (size_t)n] = -1e3;
        R = malloc((size_t)n * n * sizeof *R + 1);
        G = malloc((size_t)n * n * sizeof *G + 1);
        memcpy(R, A, (size_t)n * n * sizeof *R);
        rpiv = calloc((size_t)m + 1, sizeof *rpiv);
        rdsub = calloc((size_t)m + 1, sizeof *rdsub);
        rcnt = ref_factor(kind, n, m, nb, R, rpiv, rdsub, g.threshold);
    }
    int64_t lsz = grid_dense_local_size(&g, rank);
    double *loc = malloc((size_t)lsz * sizeof *loc + 1);
    cint *ipiv = calloc((size_t)m + 1, sizeof *ipiv);
    double *dsub = calloc((size_t)m + 1, sizeof *dsub);
    canopy_err e = {0};
    size_t mem0 = canopy_mem_current();
    if (grid_dense_scatter_d(&g, 0, A, n, loc, &e) != CANOPY_SUCCESS) fail("%s: scatter: %s", what, e.msg);
    int64_t pert = -1;
    canopy_status st = grid_dense_factor_d(&g, loc, ipiv, dsub, &pert, &e);
    /* the same status, message and count everywhere */
    int64_t v[4] = {st, -(int64_t)st, pert, -pert};
    MPI_Allreduce(MPI_IN_PLACE, v, 4, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
    if (v[0] != -v[1] || v[2] != -v[3]) fail("%s: status or perturbed count differ across ranks", what);
    char msg0[512];
    memcpy(msg0, e.msg, sizeof msg0);
    MPI_Bcast(msg0, (int)sizeof msg0, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (strcmp(msg0, e.msg) != 0) fail("%s: message '%s' differs from rank 0's '%s'", what, e.msg, msg0);
    if (tweak == 2) {
        if (st != CANOPY_ERR_NOT_SPD) fail("%s: status %d, not NOT_SPD", what, (int)st);
        if (rank == 0) {
            char want[128];
            snprintf(want, sizeof want, "grid_dense: not positive definite at column %" PRId64, -1 - rcnt);
            if (rcnt >= 0 || strcmp(want, e.msg) != 0) fail("%s: '%s', want '%s'", what, e.msg, want);
        }
    } else {
        if (st < 0) fail("%s: %s", what, e.msg);
        if ((pert > 0) != (st == CANOPY_WARN_PIVOTS_PERTURBED)) fail("%s: status %d with %" PRId64 " perturbed", what, (int)st, pert);
        if (tweak == 1 && kind != CANOPY_FACT_LLT && pert < 1) fail("%s: no pivot perturbed", what);
        /* every rank got the same pivots */
        if (m > 0 && kind != CANOPY_FACT_LLT) {
            cint *p0 = malloc((size_t)m * sizeof *p0);
            memcpy(p0, ipiv, (size_t)m * sizeof *p0);
            MPI_Bcast(p0, (int)(m * sizeof *p0), MPI_BYTE, 0, MPI_COMM_WORLD);
            if (memcmp(p0, ipiv, (size_t)m * sizeof *p0) != 0) fail("%s: pivots differ across ranks", what);
            free(p0);
        }
        if (grid_dense_gather_d(&g, 0, loc, G, n, &e) != CANOPY_SUCCESS) fail("%s: gather: %s", what, e.msg);
        if (rank == 0) {
            if (rcnt != pert) fail("%s: %" PRId64 " perturbed, the reference %" PRId64, what, pert, rcnt);
            for (cint j = 0; j < m && kind != CANOPY_FACT_LLT; j++)
                if (ipiv[j] != rpiv[j] || (kind == CANOPY_FACT_LDLT && fabs(dsub[j] - rdsub[j]) > 1e-12 * (1 + fabs(rdsub[j])))) {
                    fail("%s: pivot %" CINT_FMT ": %" CINT_FMT " vs %" CINT_FMT, what, j, ipiv[j], rpiv[j]);
                    break;
                }
            /* the cases exercise the pivoting: interchanges (LU, LDL^T) and 2x2 pivots (LDL^T) */
            if (tweak == 0 && m >= 100 && kind != CANOPY_FACT_LLT) {
                int swaps = 0, two = 0;
                for (cint j = 0; j < m; j++) {
                    swaps += ipiv[j] >= 0 && ipiv[j] != j % nb;
                    two += ipiv[j] < 0;
                }
                if (swaps == 0 || (kind == CANOPY_FACT_LDLT && two == 0))
                    fail("%s: %d interchanges, %d 2x2 pivots: the case does not test the pivoting", what, swaps, two);
            }
            /* factors and Schur complement (lower triangle for the symmetric kinds) */
            double dmax = 0, rmax = 0;
            for (cint j = 0; j < n; j++)
                for (cint i = kind == CANOPY_FACT_LU ? 0 : j; i < n; i++) {
                    dmax = fmax(dmax, fabs(G[i + (size_t)j * n] - R[i + (size_t)j * n]));
                    rmax = fmax(rmax, fabs(R[i + (size_t)j * n]));
                }
            double rel = rmax > 0 ? dmax / rmax : dmax;
            worst_diff = fmax(worst_diff, rel);
            if (!(rel <= 1e-12)) fail("%s: relative difference %.3g to the sequential factor", what, rel);
            if (m == n && n > 0) {
                /* backward error of a product-form solve with the gathered factor */
                double *x = malloc((size_t)n * sizeof *x), *b = malloc((size_t)n * sizeof *b);
                for (cint i = 0; i < n; i++) x[i] = 1.0 + (double)(i % 5);
                cblas_dgemv(CblasColMajor, CblasNoTrans, (int)n, (int)n, 1.0, A, (int)n, x, 1, 0.0, b, 1);
                memcpy(x, b, (size_t)n * sizeof *x);
                prod_solve(kind, n, nb, G, ipiv, dsub, x);
                double anorm = 0, xnorm = 0, rnorm = 0;
                for (cint i = 0; i < n; i++) {
                    double s = 0;
                    for (cint j = 0; j < n; j++) s += fabs(A[i + (size_t)j * n]);
                    anorm = fmax(anorm, s);
                    xnorm = fmax(xnorm, fabs(x[i]));
                }
                cblas_dgemv(CblasColMajor, CblasNoTrans, (int)n, (int)n, -1.0, A, (int)n, x, 1, 1.0, b, 1);
                for (cint i = 0; i < n; i++) rnorm = fmax(rnorm, fabs(b[i]));
                double berr = rnorm / (anorm * xnorm);
                if (tweak == 0) worst_berr = fmax(worst_berr, berr);
                if (tweak == 0 && !(berr <= 1e-13)) fail("%s: backward error %.3g of the product-form solve", what, berr);
                free(x);
                free(b);
            }
        }
    }
    if (canopy_mem_current() != mem0) fail("%s: %zu bytes not given back", what, canopy_mem_current() - mem0);
    free(A);
    free(R);
    free(G);
    free(rpiv);
    free(rdsub);
    free(loc);
    free(ipiv);
    free(dsub);
    return st;
}

/* An allocation failing on rank @p victim: every rank returns out of memory, nobody hangs, and the
 * next factorization succeeds. */
static void run_nomem(int pr, int pc, int victim)
{
    grid_dense g = {.comm = MPI_COMM_WORLD, .pr = pr, .pc = pc, .n = 60, .m = 60, .nb = 8,
                    .kind = CANOPY_FACT_LU, .threshold = 1e-10, .tag = 100, .lookahead = 1};
    double *loc = calloc((size_t)grid_dense_local_size(&g, rank) + 1, sizeof *loc);
    cint ipiv[60];
    canopy_err e = {0};
    if (rank == victim) canopy_alloc_fail_named("grid_dense panel buffers", 0);
    canopy_status st = grid_dense_factor_d(&g, loc, ipiv, NULL, NULL, &e);
    int happened = rank == victim ? !canopy_alloc_fail_named_pending() : 0;
    canopy_alloc_fail_named(NULL, 0);
    MPI_Allreduce(MPI_IN_PLACE, &happened, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (!happened) fail("%dx%d: the injected failure on rank %d did not happen", pr, pc, victim);
    if (st != CANOPY_ERR_NOMEM) fail("%dx%d, failure on rank %d: status %d (%s)", pr, pc, victim, (int)st, e.msg);
    /* a zero matrix: every pivot perturbed, but it runs through */
    st = grid_dense_factor_d(&g, loc, ipiv, NULL, NULL, &e);
    if (st < 0) fail("%dx%d: the factorization after the failure: %s", pr, pc, e.msg);
    if (canopy_mem_current() != 0) fail("%dx%d: %zu bytes not given back", pr, pc, canopy_mem_current());
    free(loc);
}

/* ---- complex double (grid_dense_factor_z) -------------------------------------------------- */

static double worst_zdiff;

/* One complex case on grid pr x pc against zref_factor (LL^T Hermitian positive definite, LDL^T
 * complex symmetric, LU): the same status and pivots everywhere, the reference's pivots, dsub and
 * perturbed count, the factor and Schur complement to 1e-12 relative. */
static void run_case_z(int pr, int pc, canopy_factorization kind, cint n, cint m, cint nb, int lookahead, unsigned seed)
{
    grid_dense g = {.comm = MPI_COMM_WORLD, .pr = pr, .pc = pc, .n = n, .m = m, .nb = nb, .kind = kind,
                    .threshold = 1e-10, .tag = 100, .lookahead = lookahead};
    char what[160];
    snprintf(what, sizeof what, "%dx%d complex %s n %" CINT_FMT " m %" CINT_FMT " nb %" CINT_FMT " lookahead %d", pr,
             pc, kname(kind), n, m, nb, lookahead);
    zscalar *A = NULL, *R = NULL, *G = NULL, *rdsub = NULL;
    cint *rpiv = NULL;
    int64_t rcnt = 0;
    if (rank == 0) {
        A = zmake_matrix(kind, n, seed);
        R = malloc((size_t)n * n * sizeof *R + 16);
        G = malloc((size_t)n * n * sizeof *G + 16);
        memcpy(R, A, (size_t)n * n * sizeof *R);
        rpiv = calloc((size_t)m + 1, sizeof *rpiv);
        rdsub = calloc((size_t)m + 1, sizeof *rdsub);
        rcnt = zref_factor(kind, n, m, nb, R, rpiv, rdsub, g.threshold);
        if (rcnt < 0) fail("%s: the reference found the matrix not positive definite", what);
    }
    int64_t lsz = grid_dense_local_size(&g, rank);
    zscalar *loc = malloc((size_t)lsz * sizeof *loc + 16), *dsub = calloc((size_t)m + 1, sizeof *dsub);
    cint *ipiv = calloc((size_t)m + 1, sizeof *ipiv);
    canopy_err e = {0};
    size_t mem0 = canopy_mem_current();
    if (grid_dense_scatter_z(&g, 0, A, n, loc, &e) != CANOPY_SUCCESS) fail("%s: scatter: %s", what, e.msg);
    int64_t pert = -1;
    canopy_status st = grid_dense_factor_z(&g, loc, ipiv, dsub, &pert, &e);
    int64_t v[4] = {st, -(int64_t)st, pert, -pert};
    MPI_Allreduce(MPI_IN_PLACE, v, 4, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
    if (v[0] != -v[1] || v[2] != -v[3]) fail("%s: status or perturbed count differ across ranks", what);
    if (st < 0) fail("%s: %s", what, e.msg);
    if (m > 0 && kind != CANOPY_FACT_LLT) {
        cint *p0 = malloc((size_t)m * sizeof *p0);
        memcpy(p0, ipiv, (size_t)m * sizeof *p0);
        MPI_Bcast(p0, (int)(m * sizeof *p0), MPI_BYTE, 0, MPI_COMM_WORLD);
        if (memcmp(p0, ipiv, (size_t)m * sizeof *p0) != 0) fail("%s: pivots differ across ranks", what);
        free(p0);
    }
    if (grid_dense_gather_z(&g, 0, loc, G, n, &e) != CANOPY_SUCCESS) fail("%s: gather: %s", what, e.msg);
    if (rank == 0 && st >= 0) {
        if (rcnt != pert) fail("%s: %" PRId64 " perturbed, the reference %" PRId64, what, pert, rcnt);
        for (cint j = 0; j < m && kind != CANOPY_FACT_LLT; j++)
            if (ipiv[j] != rpiv[j] || (kind == CANOPY_FACT_LDLT && cabs(dsub[j] - rdsub[j]) > 1e-12 * (1 + cabs(rdsub[j])))) {
                fail("%s: pivot %" CINT_FMT ": %" CINT_FMT " vs %" CINT_FMT, what, j, ipiv[j], rpiv[j]);
                break;
            }
        if (m >= 60 && kind != CANOPY_FACT_LLT) {
            int swaps = 0, two = 0;
            for (cint j = 0; j < m; j++) {
                swaps += ipiv[j] >= 0 && ipiv[j] != j % nb;
                two += ipiv[j] < 0;
            }
            if (swaps == 0 || (kind == CANOPY_FACT_LDLT && two == 0))
                fail("%s: %d interchanges, %d 2x2 pivots: the case does not test the pivoting", what, swaps, two);
        }
        double dmax = 0, rmax = 0, imax = 0;
        for (cint j = 0; j < n; j++)
            for (cint i = kind == CANOPY_FACT_LU ? 0 : j; i < n; i++) {
                dmax = fmax(dmax, cabs(G[i + (size_t)j * n] - R[i + (size_t)j * n]));
                rmax = fmax(rmax, cabs(R[i + (size_t)j * n]));
                if (i > j) imax = fmax(imax, fabs(cimag(R[i + (size_t)j * n])));
            }
        double rel = rmax > 0 ? dmax / rmax : dmax;
        worst_zdiff = fmax(worst_zdiff, rel);
        if (!(rel <= 1e-12)) fail("%s: relative difference %.3g to the sequential factor", what, rel);
        if (m > 0 && n > 1 && !(imax > 0)) fail("%s: a factor with no imaginary part tests nothing", what);
    }
    if (canopy_mem_current() != mem0) fail("%s: %zu bytes not given back", what, canopy_mem_current() - mem0);
    free(A);
    free(R);
    free(G);
    free(rpiv);
    free(rdsub);
    free(loc);
    free(ipiv);
    free(dsub);
}

/* A complex factorization of @p kind with an allocation failing on rank @p victim: out of memory
 * everywhere, then a run through. */
static void run_nomem_z(int pr, int pc, canopy_factorization kind, int victim)
{
    grid_dense g = {.comm = MPI_COMM_WORLD, .pr = pr, .pc = pc, .n = 60, .m = 60, .nb = 8,
                    .kind = kind, .threshold = 1e-10, .tag = 100, .lookahead = 1};
    zscalar *loc = calloc((size_t)grid_dense_local_size(&g, rank) + 1, sizeof *loc), dsub[60];
    cint ipiv[60];
    canopy_err e = {0};
    const char *label = kind == CANOPY_FACT_LDLT ? "grid_dense work" : "grid_dense panel buffers";
    if (rank == victim) canopy_alloc_fail_named(label, 0);
    canopy_status st = grid_dense_factor_z(&g, loc, ipiv, dsub, NULL, &e);
    int happened = rank == victim ? !canopy_alloc_fail_named_pending() : 0;
    canopy_alloc_fail_named(NULL, 0);
    MPI_Allreduce(MPI_IN_PLACE, &happened, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (!happened) fail("%dx%d complex %s: the injected failure on rank %d did not happen", pr, pc, kname(kind), victim);
    if (st != CANOPY_ERR_NOMEM)
        fail("%dx%d complex %s, failure on rank %d: status %d (%s)", pr, pc, kname(kind), victim, (int)st, e.msg);
    if (kind == CANOPY_FACT_LLT) { /* the identity, for POTRF */
        cint ldf = grid_dense_ld(&g, rank);
        for (cint gj = 0; gj < 60; gj++)
            if (grid_dense_owner(&g, gj / 8, gj / 8) == rank)
                loc[grid_dense_tile_offset(&g, gj / 8, gj / 8) + gj % 8 + (int64_t)(gj % 8) * ldf] = 1;
    }
    st = grid_dense_factor_z(&g, loc, ipiv, dsub, NULL, &e);
    if (st < 0) fail("%dx%d complex %s: the factorization after the failure: %s", pr, pc, kname(kind), e.msg);
    if (canopy_mem_current() != 0) fail("%dx%d: %zu bytes not given back", pr, pc, canopy_mem_current());
    free(loc);
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
            for (int la = 0; la < 2; la++) {
                run_case(pr, pc, kinds[k], 157, 157, 16, la, 0, 11u + (unsigned)k);
                run_case(pr, pc, kinds[k], 157, 100, 16, la, 0, 11u + (unsigned)k);
                run_case(pr, pc, kinds[k], 50, 23, 7, la, 0, 21u + (unsigned)k); /* a partial last step */
                run_case(pr, pc, kinds[k], 40, 0, 8, la, 0, 31u);
                run_case(pr, pc, kinds[k], 5, 5, 16, la, 0, 41u); /* one tile smaller than nb */
                ncases += 5;
            }
        run_case(pr, pc, CANOPY_FACT_LU, 64, 64, 16, 1, 1, 51u);
        run_case(pr, pc, CANOPY_FACT_LDLT, 64, 64, 16, 1, 1, 52u);
        run_case(pr, pc, CANOPY_FACT_LLT, 64, 64, 16, 0, 2, 53u);
        run_case(pr, pc, CANOPY_FACT_LLT, 64, 64, 16, 1, 2, 53u);
        ncases += 4;
        for (int v = 0; v < size; v++) run_nomem(pr, pc, v);
        /* complex: one n, m = n and m < n (a partial last step), each kind */
        for (int k = 0; k < 3; k++) {
            run_case_z(pr, pc, kinds[k], 97, 97, 16, 1, 61u + (unsigned)k);
            run_case_z(pr, pc, kinds[k], 97, 61, 16, 0, 61u + (unsigned)k);
            run_case_z(pr, pc, kinds[k], 97, 45, 7, 1, 71u + (unsigned)k);
            ncases += 3;
            run_nomem_z(pr, pc, kinds[k], size - 1);
        }
    }
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%d ranks: %d cases over its grid shapes, worst relative difference %.3g, worst backward error %.3g, complex worst relative difference %.3g: %s\n",
               size, ncases, worst_diff, worst_berr, worst_zdiff, total ? "FAILED" : "ok");
    MPI_Finalize();
    return total ? 1 : 0;
}
