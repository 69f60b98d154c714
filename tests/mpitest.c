/*
 * Helpers of the multi-rank integration tests (tests/test_mpi.c): matrices, known solutions,
 * residuals computed independently of the library, the distributed pieces of a matrix, and the
 * solution files compared across rank counts. Public API and MPI only.
 */
#include "mpitest.h"

#include <stdarg.h>

int rank = 0, nranks = 1;
int failures = 0;

void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL (rank %d): ", rank);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    failures++;
}

/* ---- matrices, right-hand sides, residuals (independent of the library) ------------------ */

size_t scalar_size(const canopy_csc *A)
{
    return A->arith == CANOPY_COMPLEX ? 2 * sizeof(double) : sizeof(double);
}

double complex entry(const canopy_csc *A, int64_t p)
{
    const double *v = A->values;
    return A->arith == CANOPY_COMPLEX ? CMPLX(v[2 * p], v[2 * p + 1]) : v[p];
}

double complex get(const canopy_csc *A, const void *x, int64_t i)
{
    const double *v = x;
    return A->arith == CANOPY_COMPLEX ? CMPLX(v[2 * i], v[2 * i + 1]) : v[i];
}

void put(const canopy_csc *A, void *x, int64_t i, double complex z)
{
    double *v = x;
    if (A->arith == CANOPY_COMPLEX) {
        v[2 * i] = creal(z);
        v[2 * i + 1] = cimag(z);
    } else {
        v[i] = creal(z);
    }
}

/* Does entry (i, j) stand for (j, i) too (one triangle of a symmetric matrix stored)? */
static int mirrored(const canopy_csc *A, int64_t i, int64_t j)
{
    return A->kind != CANOPY_KIND_GENERAL && A->triangle != CANOPY_TRIANGLE_BOTH && i != j;
}

/* y = A x for nrhs columns (leading dimension n), and the row sums of |A| in rowabs (if not NULL). */
void spmv(const canopy_csc *A, int nrhs, const void *x, void *y, double *rowabs)
{
    int64_t n = A->n;
    double complex *acc = calloc((size_t)(n * nrhs) + 1, sizeof *acc);
    if (rowabs) memset(rowabs, 0, (size_t)n * sizeof *rowabs);
    for (int64_t j = 0; j < n; j++)
        for (int64_t p = A->colptr[j] - A->base; p < A->colptr[j + 1] - A->base; p++) {
            int64_t i = A->rowind[p] - A->base;
            double complex a = entry(A, p);
            int mir = mirrored(A, i, j);
            double complex at = A->kind == CANOPY_KIND_HERMITIAN ? conj(a) : a;
            for (int k = 0; k < nrhs; k++) {
                acc[i + k * n] += a * get(A, x, j + k * n);
                if (mir) acc[j + k * n] += at * get(A, x, i + k * n);
            }
            if (rowabs) {
                rowabs[i] += cabs(a);
                if (mir) rowabs[j] += cabs(a);
            }
        }
    for (int64_t i = 0; i < n * nrhs; i++) put(A, y, i, acc[i]);
    free(acc);
}

/* The known solution: entries of both signs and of different sizes, a different column each. */
void *make_xtrue(const canopy_csc *A)
{
    void *x = malloc((size_t)A->n * NRHS * scalar_size(A) + 16);
    for (int k = 0; k < NRHS; k++)
        for (int64_t i = 0; i < A->n; i++) {
            double re = (1.0 + (double)((i * 7 + k) % 13) / 13.0) * ((i + k) % 3 == 0 ? -1.0 : 1.0) + 0.25 * k;
            double im = (double)((i * 5 + 3 * k) % 11) / 11.0 - 0.5;
            put(A, x, i + k * A->n, A->arith == CANOPY_COMPLEX ? CMPLX(re, im) : re);
        }
    return x;
}

