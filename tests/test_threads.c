/*
 * Threads on one rank, through the public API: every shared matrix factorized and solved with
 * 1, 2, 3, 4 and 8 worker threads (oversubscribed on small machines, which is fine for
 * correctness) x static/dynamic scheduler x numa local/global, each reaching a backward error
 * <= 1e-12 after refinement and the same solution as one thread up to rounding; static factors
 * bitwise identical from one factorization to the next; statistics and placement report
 * consistent; the trace file written. CANOPY_TEST_QUICK=1 keeps the small matrices and 1, 2, 4
 * threads (sanitizer runs).
 */
#include "testutil.h"
#include "solver/solver.h"

#include <complex.h>
#include <mpi.h>
#include <unistd.h>

typedef struct mcase {
    const char *file;
    int kind;        /* canopy_matrix_kind to force, -1: as the file says */
    int big;         /* left out in quick mode */
} mcase;

static const mcase cases[] = {
    {"lund_a.rsa", CANOPY_KIND_SPD, 0},        {"nos5.mtx", CANOPY_KIND_SPD, 0},
    {"494_bus.mtx", CANOPY_KIND_SPD, 0},       {"g20.rua", CANOPY_KIND_SPD, 0},
    {"1138_bus.mtx", CANOPY_KIND_SPD, 0},      {"bcsstk14.rsa", CANOPY_KIND_SPD, 0},
    {"bcsstk26.mtx", CANOPY_KIND_SPD, 1},      {"bcsstk13.mtx.gz", CANOPY_KIND_SPD, 1},
    {"bcsstk24.rsa.gz", CANOPY_KIND_SPD, 1},   {"bcsstk16.mtx.gz", CANOPY_KIND_SPD, 1},
    {"G3_circuit.mtx.gz", CANOPY_KIND_SPD, 1}, {"hangGlider_2.mtx", -1, 1},
    {"ex14.rua.gz", CANOPY_KIND_SYMMETRIC, 1}, {"ACTIVSg200_AC_kkt.mtx", -1, 0},
    {"c-62.mtx.gz", -1, 1},                    {"utm300.rua", -1, 0},
    {"west0479.mtx", -1, 0},                   {"orsirr_1.rua", -1, 0},
    {"rajat19.mtx", -1, 0},                    {"nnc1374.mtx", -1, 0},
    {"fuego1.mtx", -1, 1},                     {"adder_dcop_05.mtx", -1, 1},
    {"watt_2.mtx", -1, 1},                     {"cryg2500.mtx", -1, 0},
    {"sherman5.rua", -1, 1},                   {"gemat12.mtx", -1, 1},
    {"add32.rua", -1, 1},                      {"sherman3.mtx", -1, 1},
    {"cage10.mtx.gz", -1, 1},                  {"bayer10.mtx.gz", -1, 1},
    {"nsjac.mtx.gz", -1, 1},                   {"ScaleMicrogrid_N1000.mtx.gz", -1, 1},
    {"xenon1.mtx.gz", -1, 1},                  {"basker_matrix1.mtx.gz", -1, 1},
    {"cg20.cua", CANOPY_KIND_SYMMETRIC, 0},    {"qc324.cua.gz", CANOPY_KIND_SYMMETRIC, 0},
    {"helmholtz_2D.mtx.gz", CANOPY_KIND_SYMMETRIC, 1}, {"mhd1280b.cua", CANOPY_KIND_HERMITIAN, 0},
    {"young1c.mtx", -1, 0},                    {"mhd1280a.cua.gz", -1, 0},
};

static int quick(void)
{
    const char *q = getenv("CANOPY_TEST_QUICK");
    return q && *q && strcmp(q, "0") != 0;
}

/* b = A * ones (real or complex), n x 1 */
static void *rhs_ones(const canopy_csc *A)
{
    size_t sb = A->arith == CANOPY_COMPLEX ? 2 * sizeof(double) : sizeof(double);
    double *x = calloc((size_t)A->n + 1, sb), *b = calloc((size_t)A->n + 1, sb);
    for (cint i = 0; i < A->n; i++) x[A->arith == CANOPY_COMPLEX ? 2 * i : i] = 1.0;
    canopy_csc F = {0};
    canopy_err err = {0};
    /* through the library's own full-storage copy, so symmetric triangles count twice */
    ck_assert_int_eq(matrix_import(A, &F, &err), CANOPY_SUCCESS);
    matrix_spmv(&F, 1, 1.0, x, A->n, 0.0, b, A->n);
    matrix_free(&F);
    free(x);
    return b;
}

