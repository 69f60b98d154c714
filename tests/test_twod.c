/*
 * 2D tasks (sched/plan.h: DIAG, a TRSM per facing group, an UPDATE2D per pair of groups) through
 * the public API, against the 1D tasks and against LAPACK:
 *  - generated 3D problems in every kind and arithmetic (SPD, symmetric indefinite, unsymmetric;
 *    real and complex, Hermitian too), split into odd widths (tiles of 34-37 rows), with 2, 3, 5
 *    and 8 threads x static/dynamic: the unrefined solution with 2D tasks in 1 and 3 levels
 *    equals the 1D one to rounding, the plan really has 2D cblks, and static factors stay
 *    bitwise identical from one factorization to the next;
 *  - dense matrices (one supernode split into a chain of 2D cblks): the solution equals
 *    LAPACK's dposv / dsysv / dgesv;
 *  - the option's range and its environment variable;
 *  - the static scheduler's hand-over of early products, under random task delays: factors
 *    bitwise identical run to run.
 * CANOPY_TEST_QUICK=1 keeps fewer layouts (sanitizer runs).
 */
#include "testutil.h"
#include "solver/solver.h"

#include <complex.h>
#include <lapacke.h>
#include <mpi.h>

static int quick(void)
{
    const char *q = getenv("CANOPY_TEST_QUICK");
    return q && *q && strcmp(q, "0") != 0;
}

enum variant { V_SPD, V_INDEF, V_UNSYM, V_CSYM, V_CUNSYM, V_HERM, V_COUNT };
static const char *const vname[] = {"SPD", "symmetric indefinite", "unsymmetric", "complex symmetric",
                                    "complex unsymmetric", "Hermitian"};

/* A 16x15x14 Laplacian turned into the variant: shifted, made unsymmetric or complex. */
static void make_problem(int v, canopy_csc *A)
{
    ck_assert_int_eq(canopy_generate_laplacian(16, 15, 14, 7, A), CANOPY_SUCCESS);
    double *val = A->values;
    int cpx = v >= V_CSYM;
    double complex *z = cpx ? malloc(sizeof(double complex) * ((size_t)A->colptr[A->n] + 1)) : NULL;
    for (cint j = 0; j < A->n; j++)
        for (cint p = A->colptr[j]; p < A->colptr[j + 1]; p++) {
            cint i = A->rowind[p];
            double a = val[p];
            switch (v) {
            case V_INDEF: if (i == j) val[p] = a - 3.05; break;     /* eigenvalues on both sides of 0 */
            case V_UNSYM: if (i > j) val[p] = 1.5 * a; break;
            case V_CSYM: z[p] = i == j ? a + 1.0 * I : a * (1 + 0.5 * I); break;
            case V_CUNSYM: z[p] = i == j ? a + 1.0 * I : i > j ? a * (1 + 0.5 * I) : a * (0.8 - 0.3 * I); break;
            case V_HERM: z[p] = i == j ? a + 2.0 : i > j ? a * (1 + 0.5 * I) : a * (1 - 0.5 * I); break;
            default: break;
            }
        }
    if (cpx) {
        canopy_free(A->values);
        double complex *zz = canopy_alloc((size_t)A->colptr[A->n] + 1, sizeof(double complex), "values", NULL);
        memcpy(zz, z, sizeof(double complex) * (size_t)A->colptr[A->n]);
        free(z);
        A->values = zz;
        A->arith = CANOPY_COMPLEX;
    }
    A->kind = v == V_SPD ? CANOPY_KIND_SPD
            : v == V_INDEF || v == V_CSYM ? CANOPY_KIND_SYMMETRIC
            : v == V_HERM ? CANOPY_KIND_HERMITIAN : CANOPY_KIND_GENERAL;
}

static size_t scalar_size(const canopy_csc *A) { return A->arith == CANOPY_COMPLEX ? sizeof(double complex) : sizeof(double); }

/* b = A * (1, 2, 3, ...)/n through the library's own full-storage copy. */
static void *make_rhs(const canopy_csc *A)
{
    size_t sb = scalar_size(A);
    double *x = calloc((size_t)A->n + 1, sb), *b = calloc((size_t)A->n + 1, sb);
    for (cint i = 0; i < A->n; i++) x[A->arith == CANOPY_COMPLEX ? 2 * i : i] = 1.0 + (double)i / (double)A->n;
    canopy_csc F = {0};
    canopy_err err = {0};
    ck_assert_int_eq(matrix_import(A, &F, &err), CANOPY_SUCCESS);
    matrix_spmv(&F, 1, 1.0, x, A->n, 0.0, b, A->n);
    matrix_free(&F);
    free(x);
    return b;
}

