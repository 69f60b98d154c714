/*
 * The public API as an application sees it: phase order, argument errors, every factorization
 * kind on small matrices, refactorization, user orderings, repeated cycles without leaks, and
 * allocation failures injected at every allocation of a whole cycle.
 */
#include "testutil.h"
#include "solver/solver.h" /* s->F.exec.stop: an interruption that does not depend on timing */

#include <complex.h>
#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

static canopy_solver *make_solver(canopy_options *o)
{
    canopy_options def;
    if (o == NULL) {
        canopy_options_default(&def);
        o = &def;
    }
    canopy_solver *s = NULL;
    ck_assert_int_eq(canopy_create(MPI_COMM_WORLD, o, &s), CANOPY_SUCCESS);
    return s;
}

/* b = A * ones; returns b (n x nrhs) */
static double *rhs_ones(const canopy_csc *A, int nrhs)
{
    double *x = malloc((size_t)A->n * sizeof *x), *b = malloc((size_t)A->n * nrhs * sizeof *b);
    for (cint i = 0; i < A->n; i++) x[i] = 1.0;
    for (int k = 0; k < nrhs; k++) matrix_spmv(A, 1, 1.0, x, A->n, 0.0, b + (size_t)k * A->n, A->n);
    free(x);
    return b;
}

/* Full cycle; returns the max deviation of the solution from ones. */
static double solve_cycle(canopy_solver *s, const canopy_csc *A, int nrhs, canopy_status *last)
{
    double *b = rhs_ones(A, nrhs);
    double *x = malloc((size_t)A->n * nrhs * sizeof *x);
    memcpy(x, b, (size_t)A->n * nrhs * sizeof *x);
    canopy_status st = canopy_solve(s, nrhs, x, A->n);
    ck_assert_msg(st >= 0, "solve: %s", canopy_last_error(s));
    st = canopy_refine(s, nrhs, b, A->n, x, A->n);
    ck_assert_msg(st >= 0, "refine: %s", canopy_last_error(s));
    if (last) *last = st;
    double err = 0;
    for (size_t i = 0; i < (size_t)A->n * nrhs; i++) err = fmax(err, fabs(x[i] - 1.0));
    free(b);
    free(x);
    return err;
}