/* max over columns of ||b - A x||_inf / (||A||_inf ||x||_inf + ||b||_inf), like stats.backward_error */
double backward_error(const canopy_csc *A, const void *x, const void *b)
{
    int64_t n = A->n;
    void *ax = malloc((size_t)n * NRHS * scalar_size(A) + 16);
    double *rowabs = malloc((size_t)n * sizeof *rowabs + 8), anorm = 0, berr = 0;
    spmv(A, NRHS, x, ax, rowabs);
    for (int64_t i = 0; i < n; i++) anorm = fmax(anorm, rowabs[i]);
    for (int k = 0; k < NRHS; k++) {
        double r = 0, xn = 0, bn = 0;
        for (int64_t i = 0; i < n; i++) {
            r = fmax(r, cabs(get(A, b, i + k * n) - get(A, ax, i + k * n)));
            xn = fmax(xn, cabs(get(A, x, i + k * n)));
            bn = fmax(bn, cabs(get(A, b, i + k * n)));
        }
        double d = anorm * xn + bn;
        berr = fmax(berr, d > 0 ? r / d : r);
        if (!isfinite(r)) berr = INFINITY;
    }
    free(ax);
    free(rowabs);
    return berr;
}

/* max over columns of max_i |x_i - y_i| / max_i |y_i| */
double rel_diff(const canopy_csc *A, const void *x, const void *y)
{
    double worst = 0;
    for (int k = 0; k < NRHS; k++) {
        double d = 0, m = 0;
        for (int64_t i = 0; i < A->n; i++) {
            double complex yi = get(A, y, i + k * A->n);
            d = fmax(d, cabs(get(A, x, i + k * A->n) - yi));
            m = fmax(m, cabs(yi));
        }
        worst = fmax(worst, m > 0 ? d / m : d);
        if (!isfinite(d)) worst = INFINITY;
    }
    return worst;
}

const char *matrix_dir(void)
{
    static char buf[4096];
    const char *env = getenv("CANOPY_TEST_MATRICES");
    if (env && *env) return env;
    const char *top = getenv("top_srcdir");
    snprintf(buf, sizeof buf, "%s/../shared/matrices", top ? top : ".");
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/MANIFEST.md", buf);
    FILE *f = fopen(probe, "r");
    if (f == NULL) return NULL;
    fclose(f);
    return buf;
}

/* Every rank loads the matrix (the distributed layouts cut their pieces from it). 1: loaded,
 * 0: not available (skipped), -1: error. The outcome is the same on every rank (same files). */
int load(const mcase *mc, canopy_csc *A)
{
    memset(A, 0, sizeof *A);
    if (strncmp(mc->name, "laplacian", 9) == 0) {
        /* "laplacian" (10 x 10 x 10) or "laplacian:NXxNYxNZ" */
        int nx = 10, ny = 10, nz = 10;
        if (mc->name[9] == ':' && sscanf(mc->name + 10, "%dx%dx%d", &nx, &ny, &nz) != 3) {
            fail("%s: bad generated matrix name", mc->name);
            return -1;
        }
        if (canopy_generate_laplacian(nx, ny, nz, nz > 1 ? 7 : 5, A) != CANOPY_SUCCESS) {
            fail("canopy_generate_laplacian failed");
            return -1;
        }
        return 1;
    }
    const char *dir = matrix_dir();
    if (dir == NULL) return 0;
    char path[4400], msg[512];
    snprintf(path, sizeof path, "%s/%s", dir, mc->name);
    FILE *f = fopen(path, "rb");
    if (f == NULL) return 0;
    fclose(f);
    if (canopy_read_matrix(path, A, msg, sizeof msg) != CANOPY_SUCCESS) {
        fail("%s: %s", mc->name, msg);
        return -1;
    }
    if (mc->kind >= 0) A->kind = (canopy_matrix_kind)mc->kind;
    return 1;
}

/* ---- distributed pieces ------------------------------------------------------------------- */


void piece_free(piece *P)
{
    free(P->d.cols);
    free(P->d.colptr);
    free(P->d.rowind);
    free(P->d.values);
    free(P->jcol);
    memset(P, 0, sizeof *P);
}

