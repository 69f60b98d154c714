/*
 * ordering=ptscotch on 1 to 4 ranks (tests/test_order_mpi.sh): PT-SCOTCH dissects the graph on
 * every rank and rank 0 goes on with its ordering. For each matrix: the solution refines to a
 * backward error of 1e-12; the ordering is a permutation (the analysis checks it, and the
 * structure below depends on it); the block structure equals what the sequential analysis builds
 * when handed the same ordering (ordering=user on one rank: same cblks, same column boundaries,
 * same nnz(L) and flops); nnz(L) and flops are printed against the sequential SCOTCH ordering
 * and must stay within 2x of it, and on one rank be the same. Then fault injection: an
 * allocation made to fail on one rank at each step of the parallel analysis gives the same error
 * on every rank, and nobody hangs (the script's timeout). Skipped (77) in a build without PT-SCOTCH, after checking that the option is
 * refused with a message that says why.
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
#include "solver/solver.h" /* s->S: the block structure each analysis built */

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

static void *xmalloc(size_t n)
{
    void *p = malloc(n > 0 ? n : 1);
    if (p == NULL) {
        fprintf(stderr, "rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

static canopy_solver *make_solver(MPI_Comm comm, const char *ordering, const char *fact, const char *amalgamation)
{
    canopy_options o;
    canopy_options_default(&o);
    const char *set[][2] = {{"threads", "2"},     {"bind", "none"},    {"cost-cache", "fixed"}, {"ordering-threads", "1"},
                            {"factorization", fact}, {"verbose", "0"}, {"split", "0"}, {"amalgamation", amalgamation}, {"ordering", ordering},
                            {"refine-tolerance", "1e-15"}};
    for (size_t q = 0; q < sizeof set / sizeof set[0]; q++)
        if (canopy_options_set(&o, set[q][0], set[q][1], NULL, 0) != CANOPY_SUCCESS) {
            fail("option %s=%s refused", set[q][0], set[q][1]);
            return NULL;
        }
    canopy_solver *s = NULL;
    if (canopy_create(comm, &o, &s) != CANOPY_SUCCESS) fail("canopy_create: %s", canopy_last_error(NULL));
    return s;
}

/* max_i |b - A x|_i / max_i (|A| |x| + |b|)_i for the first column (A as stored: a symmetric kind
 * holds one triangle) */
static double backward_error(const canopy_csc *A, const double *x, const double *b)
{
    canopy_int n = A->n;
    int cx = A->arith == CANOPY_COMPLEX, sym = A->kind != CANOPY_KIND_GENERAL && A->triangle != CANOPY_TRIANGLE_BOTH;
    int herm = A->kind == CANOPY_KIND_HERMITIAN;
    double complex *r = xmalloc((size_t)n * sizeof *r);
    double *den = xmalloc((size_t)n * sizeof *den);
    for (canopy_int i = 0; i < n; i++) {
        r[i] = cx ? b[2 * i] + I * b[2 * i + 1] : b[i];
        den[i] = cabs(r[i]);
    }
    for (canopy_int j = 0; j < n; j++) {
        double complex xj = cx ? x[2 * j] + I * x[2 * j + 1] : x[j];
        for (canopy_int p = A->colptr[j] - A->base; p < A->colptr[j + 1] - A->base; p++) {
            canopy_int i = A->rowind[p] - A->base;
            const double *v = (const double *)A->values;
            double complex a = cx ? v[2 * p] + I * v[2 * p + 1] : v[p];
            r[i] -= a * xj;
            den[i] += cabs(a) * cabs(xj);
            if (sym && i != j) {
                double complex xi = cx ? x[2 * i] + I * x[2 * i + 1] : x[i];
                r[j] -= (herm ? conj(a) : a) * xi;
                den[j] += cabs(a) * cabs(xi);
            }
        }
    }
    double num = 0, dmax = 0;
    for (canopy_int i = 0; i < n; i++) {
        if (cabs(r[i]) > num) num = cabs(r[i]);
        if (den[i] > dmax) dmax = den[i];
    }
    free(r);
    free(den);
    return dmax > 0 ? num / dmax : num;
}

/* The sequential analysis of A on rank 0 alone: with SCOTCH (user == NULL) or the given ordering. */
static bool sequential(const canopy_csc *A, const char *fact, const canopy_int *user, const char *amalgamation, symbolic *out,
                       canopy_stats *st)
{
    canopy_solver *s = make_solver(MPI_COMM_SELF, user ? "user" : "scotch", fact, amalgamation);
    if (s == NULL) return false;
    canopy_status rc = canopy_set_matrix(s, A);
    if (rc == CANOPY_SUCCESS && user) rc = canopy_set_permutation(s, user);
    if (rc == CANOPY_SUCCESS) rc = canopy_analyze(s);
    if (rc == CANOPY_SUCCESS) {
        canopy_get_stats(s, st);
        out->ncblk = s->S.ncblk;
        out->nnz_l = s->S.nnz_l;
        out->flops_llt = s->S.flops_llt;
        out->cblk_fcol = xmalloc(((size_t)s->S.ncblk + 1) * sizeof(canopy_int));
        memcpy(out->cblk_fcol, s->S.cblk_fcol, ((size_t)s->S.ncblk + 1) * sizeof(canopy_int));
        out->perm = xmalloc((size_t)A->n * sizeof(canopy_int));
        memcpy(out->perm, s->S.perm, (size_t)A->n * sizeof(canopy_int));
    } else {
        fail("sequential analysis (%s): %s", user ? "user ordering" : "scotch", canopy_last_error(s));
    }
    canopy_destroy(&s);
    return rc == CANOPY_SUCCESS;
}

static void check_matrix(const char *name, const canopy_csc *A, const char *fact)
{
    int vsz = A->arith == CANOPY_COMPLEX ? 2 : 1;
    size_t len = (size_t)A->n * (size_t)vsz;
    double *b = xmalloc(len * sizeof(double)), *x = xmalloc(len * sizeof(double));
    for (size_t i = 0; i < len; i++) b[i] = x[i] = 1.0 + (double)((i * 7919) % 101) / 37.0;
    canopy_solver *s = make_solver(MPI_COMM_WORLD, "ptscotch", fact, "1");
    if (s == NULL) goto out;
    canopy_status st;
    if ((st = canopy_set_matrix(s, rank == 0 ? A : NULL)) == CANOPY_SUCCESS && (st = canopy_analyze(s)) == CANOPY_SUCCESS &&
        (st = canopy_factorize(s)) >= CANOPY_SUCCESS && (st = canopy_solve(s, 1, rank == 0 ? x : NULL, A->n)) >= CANOPY_SUCCESS)
        st = canopy_refine(s, 1, rank == 0 ? b : NULL, A->n, rank == 0 ? x : NULL, A->n);
    if (st < CANOPY_SUCCESS) {
        fail("%s on %d ranks with ordering=ptscotch: %s", name, size, canopy_last_error(s));
        canopy_destroy(&s);
        goto out;
    }
    if (rank == 0) {
        canopy_stats pt;
        canopy_get_stats(s, &pt);
        double berr = backward_error(A, x, b);
        if (!(berr <= 1e-12)) fail("%s on %d ranks: backward error %.3g after refinement", name, size, berr);
        symbolic seq = {0};
        canopy_stats st_seq;
        if (sequential(A, fact, NULL, "1", &seq, &st_seq)) {
            double rn = (double)pt.nnz_factor / (double)st_seq.nnz_factor, rf = pt.flops / st_seq.flops;
            printf("%-20s %-4s %d ranks: PT-SCOTCH nnz(L) %lld flops %.3g, SCOTCH %lld %.3g (ratios %.2f, %.2f), "
                   "backward error %.1e\n",
                   name, fact, size, (long long)pt.nnz_factor, pt.flops, (long long)st_seq.nnz_factor, st_seq.flops, rn, rf,
                   berr);
            /* on one rank PT-SCOTCH runs our sequential strategy in the same deterministic
             * context: the very same ordering */
            if (size == 1 && (pt.nnz_factor != st_seq.nnz_factor || pt.flops != st_seq.flops))
                fail("%s on one rank: PT-SCOTCH's ordering differs from SCOTCH's (nnz(L) %lld vs %lld)", name,
                     (long long)pt.nnz_factor, (long long)st_seq.nnz_factor);
            if (!(rn <= 2.0 && rf <= 2.0))
                fail("%s on %d ranks: PT-SCOTCH's factor is far worse than SCOTCH's (nnz(L) x%.2f, flops x%.2f)", name, size,
                     rn, rf);
        }
        free(seq.cblk_fcol);
        free(seq.perm);
    }
    canopy_destroy(&s);
    /* The same ordering handed to the sequential analysis builds the same structure. Without
     * amalgamation: the structure's perm is the ordering composed with the postorder, which
     * postorders to itself, while amalgamation reorders the columns of what it merges. */
    if ((s = make_solver(MPI_COMM_WORLD, "ptscotch", fact, "0")) == NULL) goto out;
    if (canopy_set_matrix(s, rank == 0 ? A : NULL) != CANOPY_SUCCESS || canopy_analyze(s) != CANOPY_SUCCESS)
        fail("%s on %d ranks, no amalgamation: %s", name, size, canopy_last_error(s));
    else if (rank == 0) {
        symbolic same = {0};
        canopy_stats st_same;
        if (sequential(A, fact, s->S.perm, "0", &same, &st_same)) {
            bool eq = same.ncblk == s->S.ncblk && same.nnz_l == s->S.nnz_l && same.flops_llt == s->S.flops_llt &&
                      memcmp(same.cblk_fcol, s->S.cblk_fcol, ((size_t)same.ncblk + 1) * sizeof(canopy_int)) == 0 &&
                      memcmp(same.perm, s->S.perm, (size_t)A->n * sizeof(canopy_int)) == 0;
            if (!eq)
                fail("%s on %d ranks: PT-SCOTCH's ordering given to the sequential analysis builds another structure "
                     "(cblks %lld vs %lld, nnz(L) %lld vs %lld)", name, size, (long long)same.ncblk, (long long)s->S.ncblk,
                     (long long)same.nnz_l, (long long)s->S.nnz_l);
        }
        free(same.cblk_fcol);
        free(same.perm);
    }
    canopy_destroy(&s);
out:
    free(b);
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
        fail("%s: %s", file, msg);
        return;
    }
    check_matrix(file, &A, fact);
    canopy_csc_free(&A);
}

static void check_laplacian(int nx, int ny, int nz)
{
    canopy_csc A = {0};
    char name[64];
    snprintf(name, sizeof name, "laplacian %dx%dx%d", nx, ny, nz);
    if (canopy_generate_laplacian(nx, ny, nz, 7, &A) != CANOPY_SUCCESS) {
        fail("canopy_generate_laplacian failed");
        return;
    }
    check_matrix(name, &A, "llt");
    canopy_csc_free(&A);
}

/*
 * Make the k-th allocation fail on rank `victim` during the analysis, for k = 0, 1, ... until the
 * analysis gets through: every rank must return the same error (or all succeed).
 */
static void check_faults(void)
{
    canopy_csc A = {0};
    if (canopy_generate_laplacian(9, 8, 7, 7, &A) != CANOPY_SUCCESS) {
        fail("canopy_generate_laplacian failed");
        return;
    }
    int tried = 0;
    for (int victim = 0; victim < size; victim += size > 1 ? size - 1 : 1) {
        for (long k = 0; k < 400; k++) {
            canopy_solver *s = make_solver(MPI_COMM_WORLD, "ptscotch", "llt", "1");
            if (s == NULL) break;
            canopy_status st = canopy_set_matrix(s, rank == 0 ? &A : NULL);
            if (st == CANOPY_SUCCESS) {
                if (rank == victim) canopy_alloc_fail_after(k);
                st = canopy_analyze(s);
                canopy_alloc_fail_after(-1);
            }
            int lo = st, hi = st;
            MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
            MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            if (lo != hi) fail("allocation %ld failing on rank %d: the ranks returned %d and %d", k, victim, lo, hi);
            canopy_destroy(&s);
            tried++;
            if (lo == CANOPY_SUCCESS) break;
        }
    }
    if (rank == 0) printf("fault injection: %d analyses with one failing allocation, errors agreed\n", tried);
    canopy_csc_free(&A);
}

int main(int argc, char **argv)
{
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    canopy_options o;
    canopy_options_default(&o);
    char msg[256] = "";
    if (canopy_options_set(&o, "ordering", "ptscotch", msg, sizeof msg) != CANOPY_SUCCESS) {
        int ok = strstr(msg, "without PT-SCOTCH") != NULL;
        if (rank == 0) printf("%s\n%s\n", msg, ok ? "skipped: no PT-SCOTCH in this build" : "FAIL: unclear message");
        MPI_Finalize();
        return ok ? 77 : 1;
    }
    check_laplacian(14, 13, 12);
    check_laplacian(2, 1, 1); /* two vertices: every rank but the first two owns none */
    check_laplacian(3, 2, 1);
    check_file("bcsstk14.rsa", "ldlt");
    check_file("orsirr_1.rua", "lu");
    check_file("west0479.mtx", "lu"); /* matching: the graph is that of the permuted matrix */
    check_file("young1c.mtx", "auto");
    check_faults();
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("test_order_mpi on %d ranks: %s\n", size, all ? "FAILED" : "passed");
    MPI_Finalize();
    return all ? 1 : 0;
}
