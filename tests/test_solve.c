/*
 * The threaded solve, through the public API: every factorization kind in real and complex
 * arithmetic, 1, 3 and 8 worker threads (oversubscribed here, fine for correctness) x static and
 * dynamic scheduler, 1 to 70 right-hand sides (the solve's own loops below 4, BLAS-3 above,
 * two passes over the workspace past 64) with ldb > n.
 *   - every column of a many-RHS solve equals the solve of that column alone with the same
 *     factors, to rounding (different kernels: loops for one column, BLAS-3 for many): within
 *     10x the one-column solve's own distance to the known solution, or 1e-10;
 *   - before refinement, each layout's solve is as close to the known solutions as the first's;
 *   - refinement reaches a backward error <= 1e-12 for all columns at once;
 *   - the refined solutions agree with the known ones as well as one thread's do;
 *   - the rows of B beyond n are left alone.
 * Generated Laplacians (LL^T, LU on the same pattern, complex symmetric LDL^T, Hermitian LL^T)
 * are big enough for subtree tasks, contribution blocks and BLAS-sized panels; the shared
 * matrices add pivoting (LDL^T 2x2, LU interchanges, perturbed pivots). CANOPY_TEST_QUICK=1: fewer
 * layouts.
 */
#include "testutil.h"
#include "solver/solver.h"

#include <complex.h>
#include <mpi.h>
#include <unistd.h>

static int quick(void)
{
    const char *q = getenv("CANOPY_TEST_QUICK");
    return q && *q && strcmp(q, "0") != 0;
}

/* the generated problems: a real Laplacian turned into each kind and arithmetic */
enum gen { GEN_FILE, GEN_LLT, GEN_LU, GEN_CSYM, GEN_HERM };

typedef struct scase {
    const char *name; /* file under the shared matrices, or a label */
    enum gen gen;
    int kind; /* canopy_matrix_kind to force, -1: as the file says */
} scase;

static const scase cases[] = {
    {"laplacian 14x14x14, LL^T", GEN_LLT, -1},
    {"laplacian 14x14x14 as general, LU", GEN_LU, -1},
    {"laplacian 14x14x14 x (1+0.3i), complex symmetric LDL^T", GEN_CSYM, -1},
    {"laplacian 14x14x14, Hermitian LL^T", GEN_HERM, -1},
    {"bcsstk14.rsa", GEN_FILE, CANOPY_KIND_SPD},
    {"ACTIVSg200_AC_kkt.mtx", GEN_FILE, -1},
    {"orsirr_1.rua", GEN_FILE, -1},
    {"mhd1280b.cua", GEN_FILE, CANOPY_KIND_HERMITIAN},
    {"qc324.cua.gz", GEN_FILE, CANOPY_KIND_SYMMETRIC},
    {"young1c.mtx", GEN_FILE, -1},
};

/* Build case c into A; returns 0 when its file is absent. */
static int load(const scase *c, canopy_csc *A)
{
    if (c->gen == GEN_FILE) {
        const char *dir = testutil_matrix_dir();
        char path[4400], msg[512];
        if (dir == NULL) return 0;
        snprintf(path, sizeof path, "%s/%s", dir, c->name);
        if (access(path, R_OK) != 0) return 0;
        ck_assert_msg(canopy_read_matrix(path, A, msg, sizeof msg) == CANOPY_SUCCESS, "%s", msg);
        if (c->kind >= 0) A->kind = (canopy_matrix_kind)c->kind;
        return 1;
    }
    ck_assert_int_eq(canopy_generate_laplacian(14, 14, 14, 7, A), CANOPY_SUCCESS);
    if (c->gen == GEN_LLT) return 1;
    if (c->gen == GEN_LU) {
        /* a nonsymmetric perturbation of the same pattern: convection-like, still nonsingular */
        double *v = A->values;
        for (cint j = 0; j < A->n; j++)
            for (cint p = A->colptr[j]; p < A->colptr[j + 1]; p++)
                if (A->rowind[p] > j) v[p] *= 1.25;
        A->kind = CANOPY_KIND_GENERAL;
        return 1;
    }
    size_t nnz = (size_t)A->colptr[A->n];
    double complex *z = canopy_alloc(nnz + 1, sizeof *z, "test values", NULL);
    const double *v = A->values;
    for (cint j = 0; j < A->n; j++)
        for (cint p = A->colptr[j]; p < A->colptr[j + 1]; p++) {
            cint i = A->rowind[p];
            if (c->gen == GEN_CSYM) z[p] = v[p] * (1.0 + 0.3 * I);
            else if (i == j) z[p] = v[p] + 0.5; /* Hermitian: off-diagonal modulus grows */
            else z[p] = v[p] + (i > j ? -0.2 * I : 0.2 * I);
        }
    canopy_free(A->values); /* the library's allocator: canopy_csc_free releases z */
    A->values = z;
    A->arith = CANOPY_COMPLEX;
    A->kind = c->gen == GEN_CSYM ? CANOPY_KIND_SYMMETRIC : CANOPY_KIND_HERMITIAN;
    return 1;
}