/*
 * This rank's piece of A, 1-based. Columns in contiguous blocks of uneven sizes (rank r weighs
 * r + 1; with 3 ranks or more rank 1 holds no column at all). To exercise the assembly rule (an
 * entry given by several ranks is summed), the first column of every other rank's block is split
 * with rank 0: rank 0 gives half of its even-numbered entries, the owner the other half and all
 * odd-numbered entries (halves of doubles add up exactly). Rank 0 lists those extra columns after
 * its own, so local columns are not in increasing order either. With even = 1: equal blocks, no
 * sharing (the error tests).
 */
void make_piece(const canopy_csc *A, int even, piece *P)
{
    int64_t n = A->n, *lo = malloc(((size_t)nranks + 1) * sizeof *lo), wsum = 0, acc = 0;
    for (int r = 0; r < nranks; r++) wsum += even ? 1 : (nranks >= 3 && r == 1) ? 0 : r + 1;
    lo[0] = 0;
    for (int r = 0; r < nranks; r++) {
        acc += even ? 1 : (nranks >= 3 && r == 1) ? 0 : r + 1;
        lo[r + 1] = n * acc / wsum;
    }
    /* local column list: own block, then (rank 0, shared mode) the first column of the others */
    int64_t ncols = lo[rank + 1] - lo[rank], extra = 0;
    if (!even && rank == 0)
        for (int r = 1; r < nranks; r++) extra += lo[r + 1] > lo[r];
    memset(P, 0, sizeof *P);
    P->jcol = malloc((size_t)(ncols + extra + 1) * sizeof *P->jcol);
    int64_t m = 0;
    for (int64_t j = lo[rank]; j < lo[rank + 1]; j++) P->jcol[m++] = j;
    if (!even && rank == 0)
        for (int r = 1; r < nranks; r++)
            if (lo[r + 1] > lo[r]) P->jcol[m++] = lo[r];
    size_t sz = scalar_size(A);
    int64_t nnz = 0;
    for (int64_t c = 0; c < m; c++) nnz += A->colptr[P->jcol[c] + 1] - A->colptr[P->jcol[c]];
    P->d.n = A->n;
    P->d.ncols = (canopy_int)m;
    P->d.cols = malloc((size_t)(m + 1) * sizeof(canopy_int));
    P->d.colptr = malloc((size_t)(m + 1) * sizeof(canopy_int));
    P->d.rowind = malloc((size_t)(nnz + 1) * sizeof(canopy_int));
    P->d.values = malloc((size_t)(nnz + 1) * sz);
    P->d.base = 1;
    P->d.arith = A->arith;
    P->d.kind = A->kind;
    P->d.triangle = A->triangle;
    int64_t q = 0;
    P->d.colptr[0] = 1;
    for (int64_t c = 0; c < m; c++) {
        int64_t j = P->jcol[c];
        /* a shared column: the first of another rank's block (seen from rank 0 or from its owner) */
        int owner_side = !even && rank > 0 && j == lo[rank] && j < lo[rank + 1];
        int zero_side = !even && rank == 0 && c >= ncols;
        P->d.cols[c] = (canopy_int)(j + 1);
        for (int64_t p = A->colptr[j] - A->base, k = 0; p < A->colptr[j + 1] - A->base; p++, k++) {
            double complex v = entry(A, p);
            if (zero_side || owner_side) {
                if (k % 2 == 0) v *= 0.5;
                else if (zero_side) continue;
            }
            P->d.rowind[q] = (canopy_int)(A->rowind[p] - A->base + 1);
            double *dv = P->d.values;
            if (A->arith == CANOPY_COMPLEX) {
                dv[2 * q] = creal(v);
                dv[2 * q + 1] = cimag(v);
            } else {
                dv[q] = creal(v);
            }
            q++;
        }
        P->d.colptr[c + 1] = (canopy_int)(q + 1);
    }
    free(lo);
}