static double rel_diff(const canopy_csc *A, const void *xv, const void *yv)
{
    double d = 0, m = 0;
    for (cint i = 0; i < A->n; i++) {
        double dx, my;
        if (A->arith == CANOPY_COMPLEX) {
            dx = cabs(((const double complex *)xv)[i] - ((const double complex *)yv)[i]);
            my = cabs(((const double complex *)yv)[i]);
        } else {
            dx = fabs(((const double *)xv)[i] - ((const double *)yv)[i]);
            my = fabs(((const double *)yv)[i]);
        }
        d = fmax(d, dx);
        m = fmax(m, my);
    }
    return m > 0 ? d / m : d;
}

static canopy_solver *make_solver(const canopy_csc *A, int threads, canopy_scheduler sched, int levels, int split)
{
    canopy_options o;
    canopy_options_default(&o);
    o.threads = threads;
    o.scheduler = sched;
    o.twod_levels = levels;
    o.split_size = split;
    o.ordering_threads = 2;
    snprintf(o.cost_cache, sizeof o.cost_cache, "fixed");
    canopy_solver *s = NULL;
    ck_assert_int_eq(canopy_create(MPI_COMM_WORLD, &o, &s), CANOPY_SUCCESS);
    ck_assert_msg(canopy_set_matrix(s, A) == CANOPY_SUCCESS, "%s", canopy_last_error(s));
    ck_assert_msg(canopy_analyze(s) >= 0, "analyze: %s", canopy_last_error(s));
    return s;
}

/* Factorize and solve without refinement; returns x (malloc'd). */
static void *factor_solve(canopy_solver *s, const canopy_csc *A, const void *b)
{
    ck_assert_msg(canopy_factorize(s) >= 0, "factorize: %s", canopy_last_error(s));
    size_t sb = scalar_size(A);
    void *x = malloc((size_t)A->n * sb + sb);
    memcpy(x, b, (size_t)A->n * sb);
    ck_assert_msg(canopy_solve(s, 1, x, A->n) >= 0, "solve: %s", canopy_last_error(s));
    return x;
}

START_TEST(against_1d)
{
    int v = _i;
    canopy_csc A;
    make_problem(v, &A);
    void *b = make_rhs(&A);
    static const int all_threads[] = {2, 3, 5, 8}, quick_threads[] = {2, 5};
    static const int all_levels[] = {1, 3}, quick_levels[] = {3};
    int q = quick(), nthr = q ? 2 : 4, nlev = q ? 1 : 2;
    for (int ti = 0; ti < nthr; ti++) {
        int T = (q ? quick_threads : all_threads)[ti];
        for (int sc = 0; sc < 2; sc++) {
            canopy_scheduler sched = sc ? CANOPY_SCHED_DYNAMIC : CANOPY_SCHED_STATIC;
            /* split 37: the top separators become column blocks (tiles) of 34 to 37 columns */
            canopy_solver *s0 = make_solver(&A, T, sched, 0, 37);
            void *xref = factor_solve(s0, &A, b);
            canopy_stats st;
            canopy_get_stats(s0, &st);
            ck_assert_int_eq(st.twod_cblks, 0);
            canopy_destroy(&s0);
            for (int li = 0; li < nlev; li++) {
                int L = (q ? quick_levels : all_levels)[li];
                canopy_solver *s = make_solver(&A, T, sched, L, 37);
                void *x = factor_solve(s, &A, b);
                canopy_get_stats(s, &st);
                ck_assert_msg(st.twod_cblks > 0 && st.twod_levels == L, "%s T=%d levels %d: %lld 2D cblks", vname[v], T, L,
                              (long long)st.twod_cblks);
                double d = rel_diff(&A, x, xref);
                ck_assert_msg(d <= 1e-9, "%s T=%d %s levels %d: 2D solution differs from 1D by %g", vname[v], T,
                              sc ? "dynamic" : "static", L, d);
                if (!sc) {
                    /* bitwise reproducible static factors with 2D tasks */
                    size_t bytes = s->F.coef_bytes;
                    void *L1 = malloc(bytes), *U1 = s->F.U ? malloc(bytes) : NULL;
                    memcpy(L1, s->F.L, bytes);
                    if (U1) memcpy(U1, s->F.U, bytes);
                    ck_assert_int_ge(canopy_factorize(s), 0);
                    ck_assert_msg(memcmp(L1, s->F.L, bytes) == 0, "%s T=%d: static 2D factors differ between runs",
                                  vname[v], T);
                    if (U1) ck_assert_msg(memcmp(U1, s->F.U, bytes) == 0, "%s T=%d: static 2D U differs", vname[v], T);
                    free(L1);
                    free(U1);
                }
                free(x);
                canopy_destroy(&s);
            }
            free(xref);
        }
    }
    printf("%s: 2D = 1D for every layout\n", vname[v]);
    free(b);
    canopy_csc_free(&A);
}
END_TEST

