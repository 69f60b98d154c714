/*
 * The solve over several ranks on all the threads of each rank, run by tests/test_dist_solve.sh
 * under mpiexec -n 1..4: each matrix (LL^T, LDL^T and LU, real and complex) is factorized and
 * solved with 2, 3 and 8 threads per rank (oversubscribed), with 1 and 6 right-hand sides (the
 * loops and the BLAS-3 path of the solve's kernels), then solved again on the calling thread alone
 * (the workers hidden from the solve). The cblks whose subtree lies on one rank are solved by that
 * rank's workers in whatever order they become ready, and the products of the shared cblks are cut
 * into pieces the workers take in any order (with 3 and 8 threads even the small ones); each
 * writes only its own rows in a fixed order, so both solutions must have the same bits, and a
 * small residual. (One rank runs the
 * one-rank solve: residuals only.) The per-rank memory figures of the factorization are checked
 * against each other and against the OS's peak resident set.
 */
#include "base/config.h"

#include <complex.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include "canopy.h"
#include "solver/solver.h" /* s->F.exec.pool: the same factors solved without the workers */

static int rank, size, failures;
static long long split_cblks; /* shared cblks whose products the workers ran, summed over the ranks */

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

static void *xmalloc(size_t n)
{
    void *p = malloc(n > 0 ? n : 1);
    if (p == NULL) {
        fprintf(stderr, "rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

#define NRHS_MAX 6

/* r = b - A x for the first column (A as stored: a symmetric kind holds one triangle); returns
 * ||r||_inf / (||A||_inf-ish ||x||_inf + ||b||_inf), with the largest entry standing for ||A||. */
static double residual(const canopy_csc *A, const double *x, const double *b)
{
    canopy_int n = A->n;
    int cx = A->arith == CANOPY_COMPLEX, sym = A->kind != CANOPY_KIND_GENERAL && A->triangle != CANOPY_TRIANGLE_BOTH;
    int herm = A->kind == CANOPY_KIND_HERMITIAN;
    double complex *r = xmalloc((size_t)n * sizeof *r);
    double amax = 0, xmax = 0, bmax = 0, rmax = 0;
    for (canopy_int i = 0; i < n; i++) r[i] = cx ? b[2 * i] + I * b[2 * i + 1] : b[i];
    for (canopy_int j = 0; j < n; j++) {
        double complex xj = cx ? x[2 * j] + I * x[2 * j + 1] : x[j];
        for (canopy_int p = A->colptr[j] - A->base; p < A->colptr[j + 1] - A->base; p++) {
            canopy_int i = A->rowind[p] - A->base;
            const double *v = (const double *)A->values;
            double complex a = cx ? v[2 * p] + I * v[2 * p + 1] : v[p];
            if (cabs(a) > amax) amax = cabs(a);
            r[i] -= a * xj;
            if (sym && i != j) {
                double complex xi = cx ? x[2 * i] + I * x[2 * i + 1] : x[i];
                r[j] -= (herm ? conj(a) : a) * xi;
            }
        }
    }
    for (canopy_int i = 0; i < n; i++) {
        double xa = cx ? cabs(x[2 * i] + I * x[2 * i + 1]) : fabs(x[i]);
        double ba = cx ? cabs(b[2 * i] + I * b[2 * i + 1]) : fabs(b[i]);
        if (xa > xmax) xmax = xa;
        if (ba > bmax) bmax = ba;
        if (cabs(r[i]) > rmax) rmax = cabs(r[i]);
    }
    free(r);
    return rmax / (amax * xmax * 10 + bmax);
}

/* Factorize with T threads per rank; rank 0 gets the solution (n x nrhs) with the workers in x
 * and without them in x1. */
static bool solve_with(const char *name, const canopy_csc *A, const char *fact, int T, int nrhs, const double *b,
                       double *x, double *x1)
{
    canopy_options o;
    canopy_options_default(&o);
    char tv[16];
    snprintf(tv, sizeof tv, "%d", T);
    const char *set[][2] = {{"threads", tv}, {"bind", "none"}, {"cost-cache", "fixed"}, {"ordering-threads", "2"},
                            {"factorization", fact}, {"verbose", "0"}};
    for (size_t q = 0; q < sizeof set / sizeof set[0]; q++)
        if (canopy_options_set(&o, set[q][0], set[q][1], NULL, 0) != CANOPY_SUCCESS) {
            fail("option %s=%s refused", set[q][0], set[q][1]);
            return false;
        }
    canopy_solver *s = NULL;
    canopy_status st = canopy_create(MPI_COMM_WORLD, &o, &s);
    if (st != CANOPY_SUCCESS) {
        fail("%s: canopy_create: %s", name, canopy_last_error(NULL));
        return false;
    }
    int vsz = A->arith == CANOPY_COMPLEX ? 2 : 1;
    size_t len = (size_t)A->n * (size_t)nrhs * (size_t)vsz;
    if (rank == 0) memcpy(x, b, len * sizeof(double));
    if (rank == 0) memcpy(x1, b, len * sizeof(double));
    if ((st = canopy_set_matrix(s, rank == 0 ? A : NULL)) == CANOPY_SUCCESS && (st = canopy_analyze(s)) == CANOPY_SUCCESS &&
        (st = canopy_factorize(s)) >= CANOPY_SUCCESS) {
        /* beyond 2 threads, every shared cblk of more than one piece is split, however small */
        if (T > 2) s->F.sol_split_min = 1;
        st = canopy_solve(s, nrhs, rank == 0 ? x : NULL, A->n);
    }
    if (st >= CANOPY_SUCCESS) {
        /* memory per rank: Canopy's count and the OS's peak resident set agree in kind (the
         * process holds at least what Canopy counts: these matrices are small next to the
         * libraries' own footprint), and rank 0 and the mean lie within [min, max] */
        canopy_stats S;
        canopy_get_stats(s, &S);
        if (!(S.rss_peak_rank_min > 0 && S.rss_peak_rank_min <= S.rss_peak_rank0 && S.rss_peak_rank0 <= S.rss_peak_rank_max &&
              S.rss_peak_rank_min <= S.rss_peak_rank_mean && S.rss_peak_rank_mean <= S.rss_peak_rank_max))
            fail("%s T=%d: resident set figures out of order: rank 0 %g, mean %g, min %g, max %g", name, T, S.rss_peak_rank0,
                 S.rss_peak_rank_mean, S.rss_peak_rank_min, S.rss_peak_rank_max);
        if (!(S.peak_memory_rank0 > 0 && S.peak_memory_rank0 <= S.rss_peak_rank0 &&
              S.peak_memory_rank_mean <= S.rss_peak_rank_mean && (size > 1 || S.peak_memory_rank_mean == S.peak_memory_rank0)))
            fail("%s T=%d: Canopy's count (rank 0 %g, mean %g) against the OS's (rank 0 %g, mean %g)", name, T,
                 S.peak_memory_rank0, S.peak_memory_rank_mean, S.rss_peak_rank0, S.rss_peak_rank_mean);
        if (s->F.exec.pool == NULL) fail("%s T=%d: no worker pool", name, T);
        long long mine = (long long)s->F.sol_split;
        MPI_Allreduce(&mine, &split_cblks, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
        sched_pool *pool = s->F.exec.pool;
        s->F.exec.pool = NULL;
        st = canopy_solve(s, nrhs, rank == 0 ? x1 : NULL, A->n);
        s->F.exec.pool = pool;
    }
    if (st < CANOPY_SUCCESS) fail("%s %s T=%d nrhs=%d: %s", name, fact, T, nrhs, canopy_last_error(s));
    canopy_destroy(&s);
    return st >= CANOPY_SUCCESS;
}

static void check_matrix(const char *name, const canopy_csc *A, const char *fact)
{
    static const int threads[] = {2, 3, 8};
    int vsz = A->arith == CANOPY_COMPLEX ? 2 : 1;
    size_t len = (size_t)A->n * NRHS_MAX * (size_t)vsz;
    double *b = xmalloc(len * sizeof(double)), *x1 = xmalloc(len * sizeof(double)), *x = xmalloc(len * sizeof(double));
    for (size_t i = 0; i < len; i++) b[i] = 1.0 + (double)((i * 7919) % 101) / 37.0;
    for (int nrhs = 1; nrhs <= NRHS_MAX; nrhs += NRHS_MAX - 1) {
        size_t used = (size_t)A->n * (size_t)nrhs * (size_t)vsz;
        double worst = 0;
        int same = 1;
        long long split = 0;
        for (size_t q = 0; q < sizeof threads / sizeof threads[0]; q++) {
            if (!solve_with(name, A, fact, threads[q], nrhs, b, x, x1)) break;
            split += split_cblks;
            if (rank != 0) continue;
            /* one rank runs the one-rank solve, whose subtree tasks sum into contribution blocks:
             * other bits than the sequential fan-out, same as any other thread count */
            if (size > 1 && memcmp(x1, x, used * sizeof(double)) != 0) {
                fail("%s %s on %d ranks x %d threads, nrhs=%d: the workers give other bits than the calling thread", name,
                     fact, size, threads[q], nrhs);
                same = 0;
            }
            double res = residual(A, x, b);
            if (!(res <= 1e-10)) fail("%s %s T=%d nrhs=%d: residual %.3g", name, fact, threads[q], nrhs, res);
            if (res > worst) worst = res;
        }
        /* the Laplacian's top separators are wider than one piece */
        if (rank == 0 && size > 1 && strncmp(name, "laplacian", 9) == 0 && split == 0)
            fail("%s nrhs=%d: no shared cblk's product ran on the workers", name, nrhs);
        if (rank == 0)
            printf("%-22s %-5s %d ranks nrhs %d: threads 2,3,8 vs the calling thread: %s bits, residual <= %.2g, "
                   "%lld shared cblks split over the workers\n",
                   name, fact, size, nrhs, size == 1 ? "(one rank: not compared)" : same ? "same" : "DIFFERENT", worst, split);
    }
    free(b);
    free(x1);
    free(x);
}

static const char *matrix_dir(void)
{
    static char buf[4096];
    const char *env = getenv("CANOPY_TEST_MATRICES");
    if (env && *env) return env;
    const char *top = getenv("top_srcdir");
    snprintf(buf, sizeof buf, "%s/../shared/matrices/MANIFEST.md", top ? top : ".");
    FILE *f = fopen(buf, "r");
    if (f == NULL) return NULL;
    fclose(f);
    snprintf(buf, sizeof buf, "%s/../shared/matrices", top ? top : ".");
    return buf;
}

static void check_file(const char *file, const char *fact)
{
    const char *dir = matrix_dir();
    if (dir == NULL) {
        if (rank == 0) printf("%s: shared matrices not found, skipped\n", file);
        return;
    }
    char path[4200], msg[512];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    canopy_csc A = {0};
    if (canopy_read_matrix(path, &A, msg, sizeof msg) != CANOPY_SUCCESS) {
        fail("%s", msg);
        return;
    }
    check_matrix(file, &A, fact);
    canopy_csc_free(&A);
}


/*
 * canopy_solve_distributed sends the rows straight to their owners (src/solve/solve_direct.c): with one
 * allocation made to fail on one rank at each step, every rank returns the same status, and once
 * nothing fails the solution is right (each rank holds an interleaved set of rows, so that rows
 * travel both ways between every pair of ranks).
 */
static void check_direct_faults(void)
{
    canopy_csc A = {0};
    if (canopy_generate_laplacian(9, 8, 7, 7, &A) != CANOPY_SUCCESS) {
        fail("canopy_generate_laplacian failed");
        return;
    }
    canopy_int n = A.n, nloc = 0;
    canopy_int *rows = xmalloc((size_t)n * sizeof *rows);
    /* row sums of A (b = A 1), from the stored triangle */
    double *rs = xmalloc((size_t)n * sizeof *rs);
    int sym = A.kind != CANOPY_KIND_GENERAL && A.triangle != CANOPY_TRIANGLE_BOTH;
    for (canopy_int i = 0; i < n; i++) rs[i] = 0;
    for (canopy_int j = 0; j < n; j++)
        for (canopy_int p = A.colptr[j] - A.base; p < A.colptr[j + 1] - A.base; p++) {
            canopy_int i = A.rowind[p] - A.base;
            double v = ((const double *)A.values)[p];
            rs[i] += v;
            if (sym && i != j) rs[j] += v;
        }
    for (canopy_int i = rank; i < n; i += size) rows[nloc++] = i;
    double *b = xmalloc((size_t)nloc * 2 * sizeof(double) + 1);
    canopy_options o;
    canopy_options_default(&o);
    canopy_options_set(&o, "threads", "2", NULL, 0);
    canopy_options_set(&o, "bind", "none", NULL, 0);
    canopy_options_set(&o, "cost-cache", "fixed", NULL, 0);
    canopy_options_set(&o, "verbose", "0", NULL, 0);
    canopy_solver *s = NULL;
    canopy_status st = canopy_create(MPI_COMM_WORLD, &o, &s);
    if (st == CANOPY_SUCCESS) st = canopy_set_matrix(s, rank == 0 ? &A : NULL);
    if (st == CANOPY_SUCCESS) st = canopy_analyze(s);
    if (st == CANOPY_SUCCESS) st = canopy_factorize(s);
    if (st != CANOPY_SUCCESS) {
        fail("direct solve: setup: %s", canopy_last_error(s));
        goto out;
    }
    int tried = 0;
    for (int victim = 0; victim < size; victim += size > 1 ? size - 1 : 1) {
        for (long k = 0; k < 200; k++) {
            /* b = A x for x = 1 (first column) and x = 2 (second) */
            for (canopy_int q = 0; q < nloc; q++)
                for (int c = 0; c < 2; c++) b[q + (size_t)c * nloc] = rs[rows[q]] * (c + 1);
            if (rank == victim) canopy_alloc_fail_after(k);
            st = canopy_solve_distributed(s, 2, nloc, rows, b, nloc > 0 ? nloc : 1);
            canopy_alloc_fail_after(-1);
            int lo = st, hi = st;
            MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
            MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            tried++;
            if (lo != hi) fail("direct solve: allocation %ld failing on rank %d: statuses %d and %d", k, victim, lo, hi);
            if (lo < 0) continue;
            double worst = 0;
            for (canopy_int q = 0; q < nloc; q++)
                for (int c = 0; c < 2; c++) worst = fmax(worst, fabs(b[q + (size_t)c * nloc] - (c + 1)));
            if (!(worst <= 1e-10)) fail("direct solve: solution off by %.3g (victim %d, k %ld)", worst, victim, k);
            break;
        }
    }
    if (rank == 0) printf("canopy_solve_distributed under fault injection: %d solves, errors agreed\n", tried);
out:
    canopy_destroy(&s);
    canopy_csc_free(&A);
    free(rows);
    free(rs);
    free(b);
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    canopy_csc A = {0};
    if (canopy_generate_laplacian(14, 13, 12, 7, &A) == CANOPY_SUCCESS) {
        check_matrix("laplacian 14x13x12", &A, "llt");
        canopy_csc_free(&A);
    } else {
        fail("canopy_generate_laplacian failed");
    }
    /* (1 + i/2) times a Laplacian: complex symmetric, shared cblks wider than one piece */
    if (canopy_generate_laplacian(10, 9, 8, 7, &A) == CANOPY_SUCCESS) {
        canopy_int nnz = A.colptr[A.n] - A.base;
        double *z = xmalloc((size_t)nnz * 2 * sizeof(double));
        for (canopy_int p = 0; p < nnz; p++) {
            z[2 * p] = ((const double *)A.values)[p];
            z[2 * p + 1] = 0.5 * z[2 * p];
        }
        canopy_csc Z = A;
        Z.values = z;
        Z.arith = CANOPY_COMPLEX;
        Z.kind = CANOPY_KIND_SYMMETRIC;
        check_matrix("laplacian 10x9x8 (1+i/2)", &Z, "ldlt");
        free(z);
        canopy_csc_free(&A);
    } else {
        fail("canopy_generate_laplacian failed");
    }
    check_file("bcsstk14.rsa", "ldlt");
    check_file("orsirr_1.rua", "lu");
    check_file("young1c.mtx", "auto");
    check_direct_faults();
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("test_dist_solve on %d ranks: %s\n", size, all ? "FAILED" : "passed");
    MPI_Finalize();
    return all ? 1 : 0;
}
