/*
 * Supernodal factorization and solve (src/numeric/numeric.c, src/numeric/factor_template.c) against dense
 * LAPACK solves: every kind (LL^T, LDL^T, LU), identity and random orderings, several column
 * partitions, nrhs 1 and 3 with ldb > n; saddle-point (KKT) matrices solved by LDL^T with 2x2
 * pivots and no perturbation; errors, perturbation, refactorization; a performance print on a 3D
 * Laplacian.
 */
#include "testutil.h"
#include "numeric/numeric.h"
#include "symbolic/symbolic.h"

#include <cblas.h>
#include <lapacke.h>
#include <time.h>

enum { PART_SINGLE, PART_RANDOM, PART_WHOLE, PART_FIXED64 };

/* Block structure of A for ordering @p perm (NULL: identity) and a partition kind. */
static void analyse(const canopy_csc *A, const cint *perm_in, int part_kind, uint64_t seed, symbolic *S)
{
    cint n = A->n;
    canopy_err err = {0};
    canopy_csc G, Gp;
    ck_assert_int_eq(matrix_graph(A, &G, &err), CANOPY_SUCCESS);
    memset(S, 0, sizeof *S);
    S->perm = canopy_alloc((size_t)n + 1, sizeof(cint), "perm", NULL);
    S->iperm = canopy_alloc((size_t)n + 1, sizeof(cint), "iperm", NULL);
    for (cint i = 0; i < n; i++) S->perm[i] = perm_in ? perm_in[i] : i;
    for (cint i = 0; i < n; i++) S->iperm[S->perm[i]] = i;
    ck_assert_int_eq(symbolic_permute_graph(&G, S->perm, S->iperm, &Gp, &err), CANOPY_SUCCESS);
    cint *part = malloc(((size_t)n + 1) * sizeof(cint));
    cint np = 0;
    part[0] = 0;
    uint64_t st = seed * 31 + 5;
    for (cint c = 0; c < n;) {
        cint wdt = part_kind == PART_SINGLE ? 1
                 : part_kind == PART_WHOLE ? n
                 : part_kind == PART_FIXED64 ? 64
                 : 1 + (cint)(testutil_rand(&st) % 8);
        c += wdt;
        part[++np] = c < n ? c : n;
    }
    ck_assert_int_eq(symbolic_build_blocks(&Gp, np, part, S, &err), CANOPY_SUCCESS);
    free(part);
    matrix_free(&G);
    matrix_free(&Gp);
}

static double *dense_of(const canopy_csc *A)
{
    cint n = A->n;
    double *D = calloc((size_t)n * n + 1, sizeof *D);
    const double *v = A->values;
    for (cint j = 0; j < n; j++)
        for (cint p = A->colptr[j]; p < A->colptr[j + 1]; p++) D[(size_t)j * n + A->rowind[p]] = v[p];
    return D;
}

