/*
 * Solves with A^T and A^H from the same factors (canopy_solve_trans, canopy_refine_trans and their
 * distributed forms), run by tests/test_trans.sh under mpiexec -n 1..4. For every kind of
 * factorization (LU with and without the matching's row permutation, LU whose diagonal blocks
 * interchange rows, LL^T, complex symmetric LDL^T, Hermitian LL^T) in real and complex arithmetic,
 * and every operator (A, A^T, A^H), B = op(A) X is formed here from the matrix as given (an
 * independent product, not the library's), then:
 *   - the unrefined solve already has a small backward error against op(A) (a solve with the wrong
 *     operator would not: refinement alone could hide it), and the plain solve of the same B does
 *     not when op(A) != A;
 *   - refinement reaches a backward error <= 1e-12 against op(A), measured here;
 *   - the same with the rows of B spread over the ranks (canopy_solve_distributed_trans, refined),
 *     and with the matrix itself given in pieces (canopy_set_matrix_distributed: the transposed
 *     products of the refinement then cross the ranks).
 * An unknown trans is refused on every rank. A singular matrix is reported as such on every rank
 * count (check_singular).
 */
#include "base/config.h"

#include <complex.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <mpi.h>
#include "canopy.h"

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
    void *p = calloc(n > 0 ? n : 1, 1);
    if (p == NULL) MPI_Abort(MPI_COMM_WORLD, 2);
    return p;
}

/* the full matrix as triplets (a symmetric kind stored by one triangle mirrored, conjugated when
 * Hermitian), 0-based */
typedef struct trip {
    canopy_int n;
    int64_t nz;
    canopy_int *i, *j;
    double complex *a;
    int cx;
} trip;

static void to_triplets(const canopy_csc *A, trip *T)
{
    int64_t nnz = A->colptr[A->n] - A->base;
    int sym = A->kind != CANOPY_KIND_GENERAL && A->triangle != CANOPY_TRIANGLE_BOTH;
    int herm = A->kind == CANOPY_KIND_HERMITIAN;
    T->n = A->n;
    T->cx = A->arith == CANOPY_COMPLEX;
    T->i = xmalloc(2 * (size_t)nnz * sizeof *T->i);
    T->j = xmalloc(2 * (size_t)nnz * sizeof *T->j);
    T->a = xmalloc(2 * (size_t)nnz * sizeof *T->a);
    T->nz = 0;
    const double *v = A->values;
    for (canopy_int j = 0; j < A->n; j++)
        for (int64_t p = A->colptr[j] - A->base; p < A->colptr[j + 1] - A->base; p++) {
            canopy_int i = A->rowind[p] - A->base;
            double complex a = T->cx ? v[2 * p] + I * v[2 * p + 1] : v[p];
            T->i[T->nz] = i, T->j[T->nz] = j, T->a[T->nz++] = a;
            if (sym && i != j) T->i[T->nz] = j, T->j[T->nz] = i, T->a[T->nz++] = herm ? conj(a) : a;
        }
}

static void trip_free(trip *T)
{
    free(T->i);
    free(T->j);
    free(T->a);
}

/* y = op(A) x for one column (complex work arrays whatever the arithmetic) */
static void op_apply(const trip *T, int trans, const double complex *x, double complex *y)
{
    for (canopy_int k = 0; k < T->n; k++) y[k] = 0;
    for (int64_t q = 0; q < T->nz; q++) {
        if (trans == CANOPY_TRANS_NONE) y[T->i[q]] += T->a[q] * x[T->j[q]];
        else if (trans == CANOPY_TRANS_T) y[T->j[q]] += T->a[q] * x[T->i[q]];
        else y[T->j[q]] += conj(T->a[q]) * x[T->i[q]];
    }
}

/* ||op(A)||_inf */
static double op_norm(const trip *T, int trans)
{
    double *s = xmalloc((size_t)T->n * sizeof *s), m = 0;
    for (int64_t q = 0; q < T->nz; q++) s[trans ? T->j[q] : T->i[q]] += cabs(T->a[q]);
    for (canopy_int k = 0; k < T->n; k++) m = fmax(m, s[k]);
    free(s);
    return m;
}

