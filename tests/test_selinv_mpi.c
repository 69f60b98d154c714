/*
 * canopy_selinv over several ranks, run by tests/test_selinv_mpi.sh under mpiexec -n 1..4 (and 8,
 * oversubscribed): on small matrices of every kind and arithmetic, the whole pattern, the diagonal
 * and listed entries (inside and outside the pattern) against LAPACK's dense inverse on rank 0,
 * for 1 and 3 threads per rank (8 in the full pass) and the three tree shapes; the same bits for
 * every tree shape (they only route the panels); in place, solves refused until the next
 * factorization, which then solves right (the fan-in buffers the inversion received panels in are
 * the factorization's again); the broadcast volume in the statistics; a tiny matrix that leaves
 * ranks without a column block; an allocation failing on one rank gives every rank the same
 * error, never a hang. The same factors inverted by the calling thread alone and by 3 workers
 * (own subtrees in any order, the shared column blocks' products in pieces) give the same bits.
 * On larger shared matrices, sampled columns of the pattern against refined unit solves.
 */
#include "base/config.h"

#include <complex.h>
#include <lapacke.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include "canopy.h"
#include "base/common.h" /* canopy_alloc_fail_after */
#include "solver/solver.h" /* s->F: the same factors inverted with and without the workers */

typedef double complex zdouble;
static int rank, size, failures, quick;

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
    void *p = calloc(n > 0 ? n : 1, 1);
    if (p == NULL) {
        fprintf(stderr, "rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

/* the same status on every rank, returned */
static int agreed(const char *what, int st)
{
    int lo = st, hi = st;
    MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (lo != hi) fail("%s: the ranks returned %d and %d", what, lo, hi);
    return st;
}

/* A's dense inverse (column-major, complex), NULL if LAPACK finds A singular */
static zdouble *dense_inverse(const canopy_csc *A)
{
    canopy_int n = A->n;
    zdouble *D = xmalloc((size_t)n * n * sizeof *D);
    int cx = A->arith == CANOPY_COMPLEX;
    int sym = A->kind != CANOPY_KIND_GENERAL && A->triangle != CANOPY_TRIANGLE_BOTH;
    int herm = A->kind == CANOPY_KIND_HERMITIAN && cx;
    for (canopy_int j = 0; j < n; j++)
        for (canopy_int p = A->colptr[j] - A->base; p < A->colptr[j + 1] - A->base; p++) {
            canopy_int i = A->rowind[p] - A->base;
            zdouble v = cx ? ((const zdouble *)A->values)[p] : ((const double *)A->values)[p];
            D[i + (size_t)j * n] = v;
            if (sym && i != j) D[j + (size_t)i * n] = herm ? conj(v) : v;
        }
    lapack_int *ipiv = xmalloc(((size_t)n + 1) * sizeof *ipiv);
    bool ok = LAPACKE_zgetrf(LAPACK_COL_MAJOR, (lapack_int)n, (lapack_int)n, (lapack_complex_double *)D, (lapack_int)n,
                             ipiv) == 0 &&
              LAPACKE_zgetri(LAPACK_COL_MAJOR, (lapack_int)n, (lapack_complex_double *)D, (lapack_int)n, ipiv) == 0;
    free(ipiv);
    if (!ok) {
        free(D);
        return NULL;
    }
    return D;
}

static canopy_solver *factorized(const canopy_csc *A, const char *fact, int threads, const char *tree, const char *memory,
                                 const char *threshold)
{
    canopy_options o;
    canopy_options_default(&o);
    char tv[16];
    snprintf(tv, sizeof tv, "%d", threads);
    canopy_options_set(&o, "threads", tv, NULL, 0);
    canopy_options_set(&o, "bind", "none", NULL, 0);
    canopy_options_set(&o, "cost-cache", "fixed", NULL, 0);
    canopy_options_set(&o, "verbose", "0", NULL, 0);
    canopy_options_set(&o, "factorization", fact, NULL, 0);
    canopy_options_set(&o, "tree", tree, NULL, 0);
    canopy_options_set(&o, "selinv-memory", memory, NULL, 0);
    /* the same factors run after run for one thread count: trees must then give the same bits */
    canopy_options_set(&o, "scheduler", "static", NULL, 0);
    canopy_options_set(&o, "split", "24", NULL, 0);
    if (threshold) canopy_options_set(&o, "pivot-threshold", threshold, NULL, 0);
    canopy_solver *s = NULL;
    canopy_status st = canopy_create(MPI_COMM_WORLD, &o, &s);
    if (st == CANOPY_SUCCESS) st = canopy_set_matrix(s, rank == 0 ? A : NULL);
    if (st == CANOPY_SUCCESS) st = canopy_analyze(s);
    if (st == CANOPY_SUCCESS) st = canopy_factorize(s);
    if (agreed("setup", st) < 0) {
        fail("setup (%s, %d threads, %s): %s", fact, threads, tree, canopy_last_error(s));
        canopy_destroy(&s);
        return NULL;
    }
    return s;
}

static zdouble at(const void *v, int cx, size_t q)
{
    return cx ? ((const zdouble *)v)[q] : ((const double *)v)[q];
}

enum { NE = 60 };

/* one layout: pattern, diagonal and listed entries against the dense inverse; the diagonal into d */
static void check_layout(const char *name, const canopy_csc *A, const zdouble *Z, double zmax, const char *fact, int T,
                         const char *tree, const char *memory, double tol, double *d)
{
    canopy_int n = rank == 0 ? A->n : 0;
    MPI_Bcast(&n, 1, sizeof(canopy_int) == 8 ? MPI_INT64_T : MPI_INT, 0, MPI_COMM_WORLD);
    int cx = rank == 0 && A->arith == CANOPY_COMPLEX;
    MPI_Bcast(&cx, 1, MPI_INT, 0, MPI_COMM_WORLD);
    int vsz = cx ? 2 : 1;
    bool inplace = !strcmp(memory, "inplace");
    canopy_solver *s = factorized(A, fact, T, tree, memory, NULL);
    if (s == NULL) return;
    /* the diagonal first: in place, its entries outside the pattern are solved before the factors go */
    canopy_status st = agreed("diag", canopy_selinv(s, CANOPY_SELINV_DIAG, &(canopy_selinv_request){.diag = d}));
    if (st != CANOPY_SUCCESS) fail("%s %s %s: diag: %s", name, fact, tree, canopy_last_error(s));
    double derr = 0, perr = 0, eerr = 0;
    for (canopy_int i = 0; rank == 0 && Z && i < n; i++) derr = fmax(derr, cabs(at(d, cx, (size_t)i) - Z[i + (size_t)i * n]));
    canopy_selinv_request rq = {0};
    st = agreed("pattern", canopy_selinv(s, CANOPY_SELINV_PATTERN, &rq));
    if (st != CANOPY_SUCCESS) fail("%s %s %s: pattern: %s", name, fact, tree, canopy_last_error(s));
    if (rank == 0 && st == CANOPY_SUCCESS) {
        const canopy_csc *Q = &rq.pattern;
        for (canopy_int j = 0; j < n; j++)
            for (canopy_int p = Q->colptr[j]; p < Q->colptr[j + 1]; p++) {
                canopy_int i = Q->rowind[p];
                if (i < 0 || i >= n || (p > Q->colptr[j] && Q->rowind[p - 1] >= i)) {
                    fail("%s: pattern row %d in column %d out of order", name, (int)i, (int)j);
                    break;
                }
                if (Z) perr = fmax(perr, cabs(at(Q->values, cx, (size_t)p) - Z[i + (size_t)j * n]));
            }
        /* the diagonal is in the pattern when A's diagonal is: the same value */
        canopy_csc_free(&rq.pattern);
    }
    /* listed entries, most outside the pattern: refused in place (the factors are gone) */
    canopy_int rows[NE], cols[NE];
    uint64_t seed = 12345;
    for (int e = 0; e < NE; e++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        rows[e] = (canopy_int)((seed >> 33) % (uint64_t)n);
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        cols[e] = e % 7 == 6 ? cols[e - 1] : (canopy_int)((seed >> 33) % (uint64_t)n);
    }
    double v[NE * 2];
    canopy_selinv_request er = {.nentries = NE, .rows = rows, .cols = cols, .values = v};
    /* the broadcasts' volume (of the last inversion: the listed entries do not invert) */
    canopy_stats V;
    canopy_get_stats(s, &V);
    st = agreed("entries", canopy_selinv(s, CANOPY_SELINV_ENTRIES, &er));
    if (inplace) {
        /* (a tiny matrix's factors are dense: every entry is in their pattern) */
        if (st != CANOPY_ERR_PHASE && n > 100) fail("%s %s: in place, entries outside the pattern gave %d", name, fact, st);
        /* the factors are gone: solves refused; a new factorization brings them back */
        double *b = xmalloc((size_t)n * vsz * sizeof(double));
        for (canopy_int i = 0; i < n * vsz; i++) b[i] = 1;
        if (agreed("solve", canopy_solve(s, 1, rank == 0 ? b : NULL, n)) != CANOPY_ERR_PHASE)
            fail("%s: a solve after the in-place inversion was not refused", name);
        if (agreed("refactorize", canopy_factorize(s)) < 0) fail("%s: refactorize: %s", name, canopy_last_error(s));
        st = agreed("entries", canopy_selinv(s, CANOPY_SELINV_ENTRIES, &er));
        double *x = xmalloc((size_t)n * vsz * sizeof(double));
        if (agreed("refine", canopy_refine(s, 1, rank == 0 ? b : NULL, n, rank == 0 ? x : NULL, n)) < 0)
            fail("%s: refine after refactorization: %s", name, canopy_last_error(s));
        canopy_stats S;
        canopy_get_stats(s, &S);
        if (rank == 0 && !(S.backward_error <= 1e-12))
            fail("%s %s: backward error %.2e after the in-place inversion and a refactorization", name, fact, S.backward_error);
        free(b);
        free(x);
    }
    if (st < 0) fail("%s %s %s: entries: %s", name, fact, tree, canopy_last_error(s));
    for (int e = 0; rank == 0 && Z && st >= 0 && e < NE; e++)
        eerr = fmax(eerr, cabs(at(v, cx, (size_t)e) - Z[rows[e] + (size_t)cols[e] * n]));
    if (rank == 0 && Z && (derr > tol * zmax || perr > tol * zmax || eerr > tol * zmax))
        fail("%s %s %d threads %s %s: errors / max |A^-1|: diag %.1e pattern %.1e listed %.1e", name, fact, T, tree, memory,
             derr / zmax, perr / zmax, eerr / zmax);
    /* the broadcasts' volume: counted on the senders, summarized over the ranks */
    if (V.selinv_bytes_rank_max < V.selinv_bytes_rank_min || V.selinv_bytes_rank_min < 0 ||
        (size == 1 && V.selinv_comm_bytes != 0) || (double)V.selinv_comm_bytes < V.selinv_bytes_rank_max ||
        (V.selinv_comm_msgs == 0) != (V.selinv_comm_bytes == 0))
        fail("%s: selected inversion volume: total %lld bytes in %lld messages, per rank %.0f..%.0f", name,
             (long long)V.selinv_comm_bytes, (long long)V.selinv_comm_msgs, V.selinv_bytes_rank_min, V.selinv_bytes_rank_max);
    if (rank == 0)
        printf("%-22s %-4s %d x %d %-7s %-8s errors %.1e %.1e %.1e, bcast %lld messages %.3g MB (per rank %.3g..%.3g)\n",
               name, fact, size, T, tree, memory, Z ? derr / zmax : 0, Z ? perr / zmax : 0, Z ? eerr / zmax : 0,
               (long long)V.selinv_comm_msgs, V.selinv_comm_bytes * 1e-6, V.selinv_bytes_rank_min * 1e-6,
               V.selinv_bytes_rank_max * 1e-6);
    canopy_destroy(&s);
}

static void check_matrix(const char *name, const canopy_csc *A, const char *fact, double tol)
{
    canopy_int n = rank == 0 ? A->n : 0;
    MPI_Bcast(&n, 1, sizeof(canopy_int) == 8 ? MPI_INT64_T : MPI_INT, 0, MPI_COMM_WORLD);
    zdouble *Z = NULL;
    double zmax = 0;
    if (rank == 0) {
        Z = dense_inverse(A);
        if (Z == NULL) fail("%s: LAPACK finds it singular", name);
        for (size_t q = 0; Z && q < (size_t)n * n; q++) zmax = fmax(zmax, cabs(Z[q]));
    }
    static const char *trees[] = {"flat", "binary", "shifted"};
    double *d0 = xmalloc((size_t)n * 2 * sizeof(double)), *d = xmalloc((size_t)n * 2 * sizeof(double));
    check_layout(name, A, Z, zmax, fact, 1, "shifted", "separate", tol, d0);
    /* three threads and every tree shape: the same diagonal to rounding (the trees only route the
     * panels; the factors' bits may differ with the order fan-in buffers arrive in) */
    int cx = rank == 0 && A->arith == CANOPY_COMPLEX;
    for (int t = 0; t < 3; t++) {
        check_layout(name, A, Z, zmax, fact, 3, trees[t], t == 1 ? "inplace" : "separate", tol, d);
        double dd = 0, dm = 0;
        for (canopy_int i = 0; rank == 0 && i < n; i++) {
            dd = fmax(dd, cabs(at(d, cx, (size_t)i) - at(d0, cx, (size_t)i)));
            dm = fmax(dm, cabs(at(d0, cx, (size_t)i)));
        }
        if (dd > tol * dm) fail("%s %s: tree %s on 3 threads: diagonal %.2e away from 1 thread's", name, fact, trees[t], dd / dm);
    }
    if (!quick) check_layout(name, A, Z, zmax, fact, 8, "binary", "inplace", tol, d);
    free(d0);
    free(d);
    free(Z);
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

/* A shared matrix on rank 0 (the others: empty); false on every rank when it cannot be read or
 * the folder is absent */
static bool read_shared(const char *file, canopy_csc *A)
{
    const char *dir = matrix_dir();
    memset(A, 0, sizeof *A);
    if (dir == NULL) {
        if (rank == 0) printf("%s: shared matrices not found, skipped\n", file);
        return false;
    }
    int ok = 1;
    if (rank == 0) {
        char path[4200], msg[512];
        snprintf(path, sizeof path, "%s/%s", dir, file);
        if (canopy_read_matrix(path, A, msg, sizeof msg) != CANOPY_SUCCESS) {
            fail("%s", msg);
            ok = 0;
        }
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return ok != 0;
}

static void check_file(const char *file, const char *fact, double tol)
{
    canopy_csc A;
    if (read_shared(file, &A)) check_matrix(file, &A, fact, tol);
    canopy_csc_free(&A);
}

/* (1 + i/2) times A's values: complex symmetric (*z holds them: free it and A separately) */
static canopy_csc complex_copy(const canopy_csc *A, double **z)
{
    canopy_csc Z = *A;
    canopy_int nnz = A->colptr[A->n] - A->base;
    *z = xmalloc((size_t)nnz * 2 * sizeof(double));
    for (canopy_int p = 0; p < nnz; p++) {
        (*z)[2 * p] = ((const double *)A->values)[p];
        (*z)[2 * p + 1] = 0.5 * (*z)[2 * p];
    }
    Z.values = *z;
    Z.arith = CANOPY_COMPLEX;
    Z.kind = CANOPY_KIND_SYMMETRIC;
    return Z;
}

/* an allocation failing on one rank, anywhere in the inversion and the gathering: the same
 * status everywhere, then the right diagonal once nothing fails */
static void check_faults(void)
{
    canopy_csc A = {0};
    if (rank == 0) canopy_generate_laplacian(8, 7, 6, 7, &A);
    canopy_solver *s = factorized(&A, "ldlt", 2, "shifted", "separate", NULL);
    if (s == NULL) return;
    canopy_int n = 8 * 7 * 6;
    double *d = xmalloc((size_t)n * sizeof(double)), *ref = xmalloc((size_t)n * sizeof(double));
    if (agreed("diag", canopy_selinv(s, CANOPY_SELINV_DIAG, &(canopy_selinv_request){.diag = ref})) != CANOPY_SUCCESS)
        fail("faults: the reference diagonal: %s", canopy_last_error(s));
    int victims[2] = {0, size - 1};
    for (int v = 0; v < (size > 1 ? 2 : 1); v++) {
        int done = 0;
        for (long k = 0; k < 400 && !done; k++) {
            /* a new factorization: the inversion runs again */
            if (agreed("refactorize", canopy_factorize(s)) < 0) {
                fail("faults: refactorize: %s", canopy_last_error(s));
                break;
            }
            if (rank == victims[v]) canopy_alloc_fail_after(k);
            canopy_selinv_what what = k % 2 ? CANOPY_SELINV_PATTERN : CANOPY_SELINV_DIAG;
            canopy_selinv_request rq = {.diag = d};
            canopy_status st = agreed("faulty selinv", canopy_selinv(s, what, &rq));
            canopy_alloc_fail_after(-1);
            if (rank == 0 && what == CANOPY_SELINV_PATTERN) canopy_csc_free(&rq.pattern);
            if (st == CANOPY_SUCCESS && what == CANOPY_SELINV_DIAG) {
                done = 1;
                for (canopy_int i = 0; rank == 0 && i < n; i++)
                    if (fabs(d[i] - ref[i]) > 1e-13 * fabs(ref[i])) {
                        fail("faults: diagonal %d: %g vs %g", (int)i, d[i], ref[i]);
                        break;
                    }
            } else if (st != CANOPY_SUCCESS && st != CANOPY_ERR_NOMEM) {
                fail("faults: allocation %ld failing on rank %d gave %d (%s)", k, victims[v], st, canopy_last_error(s));
            }
        }
        if (!done) fail("faults: the selected inversion never succeeded with rank %d's allocations failing", victims[v]);
    }
    free(d);
    free(ref);
    canopy_destroy(&s);
    canopy_csc_free(&A);
}

/* the same factors inverted twice: the workers hidden, then with them (even small cblks cut into
 * pieces, shared ones or those at the top of the tree); the same bits */
static void check_pieces(const char *name, const canopy_csc *A, const char *fact)
{
    canopy_solver *s = factorized(A, fact, 3, "shifted", "separate", NULL);
    if (s == NULL) return;
    canopy_int n = s->S.n;
    double *d[2] = {xmalloc((size_t)n * 2 * sizeof(double)), xmalloc((size_t)n * 2 * sizeof(double))};
    s->F.sol_split_min = 1;
    sched_pool *pool = s->F.exec.pool;
    long long split = 0;
    for (int run = 0; run < 2; run++) {
        s->F.exec.pool = run == 0 ? NULL : pool;
        if (agreed("pieces", canopy_selinv(s, CANOPY_SELINV_DIAG, &(canopy_selinv_request){.diag = d[run]})) != CANOPY_SUCCESS)
            fail("%s %s: diag: %s", name, fact, canopy_last_error(s));
        split = s->F.sol_split;
        /* forget the inverse (kept in its own copy): the next call inverts the same factors again */
        canopy_free(s->F.inv_L);
        canopy_free(s->F.inv_U);
        s->F.inv_L = s->F.inv_U = NULL;
        s->F.inv_state = 0;
    }
    s->F.exec.pool = pool;
    MPI_Allreduce(MPI_IN_PLACE, &split, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    int cx = s->arith == CANOPY_COMPLEX;
    if (rank == 0 && memcmp(d[0], d[1], (size_t)n * (cx ? 2 : 1) * sizeof(double)) != 0)
        fail("%s %s: the workers give other bits than the calling thread alone", name, fact);
    /* the shared cblks over several ranks, the top of the tree on one */
    if (split == 0) fail("%s %s: no column block ran in pieces on the workers", name, fact);
    if (rank == 0) printf("%-22s %-4s %d x 3: column blocks in pieces on the workers: %lld, same bits\n", name, fact, size, split);
    free(d[0]);
    free(d[1]);
    canopy_destroy(&s);
}

/* A larger shared matrix: the pattern's entries of sampled columns and the diagonal against
 * refined solves with unit vectors (the same factors kept: selinv-memory=separate) */
static void check_sampled(const char *file, const char *fact, double tol)
{
    canopy_csc A;
    bool ok = read_shared(file, &A);
    canopy_solver *s = ok ? factorized(&A, fact, 2, "shifted", "separate", NULL) : NULL;
    if (s == NULL) {
        canopy_csc_free(&A);
        return;
    }
    canopy_int n = s->S.n;
    int cx = s->arith == CANOPY_COMPLEX, vsz = cx ? 2 : 1;
    double *d = xmalloc((size_t)n * vsz * sizeof(double));
    canopy_selinv_request rq = {0};
    if (agreed("diag", canopy_selinv(s, CANOPY_SELINV_DIAG, &(canopy_selinv_request){.diag = d})) < 0 ||
        agreed("pattern", canopy_selinv(s, CANOPY_SELINV_PATTERN, &rq)) < 0)
        fail("%s: %s", file, canopy_last_error(s));
    double *b = xmalloc((size_t)n * vsz * sizeof(double)), *x = xmalloc((size_t)n * vsz * sizeof(double));
    double err = 0, xmax = 0, berr = 0;
    long checked = 0;
    enum { SAMPLES = 8 };
    for (int q = 0; q < SAMPLES; q++) {
        canopy_int j = (canopy_int)(((int64_t)q * 7919 + 13) % n);
        memset(b, 0, (size_t)n * vsz * sizeof(double));
        b[(size_t)j * vsz] = 1;
        if (agreed("refine", canopy_refine(s, 1, rank == 0 ? b : NULL, n, rank == 0 ? x : NULL, n)) < 0) {
            fail("%s: refine: %s", file, canopy_last_error(s));
            break;
        }
        canopy_stats S;
        canopy_get_stats(s, &S);
        berr = fmax(berr, S.backward_error);
        if (rank != 0 || rq.pattern.colptr == NULL) continue;
        const canopy_csc *P = &rq.pattern;
        for (canopy_int i = 0; i < n; i++) xmax = fmax(xmax, cabs(at(x, cx, (size_t)i)));
        for (canopy_int p = P->colptr[j]; p < P->colptr[j + 1]; p++, checked++)
            err = fmax(err, cabs(at(P->values, cx, (size_t)p) - at(x, cx, (size_t)P->rowind[p])));
        err = fmax(err, cabs(at(d, cx, (size_t)j) - at(x, cx, (size_t)j)));
    }
    if (rank == 0) {
        if (!(err <= tol * xmax) || checked == 0)
            fail("%s %s: %ld entries of %d sampled columns: error %.2e of max |x| %.2e", file, fact, checked, SAMPLES,
                 err, xmax);
        if (!(berr <= 1e-12)) fail("%s: the unit solves' backward error %.2e", file, berr);
        printf("%-22s %-4s %d x 2: %ld entries of %d columns against refined unit solves: error %.1e (backward %.1e)\n",
               file, fact, size, checked, SAMPLES, xmax > 0 ? err / xmax : 0, berr);
        canopy_csc_free(&rq.pattern);
    }
    free(d);
    free(b);
    free(x);
    canopy_destroy(&s);
    canopy_csc_free(&A);
}

/* a matrix given in pieces (canopy_set_matrix_distributed: each rank a block of columns, with
 * the equilibration or the matching over the ranks): the diagonal against the dense inverse */
static void check_distributed_input(const char *name, const canopy_csc *A0, const char *scal, double tol)
{
    /* every rank builds the whole matrix (a generator) and keeps its block of columns */
    canopy_int n = A0->n, c0 = (canopy_int)((int64_t)n * rank / size), c1 = (canopy_int)((int64_t)n * (rank + 1) / size);
    int cx = A0->arith == CANOPY_COMPLEX, vsz = cx ? 2 : 1;
    canopy_int *cols = xmalloc(((size_t)(c1 - c0) + 1) * sizeof *cols);
    for (canopy_int j = c0; j < c1; j++) cols[j - c0] = j + A0->base;
    canopy_int *cp = xmalloc(((size_t)(c1 - c0) + 1) * sizeof *cp);
    for (canopy_int j = c0; j <= c1; j++) cp[j - c0] = A0->colptr[j] - A0->colptr[c0];
    canopy_dist_csc P = {.n = n, .ncols = c1 - c0, .cols = cols, .colptr = cp,
                         .rowind = A0->rowind + (A0->colptr[c0] - A0->base),
                         .values = (double *)A0->values + (size_t)(A0->colptr[c0] - A0->base) * vsz,
                         .base = A0->base, .arith = A0->arith, .kind = A0->kind, .triangle = A0->triangle};
    canopy_options o;
    canopy_options_default(&o);
    canopy_options_set(&o, "threads", "2", NULL, 0);
    canopy_options_set(&o, "bind", "none", NULL, 0);
    canopy_options_set(&o, "cost-cache", "fixed", NULL, 0);
    canopy_options_set(&o, "verbose", "0", NULL, 0);
    canopy_options_set(&o, "scaling", scal, NULL, 0);
    canopy_solver *s = NULL;
    canopy_status st = canopy_create(MPI_COMM_WORLD, &o, &s);
    if (st == CANOPY_SUCCESS) st = canopy_set_matrix_distributed(s, &P);
    if (st == CANOPY_SUCCESS) st = canopy_analyze(s);
    if (st == CANOPY_SUCCESS) st = canopy_factorize(s);
    double *d = xmalloc((size_t)n * vsz * sizeof(double));
    if (agreed("distributed input", st) >= 0)
        st = agreed("diag", canopy_selinv(s, CANOPY_SELINV_DIAG, &(canopy_selinv_request){.diag = d}));
    if (st != CANOPY_SUCCESS) {
        fail("%s given in pieces, scaling %s: %s", name, scal, canopy_last_error(s));
    } else if (rank == 0) {
        zdouble *Z = dense_inverse(A0);
        double err = 0, zmax = 0;
        for (canopy_int i = 0; Z && i < n; i++) {
            err = fmax(err, cabs(at(d, cx, (size_t)i) - Z[i + (size_t)i * n]));
            zmax = fmax(zmax, cabs(Z[i + (size_t)i * n]));
        }
        if (!Z || !(err <= tol * zmax)) fail("%s given in pieces, scaling %s: diagonal error %.2e", name, scal, err / zmax);
        else printf("%-22s given in pieces, scaling %-11s %d x 2: diagonal error %.1e\n", name, scal, size, err / zmax);
        free(Z);
    }
    free(d);
    free(cols);
    free(cp);
    canopy_destroy(&s);
}

/* static pivoting over the ranks: the warning and the global count */
static void check_perturbed(void)
{
    canopy_csc A = {0};
    if (rank == 0) {
        canopy_generate_laplacian(12, 11, 1, 5, &A);
        for (canopy_int j = 0; j < A.n; j++)
            for (canopy_int p = A.colptr[j] - A.base; p < A.colptr[j + 1] - A.base; p++)
                if (A.rowind[p] - A.base == j) ((double *)A.values)[p] -= 3.3;
        A.kind = CANOPY_KIND_SYMMETRIC;
    }
    canopy_solver *s = factorized(&A, "ldlt", 2, "shifted", "separate", "0.5");
    if (s == NULL) return;
    double *d = xmalloc(132 * sizeof(double));
    canopy_selinv_request rq = {.diag = d};
    if (agreed("perturbed", canopy_selinv(s, CANOPY_SELINV_DIAG, &rq)) != CANOPY_WARN_PIVOTS_PERTURBED ||
        (rank == 0 && rq.perturbed_pivots <= 0))
        fail("perturbed pivots: no warning or no count (%lld)", (long long)rq.perturbed_pivots);
    /* an interruption would need every rank's agreement: refused on several */
    if (canopy_interrupt(s) != (size > 1 ? CANOPY_ERR_UNSUPPORTED : CANOPY_SUCCESS))
        fail("canopy_interrupt on %d ranks", size);
    free(d);
    canopy_destroy(&s);
    canopy_csc_free(&A);
}

int main(int argc, char **argv)
{
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    quick = getenv("CANOPY_TEST_QUICK") != NULL || (argc > 1 && !strcmp(argv[1], "--quick"));
    canopy_csc A = {0};
    /* large enough for the top column blocks to be shared by 4 ranks */
    if (rank == 0) canopy_generate_laplacian(11, 10, 9, 7, &A);
    check_matrix("laplacian 11x10x9", &A, "llt", 1e-12);
    check_matrix("laplacian 11x10x9", &A, "ldlt", 1e-12);
    check_matrix("laplacian 11x10x9", &A, "lu", 1e-12);
    double *z = NULL;
    canopy_csc Z = {0};
    if (rank == 0) Z = complex_copy(&A, &z);
    check_matrix("laplacian 11x10x9 (1+i/2)", &Z, "ldlt", 1e-12);
    check_matrix("laplacian 11x10x9 (1+i/2)", &Z, "lu", 1e-12);
    check_pieces("laplacian 11x10x9", &A, "llt");
    check_pieces("laplacian 11x10x9", &A, "lu");
    check_pieces("laplacian 11x10x9 (1+i/2)", &Z, "ldlt");
    free(z);
    canopy_csc_free(&A);
    /* fewer cblks than ranks x threads: ranks that own nothing */
    if (rank == 0) canopy_generate_laplacian(3, 2, 1, 5, &A);
    check_matrix("laplacian 3x2", &A, "llt", 1e-12);
    canopy_csc_free(&A);
    check_file("west0479.mtx", "auto", 1e-10); /* matching: the diagonal of A^-1 outside the pattern */
    check_file("young1c.mtx", "auto", 1e-10);  /* complex */
    check_file("orsirr_1.rua", "auto", 1e-10);
    if (!quick) {
        check_file("nos5.mtx", "auto", 1e-10);
        check_file("mhd1280b.cua", "auto", 1e-10); /* complex Hermitian */
    }
    check_sampled("bcsstk16.mtx.gz", "auto", 1e-10);
    check_sampled("cage10.mtx.gz", "auto", 1e-10);
    check_sampled("helmholtz_2D.mtx.gz", "auto", 1e-10);
    if (!quick) {
        check_sampled("nsjac.mtx.gz", "auto", 1e-10);
        check_sampled("bcsstk24.rsa.gz", "auto", 1e-10);
        check_sampled("bayer10.mtx.gz", "auto", 1e-10);
    }
    /* given in pieces: every rank generates the matrix and gives its block of columns */
    canopy_generate_laplacian(9, 8, 7, 7, &A);
    check_distributed_input("laplacian 9x8x7", &A, "equilibrate", 1e-12);
    A.kind = CANOPY_KIND_GENERAL;     /* LU of a symmetric pattern, rows permuted by the matching */
    check_distributed_input("laplacian 9x8x7 (LU)", &A, "matching", 1e-12);
    canopy_csc_free(&A);
    check_perturbed();
    check_faults();
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("test_selinv_mpi on %d ranks: %s\n", size, all ? "FAILED" : "passed");
    MPI_Finalize();
    return all ? 1 : 0;
}