static void random_perm(cint n, uint64_t seed, cint *perm)
{
    uint64_t st = seed + 12345;
    for (cint i = 0; i < n; i++) perm[i] = i;
    for (cint i = n - 1; i > 0; i--) {
        cint j = (cint)(testutil_rand(&st) % (uint64_t)(i + 1));
        cint t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

/* Solve with the factors for nrhs columns (ldb = n + 3); compare with dgesv (when tol > 0) and
 * check the normwise backward error. */
static void check_solution(const canopy_csc *A, numeric *F, cint nrhs, uint64_t seed, double tol)
{
    cint n = A->n, ldb = n + 3;
    uint64_t st = seed + 7;
    double *b = malloc((size_t)ldb * nrhs * sizeof *b);
    double *x = malloc((size_t)ldb * nrhs * sizeof *x);
    double *xr = malloc((size_t)n * nrhs * sizeof *xr);
    for (size_t i = 0; i < (size_t)ldb * nrhs; i++) b[i] = 2 * testutil_uniform(&st) - 1;
    memcpy(x, b, (size_t)ldb * nrhs * sizeof *x);
    for (cint r = 0; r < nrhs; r++) memcpy(xr + (size_t)r * n, b + (size_t)r * ldb, (size_t)n * sizeof *xr);
    canopy_err err = {0};
    ck_assert_int_eq(numeric_solve(F, nrhs, x, ldb, &err), CANOPY_SUCCESS);
    /* the padding rows are untouched */
    for (cint r = 0; r < nrhs; r++)
        for (cint i = n; i < ldb; i++) ck_assert(x[i + (size_t)r * ldb] == b[i + (size_t)r * ldb]);
    lapack_int *ip = malloc(((size_t)n + 1) * sizeof *ip);
    if (tol > 0) {
        double *D = dense_of(A);
        ck_assert_int_eq(LAPACKE_dgesv(LAPACK_COL_MAJOR, n, nrhs, D, n, ip, xr, n), 0);
        free(D);
    }
    double anorm = matrix_norm_inf(A);
    double *ax = malloc((size_t)n * sizeof *ax);
    for (cint r = 0; r < nrhs; r++) {
        const double *xc = x + (size_t)r * ldb, *bc = b + (size_t)r * ldb, *rc = xr + (size_t)r * n;
        double dmax = 0, xmax = 0, bmax = 0, rmax = 0;
        for (cint i = 0; i < n; i++) {
            dmax = fmax(dmax, fabs(xc[i] - rc[i]));
            xmax = fmax(xmax, fabs(rc[i]));
            bmax = fmax(bmax, fabs(bc[i]));
        }
        if (tol > 0) ck_assert_msg(dmax <= tol * xmax, "forward error %g (|x| %g)", dmax, xmax);
        matrix_spmv(A, 1, 1.0, xc, n, 0.0, ax, n);
        double xm = 0;
        for (cint i = 0; i < n; i++) {
            rmax = fmax(rmax, fabs(ax[i] - bc[i]));
            xm = fmax(xm, fabs(xc[i]));
        }
        double berr = rmax / (anorm * xm + bmax);
        ck_assert_msg(berr < 1e-13, "backward error %g", berr);
    }
    free(ax);
    free(ip);
    free(b);
    free(x);
    free(xr);
}

/* Symmetric indefinite but diagonally dominant: stable without pivoting. */
static void flip_some_diagonal(canopy_csc *A, uint64_t seed)
{
    uint64_t st = seed + 99;
    double *v = A->values;
    for (cint j = 0; j < A->n; j++)
        if (testutil_rand(&st) % 2)
            for (cint p = A->colptr[j]; p < A->colptr[j + 1]; p++)
                if (A->rowind[p] == j) v[p] = -v[p];
}

static void run_case(canopy_matrix_kind mkind, canopy_factorization fkind, cint n, int use_perm,
                     int part_kind, uint64_t seed)
{
    canopy_csc A;
    testutil_random_matrix(n, 3, mkind == CANOPY_KIND_SPD ? CANOPY_KIND_SPD
                                 : mkind == CANOPY_KIND_GENERAL ? CANOPY_KIND_GENERAL
                                 : CANOPY_KIND_SYMMETRIC, 1, seed, &A);
    if (mkind == CANOPY_KIND_SYMMETRIC) flip_some_diagonal(&A, seed);
    cint *perm = malloc(((size_t)n + 1) * sizeof(cint));
    random_perm(n, seed, perm);
    symbolic S;
    analyse(&A, use_perm ? perm : NULL, part_kind, seed, &S);
    numeric F = {0};
    canopy_err err = {0};
    canopy_status st = numeric_factorize(&F, &S, &A, fkind, 1e-8, &err);
    ck_assert_msg(st == CANOPY_SUCCESS, "kind %d n %d perm %d part %d: status %d %s", (int)fkind, (int)n,
                  use_perm, part_kind, (int)st, err.msg);
    ck_assert_int_eq(F.perturbed, 0);
    ck_assert(F.flops == (fkind == CANOPY_FACT_LU ? S.flops_lu : S.flops_llt));
    ck_assert(numeric_bytes(&F) > 0);
    check_solution(&A, &F, 1, seed, 1e-10);
    check_solution(&A, &F, 3, seed + 1, 1e-10);
    numeric_free(&F);
    ck_assert_ptr_null(F.L);
    symbolic_free(&S);
    free(perm);
    matrix_free(&A);
}

static const cint sizes[] = {1, 2, 9, 37, 120};

START_TEST(llt_all_layouts)
{
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (int perm = 0; perm < 2; perm++)
            for (int part = PART_SINGLE; part <= PART_WHOLE; part++)
                run_case(CANOPY_KIND_SPD, CANOPY_FACT_LLT, sizes[s], perm, part, 10 + s * 7 + (uint64_t)perm);
}
END_TEST

START_TEST(ldlt_all_layouts)
{
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (int perm = 0; perm < 2; perm++)
            for (int part = PART_SINGLE; part <= PART_WHOLE; part++) {
                run_case(CANOPY_KIND_SPD, CANOPY_FACT_LDLT, sizes[s], perm, part, 20 + s * 7 + (uint64_t)perm);
                run_case(CANOPY_KIND_SYMMETRIC, CANOPY_FACT_LDLT, sizes[s], perm, part, 30 + s * 7 + (uint64_t)perm);
            }
}
END_TEST

START_TEST(lu_all_layouts)
{
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (int perm = 0; perm < 2; perm++)
            for (int part = PART_SINGLE; part <= PART_WHOLE; part++)
                run_case(CANOPY_KIND_GENERAL, CANOPY_FACT_LU, sizes[s], perm, part, 40 + s * 7 + (uint64_t)perm);
}
END_TEST

/* Wide blocks (> 64 columns) exercise the blocked dense kernels inside the sparse code. */
START_TEST(wide_blocks)
{
    run_case(CANOPY_KIND_SPD, CANOPY_FACT_LLT, 300, 1, PART_FIXED64, 3);
    run_case(CANOPY_KIND_SYMMETRIC, CANOPY_FACT_LDLT, 300, 1, PART_WHOLE, 4);
    run_case(CANOPY_KIND_GENERAL, CANOPY_FACT_LU, 300, 1, PART_WHOLE, 5);
    run_case(CANOPY_KIND_GENERAL, CANOPY_FACT_LU, 300, 0, PART_FIXED64, 6);
}
END_TEST

START_TEST(not_spd_names_column)
{
    cint n = 40, bad = 17;
    canopy_csc A;
    testutil_random_matrix(n, 3, CANOPY_KIND_SPD, 1, 5, &A);
    double *v = A.values;
    for (cint p = A.colptr[bad]; p < A.colptr[bad + 1]; p++)
        if (A.rowind[p] == bad) v[p] = -1000;
    cint perm[40];
    random_perm(n, 3, perm);
    for (int part = PART_SINGLE; part <= PART_WHOLE; part++) {
        symbolic S;
        analyse(&A, perm, part, 8, &S);
        numeric F = {0};
        canopy_err err = {0};
        ck_assert_int_eq(numeric_factorize(&F, &S, &A, CANOPY_FACT_LLT, 1e-8, &err), CANOPY_ERR_NOT_SPD);
        ck_assert_msg(strstr(err.msg, "column 17 ") != NULL, "message: %s", err.msg);
        /* LDL^T handles the same matrix */
        canopy_err err2 = {0};
        ck_assert_int_eq(numeric_factorize(&F, &S, &A, CANOPY_FACT_LDLT, 1e-8, &err2), CANOPY_SUCCESS);
        check_solution(&A, &F, 2, 4, 1e-9);
        numeric_free(&F);
        symbolic_free(&S);
    }
    matrix_free(&A);
}
END_TEST

/* Matrix in 2x2 blocks [[0 2][3 0]] with weak coupling: zero diagonal, nonsingular, needs row
 * interchanges inside each 2-column block. */
static void interchange_matrix(cint n, canopy_csc *A)
{
    double *D = calloc((size_t)n * n, sizeof *D);
    for (cint i = 0; i + 1 < n; i += 2) {
        D[(size_t)(i + 1) * n + i] = 2;
        D[(size_t)i * n + i + 1] = 3;
    }
    for (cint i = 0; i + 2 < n; i++) {
        D[(size_t)i * n + i + 2] = 0.1;
        D[(size_t)(i + 2) * n + i] = -0.2;
    }
    if (n % 2) D[(size_t)(n - 1) * n + n - 1] = 1;
    testutil_dense_to_csc(n, D, CANOPY_KIND_GENERAL, A);
    free(D);
}

START_TEST(lu_interchanges_inside_block)
{
    canopy_csc A;
    interchange_matrix(30, &A);
    for (int part = PART_RANDOM; part <= PART_WHOLE; part++) {
        symbolic S;
        /* identity order; random widths may split a pair, whole keeps them all */
        analyse(&A, NULL, part, 2, &S);
        numeric F = {0};
        canopy_err err = {0};
        canopy_status st = numeric_factorize(&F, &S, &A, CANOPY_FACT_LU, 1e-8, &err);
        if (part == PART_WHOLE) {
            ck_assert_int_eq(st, CANOPY_SUCCESS);
            ck_assert_int_eq(F.perturbed, 0);
            check_solution(&A, &F, 3, 1, 1e-10);
        }
        numeric_free(&F);
        symbolic_free(&S);
    }
    /* 2-column blocks aligned with the pairs */
    {
        canopy_err err = {0};
        canopy_csc G, Gp;
        symbolic S = {0};
        ck_assert_int_eq(matrix_graph(&A, &G, &err), CANOPY_SUCCESS);
        S.perm = canopy_alloc(30, sizeof(cint), "perm", NULL);
        S.iperm = canopy_alloc(30, sizeof(cint), "iperm", NULL);
        for (cint i = 0; i < 30; i++) S.perm[i] = S.iperm[i] = i;
        ck_assert_int_eq(symbolic_permute_graph(&G, S.perm, S.iperm, &Gp, &err), CANOPY_SUCCESS);
        cint part[16];
        for (cint k = 0; k <= 15; k++) part[k] = 2 * k;
        ck_assert_int_eq(symbolic_build_blocks(&Gp, 15, part, &S, &err), CANOPY_SUCCESS);
        numeric F = {0};
        ck_assert_int_eq(numeric_factorize(&F, &S, &A, CANOPY_FACT_LU, 1e-8, &err), CANOPY_SUCCESS);
        ck_assert_int_eq(F.perturbed, 0);
        ck_assert_int_eq(F.ipiv[0], 1); /* the first block swaps its two rows */
        check_solution(&A, &F, 1, 2, 1e-10);
        check_solution(&A, &F, 3, 3, 1e-10);
        numeric_free(&F);
        symbolic_free(&S);
        matrix_free(&G);
        matrix_free(&Gp);
    }
    matrix_free(&A);
}
END_TEST

/*
 * Sparse KKT-like matrix [[H B^T][B 0]] with nc constraints on nh >= nc variables, in an order
 * that puts constraint c right before its variable: local pairs (2i, 2i+1) are (constraint,
 * variable), pairs shuffled as units; the nh - nc free variables come last. Each constraint has
 * a strong entry (5..6) on its own variable and weak ones on two others; H is sparse, its
 * diagonal small (0.5..1) on constrained variables, so Bunch-Kaufman needs 2x2 pivots there, and
 * strong (8..9) on free ones. Every constraint row has a structurally zero diagonal.
 */
static void kkt_matrix(cint nc, cint nh, uint64_t seed, canopy_csc *A)
{
    cint n = nc + nh;
    uint64_t st = seed * 7 + 3;
    /* position of variable v and of constraint c in the final order */
    cint *npair = malloc((size_t)nc * sizeof *npair), *posv = malloc((size_t)nh * sizeof *posv);
    random_perm(nc, seed, npair);
    for (cint c = 0; c < nc; c++) posv[c] = 2 * npair[c] + 1;
    for (cint v = nc; v < nh; v++) posv[v] = nc + v;
    double *D = calloc((size_t)n * n, sizeof *D);
#define KKT_SET(i, j, x) (D[(size_t)(j) * n + (i)] = D[(size_t)(i) * n + (j)] = (x))
    for (cint v = 0; v < nh; v++) {
        D[(size_t)posv[v] * n + posv[v]] = (v < nc ? 0.5 : 8.0) + testutil_uniform(&st) * (v < nc ? 0.5 : 1.0);
        for (int e = 0; e < 2; e++) {
            cint u = (cint)(testutil_rand(&st) % (uint64_t)nh);
            if (u != v) KKT_SET(posv[u], posv[v], 2 * testutil_uniform(&st) - 1);
        }
    }
    for (cint c = 0; c < nc; c++) {
        cint pc = 2 * npair[c];
        KKT_SET(pc, posv[c], 5.0 + testutil_uniform(&st));
        for (int e = 0; e < 2; e++) {
            cint u = (cint)(testutil_rand(&st) % (uint64_t)nh);
            if (u != c) KKT_SET(pc, posv[u], 2 * testutil_uniform(&st) - 1);
        }
    }
#undef KKT_SET
    testutil_dense_to_csc(n, D, CANOPY_KIND_SYMMETRIC, A);
    free(D);
    free(npair);
    free(posv);
}

/* Column partition of even widths (2 .. 2 * maxpairs): a (variable, constraint) pair is never cut. */
static void analyse_pairs(const canopy_csc *A, cint maxpairs, uint64_t seed, symbolic *S)
{
    cint n = A->n;
    canopy_err err = {0};
    canopy_csc G, Gp;
    ck_assert_int_eq(matrix_graph(A, &G, &err), CANOPY_SUCCESS);
    memset(S, 0, sizeof *S);
    S->perm = canopy_alloc((size_t)n + 1, sizeof(cint), "perm", NULL);
    S->iperm = canopy_alloc((size_t)n + 1, sizeof(cint), "iperm", NULL);
    for (cint i = 0; i < n; i++) S->perm[i] = S->iperm[i] = i;
    ck_assert_int_eq(symbolic_permute_graph(&G, S->perm, S->iperm, &Gp, &err), CANOPY_SUCCESS);
    cint *part = malloc(((size_t)n + 1) * sizeof(cint));
    cint np = 0;
    uint64_t st = seed * 13 + 1;
    part[0] = 0;
    for (cint c = 0; c < n;) {
        c += 2 * (1 + (cint)(testutil_rand(&st) % (uint64_t)maxpairs));
        part[++np] = c < n ? c : n;
    }
    ck_assert_int_eq(symbolic_build_blocks(&Gp, np, part, S, &err), CANOPY_SUCCESS);
    free(part);
    matrix_free(&G);
    matrix_free(&Gp);
}

/* Saddle-point matrices: with every saddle pair inside one cblk, the symmetric pivoting of the
 * diagonal blocks needs no perturbation, whatever the cblk widths (2 up to beyond 64). */
START_TEST(ldlt_kkt_no_perturbation)
{
    const cint maxpairs[4] = {1, 4, 40, 100000};
    for (int t = 0; t < 8; t++) {
        canopy_csc A;
        cint nc = 30 + 25 * t, nh = nc + 7 * t;
        kkt_matrix(nc, nh, 100 + (uint64_t)t, &A);
        symbolic S;
        analyse_pairs(&A, maxpairs[t % 4], (uint64_t)t, &S);
        numeric F = {0};
        canopy_err err = {0};
        canopy_status st = numeric_factorize(&F, &S, &A, CANOPY_FACT_LDLT, 1e-8, &err);
        ck_assert_msg(st == CANOPY_SUCCESS, "KKT %d: status %d, %lld perturbed", t, (int)st, (long long)F.perturbed);
        ck_assert_int_eq(F.perturbed, 0);
        int twos = 0;
        for (cint j = 0; j < A.n; j++) twos += F.ipiv[j] < 0;
        ck_assert_msg(twos > 0, "KKT %d: no 2x2 pivot", t);
        check_solution(&A, &F, 1, (uint64_t)t, 1e-9);
        check_solution(&A, &F, 3, (uint64_t)t + 50, 1e-9);
        /* refactorization with new values reuses the pivot arrays */
        cint *ipiv = F.ipiv;
        void *dsub = F.dsub;
        double *v = A.values;
        for (cint p = 0; p < A.colptr[A.n]; p++) v[p] *= -1.5;
        ck_assert_int_eq(numeric_factorize(&F, &S, &A, CANOPY_FACT_LDLT, 1e-8, &err), CANOPY_SUCCESS);
        ck_assert_ptr_eq(F.ipiv, ipiv);
        ck_assert_ptr_eq(F.dsub, dsub);
        check_solution(&A, &F, 2, (uint64_t)t + 9, 1e-9);
        numeric_free(&F);
        symbolic_free(&S);
        matrix_free(&A);
    }
}
END_TEST

/* Pairs cut by the partition (1-column cblks): a constraint's zero diagonal entry has no partner
 * inside its cblk, so static pivoting perturbs it (unless earlier updates filled it in), and the
 * solve stays finite. */
START_TEST(ldlt_kkt_split_pairs)
{
    canopy_csc A;
    kkt_matrix(20, 25, 7, &A);
    symbolic S;
    analyse(&A, NULL, PART_SINGLE, 1, &S);
    numeric F = {0};
    canopy_err err = {0};
    ck_assert_int_eq(numeric_factorize(&F, &S, &A, CANOPY_FACT_LDLT, 1e-8, &err), CANOPY_WARN_PIVOTS_PERTURBED);
    ck_assert(F.perturbed > 0 && F.perturbed <= 20);
    double x[45];
    for (int i = 0; i < 45; i++) x[i] = 1;
    ck_assert_int_eq(numeric_solve(&F, 1, x, 45, &err), CANOPY_SUCCESS);
    for (int i = 0; i < 45; i++) ck_assert(isfinite(x[i]));
    numeric_free(&F);
    symbolic_free(&S);
    matrix_free(&A);
}
END_TEST

START_TEST(perturbation_warning)
{
    /* LDL^T: zero first pivot (identity order) -> exactly one perturbation when the first cblk is
     * one column wide; a wider first cblk interchanges it with a later column instead */
    canopy_csc A;
    testutil_random_matrix(25, 3, CANOPY_KIND_SYMMETRIC, 1, 77, &A);
    double *v = A.values;
    for (cint p = A.colptr[0]; p < A.colptr[1]; p++)
        if (A.rowind[p] == 0) v[p] = 0;
    for (int part = PART_SINGLE; part <= PART_WHOLE; part++) {
        symbolic S;
        analyse(&A, NULL, part, 3, &S);
        numeric F = {0};
        canopy_err err = {0};
        int single = S.cblk_fcol[1] == 1;
        ck_assert(single || part != PART_SINGLE);
        ck_assert_int_eq(numeric_factorize(&F, &S, &A, CANOPY_FACT_LDLT, 1e-8, &err),
                         single ? CANOPY_WARN_PIVOTS_PERTURBED : CANOPY_SUCCESS);
        ck_assert_int_eq(F.perturbed, single ? 1 : 0);
        ck_assert_int_eq(err.status, CANOPY_SUCCESS); /* a warning leaves the error record alone */
        if (!single) check_solution(&A, &F, 2, 3, 1e-9);
        numeric_free(&F);
        symbolic_free(&S);
    }
    matrix_free(&A);

    /* LU: singular first 2x2 diagonal block [[1 1][1 1]] of a nonsingular matrix */
    cint n = 6;
    double Dd[36] = {0};
    for (cint i = 0; i < n; i++) Dd[i * n + i] = 4;
    Dd[0] = Dd[1] = Dd[6] = Dd[7] = 1;
    Dd[2 * n + 0] = 1;  /* A(0,2) */
    Dd[0 * n + 3] = 1;  /* A(3,0) */
    Dd[1 * n + 4] = -1; /* A(4,1) */
    Dd[4 * n + 1] = 2;  /* A(1,4) */
    canopy_csc B = {0};
    B.n = n;
    B.colptr = canopy_alloc((size_t)n + 1, sizeof(cint), "c", NULL);
    B.rowind = canopy_alloc(36, sizeof(cint), "r", NULL);
    double *bv = canopy_alloc(36, sizeof(double), "v", NULL);
    B.values = bv;
    B.arith = CANOPY_REAL;
    B.kind = CANOPY_KIND_GENERAL;
    cint p = 0;
    for (cint j = 0; j < n; j++) {
        B.colptr[j] = p;
        for (cint i = 0; i < n; i++)
            if (Dd[j * n + i] != 0) {
                B.rowind[p] = i;
                bv[p++] = Dd[j * n + i];
            }
    }
    B.colptr[n] = p;
    canopy_err err = {0};
    canopy_csc G, Gp;
    symbolic S = {0};
    ck_assert_int_eq(matrix_graph(&B, &G, &err), CANOPY_SUCCESS);
    S.perm = canopy_alloc((size_t)n, sizeof(cint), "perm", NULL);
    S.iperm = canopy_alloc((size_t)n, sizeof(cint), "iperm", NULL);
    for (cint i = 0; i < n; i++) S.perm[i] = S.iperm[i] = i;
    ck_assert_int_eq(symbolic_permute_graph(&G, S.perm, S.iperm, &Gp, &err), CANOPY_SUCCESS);
    cint part[5] = {0, 2, 4, 5, 6};
    ck_assert_int_eq(symbolic_build_blocks(&Gp, 4, part, &S, &err), CANOPY_SUCCESS);
    numeric F = {0};
    ck_assert_int_eq(numeric_factorize(&F, &S, &B, CANOPY_FACT_LU, 1e-8, &err), CANOPY_WARN_PIVOTS_PERTURBED);
    ck_assert_int_eq(F.perturbed, 1);
    double x[6] = {1, 2, 3, 4, 5, 6};
    ck_assert_int_eq(numeric_solve(&F, 1, x, 6, &err), CANOPY_SUCCESS);
    for (int i = 0; i < 6; i++) ck_assert(isfinite(x[i]));
    numeric_free(&F);
    symbolic_free(&S);
    matrix_free(&G);
    matrix_free(&Gp);
    matrix_free(&B);
}
END_TEST

START_TEST(refactorization)
{
    const canopy_matrix_kind mk[3] = {CANOPY_KIND_SPD, CANOPY_KIND_SYMMETRIC, CANOPY_KIND_GENERAL};
    const canopy_factorization fk[3] = {CANOPY_FACT_LLT, CANOPY_FACT_LDLT, CANOPY_FACT_LU};
    for (int t = 0; t < 3; t++) {
        canopy_csc A;
        testutil_random_matrix(60, 3, mk[t], 1, 300 + (uint64_t)t, &A);
        cint perm[60];
        random_perm(60, 9, perm);
        symbolic S;
        analyse(&A, perm, PART_RANDOM, 5, &S);
        numeric F = {0};
        canopy_err err = {0};
        ck_assert_int_eq(numeric_factorize(&F, &S, &A, fk[t], 1e-8, &err), CANOPY_SUCCESS);
        check_solution(&A, &F, 1, 1, 1e-10);
        void *L = F.L;
        int64_t *amap = F.amap_dst;
        /* new values, same pattern: off-diagonal scaled, diagonal shifted */
        double *v = A.values;
        for (cint j = 0; j < A.n; j++)
            for (cint p = A.colptr[j]; p < A.colptr[j + 1]; p++) v[p] = A.rowind[p] == j ? v[p] + 3 : -0.5 * v[p];
        ck_assert_int_eq(numeric_factorize(&F, &S, &A, fk[t], 1e-8, &err), CANOPY_SUCCESS);
        ck_assert_ptr_eq(F.L, L);
        ck_assert_ptr_eq(F.amap_dst, amap);
        check_solution(&A, &F, 3, 2, 1e-10);
        numeric_free(&F);
        symbolic_free(&S);
        matrix_free(&A);
    }
}
END_TEST

START_TEST(argument_errors)
{
    canopy_csc A;
    testutil_random_matrix(10, 2, CANOPY_KIND_SPD, 1, 1, &A);
    symbolic S;
    analyse(&A, NULL, PART_RANDOM, 1, &S);
    numeric F = {0};
    canopy_err err = {0};
    ck_assert_int_eq(numeric_factorize(&F, &S, &A, CANOPY_FACT_AUTO, 1e-8, &err), CANOPY_ERR_ARGUMENT);
    canopy_err_clear(&err);
    ck_assert_int_eq(numeric_factorize(&F, &S, &A, CANOPY_FACT_LLT, 0.0, &err), CANOPY_ERR_ARGUMENT);
    canopy_err_clear(&err);
    ck_assert_int_eq(numeric_factorize(&F, &S, &A, CANOPY_FACT_LLT, -1.0, &err), CANOPY_ERR_ARGUMENT);
    canopy_err_clear(&err);
    ck_assert_int_eq(numeric_factorize(&F, &S, &A, CANOPY_FACT_LLT, NAN, &err), CANOPY_ERR_ARGUMENT);
    canopy_err_clear(&err);
    double x[10] = {0};
    ck_assert_int_eq(numeric_solve(&F, 1, x, 10, &err), CANOPY_ERR_PHASE);
    canopy_err_clear(&err);
    A.n = 9;
    ck_assert_int_eq(numeric_factorize(&F, &S, &A, CANOPY_FACT_LLT, 1e-8, &err), CANOPY_ERR_ARGUMENT);
    canopy_err_clear(&err);
    A.n = 10;
    A.arith = CANOPY_PATTERN; /* no values: refused */
    ck_assert_int_eq(numeric_factorize(&F, &S, &A, CANOPY_FACT_LLT, 1e-8, &err), CANOPY_ERR_ARGUMENT);
    canopy_err_clear(&err);
    A.arith = CANOPY_REAL;
    ck_assert_int_eq(numeric_factorize(&F, &S, &A, CANOPY_FACT_LLT, 1e-8, &err), CANOPY_SUCCESS);
    ck_assert_int_eq(numeric_solve(&F, 1, x, 5, &err), CANOPY_ERR_ARGUMENT);
    numeric_free(&F);
    symbolic_free(&S);
    matrix_free(&A);
}
END_TEST

/* Failing allocations are reported and leave nothing behind. */
START_TEST(allocation_failures)
{
    canopy_csc A;
    testutil_random_matrix(30, 3, CANOPY_KIND_GENERAL, 1, 4, &A);
    symbolic S;
    analyse(&A, NULL, PART_RANDOM, 2, &S);
    for (long k = 0; k < 12; k++) {
        numeric F = {0};
        canopy_err err = {0};
        size_t before = canopy_mem_current();
        canopy_alloc_fail_after(k % 6);
        /* LU, then LDL^T (its pivot arrays), on the same symmetric pattern */
        canopy_status st = numeric_factorize(&F, &S, &A, k < 6 ? CANOPY_FACT_LU : CANOPY_FACT_LDLT, 1e-8, &err);
        canopy_alloc_fail_after(-1);
        if (st == CANOPY_SUCCESS) {
            numeric_free(&F);
            continue;
        }
        ck_assert_int_eq(st, CANOPY_ERR_NOMEM);
        ck_assert_ptr_null(F.L);
        ck_assert_uint_eq(canopy_mem_current(), before);
    }
    symbolic_free(&S);
    matrix_free(&A);
}
END_TEST

/* 7-point Laplacian on an m^3 grid, natural order, full storage (the library's generator). */
static void laplacian3d(cint m, canopy_csc *A)
{
    ck_assert_int_eq(canopy_generate_laplacian(m, m, m, 7, A), CANOPY_SUCCESS);
}

START_TEST(performance_print)
{
    const char *env = getenv("CANOPY_PERF_GRID");
    cint m = env && *env ? (cint)atoi(env) : 24;
    canopy_csc A;
    laplacian3d(m, &A);
    symbolic S;
    analyse(&A, NULL, PART_FIXED64, 1, &S);
    numeric F = {0};
    canopy_err err = {0};
    double t0 = canopy_wtime();
    ck_assert_int_eq(numeric_factorize(&F, &S, &A, CANOPY_FACT_LLT, 1e-8, &err), CANOPY_SUCCESS);
    double t1 = canopy_wtime();
    ck_assert_int_eq(numeric_factorize(&F, &S, &A, CANOPY_FACT_LLT, 1e-8, &err), CANOPY_SUCCESS);
    double t2 = canopy_wtime();
    printf("perf: Laplacian %d^3 natural order, 64-column blocks: %.3g flops, LLT %.3f s (%.2f GFlop/s), "
           "refactorization %.3f s (%.2f GFlop/s)\n", (int)m, S.flops_llt, t1 - t0, S.flops_llt / (t1 - t0) * 1e-9,
           t2 - t1, S.flops_llt / (t2 - t1) * 1e-9);
    check_solution(&A, &F, 1, 1, 0); /* backward error only: too large for a dense reference */
    numeric_free(&F);
    double t3 = canopy_wtime();
    ck_assert_int_eq(numeric_factorize(&F, &S, &A, CANOPY_FACT_LU, 1e-8, &err), CANOPY_SUCCESS);
    double t4 = canopy_wtime();
    ck_assert_int_eq(numeric_factorize(&F, &S, &A, CANOPY_FACT_LU, 1e-8, &err), CANOPY_SUCCESS);
    double t5 = canopy_wtime();
    printf("perf: same matrix, LU %.3f s (%.2f GFlop/s), refactorization %.3f s (%.2f GFlop/s)\n", t4 - t3,
           S.flops_lu / (t4 - t3) * 1e-9, t5 - t4, S.flops_lu / (t5 - t4) * 1e-9);
    check_solution(&A, &F, 1, 1, 0);
    numeric_free(&F);
    symbolic_free(&S);
    matrix_free(&A);

    int nd = 1000;
    double *a = malloc((size_t)nd * nd * sizeof *a), *b = malloc((size_t)nd * nd * sizeof *b),
           *c = calloc((size_t)nd * nd, sizeof *c);
    for (size_t i = 0; i < (size_t)nd * nd; i++) a[i] = b[i] = 1.0 / (double)(i % 97 + 1);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, nd, nd, nd, 1.0, a, nd, b, nd, 0.0, c, nd);
    double d0 = canopy_wtime();
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, nd, nd, nd, 1.0, a, nd, b, nd, 0.0, c, nd);
    double d1 = canopy_wtime();
    printf("perf: DGEMM 1000^3 (BLAS threads as set by the environment): %.2f GFlop/s\n", 2e9 / (d1 - d0) * 1e-9);
    free(a);
    free(b);
    free(c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("numeric");
    TCase *tc = tcase_create("numeric");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, llt_all_layouts);
    tcase_add_test(tc, ldlt_all_layouts);
    tcase_add_test(tc, lu_all_layouts);
    tcase_add_test(tc, wide_blocks);
    tcase_add_test(tc, not_spd_names_column);
    tcase_add_test(tc, lu_interchanges_inside_block);
    tcase_add_test(tc, ldlt_kkt_no_perturbation);
    tcase_add_test(tc, ldlt_kkt_split_pairs);
    tcase_add_test(tc, perturbation_warning);
    tcase_add_test(tc, refactorization);
    tcase_add_test(tc, argument_errors);
    tcase_add_test(tc, allocation_failures);
    tcase_add_test(tc, performance_print);
    suite_add_tcase(s, tc);
    return testutil_run(s);
}