static double complex get(const trip *T, const double *v, size_t k)
{
    return T->cx ? v[2 * k] + I * v[2 * k + 1] : v[k];
}

static void put(const trip *T, double *v, size_t k, double complex z)
{
    if (T->cx) v[2 * k] = creal(z), v[2 * k + 1] = cimag(z);
    else v[k] = creal(z);
}

/* worst backward error over the columns of x (n x nrhs) for op(A) x = b */
static double berr(const trip *T, int trans, int nrhs, const double *x, const double *b)
{
    canopy_int n = T->n;
    double complex *xc = xmalloc((size_t)n * sizeof *xc), *y = xmalloc((size_t)n * sizeof *y);
    double an = op_norm(T, trans), worst = 0;
    for (int r = 0; r < nrhs; r++) {
        double xm = 0, bm = 0, rm = 0;
        for (canopy_int k = 0; k < n; k++) xc[k] = get(T, x, (size_t)r * n + k);
        op_apply(T, trans, xc, y);
        for (canopy_int k = 0; k < n; k++) {
            double complex bk = get(T, b, (size_t)r * n + k);
            xm = fmax(xm, cabs(xc[k]));
            bm = fmax(bm, cabs(bk));
            rm = fmax(rm, cabs(bk - y[k]));
        }
        double e = rm / (an * xm + bm);
        if (!(e <= worst)) worst = e;
    }
    free(xc);
    free(y);
    return worst;
}

enum gen { GEN_FILE, GEN_LU, GEN_ZLU, GEN_SPD, GEN_CSYM, GEN_HERM };

typedef struct tcase {
    const char *name;
    enum gen gen;
    const char *options; /* canopy_options_set pairs "name=value ..." */
} tcase;

static const tcase cases[] = {
    {"LU, real, weak diagonal, no scaling (interchanges in the diagonal blocks)", GEN_LU, "scaling=none"},
    {"LU, real, weak diagonal, matching and scaling", GEN_LU, "scaling=matching"},
    {"LU, complex general", GEN_ZLU, ""},
    {"LL^T, real SPD", GEN_SPD, ""},
    {"LDL^T, complex symmetric", GEN_CSYM, ""},
    {"LL^H, Hermitian", GEN_HERM, ""},
    {"west0479.mtx", GEN_FILE, ""},
    {"orsirr_1.rua", GEN_FILE, ""},
    {"young1c.mtx", GEN_FILE, ""},
    {"mhd1280b.cua", GEN_FILE, "kind=hermitian"},
    {"qc324.cua.gz", GEN_FILE, ""},
};

static const char *matrix_dir(void)
{
    static char buf[4096];
    const char *env = getenv("CANOPY_TEST_MATRICES");
    if (env && *env) return env;
    const char *top = getenv("top_srcdir");
    snprintf(buf, sizeof buf, "%s/../shared/matrices", top ? top : ".");
    return buf;
}

