/*
 * bench_common.c: command line, matrix loading, b = A*ones, errors and JSON output shared by the
 * peer drivers. The matrix comes from Canopy's public API so that every solver sees the same
 * numbers.
 */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include "bench_common.h"

#include <dlfcn.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void usage(const char *prog, const char *extra)
{
    fprintf(stderr,
            "usage: %s [--spd] [--label NAME] [--ordering NAME]\n"
            "          (--laplacian NXxNY[xNZ] | MATRIX.{mtx,mtx.gz,rb,rsa,rua,...})\n"
            "  --spd             the matrix is known to be symmetric positive definite\n"
            "%s",
            prog, extra ? extra : "");
}

int bench_parse_args(int argc, char **argv, bench_args *args, const char *usage_extra)
{
    memset(args, 0, sizeof(*args));
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--spd") == 0) {
            args->spd = 1;
        } else if (strcmp(a, "--laplacian") == 0 && i + 1 < argc) {
            args->laplacian = 1;
            args->input = argv[++i];
        } else if (strcmp(a, "--label") == 0 && i + 1 < argc) {
            args->label = argv[++i];
        } else if (strcmp(a, "--ordering") == 0 && i + 1 < argc) {
            args->ordering = argv[++i];
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(argv[0], usage_extra);
            return -1;
        } else if (a[0] == '-' && a[1] == '-') {
            fprintf(stderr, "%s: unknown option %s\n", argv[0], a);
            usage(argv[0], usage_extra);
            return -1;
        } else if (args->input == NULL) {
            args->input = a;
        } else {
            fprintf(stderr, "%s: more than one matrix given (%s)\n", argv[0], a);
            return -1;
        }
    }
    if (args->input == NULL) {
        usage(argv[0], usage_extra);
        return -1;
    }
    return 0;
}

/* "NXxNY" or "NXxNYxNZ", every size >= 1. */
static int parse_grid(const char *s, long dims[3])
{
    int k = 0;
    const char *p = s;
    dims[0] = dims[1] = dims[2] = 1;
    for (;;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 1 || v > 100000000L || k == 3)
            return -1;
        dims[k++] = v;
        if (*end == '\0')
            break;
        if (*end != 'x' && *end != 'X')
            return -1;
        p = end + 1;
    }
    return k >= 2 ? k : -1;
}

int bench_load(const bench_args *args, canopy_csc *A, char *msg, size_t msglen)
{
    memset(A, 0, sizeof(*A));
    msg[0] = '\0';
    if (args->laplacian) {
        long d[3];
        int dims = parse_grid(args->input, d);
        if (dims < 0) {
            snprintf(msg, msglen, "bad grid size '%s' (want NXxNY or NXxNYxNZ)", args->input);
            return -1;
        }
        canopy_status st = canopy_generate_laplacian((canopy_int)d[0], (canopy_int)d[1],
                                                     (canopy_int)d[2], dims == 3 ? 7 : 5, A);
        if (st < 0) {
            snprintf(msg, msglen, "canopy_generate_laplacian: %s", canopy_strerror(st));
            return -1;
        }
    } else {
        canopy_status st = canopy_read_matrix(args->input, A, msg, msglen);
        if (st < 0) {
            if (msg[0] == '\0')
                snprintf(msg, msglen, "canopy_read_matrix: %s", canopy_strerror(st));
            return -1;
        }
    }
    if (A->base != 0) {
        /* Normalize to 0-based once so that every consumer below can ignore the base. */
        int64_t nz = (int64_t)A->colptr[A->n] - A->base;
        for (int64_t k = 0; k < nz; k++)
            A->rowind[k] -= (canopy_int)A->base;
        for (canopy_int j = 0; j <= A->n; j++)
            A->colptr[j] -= (canopy_int)A->base;
        A->base = 0;
    }
    return 0;
}

/* One stored triangle of a symmetric matrix stands for both. */
static int one_triangle(const canopy_csc *A)
{
    return A->kind != CANOPY_KIND_GENERAL && A->triangle != CANOPY_TRIANGLE_BOTH;
}

int64_t bench_nnz_full(const canopy_csc *A)
{
    int64_t nz = A->colptr[A->n];
    if (!one_triangle(A))
        return nz;
    int64_t diag = 0;
    for (canopy_int j = 0; j < A->n; j++)
        for (canopy_int p = A->colptr[j]; p < A->colptr[j + 1]; p++)
            diag += A->rowind[p] == j;
    return 2 * nz - diag;
}

void bench_matvec(const canopy_csc *A, const double *x, double *y)
{
    const double *v = A->values;
    int sym = one_triangle(A);
    for (canopy_int i = 0; i < A->n; i++)
        y[i] = 0.0;
    for (canopy_int j = 0; j < A->n; j++)
        for (canopy_int p = A->colptr[j]; p < A->colptr[j + 1]; p++) {
            canopy_int i = A->rowind[p];
            y[i] += v[p] * x[j];
            if (sym && i != j)
                y[j] += v[p] * x[i];
        }
}