/* Largest |x_i - y_i| / max |y_i| (complex: moduli). */
static double rel_diff(const canopy_csc *A, const void *xv, const void *yv)
{
    double d = 0, m = 0;
    if (A->arith == CANOPY_COMPLEX) {
        const double complex *x = xv, *y = yv;
        for (cint i = 0; i < A->n; i++) {
            d = fmax(d, cabs(x[i] - y[i]));
            m = fmax(m, cabs(y[i]));
        }
    } else {
        const double *x = xv, *y = yv;
        for (cint i = 0; i < A->n; i++) {
            d = fmax(d, fabs(x[i] - y[i]));
            m = fmax(m, fabs(y[i]));
        }
    }
    return m > 0 ? d / m : d;
}

/* Forward error against the exact solution (all ones). */
static double fwd_error(const canopy_csc *A, const void *xv)
{
    double d = 0;
    for (cint i = 0; i < A->n; i++)
        d = fmax(d, A->arith == CANOPY_COMPLEX ? cabs(((const double complex *)xv)[i] - 1.0)
                                               : fabs(((const double *)xv)[i] - 1.0));
    return d;
}

/* Solve + refine; returns x (malloc'd) and the backward error. */
static void *solve_refine(canopy_solver *s, const canopy_csc *A, const void *b, double *berr)
{
    size_t sb = A->arith == CANOPY_COMPLEX ? 2 * sizeof(double) : sizeof(double);
    void *x = malloc((size_t)A->n * sb + sb);
    memcpy(x, b, (size_t)A->n * sb);
    ck_assert_msg(canopy_solve(s, 1, x, A->n) >= 0, "solve: %s", canopy_last_error(s));
    canopy_status st = canopy_refine(s, 1, b, A->n, x, A->n);
    ck_assert_msg(st >= 0, "refine: %s", canopy_last_error(s));
    canopy_stats S;
    canopy_get_stats(s, &S);
    *berr = S.backward_error;
    return x;
}

