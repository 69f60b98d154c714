/*
 * cholmod_driver.c: CHOLMOD supernodal LL^T (cholmod_l_analyze / cholmod_l_factorize /
 * cholmod_l_solve) on one matrix, reported as one JSON line with canopy-solve --json's keys.
 * CHOLMOD serves SPD matrices only here: unsymmetric inputs are reported "n/a", and a symmetric
 * matrix that turns out indefinite is reported "n/a: not positive definite".
 * No MPI: the driver only uses Canopy's readers, which need none.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <cholmod.h>

#include "bench_common.h"

static const char *order_name(int ordering)
{
    switch (ordering) {
    case CHOLMOD_NATURAL: return "natural";
    case CHOLMOD_GIVEN: return "given";
    case CHOLMOD_AMD: return "amd";
    case CHOLMOD_METIS: return "metis";
    case CHOLMOD_NESDIS: return "nesdis";
    case CHOLMOD_COLAMD: return "colamd";
    case CHOLMOD_POSTORDERED: return "postordered";
    default: return "unknown";
    }
}

/* Select the ordering strategy: "default" keeps CHOLMOD's own (AMD, METIS if AMD fills badly). */
static int set_ordering(cholmod_common *cm, const char *name)
{
    int method;
    if (name == NULL || strcmp(name, "default") == 0)
        return 0;
    if (strcmp(name, "metis") == 0)
        method = CHOLMOD_METIS;
    else if (strcmp(name, "nesdis") == 0)
        method = CHOLMOD_NESDIS;
    else if (strcmp(name, "amd") == 0)
        method = CHOLMOD_AMD;
    else if (strcmp(name, "natural") == 0)
        method = CHOLMOD_NATURAL;
    else
        return -1;
    cm->nmethods = 1;
    cm->method[0].ordering = method;
    return 0;
}

/* Copy the 0-based canopy matrix into a packed CHOLMOD matrix holding the triangle we use. */
static cholmod_sparse *to_cholmod(const canopy_csc *A, cholmod_common *cm)
{
    /* Full storage (generators, or general files asserted SPD): stype = 1 reads the upper part. */
    int stype = A->triangle == CANOPY_TRIANGLE_LOWER && A->kind != CANOPY_KIND_GENERAL ? -1 : 1;
    int64_t nz = A->colptr[A->n];
    cholmod_sparse *C = cholmod_l_allocate_sparse((size_t)A->n, (size_t)A->n, (size_t)nz, 0, 1,
                                                  stype, CHOLMOD_REAL, cm);
    if (C == NULL)
        return NULL;
    SuiteSparse_long *cp = C->p, *ri = C->i;
    double *cx = C->x;
    const double *v = A->values;
    for (canopy_int j = 0; j <= A->n; j++)
        cp[j] = A->colptr[j];
    for (int64_t k = 0; k < nz; k++) {
        ri[k] = A->rowind[k];
        cx[k] = v[k];
    }
    return C;
}