/* The pieces of every rank add up to A exactly (a check of make_piece itself, gathered on rank 0). */
void check_pieces(const canopy_csc *A, const piece *P, const char *name)
{
    int64_t nnz = P->d.colptr[P->d.ncols] - 1;
    int cpx = A->arith == CANOPY_COMPLEX;
    /* (column, row, re, im) of every local entry, 0-based */
    double *mine = malloc((size_t)(4 * nnz + 4) * sizeof *mine);
    for (int64_t c = 0, q = 0; c < P->d.ncols; c++)
        for (int64_t p = P->d.colptr[c] - 1; p < P->d.colptr[c + 1] - 1; p++, q++) {
            const double *dv = P->d.values;
            mine[4 * q] = (double)(P->d.cols[c] - 1);
            mine[4 * q + 1] = (double)(P->d.rowind[p] - 1);
            mine[4 * q + 2] = cpx ? dv[2 * p] : dv[p];
            mine[4 * q + 3] = cpx ? dv[2 * p + 1] : 0.0;
        }
    int cnt = (int)(4 * nnz), *counts = NULL, *displs = NULL;
    double *all = NULL;
    if (rank == 0) counts = malloc((size_t)nranks * sizeof *counts), displs = malloc((size_t)nranks * sizeof *displs);
    MPI_Gather(&cnt, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    int total = 0;
    if (rank == 0) {
        for (int r = 0; r < nranks; r++) displs[r] = total, total += counts[r];
        all = malloc((size_t)total * sizeof *all + 8);
    }
    MPI_Gatherv(mine, cnt, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        int64_t annz = A->colptr[A->n] - A->base, bad = 0;
        double complex *sum = calloc((size_t)annz + 1, sizeof *sum);
        for (int t = 0; t < total / 4; t++) {
            int64_t j = (int64_t)all[4 * t], i = (int64_t)all[4 * t + 1], p;
            for (p = A->colptr[j] - A->base; p < A->colptr[j + 1] - A->base; p++)
                if (A->rowind[p] - A->base == i) break;
            if (p == A->colptr[j + 1] - A->base) bad++;
            else sum[p] += CMPLX(all[4 * t + 2], all[4 * t + 3]);
        }
        for (int64_t p = 0; p < annz; p++) bad += sum[p] != entry(A, p);
        if (bad) fail("%s: the distributed pieces do not add up to the matrix (%lld entries differ)", name,
                      (long long)bad);
        free(sum);
    }
    free(mine);
    free(counts);
    free(displs);
    free(all);
}

/* ---- solution files ----------------------------------------------------------------------- */

void write_solution(FILE *f, const char *name, const canopy_csc *A, const void *x, double ferr)
{
    fprintf(f, "matrix %s n %lld nrhs %d arith %s ferr %.3e\n", name, (long long)A->n, NRHS,
            A->arith == CANOPY_COMPLEX ? "complex" : "real", ferr);
    for (int64_t i = 0; i < A->n * NRHS; i++) {
        double complex z = get(A, x, i);
        if (A->arith == CANOPY_COMPLEX) fprintf(f, "%.17g %.17g\n", creal(z), cimag(z));
        else fprintf(f, "%.17g\n", creal(z));
    }
}

void write_vector(FILE *f, const char *name, const canopy_csc *A, const void *v, double ferr)
{
    fprintf(f, "matrix %s n %lld nrhs 1 arith %s ferr %.3e\n", name, (long long)A->n,
            A->arith == CANOPY_COMPLEX ? "complex" : "real", ferr);
    for (int64_t i = 0; i < A->n; i++) {
        double complex z = get(A, v, i);
        if (A->arith == CANOPY_COMPLEX) fprintf(f, "%.17g %.17g\n", creal(z), cimag(z));
        else fprintf(f, "%.17g\n", creal(z));
    }
}

double rel_diff_vector(const canopy_csc *A, const void *x, const void *y)
{
    double d = 0, m = 0;
    for (int64_t i = 0; i < A->n; i++) {
        d = fmax(d, cabs(get(A, x, i) - get(A, y, i)));
        m = fmax(m, cabs(get(A, y, i)));
    }
    return m > 0 ? d / m : d;
}

typedef struct solfile {
    int count;
    char name[MAX_SOLUTIONS][128];
    long long n[MAX_SOLUTIONS];
    int nrhs[MAX_SOLUTIONS], cpx[MAX_SOLUTIONS];
    double ferr[MAX_SOLUTIONS];
    double *val[MAX_SOLUTIONS];
} solfile;

static int read_solutions(const char *path, solfile *S)
{
    memset(S, 0, sizeof *S);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        fprintf(stderr, "cannot open %s\n", path);
        return -1;
    }
    char ar[16];
    while (S->count < MAX_SOLUTIONS) {
        int c = S->count;
        int got = fscanf(f, " matrix %127s n %lld nrhs %d arith %15s ferr %lg", S->name[c], &S->n[c], &S->nrhs[c], ar,
                         &S->ferr[c]);
        if (got == EOF) break;
        if (got != 5 || S->n[c] < 0 || S->nrhs[c] < 1) {
            fprintf(stderr, "%s: malformed header of solution %d\n", path, c + 1);
            fclose(f);
            return -1;
        }
        S->cpx[c] = strcmp(ar, "complex") == 0;
        long long m = S->n[c] * S->nrhs[c] * (S->cpx[c] ? 2 : 1);
        S->val[c] = malloc((size_t)m * sizeof(double) + 8);
        for (long long i = 0; i < m; i++)
            if (fscanf(f, "%lg", &S->val[c][i]) != 1) {
                fprintf(stderr, "%s: %s: truncated values\n", path, S->name[c]);
                fclose(f);
                return -1;
            }
        S->count++;
    }
    fclose(f);
    return 0;
}