START_TEST(create_arguments)
{
    canopy_solver *s = NULL;
    ck_assert_int_eq(canopy_create(MPI_COMM_WORLD, NULL, NULL), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(canopy_create(MPI_COMM_NULL, NULL, &s), CANOPY_ERR_ARGUMENT);
    ck_assert_ptr_null(s);
    canopy_options o;
    canopy_options_default(&o);
    o.threads = -3;
    ck_assert_int_eq(canopy_create(MPI_COMM_WORLD, &o, &s), CANOPY_ERR_ARGUMENT);
    ck_assert_ptr_null(s);
    /* no handle: the message of the failed create is kept for canopy_last_error(NULL) */
    ck_assert_msg(strstr(canopy_last_error(NULL), "threads") != NULL, "%s", canopy_last_error(NULL));
    canopy_options_default(&o);
    o.bind = CANOPY_BIND_LIST;
    snprintf(o.bind_list, sizeof o.bind_list, "0,100000");
    ck_assert_int_eq(canopy_create(MPI_COMM_WORLD, &o, &s), CANOPY_ERR_ARGUMENT);
    ck_assert_msg(strstr(canopy_last_error(NULL), "100000") != NULL, "%s", canopy_last_error(NULL));
    /* a successful create forgets it */
    ck_assert_int_eq(canopy_create(MPI_COMM_WORLD, NULL, &s), CANOPY_SUCCESS);
    ck_assert_int_eq(canopy_destroy(&s), CANOPY_SUCCESS);
    ck_assert_int_eq(canopy_destroy(NULL), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(canopy_destroy(&s), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(canopy_analyze(NULL), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(canopy_factorize(NULL), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(canopy_solve(NULL, 1, NULL, 1), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(canopy_get_stats(NULL, NULL), CANOPY_ERR_ARGUMENT);
    ck_assert_str_eq(canopy_last_error(NULL), "no solver (NULL handle)");
}
END_TEST

START_TEST(phase_order)
{
    canopy_solver *s = make_solver(NULL);
    double b[4] = {1, 1, 1, 1};
    ck_assert_int_eq(canopy_analyze(s), CANOPY_ERR_PHASE);
    ck_assert(strstr(canopy_last_error(s), "canopy_set_matrix") != NULL);
    ck_assert_int_eq(canopy_factorize(s), CANOPY_ERR_PHASE);
    ck_assert_int_eq(canopy_solve(s, 1, b, 4), CANOPY_ERR_PHASE);
    ck_assert_int_eq(canopy_refine(s, 1, b, 4, b, 4), CANOPY_ERR_PHASE);
    ck_assert_int_eq(canopy_update_values(s, b), CANOPY_ERR_PHASE);
    canopy_csc A;
    testutil_random_matrix(30, 3, CANOPY_KIND_SPD, 1, 5, &A);
    A.kind = CANOPY_KIND_SPD;
    ck_assert_int_eq(canopy_set_matrix(s, &A), CANOPY_SUCCESS);
    ck_assert_int_eq(canopy_factorize(s), CANOPY_ERR_PHASE);
    ck_assert(strstr(canopy_last_error(s), "canopy_analyze") != NULL);
    ck_assert_int_eq(canopy_analyze(s), CANOPY_SUCCESS);
    double x[30];
    ck_assert_int_eq(canopy_solve(s, 1, x, 30), CANOPY_ERR_PHASE);
    ck_assert_int_eq(canopy_factorize(s), CANOPY_SUCCESS);
    /* new values invalidate the factors until the next factorization */
    ck_assert_int_eq(canopy_update_values(s, A.values), CANOPY_SUCCESS);
    ck_assert_int_eq(canopy_solve(s, 1, x, 30), CANOPY_ERR_PHASE);
    ck_assert_int_eq(canopy_factorize(s), CANOPY_SUCCESS);
    ck_assert_double_le(solve_cycle(s, &A, 1, NULL), 1e-10);
    canopy_destroy(&s);
    ck_assert_ptr_null(s);
    matrix_free(&A);
}
END_TEST

START_TEST(bad_matrices)
{
    canopy_solver *s = make_solver(NULL);
    ck_assert_int_eq(canopy_set_matrix(s, NULL), CANOPY_ERR_ARGUMENT);
    cint colptr[3] = {0, 2, 3}, rowind[3] = {0, 5, 1};
    double val[3] = {1, 2, 3};
    canopy_csc A = {.n = 2, .colptr = colptr, .rowind = rowind, .values = val, .arith = CANOPY_REAL,
                    .kind = CANOPY_KIND_GENERAL};
    ck_assert_int_eq(canopy_set_matrix(s, &A), CANOPY_ERR_MATRIX);
    ck_assert_int_eq(canopy_analyze(s), CANOPY_ERR_PHASE); /* a refused matrix is not kept */
    rowind[1] = 1;
    val[0] = NAN;
    ck_assert_int_eq(canopy_set_matrix(s, &A), CANOPY_ERR_MATRIX);
    val[0] = 1;
    A.values = NULL;
    ck_assert_int_eq(canopy_set_matrix(s, &A), CANOPY_ERR_MATRIX);
    A.values = val;

    ck_assert_int_eq(canopy_set_matrix(s, &A), CANOPY_SUCCESS);
    /* LL^T / LDL^T need a symmetric matrix */
    canopy_destroy(&s);
    canopy_options o;
    canopy_options_default(&o);
    o.factorization = CANOPY_FACT_LLT;
    s = make_solver(&o);
    ck_assert_int_eq(canopy_set_matrix(s, &A), CANOPY_SUCCESS);
    ck_assert_int_eq(canopy_analyze(s), CANOPY_ERR_ARGUMENT);
    canopy_destroy(&s);
}
END_TEST

START_TEST(every_kind)
{
    const canopy_matrix_kind kinds[3] = {CANOPY_KIND_SPD, CANOPY_KIND_SYMMETRIC, CANOPY_KIND_GENERAL};
    const canopy_factorization want[3] = {CANOPY_FACT_LLT, CANOPY_FACT_LDLT, CANOPY_FACT_LU};
    for (int k = 0; k < 3; k++)
        for (int dominant = 0; dominant <= (k ? 1 : 0); dominant++) {
            canopy_csc A;
            testutil_random_matrix(120, 4, kinds[k], k == 0 ? 1 : dominant, 11 + k, &A);
            A.kind = kinds[k];
            canopy_solver *s = make_solver(NULL);
            ck_assert_int_eq(canopy_set_matrix(s, &A), CANOPY_SUCCESS);
            ck_assert_int_eq(canopy_analyze(s), CANOPY_SUCCESS);
            ck_assert_int_ge(canopy_factorize(s), 0);
            canopy_stats st;
            canopy_get_stats(s, &st);
            ck_assert_int_eq(st.factorization, want[k]);
            ck_assert_int_eq(st.n, 120);
            ck_assert_int_gt(st.nnz_factor, 0);
            ck_assert_double_le(solve_cycle(s, &A, 3, NULL), 1e-9);
            canopy_get_stats(s, &st);
            ck_assert_double_le(st.backward_error, 1e-12);
            canopy_destroy(&s);
            matrix_free(&A);
        }
}
END_TEST

START_TEST(not_spd)
{
    canopy_csc A;
    testutil_random_matrix(60, 3, CANOPY_KIND_SYMMETRIC, 0, 21, &A); /* indefinite */
    A.kind = CANOPY_KIND_SPD;
    canopy_options o;
    canopy_options_default(&o);
    o.factorization = CANOPY_FACT_LLT;
    canopy_solver *s = make_solver(&o);
    ck_assert_int_eq(canopy_set_matrix(s, &A), CANOPY_SUCCESS);
    ck_assert_int_eq(canopy_analyze(s), CANOPY_SUCCESS);
    ck_assert_int_eq(canopy_factorize(s), CANOPY_ERR_NOT_SPD);
    ck_assert(strstr(canopy_last_error(s), "column") != NULL);
    canopy_destroy(&s);
    /* with auto, the documented fallback to LDL^T */
    s = make_solver(NULL);
    ck_assert_int_eq(canopy_set_matrix(s, &A), CANOPY_SUCCESS);
    ck_assert_int_eq(canopy_analyze(s), CANOPY_SUCCESS);
    ck_assert_int_ge(canopy_factorize(s), 0);
    canopy_stats st;
    canopy_get_stats(s, &st);
    ck_assert_int_eq(st.factorization, CANOPY_FACT_LDLT);
    ck_assert_double_le(solve_cycle(s, &A, 1, NULL), 1e-8);
    canopy_destroy(&s);
    matrix_free(&A);
}
END_TEST

START_TEST(user_and_natural_orderings)
{
    canopy_csc A;
    testutil_random_matrix(50, 3, CANOPY_KIND_SPD, 1, 31, &A);
    A.kind = CANOPY_KIND_SPD;
    canopy_options o;
    canopy_options_default(&o);
    o.ordering = CANOPY_ORDER_USER;
    canopy_solver *s = make_solver(&o);
    ck_assert_int_eq(canopy_set_matrix(s, &A), CANOPY_SUCCESS);
    ck_assert_int_eq(canopy_analyze(s), CANOPY_ERR_ARGUMENT); /* no permutation given */
    cint perm[50];
    for (int i = 0; i < 50; i++) perm[i] = 49 - i;
    perm[3] = perm[4];
    ck_assert_int_eq(canopy_set_permutation(s, perm), CANOPY_ERR_ARGUMENT);
    perm[3] = 46;
    ck_assert_int_eq(canopy_set_permutation(s, perm), CANOPY_SUCCESS);
    ck_assert_int_eq(canopy_analyze(s), CANOPY_SUCCESS);
    ck_assert_int_ge(canopy_factorize(s), 0);
    ck_assert_double_le(solve_cycle(s, &A, 1, NULL), 1e-10);
    canopy_destroy(&s);
    o.ordering = CANOPY_ORDER_NATURAL;
    s = make_solver(&o);
    ck_assert_int_eq(canopy_set_matrix(s, &A), CANOPY_SUCCESS);
    ck_assert_int_eq(canopy_analyze(s), CANOPY_SUCCESS);
    ck_assert_int_ge(canopy_factorize(s), 0);
    ck_assert_double_le(solve_cycle(s, &A, 2, NULL), 1e-10);
    canopy_destroy(&s);
    matrix_free(&A);
}
END_TEST

START_TEST(solve_arguments)
{
    canopy_csc A;
    testutil_random_matrix(20, 2, CANOPY_KIND_GENERAL, 1, 41, &A);
    canopy_solver *s = make_solver(NULL);
    ck_assert_int_eq(canopy_set_matrix(s, &A), CANOPY_SUCCESS);
    ck_assert_int_eq(canopy_analyze(s), CANOPY_SUCCESS);
    ck_assert_int_ge(canopy_factorize(s), 0);
    double b[40];
    ck_assert_int_eq(canopy_solve(s, -1, b, 20), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(canopy_solve(s, 1, NULL, 20), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(canopy_solve(s, 1, b, 19), CANOPY_ERR_ARGUMENT);
    ck_assert(strstr(canopy_last_error(s), "leading dimension") != NULL);
    ck_assert_int_eq(canopy_solve(s, 0, NULL, 0), CANOPY_SUCCESS);
    ck_assert_int_eq(canopy_refine(s, 1, b, 20, NULL, 20), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(canopy_update_values(s, NULL), CANOPY_ERR_ARGUMENT);
    canopy_destroy(&s);
    matrix_free(&A);
}
END_TEST

START_TEST(hundred_cycles_no_leak)
{
    canopy_csc A;
    testutil_random_matrix(80, 4, CANOPY_KIND_GENERAL, 1, 51, &A);
    size_t base = canopy_mem_current();
    for (int it = 0; it < 100; it++) {
        canopy_solver *s = make_solver(NULL);
        ck_assert_int_eq(canopy_set_matrix(s, &A), CANOPY_SUCCESS);
        ck_assert_int_eq(canopy_analyze(s), CANOPY_SUCCESS);
        ck_assert_int_ge(canopy_factorize(s), 0);
        ck_assert_double_le(solve_cycle(s, &A, 1, NULL), 1e-9);
        canopy_destroy(&s);
        ck_assert_uint_eq(canopy_mem_current(), base);
    }
    matrix_free(&A);
}
END_TEST

/* Fail the k-th allocation of a whole cycle for every k: each failure must come back as
 * CANOPY_ERR_NOMEM (or TOO_LARGE), never crash, and leave nothing allocated after destroy. */
START_TEST(allocation_failures)
{
    canopy_csc A;
    testutil_random_matrix(60, 3, CANOPY_KIND_GENERAL, 1, 61, &A);
    size_t base = canopy_mem_current();
    int completed = 0;
    for (long k = 0; k < 400 && !completed; k++) {
        canopy_solver *s = NULL;
        canopy_options o;
        canopy_options_default(&o);
        canopy_alloc_fail_after(k);
        canopy_status st = canopy_create(MPI_COMM_WORLD, &o, &s);
        double *b = rhs_ones(&A, 1), *x = malloc(60 * sizeof *x);
        memcpy(x, b, 60 * sizeof *x);
        if (st >= 0) st = canopy_set_matrix(s, &A);
        if (st >= 0) st = canopy_analyze(s);
        if (st >= 0) st = canopy_factorize(s);
        if (st >= 0) st = canopy_solve(s, 1, x, 60);
        if (st >= 0) st = canopy_refine(s, 1, b, 60, x, 60);
        canopy_alloc_fail_after(-1);
        if (st >= 0) completed = 1;
        else ck_assert_msg(st == CANOPY_ERR_NOMEM, "allocation %ld: status %d (%s)", k, st, s ? canopy_last_error(s) : "");
        if (s) canopy_destroy(&s);
        free(b);
        free(x);
        ck_assert_uint_eq(canopy_mem_current(), base);
    }
    ck_assert_msg(completed, "the cycle never completed within 400 allocations");
    matrix_free(&A);
}
END_TEST

/* Random complex matrix of a kind (full storage): diagonally dominant, Hermitian positive
 * definite for HERMITIAN, complex symmetric for SYMMETRIC. */
static void random_complex(cint n, canopy_matrix_kind kind, uint64_t seed, canopy_csc *A)
{
    canopy_csc R;
    testutil_random_matrix(n, 3, kind == CANOPY_KIND_GENERAL ? CANOPY_KIND_GENERAL : CANOPY_KIND_SYMMETRIC, 1, seed, &R);
    *A = R;
    double complex *v = canopy_alloc((size_t)matrix_nnz(&R) + 1, sizeof *v, "complex values", NULL);
    const double *rv = R.values;
    for (cint j = 0; j < n; j++)
        for (cint p = R.colptr[j]; p < R.colptr[j + 1]; p++) {
            cint i = R.rowind[p], lo = i < j ? i : j, hi = i < j ? j : i;
            /* imaginary part: any value for GENERAL, symmetric in (i, j) for SYMMETRIC, and
             * a_ij = conj(a_ji) with a real diagonal for HERMITIAN */
            double im = 0.25 * (double)((lo * 7 + hi * 3) % 5 - 2);
            if (kind == CANOPY_KIND_GENERAL) im = 0.25 * (double)((i * 7 + j * 3) % 5 - 2);
            if (kind == CANOPY_KIND_HERMITIAN) im = i == j ? 0 : (i < j ? -im : im);
            v[p] = rv[p] + im * I;
        }
    /* keep diagonal dominance with the imaginary parts added */
    for (cint j = 0; j < n; j++)
        for (cint p = R.colptr[j]; p < R.colptr[j + 1]; p++)
            if (R.rowind[p] == j) v[p] += 2.0 * (R.colptr[j + 1] - R.colptr[j]);
    canopy_free(R.values);
    A->values = v;
    A->arith = CANOPY_COMPLEX;
    A->kind = kind;
}

START_TEST(complex_kinds)
{
    const canopy_matrix_kind kinds[3] = {CANOPY_KIND_HERMITIAN, CANOPY_KIND_SYMMETRIC, CANOPY_KIND_GENERAL};
    const canopy_factorization want[3] = {CANOPY_FACT_LLT, CANOPY_FACT_LDLT, CANOPY_FACT_LU};
    for (int k = 0; k < 3; k++) {
        canopy_csc A;
        random_complex(90, kinds[k], 71 + k, &A);
        canopy_solver *s = make_solver(NULL);
        ck_assert_msg(canopy_set_matrix(s, &A) == CANOPY_SUCCESS, "%s", canopy_last_error(s));
        ck_assert_int_eq(canopy_analyze(s), CANOPY_SUCCESS);
        ck_assert_msg(canopy_factorize(s) >= 0, "%s", canopy_last_error(s));
        canopy_stats st;
        canopy_get_stats(s, &st);
        ck_assert_int_eq(st.factorization, want[k]);
        /* b = A * (1 + i), two right-hand sides */
        cint n = A.n;
        double complex *x0 = malloc((size_t)n * sizeof *x0), *b = malloc(2 * (size_t)n * sizeof *b),
                       *x = malloc(2 * (size_t)n * sizeof *x);
        for (cint i = 0; i < n; i++) x0[i] = 1.0 + 1.0 * I;
        matrix_spmv(&A, 1, 1.0, x0, n, 0.0, b, n);
        memcpy(b + n, b, (size_t)n * sizeof *b);
        memcpy(x, b, 2 * (size_t)n * sizeof *x);
        ck_assert_int_ge(canopy_solve(s, 2, x, n), 0);
        ck_assert_int_ge(canopy_refine(s, 2, b, n, x, n), 0);
        double err = 0;
        for (cint i = 0; i < 2 * n; i++) err = fmax(err, cabs(x[i] - (1.0 + 1.0 * I)));
        ck_assert_double_le(err, 1e-10);
        canopy_get_stats(s, &st);
        ck_assert_double_le(st.backward_error, 1e-12);
        free(x0);
        free(b);
        free(x);
        canopy_destroy(&s);
        matrix_free(&A);
    }
    /* Hermitian matrices have no LDL^H here; complex symmetric ones no LL^T */
    canopy_csc A;
    random_complex(20, CANOPY_KIND_HERMITIAN, 5, &A);
    canopy_options o;
    canopy_options_default(&o);
    o.factorization = CANOPY_FACT_LDLT;
    canopy_solver *s = make_solver(&o);
    ck_assert_int_eq(canopy_set_matrix(s, &A), CANOPY_SUCCESS);
    ck_assert_int_eq(canopy_analyze(s), CANOPY_ERR_UNSUPPORTED);
    canopy_destroy(&s);
    A.kind = CANOPY_KIND_SPD;
    s = make_solver(NULL);
    ck_assert_int_eq(canopy_set_matrix(s, &A), CANOPY_ERR_ARGUMENT);
    canopy_destroy(&s);
    matrix_free(&A);
}
END_TEST

/* The placement warning (here: more threads than the machine has cores) is printed once per
 * process, however many solvers are created. */
START_TEST(warning_once)
{
    char path[] = "/tmp/canopy-warn-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    fflush(stderr);
    int saved = dup(2);
    ck_assert_int_ge(saved, 0);
    dup2(fd, 2);
    canopy_options o;
    canopy_options_default(&o);
    o.threads = 997; /* a count no other test asks for: the message is new to this process */
    o.bind = CANOPY_BIND_NONE;
    for (int k = 0; k < 3; k++) {
        canopy_solver *s = NULL;
        ck_assert_int_eq(canopy_create(MPI_COMM_WORLD, &o, &s), CANOPY_SUCCESS);
        canopy_destroy(&s);
    }
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    FILE *f = fdopen(fd, "r");
    ck_assert_ptr_nonnull(f);
    rewind(f);
    char line[1024];
    int count = 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, "canopy: warning:") && strstr(line, "997 threads")) count++;
    fclose(f);
    unlink(path);
    ck_assert_int_eq(count, 1);
}
END_TEST

/* canopy_get_progress from another thread while the solver works: valid phases, the
 * factorization's share between 0 and 1 and never going back, idle once the call returned. */
typedef struct watch {
    canopy_solver *s;
    atomic_int stop;
    int bad, factorize_seen;
    double last;
} watch;

static void *watch_main(void *arg)
{
    watch *w = arg;
    while (!atomic_load(&w->stop)) {
        canopy_phase ph;
        double done;
        if (canopy_get_progress(w->s, &ph, &done) != CANOPY_SUCCESS || ph < CANOPY_PHASE_IDLE || ph > CANOPY_PHASE_SOLVE)
            w->bad++;
        if (ph == CANOPY_PHASE_FACTORIZE) {
            w->factorize_seen++;
            if (done > 1 || (done < 0 && done != -1) || (done >= 0 && done + 1e-12 < w->last)) {
                w->bad++;
                fprintf(stderr, "progress: factorize done %.6f after %.6f\n", done, w->last);
            }
            if (done >= 0) w->last = done;
        } else if (done != -1) {
            w->bad++;
            fprintf(stderr, "progress: phase %d done %.6f\n", (int)ph, done);
        }
    }
    return NULL;
}

START_TEST(progress_from_another_thread)
{
    canopy_options o;
    canopy_options_default(&o);
    o.threads = 2;
    o.bind = CANOPY_BIND_NONE;
    canopy_solver *s = make_solver(&o);
    canopy_csc A = {0};
    ck_assert_int_eq(canopy_generate_laplacian(24, 24, 24, 7, &A), CANOPY_SUCCESS);
    canopy_phase ph;
    double done;
    ck_assert_int_eq(canopy_get_progress(NULL, &ph, &done), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(canopy_get_progress(s, &ph, &done), CANOPY_SUCCESS);
    ck_assert_int_eq(ph, CANOPY_PHASE_IDLE);
    ck_assert(done == -1);
    watch w = {.s = s};
    atomic_init(&w.stop, 0);
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, watch_main, &w), 0);
    ck_assert_int_eq(canopy_set_matrix(s, &A), CANOPY_SUCCESS);
    ck_assert_int_eq(canopy_analyze(s), CANOPY_SUCCESS);
    ck_assert_int_eq(canopy_factorize(s), CANOPY_SUCCESS);
    ck_assert_int_eq(canopy_get_progress(s, &ph, &done), CANOPY_SUCCESS);
    ck_assert_int_eq(ph, CANOPY_PHASE_IDLE);
    double *b = rhs_ones(&A, 1);
    ck_assert_int_ge(canopy_solve(s, 1, b, A.n), CANOPY_SUCCESS);
    atomic_store(&w.stop, 1);
    pthread_join(th, NULL);
    ck_assert_int_eq(w.bad, 0);
    free(b);
    canopy_csc_free(&A);
    canopy_destroy(&s);
}
END_TEST

/* A second thread's calls on a solver while it factorizes: refused with CANOPY_ERR_BUSY, never
 * run over the factorization. Only calls made between two progress readings that both said
 * FACTORIZE are asserted on (the phase is set and cleared inside the call's hold on the solver),
 * so the test does not depend on timing. */
typedef struct intruder {
    canopy_solver *s;
    atomic_int stop;
    int checked, bad;
} intruder;

static bool factorizing(canopy_solver *s)
{
    canopy_phase ph;
    double done;
    return canopy_get_progress(s, &ph, &done) == CANOPY_SUCCESS && ph == CANOPY_PHASE_FACTORIZE;
}

static void *intruder_main(void *arg)
{
    intruder *w = arg;
    while (!atomic_load(&w->stop) && w->checked < 200) {
        if (!factorizing(w->s)) continue;
        canopy_stats st;
        canopy_thread_stats ts;
        canopy_status got[5] = {
            canopy_get_stats(w->s, &st), canopy_get_thread_stats(w->s, 0, &ts), canopy_solve(w->s, 0, NULL, 1),
            canopy_refine(w->s, 0, NULL, 1, NULL, 1), canopy_factorize(w->s),
        };
        if (!factorizing(w->s)) continue; /* the factorization may have ended meanwhile */
        w->checked++;
        for (int i = 0; i < 5; i++)
            if (got[i] != CANOPY_ERR_BUSY) {
                w->bad++;
                fprintf(stderr, "call %d on a busy solver returned %d\n", i, (int)got[i]);
            }
    }
    return NULL;
}

START_TEST(busy_from_another_thread)
{
    canopy_options o;
    canopy_options_default(&o);
    o.threads = 1;
    o.bind = CANOPY_BIND_NONE;
    canopy_solver *s = make_solver(&o);
    canopy_csc A = {0};
    ck_assert_int_eq(canopy_generate_laplacian(30, 30, 30, 7, &A), CANOPY_SUCCESS);
    ck_assert_int_eq(canopy_set_matrix(s, &A), CANOPY_SUCCESS);
    ck_assert_int_eq(canopy_analyze(s), CANOPY_SUCCESS);
    intruder w = {.s = s};
    /* again until the other thread has caught a factorization at work (almost always the first) */
    for (int round = 0; round < 20 && w.checked == 0; round++) {
        atomic_init(&w.stop, 0);
        pthread_t th;
        ck_assert_int_eq(pthread_create(&th, NULL, intruder_main, &w), 0);
        ck_assert_int_eq(canopy_factorize(s), CANOPY_SUCCESS);
        atomic_store(&w.stop, 1);
        pthread_join(th, NULL);
    }
    ck_assert_int_gt(w.checked, 0);
    ck_assert_int_eq(w.bad, 0);
    ck_assert_str_eq(canopy_strerror(CANOPY_ERR_BUSY), "another call on this solver is still running");
    /* the factors are whole: the solution of A x = A 1 is 1 */
    ck_assert_double_lt(solve_cycle(s, &A, 1, NULL), 1e-10);
    canopy_csc_free(&A);
    canopy_destroy(&s);
}
END_TEST

typedef struct interrupter {
    canopy_solver *s;
    useconds_t after;
} interrupter;

static void *interrupt_main(void *arg)
{
    interrupter *w = arg;
    usleep(w->after);
    canopy_interrupt(w->s);
    return NULL;
}

/* canopy_interrupt from another thread: the factorization stops (or had finished: the timing is
 * the machine's), the factors of a stopped one are refused, the next factorization is whole; an
 * in-place inversion stopped halfway leaves neither factors nor inverse until then */
START_TEST(interrupt)
{
    ck_assert_int_eq(canopy_interrupt(NULL), CANOPY_ERR_ARGUMENT);
    canopy_options o;
    canopy_options_default(&o);
    o.threads = 2;
    o.bind = CANOPY_BIND_NONE;
    canopy_solver *s = make_solver(&o);
    canopy_csc A = {0};
    ck_assert_int_eq(canopy_generate_laplacian(30, 30, 30, 7, &A), CANOPY_SUCCESS);
    ck_assert_int_eq(canopy_set_matrix(s, &A), CANOPY_SUCCESS);
    ck_assert_int_eq(canopy_analyze(s), CANOPY_SUCCESS);
    double *b = rhs_ones(&A, 1);
    int stopped = 0;
    for (int t = 0; t < 2; t++) {
        interrupter w = {.s = s, .after = 20000};
        pthread_t th;
        ck_assert_int_eq(pthread_create(&th, NULL, interrupt_main, &w), 0);
        canopy_status st = canopy_factorize(s);
        pthread_join(th, NULL);
        ck_assert_msg(st == CANOPY_SUCCESS || st == CANOPY_ERR_INTERRUPTED, "factorize: %d %s", st, canopy_last_error(s));
        if (st == CANOPY_ERR_INTERRUPTED) {
            stopped++;
            ck_assert_ptr_nonnull(strstr(canopy_last_error(s), "interrupt"));
            ck_assert_int_eq(canopy_solve(s, 1, b, A.n), CANOPY_ERR_PHASE);
        }
        /* an interruption asked between calls does not reach the next call */
        ck_assert_int_eq(canopy_factorize(s), CANOPY_SUCCESS);
        ck_assert(solve_cycle(s, &A, 1, NULL) < 1e-8);
    }
    printf("interrupt: %d of 2 factorizations stopped before their end\n", stopped);
    /* the inversion, stopped for sure: its stop flag set before it starts */
    static _Atomic int always = 1;
    _Atomic int *keep = s->F.exec.stop;
    s->F.exec.stop = &always;
    double *d = malloc((size_t)A.n * sizeof *d);
    ck_assert_int_eq(canopy_selinv(s, CANOPY_SELINV_DIAG, &(canopy_selinv_request){.diag = d}), CANOPY_ERR_INTERRUPTED);
    s->F.exec.stop = keep;
    ck_assert_int_eq(canopy_selinv(s, CANOPY_SELINV_DIAG, &(canopy_selinv_request){.diag = d}), CANOPY_ERR_PHASE);
    ck_assert_ptr_nonnull(strstr(canopy_last_error(s), "interrupted"));
    ck_assert_int_eq(canopy_solve(s, 1, b, A.n), CANOPY_ERR_PHASE);
    ck_assert_int_eq(canopy_factorize(s), CANOPY_SUCCESS);
    ck_assert_int_eq(canopy_selinv(s, CANOPY_SELINV_DIAG, &(canopy_selinv_request){.diag = d}), CANOPY_SUCCESS);
    ck_assert(d[0] > 0);
    free(d);
    free(b);
    canopy_csc_free(&A);
    canopy_destroy(&s);
}
END_TEST

/*
 * A rank-deficient matrix ([[1, 2], [2, 4]], and the singular Neumann Laplacian of a path): with a
 * consistent right-hand side refinement finds a solution (backward error measured here); with an
 * inconsistent one it cannot, which is a warning by default and CANOPY_ERR_SINGULAR with strict=on.
 */
static void singular_case(cint n, int kind_sym, int strict, int consistent)
{
    cint nnz = n == 2 ? 4 : 3 * n - 2;
    canopy_int *cp = malloc(((size_t)n + 1) * sizeof *cp), *ri = malloc((size_t)nnz * sizeof *ri);
    double *v = malloc((size_t)nnz * sizeof *v);
    cint q = 0;
    for (cint j = 0; j < n; j++) {
        cp[j] = q;
        if (n == 2) {
            ri[q] = 0, v[q++] = j == 0 ? 1 : 2;
            ri[q] = 1, v[q++] = j == 0 ? 2 : 4;
            continue;
        }
        if (j > 0) ri[q] = j - 1, v[q++] = -1;
        ri[q] = j, v[q++] = j == 0 || j == n - 1 ? 1 : 2; /* rows sum to zero: ones span the kernel */
        if (j < n - 1) ri[q] = j + 1, v[q++] = -1;
    }
    cp[n] = q;
    canopy_csc A = {.n = n, .colptr = cp, .rowind = ri, .values = v, .base = 0, .arith = CANOPY_REAL,
                    .kind = kind_sym ? CANOPY_KIND_SYMMETRIC : CANOPY_KIND_GENERAL, .triangle = CANOPY_TRIANGLE_BOTH};
    canopy_options o;
    canopy_options_default(&o);
    ck_assert_int_eq(canopy_options_set(&o, "strict", strict ? "on" : "off", NULL, 0), CANOPY_SUCCESS);
    snprintf(o.cost_cache, sizeof o.cost_cache, "fixed");
    canopy_solver *s = make_solver(&o);
    ck_assert_int_eq(canopy_set_matrix(s, &A), CANOPY_SUCCESS);
    ck_assert_int_ge(canopy_analyze(s), 0);
    ck_assert_msg(canopy_factorize(s) == CANOPY_WARN_PIVOTS_PERTURBED, "a singular matrix factorized without a word");
    double *b = malloc((size_t)n * sizeof *b), *x = malloc((size_t)n * sizeof *x), *r = malloc((size_t)n * sizeof *r);
    for (cint i = 0; i < n; i++) b[i] = consistent ? (n == 2 ? (i == 0 ? 3 : 6) : (i == 0 ? -1 : i == n - 1 ? 1 : 0)) : 1;
    memcpy(x, b, (size_t)n * sizeof *x);
    ck_assert_int_ge(canopy_solve(s, 1, x, n), 0);
    canopy_status st = canopy_refine(s, 1, b, n, x, n);
    /* the backward error measured here, against the matrix given */
    matrix_spmv(&A, 1, 1.0, x, n, 0.0, r, n);
    double rn = 0, xn = 0, bn = 0, an = n == 2 ? 6 : 4;
    for (cint i = 0; i < n; i++) {
        rn = fmax(rn, fabs(r[i] - b[i]));
        xn = fmax(xn, fabs(x[i]));
        bn = fmax(bn, fabs(b[i]));
    }
    double e = rn / (an * xn + bn);
    if (consistent) {
        ck_assert_msg(st == CANOPY_SUCCESS, "n=%d consistent: refine %d (%s)", (int)n, st, canopy_last_error(s));
        ck_assert_msg(e <= 1e-12, "n=%d consistent: backward error %g", (int)n, e);
    } else {
        /* no solution exists: the residual stays large against b (x grows huge, which may keep the
         * normwise backward error small: the status must not rely on it alone) */
        ck_assert_msg(rn > 1e-3 * bn, "n=%d inconsistent: residual %g, |b| %g (backward error %g)", (int)n, rn, bn, e);
        ck_assert_msg(st == (strict ? CANOPY_ERR_SINGULAR : CANOPY_WARN_NOT_CONVERGED), "n=%d strict=%d: refine %d (%s)",
                      (int)n, strict, st, canopy_last_error(s));
        if (strict) ck_assert_msg(strstr(canopy_last_error(s), "strict") != NULL, "%s", canopy_last_error(s));
    }
    canopy_destroy(&s);
    free(cp);
    free(ri);
    free(v);
    free(b);
    free(x);
    free(r);
}

START_TEST(rank_deficient_strict)
{
    static const cint sizes[] = {2, 40};
    for (int k = 0; k < 2; k++)
        for (int sym = 0; sym < 2; sym++)
            for (int strict = 0; strict < 2; strict++)
                for (int consistent = 0; consistent < 2; consistent++) singular_case(sizes[k], sym, strict, consistent);
}
END_TEST

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    Suite *s = suite_create("api");
    TCase *tc = tcase_create("api");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, create_arguments);
    tcase_add_test(tc, warning_once);
    tcase_add_test(tc, progress_from_another_thread);
    tcase_add_test(tc, interrupt);
    tcase_add_test(tc, phase_order);
    tcase_add_test(tc, bad_matrices);
    tcase_add_test(tc, every_kind);
    tcase_add_test(tc, not_spd);
    tcase_add_test(tc, complex_kinds);
    tcase_add_test(tc, user_and_natural_orderings);
    tcase_add_test(tc, solve_arguments);
    tcase_add_test(tc, hundred_cycles_no_leak);
    tcase_add_test(tc, allocation_failures);
    tcase_add_test(tc, busy_from_another_thread);
    tcase_add_test(tc, rank_deficient_strict);
    suite_add_tcase(s, tc);
    int rc = testutil_run(s);
    MPI_Finalize();
    return rc;
}