static size_t scalar_bytes(const canopy_csc *A)
{
    return A->arith == CANOPY_COMPLEX ? 2 * sizeof(double) : sizeof(double);
}

/* B = A X for the known X (nrhs columns, leading dimension ld), through the library's own copy */
static void make_rhs(const canopy_csc *A, cint nrhs, const void *X, void *B, cint ld)
{
    canopy_csc F = {0};
    canopy_err err = {0};
    ck_assert_int_eq(matrix_import(A, &F, &err), CANOPY_SUCCESS);
    matrix_spmv(&F, nrhs, 1.0, X, ld, 0.0, B, ld);
    matrix_free(&F);
}

/* largest |x - y| over max |y|, column by column (ld rows apart), complex by modulus */
static double col_diff(const canopy_csc *A, cint nrhs, const void *xv, const void *yv, cint ldx, cint ldy)
{
    double worst = 0;
    for (cint r = 0; r < nrhs; r++) {
        double d = 0, m = 0;
        for (cint i = 0; i < A->n; i++) {
            if (A->arith == CANOPY_COMPLEX) {
                double complex a = ((const double complex *)xv)[i + (size_t)r * ldx];
                double complex b = ((const double complex *)yv)[i + (size_t)r * ldy];
                d = fmax(d, cabs(a - b));
                m = fmax(m, cabs(b));
            } else {
                double a = ((const double *)xv)[i + (size_t)r * ldx], b = ((const double *)yv)[i + (size_t)r * ldy];
                d = fmax(d, fabs(a - b));
                m = fmax(m, fabs(b));
            }
        }
        worst = fmax(worst, m > 0 ? d / m : d);
    }
    return worst;
}

#define MAXRHS 70