/* Every matrix of OTHER is in REF with the same solution up to rounding. */
int compare_files(const char *ref, const char *other)
{
    static solfile R, O;
    if (read_solutions(ref, &R) || read_solutions(other, &O)) return 1;
    int bad = 0;
    if (O.count == 0) {
        fprintf(stderr, "%s: no solutions\n", other);
        bad = 1;
    }
    for (int c = 0; c < O.count; c++) {
        int r;
        for (r = 0; r < R.count && strcmp(R.name[r], O.name[c]); r++) continue;
        if (r == R.count || R.n[r] != O.n[c] || R.nrhs[r] != O.nrhs[c] || R.cpx[r] != O.cpx[c]) {
            fprintf(stderr, "%s: %s is missing from %s or has another size\n", other, O.name[c], ref);
            bad = 1;
            continue;
        }
        int w = R.cpx[r] ? 2 : 1;
        double worst = 0;
        for (int k = 0; k < R.nrhs[r]; k++) {
            double d = 0, m = 0;
            for (long long i = 0; i < R.n[r]; i++) {
                const double *y = R.val[r] + w * (i + k * R.n[r]), *x = O.val[c] + w * (i + k * R.n[r]);
                double complex yi = w == 2 ? CMPLX(y[0], y[1]) : y[0], xi = w == 2 ? CMPLX(x[0], x[1]) : x[0];
                d = fmax(d, cabs(xi - yi));
                m = fmax(m, cabs(yi));
            }
            worst = fmax(worst, m > 0 ? d / m : d);
            if (!isfinite(d)) worst = INFINITY;
        }
        double tol = fmax(SAME_TOL, 100 * R.ferr[r]);
        printf("%-24s relative difference %.2e (tolerance %.1e)%s\n", O.name[c], worst, tol,
               worst <= tol ? "" : "  FAIL");
        if (!(worst <= tol)) bad = 1;
    }
    for (int c = 0; c < MAX_SOLUTIONS; c++) free(R.val[c]), free(O.val[c]);
    return bad;
}