/*
 * Static scheduler under random task delays (CANOPY_STRESS: this test's own process), 8 threads
 * on however few cores: contributions arrive out of ticket order, so products are handed over to
 * whoever applies the ticket before them. The factors must stay bitwise identical run to run and
 * the solution equal the 1-thread one; over the runs some products must have been handed over.
 */
START_TEST(static_handover)
{
    static const int variants[] = {V_SPD, V_UNSYM, V_CSYM};
    int v = variants[_i];
    setenv("CANOPY_STRESS", "1", 1);
    canopy_csc A;
    make_problem(v, &A);
    void *b = make_rhs(&A);
    canopy_solver *s1 = make_solver(&A, 1, CANOPY_SCHED_STATIC, 0, 37);
    void *xref = factor_solve(s1, &A, b);
    canopy_destroy(&s1);
    for (int L = 0; L <= 3; L += 3) {
        canopy_solver *s = make_solver(&A, 8, CANOPY_SCHED_STATIC, L, 37);
        size_t bytes = 0;
        void *L1 = NULL, *U1 = NULL;
        long long handed = 0;
        int runs = quick() ? 3 : 5;
        for (int r = 0; r < runs; r++) {
            void *x = factor_solve(s, &A, b);
            double d = rel_diff(&A, x, xref);
            ck_assert_msg(d <= 1e-9, "%s levels %d run %d: solution differs from 1 thread's by %g", vname[v], L, r, d);
            free(x);
            canopy_stats st;
            canopy_get_stats(s, &st);
            handed += st.handovers;
            if (r == 0) {
                bytes = s->F.coef_bytes;
                L1 = malloc(bytes);
                memcpy(L1, s->F.L, bytes);
                if (s->F.U) {
                    U1 = malloc(bytes);
                    memcpy(U1, s->F.U, bytes);
                }
                continue;
            }
            ck_assert_msg(memcmp(L1, s->F.L, bytes) == 0, "%s levels %d: static factors differ in run %d", vname[v], L, r);
            if (U1) ck_assert_msg(memcmp(U1, s->F.U, bytes) == 0, "%s levels %d: static U differs in run %d", vname[v], L, r);
        }
        ck_assert_msg(handed > 0, "%s levels %d: no product was handed over in %d stressed runs", vname[v], L, runs);
        printf("%s, 8 threads, 2D levels %d: %lld products handed over in %d runs, factors identical\n", vname[v], L,
               handed, runs);
        free(L1);
        free(U1);
        canopy_destroy(&s);
    }
    free(xref);
    free(b);
    canopy_csc_free(&A);
}
END_TEST

/* Dense n x n: one supernode, split into a chain of 2D cblks of 40 columns; against LAPACK. */
START_TEST(dense_against_lapack)
{
    const cint n = 200;
    static const canopy_matrix_kind kinds[] = {CANOPY_KIND_SPD, CANOPY_KIND_SYMMETRIC, CANOPY_KIND_GENERAL};
    canopy_matrix_kind kind = kinds[_i];
    canopy_csc A = {0};
    testutil_random_matrix(n, (int)n, kind, kind == CANOPY_KIND_SPD, 12345u + (uint64_t)_i, &A);
    double *D = calloc((size_t)n * n, sizeof *D), *bl = malloc(sizeof(double) * (size_t)n);
    for (cint j = 0; j < n; j++)
        for (cint p = A.colptr[j]; p < A.colptr[j + 1]; p++) D[(size_t)j * n + A.rowind[p]] = ((double *)A.values)[p];
    double *b = make_rhs(&A);
    memcpy(bl, b, sizeof(double) * (size_t)n);
    lapack_int info, *ipiv = malloc(sizeof(lapack_int) * (size_t)n);
    if (kind == CANOPY_KIND_SPD) info = LAPACKE_dposv(LAPACK_COL_MAJOR, 'L', n, 1, D, n, bl, n);
    else if (kind == CANOPY_KIND_SYMMETRIC) info = LAPACKE_dsysv(LAPACK_COL_MAJOR, 'L', n, 1, D, n, ipiv, bl, n);
    else info = LAPACKE_dgesv(LAPACK_COL_MAJOR, n, 1, D, n, ipiv, bl, n);
    ck_assert_int_eq(info, 0);
    for (int levels = 0; levels <= 2; levels += 2) {
        canopy_solver *s = make_solver(&A, 4, CANOPY_SCHED_DYNAMIC, levels, 40);
        ck_assert_msg(canopy_factorize(s) >= 0, "%s", canopy_last_error(s));
        canopy_stats st;
        canopy_get_stats(s, &st);
        ck_assert_msg(levels == 0 || st.twod_cblks >= 4, "dense kind %d: %lld 2D cblks", (int)kind, (long long)st.twod_cblks);
        double *x = malloc(sizeof(double) * (size_t)n);
        memcpy(x, b, sizeof(double) * (size_t)n);
        ck_assert_int_ge(canopy_solve(s, 1, x, n), 0);
        ck_assert_int_ge(canopy_refine(s, 1, b, n, x, n), 0);
        double d = rel_diff(&A, x, bl);
        ck_assert_msg(d <= 1e-9, "dense kind %d levels %d: differs from LAPACK by %g", (int)kind, levels, d);
        free(x);
        canopy_destroy(&s);
    }
    free(D);
    free(bl);
    free(b);
    free(ipiv);
    matrix_free(&A);
}
END_TEST