static void check_case(const scase *c)
{
    canopy_csc A;
    if (!load(c, &A)) {
        printf("skip %s: not present\n", c->name);
        return;
    }
    cint n = A.n, ld = n + 2;
    size_t sb = scalar_bytes(&A), cols = (size_t)ld * MAXRHS;
    char *X = malloc(cols * sb), *B = calloc(cols, sb), *S = malloc(cols * sb), *S1 = malloc(cols * sb);
    char *ref = malloc(cols * sb);
    uint64_t seed = 11;
    double *xd = (double *)X;
    for (size_t i = 0; i < cols * (sb / sizeof(double)); i++) xd[i] = 2 * testutil_uniform(&seed) - 1;
    make_rhs(&A, MAXRHS, X, B, ld);
    /* sentinels in the rows beyond n */
    for (cint r = 0; r < MAXRHS; r++) memset(B + ((size_t)r * ld + n) * sb, 0x5a, 2 * sb);
    static const int all_threads[] = {1, 3, 8}, quick_threads[] = {1, 3};
    static const cint all_nrhs[] = {1, 2, 5, 33, 70}, quick_nrhs[] = {1, 5, 70};
    const int *threads = quick() ? quick_threads : all_threads;
    const cint *nrhs_list = quick() ? quick_nrhs : all_nrhs;
    int nthr = quick() ? 2 : 3, nnr = quick() ? 3 : 5;
    double ferr_ref = -1, ferr1 = -1;
    for (int ti = 0; ti < nthr; ti++) {
        canopy_options o;
        canopy_options_default(&o);
        o.threads = threads[ti];
        snprintf(o.cost_cache, sizeof o.cost_cache, "fixed");
        canopy_solver *s = NULL;
        ck_assert_int_eq(canopy_create(MPI_COMM_WORLD, &o, &s), CANOPY_SUCCESS);
        ck_assert_msg(canopy_set_matrix(s, &A) == CANOPY_SUCCESS, "%s: %s", c->name, canopy_last_error(s));
        ck_assert_msg(canopy_analyze(s) >= 0, "%s: %s", c->name, canopy_last_error(s));
        for (int sched = 0; sched < 2; sched++) {
            s->opts.scheduler = sched ? CANOPY_SCHED_DYNAMIC : CANOPY_SCHED_STATIC;
            ck_assert_msg(canopy_factorize(s) >= 0, "%s T=%d: %s", c->name, threads[ti], canopy_last_error(s));
            /* every column alone: the reference of this factorization */
            memcpy(S1, B, cols * sb);
            for (cint r = 0; r < MAXRHS; r++)
                ck_assert_msg(canopy_solve(s, 1, S1 + (size_t)r * ld * sb, ld) >= 0, "%s: %s", c->name,
                              canopy_last_error(s));
            /* before refinement, as close to the known solutions as the first layout's solve */
            double f1 = col_diff(&A, MAXRHS, S1, X, ld, ld);
            if (ferr1 < 0) ferr1 = f1;
            ck_assert_msg(f1 <= fmax(1e-9, 100 * ferr1), "%s T=%d %s: unrefined solve error %g, first layout's %g",
                          c->name, threads[ti], sched ? "dynamic" : "static", f1, ferr1);
            for (int q = 0; q < nnr; q++) {
                cint k = nrhs_list[q];
                memcpy(S, B, cols * sb);
                ck_assert_msg(canopy_solve(s, k, S, ld) >= 0, "%s T=%d nrhs=%d: %s", c->name, threads[ti], (int)k,
                              canopy_last_error(s));
                /* two backward-stable solves with the same factors differ by their errors at most */
                double d = col_diff(&A, k, S, S1, ld, ld), tol = fmax(1e-10, 10 * col_diff(&A, k, S1, X, ld, ld));
                ck_assert_msg(d <= tol, "%s T=%d %s nrhs=%d: columns differ from one-column solves by %g (tol %g)",
                              c->name, threads[ti], sched ? "dynamic" : "static", (int)k, d, tol);
                for (cint r = 0; r < k; r++) {
                    const unsigned char *t = (const unsigned char *)S + ((size_t)r * ld + n) * sb;
                    for (size_t i = 0; i < 2 * sb; i++) ck_assert_msg(t[i] == 0x5a, "%s: solve wrote b beyond n", c->name);
                }
                canopy_status st = canopy_refine(s, k, B, ld, S, ld);
                ck_assert_msg(st >= 0, "%s: refine: %s", c->name, canopy_last_error(s));
                canopy_stats stats;
                canopy_get_stats(s, &stats);
                ck_assert_msg(stats.backward_error <= 1e-12, "%s T=%d %s nrhs=%d: backward error %g", c->name,
                              threads[ti], sched ? "dynamic" : "static", (int)k, stats.backward_error);
                if (k != MAXRHS) continue;
                /* as close to the known solutions as one thread's */
                double f = col_diff(&A, k, S, X, ld, ld);
                if (ferr_ref < 0) {
                    ferr_ref = f;
                    memcpy(ref, S, cols * sb);
                } else {
                    double e = col_diff(&A, k, S, ref, ld, ld), etol = fmax(1e-8, 100 * ferr_ref);
                    ck_assert_msg(e <= etol, "%s T=%d %s: solutions differ from one thread's by %g (tol %g)", c->name,
                                  threads[ti], sched ? "dynamic" : "static", e, etol);
                }
            }
        }
        canopy_destroy(&s);
    }
    printf("%s: n=%lld ok, forward error %.1e\n", c->name, (long long)n, ferr_ref);
    free(X);
    free(B);
    free(S);
    free(S1);
    free(ref);
    canopy_csc_free(&A);
}

START_TEST(solve_cases)
{
    check_case(&cases[_i]);
}
END_TEST

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    Suite *s = suite_create("solve");
    TCase *tc = tcase_create("solve");
    tcase_set_timeout(tc, 1200);
    tcase_add_loop_test(tc, solve_cases, 0, (int)(sizeof cases / sizeof cases[0]));
    suite_add_tcase(s, tc);
    int rc = testutil_run(s);
    MPI_Finalize();
    return rc;
}