int main(int argc, char **argv)
{
    bench_args args;
    bench_report rep;
    canopy_csc A;
    char msg[512];

    if (bench_parse_args(argc, argv, &args,
                         "  --ordering NAME   default (CHOLMOD's choice), metis, nesdis, amd, natural\n") != 0)
        return 2;
    bench_report_init(&rep, "cholmod", &args);
    snprintf(rep.factorization, sizeof(rep.factorization), "llt");

    if (bench_load(&args, &A, msg, sizeof(msg)) != 0) {
        snprintf(rep.status, sizeof(rep.status), "error: %s", msg);
        bench_report_print(&rep);
        return 1;
    }
    rep.n = A.n;
    rep.nnz = bench_nnz_full(&A);
    if (A.arith != CANOPY_REAL || A.values == NULL) {
        snprintf(rep.status, sizeof(rep.status), "n/a: not a real matrix");
        bench_report_print(&rep);
        canopy_csc_free(&A);
        return 0;
    }
    if (A.kind == CANOPY_KIND_GENERAL && !args.spd) {
        snprintf(rep.status, sizeof(rep.status), "n/a: unsymmetric (CHOLMOD is run on SPD only)");
        bench_report_print(&rep);
        canopy_csc_free(&A);
        return 0;
    }

    cholmod_common cm;
    cholmod_l_start(&cm);
    cm.print = 0;
    cm.supernodal = CHOLMOD_SUPERNODAL;
    cm.quick_return_if_not_posdef = 1;
    if (set_ordering(&cm, args.ordering) != 0) {
        snprintf(rep.status, sizeof(rep.status), "error: unknown ordering '%s'", args.ordering);
        bench_report_print(&rep);
        cholmod_l_finish(&cm);
        canopy_csc_free(&A);
        return 2;
    }

    int rc = 1;
    cholmod_sparse *C = to_cholmod(&A, &cm);
    cholmod_factor *L = NULL;
    cholmod_dense *B = NULL, *X = NULL;
    if (C == NULL) {
        snprintf(rep.status, sizeof(rep.status), "error: out of memory copying the matrix");
        goto done;
    }

    double t0 = bench_now();
    L = cholmod_l_analyze(C, &cm);
    rep.time_analyze = bench_now() - t0;
    if (L == NULL) {
        snprintf(rep.status, sizeof(rep.status), "error: cholmod_l_analyze status %d", cm.status);
        goto done;
    }
    rep.nnz_factor = (int64_t)cm.lnz;
    rep.flops = cm.fl;
    snprintf(rep.ordering, sizeof(rep.ordering), "%s%s", order_name(cm.method[cm.selected].ordering),
             cm.nmethods == 0 ? " (default strategy)" : "");

    snprintf(rep.note, sizeof(rep.note), "CHOLMOD %d.%d.%d; %s",
             CHOLMOD_MAIN_VERSION, CHOLMOD_SUB_VERSION, CHOLMOD_SUBSUB_VERSION,
             L->is_super ? "supernodal" : "simplicial");

    t0 = bench_now();
    cholmod_l_factorize(C, L, &cm);
    rep.time_factorize = bench_now() - t0;
    if (cm.status == CHOLMOD_NOT_POSDEF) {
        snprintf(rep.status, sizeof(rep.status), "n/a: not positive definite (pivot %ld of %ld)",
                 (long)L->minor, (long)A.n);
        rc = 0;
        goto done;
    } else if (cm.status < CHOLMOD_OK) {
        snprintf(rep.status, sizeof(rep.status), "error: cholmod_l_factorize status %d", cm.status);
        goto done;
    }

    B = cholmod_l_allocate_dense((size_t)A.n, 1, (size_t)A.n, CHOLMOD_REAL, &cm);
    double *ones = malloc((size_t)A.n * sizeof(*ones));
    if (B == NULL || ones == NULL) {
        free(ones);
        snprintf(rep.status, sizeof(rep.status), "error: out of memory for the right-hand side");
        goto done;
    }
    for (canopy_int i = 0; i < A.n; i++)
        ones[i] = 1.0;
    bench_matvec(&A, ones, B->x);
    free(ones);

    t0 = bench_now();
    X = cholmod_l_solve(CHOLMOD_A, L, B, &cm);
    rep.time_solve = bench_now() - t0;
    if (X == NULL) {
        snprintf(rep.status, sizeof(rep.status), "error: cholmod_l_solve status %d", cm.status);
        goto done;
    }
    bench_errors(&A, B->x, X->x, &rep.backward_error, &rep.forward_error);
    rep.peak_memory_bytes = (double)cm.memory_usage;
    rc = 0;

done:
    bench_report_print(&rep);
    cholmod_l_free_dense(&X, &cm);
    cholmod_l_free_dense(&B, &cm);
    cholmod_l_free_factor(&L, &cm);
    cholmod_l_free_sparse(&C, &cm);
    cholmod_l_finish(&cm);
    canopy_csc_free(&A);
    return rc;
}