START_TEST(option)
{
    canopy_options o;
    char msg[256];
    canopy_options_default(&o);
    ck_assert_int_eq(o.twod_levels, -1);
    ck_assert_int_eq(canopy_options_set(&o, "2d-levels", "3", msg, sizeof msg), CANOPY_SUCCESS);
    ck_assert_int_eq(o.twod_levels, 3);
    ck_assert_int_eq(canopy_options_set(&o, "2d-levels", "auto", msg, sizeof msg), CANOPY_SUCCESS);
    ck_assert_int_eq(o.twod_levels, -1);
    ck_assert_int_ne(canopy_options_set(&o, "2d-levels", "-2", msg, sizeof msg), CANOPY_SUCCESS);
    ck_assert_int_ne(canopy_options_set(&o, "2d-levels", "65", msg, sizeof msg), CANOPY_SUCCESS);
    ck_assert_int_ne(canopy_options_set(&o, "2d-levels", "x", msg, sizeof msg), CANOPY_SUCCESS);
    setenv("CANOPY_2D_LEVELS", "0", 1);
    ck_assert_int_eq(canopy_options_from_env(&o, msg, sizeof msg), CANOPY_SUCCESS);
    ck_assert_int_eq(o.twod_levels, 0);
    unsetenv("CANOPY_2D_LEVELS");
    /* an out-of-range field is refused at create */
    o.twod_levels = -5;
    canopy_solver *s = NULL;
    ck_assert_int_eq(canopy_create(MPI_COMM_WORLD, &o, &s), CANOPY_ERR_ARGUMENT);
}
END_TEST

/* split=auto with several threads picks the tile width from the model (deterministically), an
 * explicit width is kept, one thread splits nothing; the factors solve A x = b either way. */
START_TEST(split_width_from_model)
{
    canopy_csc A;
    ck_assert_int_eq(canopy_generate_laplacian(18, 17, 16, 7, &A), CANOPY_SUCCESS);
    double *b = malloc((size_t)A.n * sizeof *b);
    for (canopy_int i = 0; i < A.n; i++) b[i] = 1.0 + (double)(i % 7);
    const int threads[] = {1, 8, 8, 3};
    const int split[] = {-1, -1, -1, 100};
    canopy_stats st[4];
    double *x[4];
    for (int c = 0; c < 4; c++) {
        canopy_solver *s = make_solver(&A, threads[c], CANOPY_SCHED_DYNAMIC, -1, split[c]);
        x[c] = factor_solve(s, &A, b);
        canopy_get_stats(s, &st[c]);
        canopy_destroy(&s);
    }
    ck_assert_int_eq(st[0].split_width, 0);
    ck_assert_msg(st[1].split_width == 128 || st[1].split_width == 256 || st[1].split_width == 512, "width %d",
                  st[1].split_width);
    ck_assert_int_eq(st[2].split_width, st[1].split_width);
    ck_assert_int_eq(st[2].ncblk, st[1].ncblk);
    ck_assert_int_gt(st[1].ncblk, st[0].ncblk); /* the top separators (> 128 columns) were cut */
    ck_assert_int_eq(st[3].split_width, 100);
    for (int c = 1; c < 4; c++) ck_assert_double_le(rel_diff(&A, x[c], x[0]), 1e-9);
    for (int c = 0; c < 4; c++) free(x[c]);
    free(b);
    canopy_csc_free(&A);
}
END_TEST

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    Suite *su = suite_create("twod");
    TCase *tc = tcase_create("twod");
    tcase_set_timeout(tc, 900);
    tcase_add_loop_test(tc, against_1d, 0, V_COUNT);
    tcase_add_loop_test(tc, dense_against_lapack, 0, 3);
    tcase_add_test(tc, option);
    tcase_add_test(tc, split_width_from_model);
    tcase_add_loop_test(tc, static_handover, 0, 3);
    suite_add_tcase(su, tc);
    int rc = testutil_run(su);
    MPI_Finalize();
    return rc;
}