static void check_matrix(const mcase *mc)
{
    const char *dir = testutil_matrix_dir();
    char path[4400], msg[512];
    snprintf(path, sizeof path, "%s/%s", dir, mc->file);
    if (access(path, R_OK) != 0) {
        printf("skip %s: not present\n", mc->file);
        return;
    }
    canopy_csc A;
    ck_assert_msg(canopy_read_matrix(path, &A, msg, sizeof msg) == CANOPY_SUCCESS, "%s", msg);
    if (mc->kind >= 0) A.kind = (canopy_matrix_kind)mc->kind;
    if (quick() && (mc->big || A.n > 3000)) {
        canopy_csc_free(&A);
        return;
    }
    void *b = rhs_ones(&A);
    void *xref = NULL;
    double ferr_ref = 0;
    static const int all_threads[] = {1, 2, 3, 4, 8}, quick_threads[] = {1, 2, 4};
    const int *threads = quick() ? quick_threads : all_threads;
    int nthr = quick() ? 3 : 5;
    for (int ti = 0; ti < nthr; ti++) {
        canopy_options o;
        canopy_options_default(&o);
        o.threads = threads[ti];
        o.ordering_threads = 2; /* the same ordering for every thread count: only the threading differs */
        snprintf(o.cost_cache, sizeof o.cost_cache, "fixed");
        canopy_solver *s = NULL;
        ck_assert_int_eq(canopy_create(MPI_COMM_WORLD, &o, &s), CANOPY_SUCCESS);
        ck_assert_msg(canopy_set_matrix(s, &A) == CANOPY_SUCCESS, "%s: %s", mc->file, canopy_last_error(s));
        ck_assert_msg(canopy_analyze(s) >= 0, "%s: %s", mc->file, canopy_last_error(s));
        for (int sched = 0; sched < 2; sched++)
            for (int numa = 0; numa < 2; numa++) {
                /* the scheduler and placement are read at each factorization */
                s->opts.scheduler = sched ? CANOPY_SCHED_DYNAMIC : CANOPY_SCHED_STATIC;
                s->opts.numa = numa ? CANOPY_NUMA_GLOBAL : CANOPY_NUMA_LOCAL;
                canopy_status st = canopy_factorize(s);
                ck_assert_msg(st >= 0, "%s T=%d: %s", mc->file, threads[ti], canopy_last_error(s));
                double berr;
                void *x = solve_refine(s, &A, b, &berr);
                ck_assert_msg(berr <= 1e-12, "%s T=%d %s numa %s: backward error %g", mc->file, threads[ti],
                              sched ? "dynamic" : "static", numa ? "global" : "local", berr);
                if (xref == NULL) {
                    xref = x;
                    ferr_ref = fwd_error(&A, x);
                    continue;
                }
                /* same solution up to rounding: within the reference's own distance to the truth */
                double d = rel_diff(&A, x, xref), tol = fmax(1e-8, 100 * ferr_ref);
                ck_assert_msg(d <= tol, "%s T=%d %s: solution differs by %g from one thread's (tol %g)", mc->file,
                              threads[ti], sched ? "dynamic" : "static", d, tol);
                free(x);
                if (sched == 0 && numa == 0 && s->F.L) {
                    /* bitwise reproducible static factors */
                    size_t bytes = s->F.coef_bytes;
                    void *L1 = malloc(bytes), *U1 = s->F.U ? malloc(bytes) : NULL;
                    memcpy(L1, s->F.L, bytes);
                    if (U1) memcpy(U1, s->F.U, bytes);
                    ck_assert_int_ge(canopy_factorize(s), 0);
                    ck_assert_msg(memcmp(L1, s->F.L, bytes) == 0, "%s T=%d: static factors differ between runs",
                                  mc->file, threads[ti]);
                    if (U1) ck_assert_msg(memcmp(U1, s->F.U, bytes) == 0, "%s T=%d: static U differs", mc->file,
                                          threads[ti]);
                    free(L1);
                    free(U1);
                }
            }
        canopy_destroy(&s);
    }
    printf("%s: n=%lld ok for every layout\n", mc->file, (long long)A.n);
    free(xref);
    free(b);
    canopy_csc_free(&A);
}

START_TEST(shared_matrices)
{
    if (testutil_matrix_dir() == NULL) {
        printf("skipping: shared matrices not found\n");
        return;
    }
    check_matrix(&cases[_i]);
}
END_TEST