/* case c into A on every rank (0 when its file is absent) */
static int load(const tcase *c, canopy_csc *A)
{
    if (c->gen == GEN_FILE) {
        char path[4400], msg[512];
        snprintf(path, sizeof path, "%s/%s", matrix_dir(), c->name);
        if (access(path, R_OK) != 0) return 0;
        if (canopy_read_matrix(path, A, msg, sizeof msg) != CANOPY_SUCCESS) {
            fail("%s: %s", c->name, msg);
            return 0;
        }
        if (strstr(c->options, "kind=hermitian")) A->kind = CANOPY_KIND_HERMITIAN;
        return 1;
    }
    if (canopy_generate_laplacian(9, 8, 7, 7, A) != CANOPY_SUCCESS) return 0;
    double *v = A->values;
    if (c->gen == GEN_SPD) return 1;
    if (c->gen == GEN_LU) {
        /* weak diagonal, unsymmetric off-diagonals: partial pivoting must interchange rows */
        for (canopy_int j = 0; j < A->n; j++)
            for (canopy_int p = A->colptr[j]; p < A->colptr[j + 1]; p++) {
                canopy_int i = A->rowind[p];
                v[p] *= i == j ? 0.15 : i > j ? 1.7 : 0.6 + 0.01 * (double)(j % 7);
            }
        A->kind = CANOPY_KIND_GENERAL;
        return 1;
    }
    size_t nnz = (size_t)A->colptr[A->n];
    double *z = xmalloc(2 * nnz * sizeof *z);
    for (canopy_int j = 0; j < A->n; j++)
        for (canopy_int p = A->colptr[j]; p < A->colptr[j + 1]; p++) {
            canopy_int i = A->rowind[p];
            double complex a;
            if (c->gen == GEN_ZLU) a = v[p] * (i == j ? 1.0 + 0.5 * I : i > j ? 1.3 - 0.4 * I : 0.7 + 0.2 * I);
            else if (c->gen == GEN_CSYM) a = v[p] * (1.0 + 0.3 * I);
            else a = i == j ? v[p] + 0.5 : v[p] + (i > j ? -0.2 * I : 0.2 * I);
            z[2 * p] = creal(a), z[2 * p + 1] = cimag(a);
        }
    /* the generator's values came from the library's allocator: hand ours over in a copy */
    canopy_csc B = *A;
    B.values = z;
    B.arith = CANOPY_COMPLEX;
    B.kind = c->gen == GEN_ZLU ? CANOPY_KIND_GENERAL : c->gen == GEN_CSYM ? CANOPY_KIND_SYMMETRIC : CANOPY_KIND_HERMITIAN;
    canopy_int n = A->n;
    canopy_int *cp = xmalloc(((size_t)n + 1) * sizeof *cp), *ri = xmalloc(nnz * sizeof *ri);
    memcpy(cp, A->colptr, ((size_t)n + 1) * sizeof *cp);
    memcpy(ri, A->rowind, nnz * sizeof *ri);
    canopy_csc_free(A);
    *A = B;
    A->colptr = cp;
    A->rowind = ri;
    return 2; /* our own arrays: free() them */
}

static canopy_solver *make_solver(const tcase *c, const char *more, int threads)
{
    canopy_options o;
    canopy_options_default(&o);
    o.threads = threads;
    snprintf(o.cost_cache, sizeof o.cost_cache, "fixed");
    char opts[256], msg[256];
    snprintf(opts, sizeof opts, "%s %s", c->options, more);
    for (char *tok = strtok(opts, " "); tok; tok = strtok(NULL, " ")) {
        char *eq = strchr(tok, '=');
        if (!eq || !strncmp(tok, "kind=", 5)) continue;
        *eq = '\0';
        if (canopy_options_set(&o, tok, eq + 1, msg, sizeof msg) != CANOPY_SUCCESS) fail("%s: %s", c->name, msg);
    }
    canopy_solver *s = NULL;
    if (canopy_create(MPI_COMM_WORLD, &o, &s) != CANOPY_SUCCESS) {
        fail("%s: canopy_create: %s", c->name, canopy_last_error(NULL));
        return NULL;
    }
    return s;
}

#define NRHS 3
static const char *const op_name[] = {"A", "A^T", "A^H"};