double bench_norm_inf(const canopy_csc *A)
{
    const double *v = A->values;
    int sym = one_triangle(A);
    double *row = calloc((size_t)A->n, sizeof(*row));
    double norm = 0.0;
    if (row == NULL)
        return NAN;
    for (canopy_int j = 0; j < A->n; j++)
        for (canopy_int p = A->colptr[j]; p < A->colptr[j + 1]; p++) {
            canopy_int i = A->rowind[p];
            row[i] += fabs(v[p]);
            if (sym && i != j)
                row[j] += fabs(v[p]);
        }
    for (canopy_int i = 0; i < A->n; i++)
        norm = row[i] > norm ? row[i] : norm;
    free(row);
    return norm;
}

void bench_errors(const canopy_csc *A, const double *b, const double *x, double *berr, double *ferr)
{
    double *r = malloc((size_t)A->n * sizeof(*r));
    double rn = 0.0, xn = 0.0, bn = 0.0, fe = 0.0;
    *berr = *ferr = NAN;
    if (r == NULL)
        return;
    bench_matvec(A, x, r);
    for (canopy_int i = 0; i < A->n; i++) {
        double d = fabs(b[i] - r[i]);
        rn = d > rn || isnan(d) ? d : rn;
        xn = fabs(x[i]) > xn ? fabs(x[i]) : xn;
        bn = fabs(b[i]) > bn ? fabs(b[i]) : bn;
        d = fabs(x[i] - 1.0);
        fe = d > fe || isnan(d) ? d : fe;
    }
    free(r);
    *berr = rn / (bench_norm_inf(A) * xn + bn);
    *ferr = fe; /* ||x - ones||_inf / ||ones||_inf */
}

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The peers' only threads are the BLAS's (Debian's MUMPS is built without OpenMP; CHOLMOD's
 * supernodal factorization is BLAS-parallel): report OpenBLAS's thread count when it is there. */
static int blas_threads(void)
{
    int (*get)(void);
    *(void **)&get = dlsym(RTLD_DEFAULT, "openblas_get_num_threads");
    int t = get != NULL ? get() : 1;
    return t >= 1 ? t : 1;
}

void bench_report_init(bench_report *r, const char *solver, const bench_args *args)
{
    memset(r, 0, sizeof(*r));
    r->solver = solver;
    if (args->label != NULL)
        snprintf(r->matrix, sizeof(r->matrix), "%s", args->label);
    else if (args->laplacian)
        snprintf(r->matrix, sizeof(r->matrix), "laplacian-%s", args->input);
    else {
        const char *slash = strrchr(args->input, '/');
        snprintf(r->matrix, sizeof(r->matrix), "%s", slash ? slash + 1 : args->input);
    }
    snprintf(r->status, sizeof(r->status), "ok");
    r->n = r->nnz = r->nnz_factor = -1;
    r->flops = r->time_analyze = r->time_factorize = r->time_solve = NAN;
    r->backward_error = r->forward_error = r->peak_memory_bytes = NAN;
    r->ranks = 1;
    r->threads_per_rank = blas_threads();
}

/* JSON has no NaN: unknown numbers are null. */
static void put_num(const char *key, double v, int last)
{
    if (isfinite(v))
        printf("\"%s\": %.6g%s", key, v, last ? "" : ", ");
    else
        printf("\"%s\": null%s", key, last ? "" : ", ");
}

static void put_int(const char *key, int64_t v)
{
    if (v >= 0)
        printf("\"%s\": %lld, ", key, (long long)v);
    else
        printf("\"%s\": null, ", key);
}

static void put_str(const char *key, const char *s)
{
    printf("\"%s\": \"", key);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            putchar('\\');
        if ((unsigned char)*s >= 0x20)
            putchar(*s);
    }
    printf("\", ");
}

void bench_report_extra(bench_report *r, const char *key, double v)
{
    size_t used = strlen(r->extra);
    if (used + 64 >= sizeof(r->extra))
        return;
    if (isfinite(v))
        snprintf(r->extra + used, sizeof(r->extra) - used, "%s\"%s\": %.6g", used ? ", " : "", key, v);
    else
        snprintf(r->extra + used, sizeof(r->extra) - used, "%s\"%s\": null", used ? ", " : "", key);
}

void bench_report_print(const bench_report *r)
{
    double gflops = NAN;
    if (isfinite(r->flops) && r->time_factorize > 0)
        gflops = r->flops / r->time_factorize * 1e-9;
    printf("{");
    put_str("solver", r->solver);
    put_str("matrix", r->matrix);
    put_str("status", r->status);
    put_str("factorization", r->factorization);
    put_str("ordering", r->ordering);
    put_str("note", r->note);
    put_int("n", r->n);
    put_int("nnz", r->nnz);
    put_int("nnz_factor", r->nnz_factor);
    put_num("flops", r->flops, 0);
    put_num("time_analyze", r->time_analyze, 0);
    put_num("time_factorize", r->time_factorize, 0);
    put_num("time_solve", r->time_solve, 0);
    put_num("gflops_factorize", gflops, 0);
    put_num("backward_error", r->backward_error, 0);
    put_num("forward_error", r->forward_error, 0);
    printf("\"refinement_steps\": 0, ");
    put_int("perturbed_pivots", r->perturbed_pivots);
    put_num("peak_memory_bytes", r->peak_memory_bytes, 0);
    if (r->extra[0] != '\0')
        printf("%s, ", r->extra);
    printf("\"ranks\": %d, \"threads_per_rank\": %d}\n", r->ranks, r->threads_per_rank);
    fflush(stdout);
}