/* Statistics, placement report and trace of one threaded run on a generated Laplacian. */
START_TEST(stats_and_trace)
{
    canopy_csc A;
    ck_assert_int_eq(canopy_generate_laplacian(16, 16, 16, 7, &A), CANOPY_SUCCESS);
    char trace[] = "/tmp/canopy-trace-XXXXXX";
    int fd = mkstemp(trace);
    ck_assert_int_ge(fd, 0);
    close(fd);
    for (int sched = 0; sched < 2; sched++) {
        canopy_options o;
        canopy_options_default(&o);
        o.threads = 3;
        o.scheduler = sched ? CANOPY_SCHED_DYNAMIC : CANOPY_SCHED_STATIC;
        snprintf(o.cost_cache, sizeof o.cost_cache, "fixed");
        snprintf(o.trace_file, sizeof o.trace_file, "%s", trace);
        canopy_solver *s = NULL;
        ck_assert_int_eq(canopy_create(MPI_COMM_WORLD, &o, &s), CANOPY_SUCCESS);
        ck_assert_int_eq(canopy_set_matrix(s, &A), CANOPY_SUCCESS);
        ck_assert_int_ge(canopy_analyze(s), 0);
        ck_assert_int_ge(canopy_factorize(s), 0);
        void *b = rhs_ones(&A);
        double berr;
        free(solve_refine(s, &A, b, &berr));
        free(b);
        canopy_stats S;
        canopy_get_stats(s, &S);
        ck_assert_int_eq(S.threads_per_rank, 3);
        ck_assert_int_eq(S.scheduler, o.scheduler);
        ck_assert(S.time_factorize_predicted > 0);
        ck_assert(S.busy_fraction > 0 && S.busy_fraction <= 1.0 + 1e-9);
        if (sched == 0) ck_assert_int_eq(S.steals, 0);
        ck_assert(S.numa_nodes >= 1);
        int64_t tasks = 0, bytes = 0, planned = 0, found = 0, steals = 0;
        for (int t = 0; t < 3; t++) {
            canopy_thread_stats ts;
            ck_assert_int_eq(canopy_get_thread_stats(s, t, &ts), CANOPY_SUCCESS);
            ck_assert(ts.busy >= 0);
            tasks += ts.tasks;
            bytes += ts.factor_bytes;
            steals += ts.steals;
        }
        canopy_thread_stats ts;
        ck_assert_int_eq(canopy_get_thread_stats(s, 3, &ts), CANOPY_ERR_ARGUMENT);
        ck_assert_int_eq(steals, S.steals);
        ck_assert_int_eq(tasks, s->rt.plan.factor.ntasks);
        for (int nd = 0; nd < S.numa_nodes; nd++) {
            canopy_node_stats ns;
            ck_assert_int_eq(canopy_get_node_stats(s, nd, &ns), CANOPY_SUCCESS);
            planned += ns.factor_bytes_planned;
            found += ns.factor_bytes_found;
        }
        /* every factor byte is owned by one thread and planned on one node */
        ck_assert_int_eq(bytes, (int64_t)s->F.coef_bytes);
        ck_assert_int_eq(planned, bytes);
        /* the kernel finds (up to page rounding at the array's end) every byte, or says it cannot */
        ck_assert(found + S.factor_bytes_unlocated >= bytes - 8192);
        ck_assert(found <= bytes + 8192);
        canopy_destroy(&s);
    }
    /* the trace holds a factorization and a solve */
    FILE *f = fopen(trace, "r");
    ck_assert_ptr_nonnull(f);
    char line[512];
    int phases = 0, tasks = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "phase ", 6) == 0) phases++;
        if (strncmp(line, "task ", 5) == 0) tasks++;
    }
    fclose(f);
    ck_assert_int_ge(phases, 2);
    ck_assert_int_gt(tasks, 0);
    unlink(trace);
    canopy_csc_free(&A);
}
END_TEST

/* A threaded run refuses a non-SPD matrix for LL^T cleanly, with every worker stopped. */
START_TEST(abort_not_spd)
{
    canopy_csc A;
    ck_assert_int_eq(canopy_generate_laplacian(12, 12, 12, 7, &A), CANOPY_SUCCESS);
    double *v = A.values;
    for (cint j = 0; j < A.n; j++)
        for (cint p = A.colptr[j]; p < A.colptr[j + 1]; p++)
            if (A.rowind[p] == j && j % 97 == 50) v[p] = -v[p]; /* a few negative diagonal entries */
    for (int sched = 0; sched < 2; sched++) {
        canopy_options o;
        canopy_options_default(&o);
        o.threads = 4;
        o.factorization = CANOPY_FACT_LLT;
        o.scheduler = sched ? CANOPY_SCHED_DYNAMIC : CANOPY_SCHED_STATIC;
        snprintf(o.cost_cache, sizeof o.cost_cache, "fixed");
        canopy_solver *s = NULL;
        ck_assert_int_eq(canopy_create(MPI_COMM_WORLD, &o, &s), CANOPY_SUCCESS);
        ck_assert_int_eq(canopy_set_matrix(s, &A), CANOPY_SUCCESS);
        ck_assert_int_ge(canopy_analyze(s), 0);
        ck_assert_int_eq(canopy_factorize(s), CANOPY_ERR_NOT_SPD);
        ck_assert(strstr(canopy_last_error(s), "positive definite") != NULL);
        /* and the solver stays usable: auto falls back to LDL^T */
        s->opts.factorization = CANOPY_FACT_AUTO;
        ck_assert_int_ge(canopy_factorize(s), 0);
        canopy_destroy(&s);
    }
    canopy_csc_free(&A);
}
END_TEST

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    Suite *s = suite_create("threads");
    TCase *tc = tcase_create("threads");
    tcase_set_timeout(tc, 3000);
    tcase_add_test(tc, stats_and_trace);
    tcase_add_test(tc, abort_not_spd);
    tcase_add_loop_test(tc, shared_matrices, 0, (int)(sizeof cases / sizeof cases[0]));
    suite_add_tcase(s, tc);
    int rc = testutil_run(s);
    MPI_Finalize();
    return rc;
}