/* the checks of one operator, the matrix centralized on rank 0 or (dist) in pieces on every rank */
static void check_ops(const tcase *c, const canopy_csc *A, const trip *T, canopy_solver *s, int dist)
{
    canopy_int n = A->n;
    size_t vs = T->cx ? 2 : 1, len = (size_t)n * NRHS;
    double *X = xmalloc(len * vs * sizeof(double)), *B = xmalloc(len * vs * sizeof(double));
    double *S = xmalloc(len * vs * sizeof(double)), *P = xmalloc(len * vs * sizeof(double));
    double *R = xmalloc(len * vs * sizeof(double));
    double complex *xc = xmalloc((size_t)n * sizeof *xc), *y = xmalloc((size_t)n * sizeof *y);
    canopy_stats st;
    canopy_get_stats(s, &st);
    int perturbed = st.perturbed_pivots > 0;
    for (size_t k = 0; k < len; k++)
        put(T, X, k, sin(0.37 * (double)k + 1) + (T->cx ? I * cos(0.11 * (double)k) : 0));
    /* the plain solve, to see that op(A) != A changes the answer */
    for (int trans = 0; trans <= 2; trans++) {
        for (int r = 0; r < NRHS; r++) {
            for (canopy_int k = 0; k < n; k++) xc[k] = get(T, X, (size_t)r * n + k);
            op_apply(T, trans, xc, y);
            for (canopy_int k = 0; k < n; k++) put(T, B, (size_t)r * n + k, y[k]);
        }
        const char *where = dist ? "matrix in pieces" : "centralized";
        {
            /* B and X on rank 0 (with the matrix in pieces too: canopy_refine_trans then refines
             * on every rank over its own rows) */
            memcpy(S, B, len * vs * sizeof(double));
            canopy_status rc = canopy_solve_trans(s, (canopy_trans)trans, NRHS, rank == 0 ? S : NULL, n);
            if (rc < 0) fail("%s %s op %s: canopy_solve_trans: %s", c->name, where, op_name[trans], canopy_last_error(s));
            if (rank == 0 && rc >= 0) {
                double e = berr(T, trans, NRHS, S, B);
                if (!perturbed && !(e <= 1e-9))
                    fail("%s %s op %s: unrefined backward error %.2e", c->name, where, op_name[trans], e);
            }
            /* op(A) != A (the generated general matrices): the same right-hand side solved with A is
             * no solution here */
            if (c->gen != GEN_FILE && A->kind == CANOPY_KIND_GENERAL && trans > 0) {
                memcpy(P, B, len * vs * sizeof(double));
                if (canopy_solve_trans(s, CANOPY_TRANS_NONE, NRHS, rank == 0 ? P : NULL, n) >= 0 && rank == 0 &&
                    berr(T, trans, NRHS, P, B) < 1e-6)
                    fail("%s op %s: the solve with A solves it too", c->name, op_name[trans]);
            }
            rc = canopy_refine_trans(s, (canopy_trans)trans, NRHS, rank == 0 ? B : NULL, n, rank == 0 ? S : NULL, n);
            if (rc < 0 || rc == CANOPY_WARN_NOT_CONVERGED)
                fail("%s %s op %s: canopy_refine_trans: %d %s", c->name, where, op_name[trans], rc, canopy_last_error(s));
            if (rank == 0) {
                double e = berr(T, trans, NRHS, S, B);
                canopy_get_stats(s, &st);
                if (!(e <= 1e-12) || !(st.backward_error <= 1e-12))
                    fail("%s %s op %s: refined backward error %.2e (library says %.2e)", c->name, where, op_name[trans], e,
                         st.backward_error);
            }
        }
        /* the rows spread over the ranks (rank r holds rows r, r + size, ...) */
        canopy_int nloc = 0;
        for (canopy_int k = rank; k < n; k += size) nloc++;
        canopy_int *rows = xmalloc(((size_t)nloc + 1) * sizeof *rows);
        double *bl = xmalloc(((size_t)nloc * NRHS + 1) * vs * sizeof(double));
        double *xl = xmalloc(((size_t)nloc * NRHS + 1) * vs * sizeof(double));
        for (canopy_int q = 0; q < nloc; q++) rows[q] = rank + q * size;
        for (int r = 0; r < NRHS; r++)
            for (canopy_int q = 0; q < nloc; q++)
                memcpy(bl + ((size_t)r * nloc + q) * vs, B + ((size_t)r * n + rows[q]) * vs, vs * sizeof(double));
        memcpy(xl, bl, (size_t)nloc * NRHS * vs * sizeof(double));
        canopy_status rc = canopy_solve_distributed_trans(s, (canopy_trans)trans, NRHS, nloc, rows, xl, nloc);
        if (rc < 0) fail("%s %s op %s: canopy_solve_distributed_trans: %s", c->name, where, op_name[trans], canopy_last_error(s));
        rc = canopy_refine_distributed_trans(s, (canopy_trans)trans, NRHS, nloc, rows, bl, nloc, xl, nloc);
        if (rc < 0 || rc == CANOPY_WARN_NOT_CONVERGED)
            fail("%s %s op %s: canopy_refine_distributed_trans: %d %s", c->name, where, op_name[trans], rc,
                 canopy_last_error(s));
        /* the whole solution on every rank, to measure it */
        memset(R, 0, len * vs * sizeof(double));
        for (int r = 0; r < NRHS; r++)
            for (canopy_int q = 0; q < nloc; q++)
                memcpy(R + ((size_t)r * n + rows[q]) * vs, xl + ((size_t)r * nloc + q) * vs, vs * sizeof(double));
        MPI_Allreduce(MPI_IN_PLACE, R, (int)(len * vs), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        double e = berr(T, trans, NRHS, R, B);
        if (!(e <= 1e-12)) fail("%s %s, rows spread, op %s: refined backward error %.2e", c->name, where, op_name[trans], e);
        free(rows);
        free(bl);
        free(xl);
    }
    free(X);
    free(B);
    free(S);
    free(P);
    free(R);
    free(xc);
    free(y);
}

static void run_case(const tcase *c)
{
    canopy_csc A;
    memset(&A, 0, sizeof A);
    int own = load(c, &A);
    if (!own) {
        if (rank == 0) printf("skip %s: not present\n", c->name);
        return;
    }
    trip T;
    to_triplets(&A, &T);
    /* centralized: the matrix on rank 0; one thread (no pool) and three (subtree tasks, pieces) */
    canopy_solver *s = NULL;
    for (int threads = 1; threads <= 3; threads += 2) {
        s = make_solver(c, "", threads);
        if (!s) continue;
        if (canopy_set_matrix(s, rank == 0 ? &A : NULL) != CANOPY_SUCCESS || canopy_analyze(s) < 0 ||
            canopy_factorize(s) < 0)
            fail("%s: %s", c->name, canopy_last_error(s));
        else
            check_ops(c, &A, &T, s, 0);
        /* an unknown operator is refused on every rank, nothing changed */
        canopy_int one = 0;
        double dummy[2] = {1, 1};
        if (canopy_solve_distributed_trans(s, (canopy_trans)7, 1, rank == 0 ? 1 : 0, &one, dummy, 1) != CANOPY_ERR_ARGUMENT)
            fail("%s: trans = 7 was not refused", c->name);
        canopy_destroy(&s);
    }
    /* the matrix in pieces: columns dealt to the ranks */
    if (size > 1) {
        s = make_solver(c, "", 2);
        canopy_int n = A.n, nc = 0;
        for (canopy_int j = rank; j < n; j += size) nc++;
        canopy_int *cols = xmalloc(((size_t)nc + 1) * sizeof *cols), *cp = xmalloc(((size_t)nc + 2) * sizeof *cp);
        int64_t nz = 0;
        for (canopy_int q = 0; q < nc; q++) {
            cols[q] = rank + q * size;
            nz += A.colptr[cols[q] + 1] - A.colptr[cols[q]];
        }
        size_t vs = A.arith == CANOPY_COMPLEX ? 2 : 1;
        canopy_int *ri = xmalloc(((size_t)nz + 1) * sizeof *ri);
        double *val = xmalloc(((size_t)nz + 1) * vs * sizeof(double));
        cp[0] = 0;
        for (canopy_int q = 0; q < nc; q++) {
            canopy_int j = cols[q], p0 = A.colptr[j] - A.base, m = A.colptr[j + 1] - A.colptr[j];
            for (canopy_int t = 0; t < m; t++) ri[cp[q] + t] = A.rowind[p0 + t] - A.base;
            memcpy(val + (size_t)cp[q] * vs, (const double *)A.values + (size_t)p0 * vs, (size_t)m * vs * sizeof(double));
            cp[q + 1] = cp[q] + m;
        }
        canopy_dist_csc D = {.n = n, .ncols = nc, .cols = cols, .colptr = cp, .rowind = ri, .values = val, .base = 0,
                             .arith = A.arith, .kind = A.kind, .triangle = A.triangle};
        if (s && (canopy_set_matrix_distributed(s, &D) != CANOPY_SUCCESS || canopy_analyze(s) < 0 || canopy_factorize(s) < 0))
            fail("%s in pieces: %s", c->name, canopy_last_error(s));
        else if (s)
            check_ops(c, &A, &T, s, 1);
        canopy_destroy(&s);
        free(cols);
        free(cp);
        free(ri);
        free(val);
    }
    if (rank == 0) printf("%s: n=%lld, A, A^T and A^H checked on %d rank(s)\n", c->name, (long long)A.n, size);
    trip_free(&T);
    if (own == 2) {
        free(A.colptr);
        free(A.rowind);
        free(A.values);
    } else {
        canopy_csc_free(&A);
    }
}

/*
 * A singular matrix on every rank count: the Neumann Laplacian of a path made unsymmetric (rows
 * scaled by 1 + i/n: still singular, ones span its kernel; A^T's kernel is another vector).
 * canopy_factorize says that pivots were perturbed on every rank; with strict=on a right-hand
 * side outside the range of op(A) is CANOPY_ERR_SINGULAR for A and A^T alike, on every rank,
 * while one inside the range of A (b = A y) is solved.
 */
static void check_singular(void)
{
    enum { N = 40 };
    canopy_int cp[N + 1], ri[3 * N], q = 0;
    double v[3 * N];
    for (canopy_int j = 0; j < N; j++) {
        cp[j] = q;
        for (canopy_int i = j > 0 ? j - 1 : 0; i <= j + 1 && i < N; i++) {
            double a = i == j ? (j == 0 || j == N - 1 ? 1 : 2) : -1;
            ri[q] = i, v[q++] = a * (1 + (double)i / N);
        }
    }
    cp[N] = q;
    canopy_csc A = {.n = N, .colptr = cp, .rowind = ri, .values = v, .base = 0, .arith = CANOPY_REAL,
                    .kind = CANOPY_KIND_GENERAL, .triangle = CANOPY_TRIANGLE_BOTH};
    const tcase c = {"singular path", GEN_FILE, "strict=on"};
    canopy_solver *s = make_solver(&c, "", 2);
    if (!s) return;
    canopy_status st = canopy_set_matrix(s, rank == 0 ? &A : NULL);
    if (st == CANOPY_SUCCESS) st = canopy_analyze(s);
    if (st >= 0) st = canopy_factorize(s);
    if (st != CANOPY_WARN_PIVOTS_PERTURBED)
        fail("singular path: canopy_factorize returned %d, not the perturbed-pivots warning (%s)", st, canopy_last_error(s));
    double b[N], x[N], y[N];
    for (int trans = 0; trans <= 1; trans++) {
        for (canopy_int i = 0; i < N; i++) b[i] = 1, x[i] = 1;
        canopy_solve_trans(s, (canopy_trans)trans, 1, rank == 0 ? x : NULL, N);
        st = canopy_refine_trans(s, (canopy_trans)trans, 1, rank == 0 ? b : NULL, N, rank == 0 ? x : NULL, N);
        if (st != CANOPY_ERR_SINGULAR)
            fail("singular path op %s, b outside the range: refine returned %d (%s)", op_name[trans], st, canopy_last_error(s));
    }
    /* b = A y: consistent */
    for (canopy_int i = 0; i < N; i++) y[i] = sin((double)i), b[i] = 0;
    for (canopy_int j = 0; j < N; j++)
        for (canopy_int p = cp[j]; p < cp[j + 1]; p++) b[ri[p]] += v[p] * y[j];
    memcpy(x, b, sizeof x);
    canopy_solve(s, 1, rank == 0 ? x : NULL, N);
    st = canopy_refine(s, 1, rank == 0 ? b : NULL, N, rank == 0 ? x : NULL, N);
    if (st != CANOPY_SUCCESS) fail("singular path, b = A y: refine returned %d (%s)", st, canopy_last_error(s));
    canopy_destroy(&s);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) run_case(&cases[c]);
    check_singular();
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("%s: %d failure(s) on %d rank(s)\n", all ? "FAIL" : "PASS", all, size);
    MPI_Finalize();
    return all ? 1 : 0;
}
