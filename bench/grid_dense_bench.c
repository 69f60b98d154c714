/*
 * bench/grid_dense_bench: the dense factorization and solve on a 2D block-cyclic grid of ranks
 * (issue 31; src/numeric/grid_dense.h, grid_dense_solve.h), the building block of the 2D top.
 *
 *   mpirun -np P bench/grid_dense_bench [--n N] [--nb NB] [--kind llt|ldlt|lu] [--grid PRxPC|auto]
 *                                       [--lookahead 0|1] [--repeat R] [--nrhs K] [--seed S]
 *
 * Each rank fills its own tiles of the local block-cyclic array from a deterministic function of
 * the global (i, j) (no scatter of a big matrix): SPD and diagonally dominant for llt, symmetric
 * indefinite (alternating signs, some small diagonal entries: 2x2 pivots) for ldlt, unsymmetric
 * (some small diagonal entries: interchanges inside the tiles) for lu. The factorization runs R
 * times (refilled before each, timed from a barrier, the slowest rank's time), then one solve
 * (forward + backward, K right-hand sides). The backward error max_r ||A x - b||_inf /
 * (||A||_inf ||x||_inf + ||b||_inf) is computed distributed: x goes to every rank, each rank
 * multiplies its refilled tiles, the partial products are summed on rank 0.
 * One JSON line on rank 0's stdout (grep '^{'). Ranks beyond pr * pc stay idle.
 * Internal code: linked with libcanopy_core.la like the tests (built by `make`, not installed).
 */
#include "base/config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include <cblas.h>
#include "base/common.h"
#include "numeric/grid_dense.h"
#include "numeric/grid_dense_solve.h"
#include "numeric/numeric.h"

#if defined(HAVE_OPENBLAS_GET_NUM_THREADS)
#define BENCH_OPENBLAS 1
char *openblas_get_corename(void);
#endif

static int rank, size;
static uint64_t seed = 1;

static void usage(void)
{
    if (rank == 0)
        fprintf(stderr, "usage: grid_dense_bench [--n N] [--nb NB] [--kind llt|ldlt|lu] [--grid PRxPC|auto]\n"
                        "                        [--lookahead 0|1] [--repeat R] [--nrhs K] [--seed S]\n");
}

/* splitmix64 of (seed, a, b): a uniform double in [-1, 1) */
static double hash2(uint64_t a, uint64_t b)
{
    uint64_t z = seed * 0x9E3779B97F4A7C15ULL + a * 0xBF58476D1CE4E5B9ULL + b * 0x94D049BB133111EBULL + 0x632BE59BD9B4E019ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return (double)(z >> 11) / 9007199254740992.0 * 2 - 1;
}

/* entry (i, j) of the matrix of the given kind and order n */
static double entry(canopy_factorization kind, cint n, cint i, cint j)
{
    if (kind != CANOPY_FACT_LU && i < j) {
        cint t = i;
        i = j;
        j = t;
    }
    double a = hash2((uint64_t)i, (uint64_t)j);
    if (i != j) return a;
    if (kind == CANOPY_FACT_LLT) return fabs(a) + (double)n;
    if (j % 7 == 3) return 0.01 * a; /* a small pivot: 2x2 pivots (LDL^T), interchanges (LU) */
    if (kind == CANOPY_FACT_LDLT) return j % 2 ? (double)n : -(double)n;
    return a + (double)n;
}

/* global index of local index l on coordinate q of a grid dimension of p (tiles of nb) */
static cint global_index(cint l, cint nb, int p, int q)
{
    return ((l / nb) * p + q) * nb + l % nb;
}

static void fill(const grid_dense *g, double *loc)
{
    int r = rank / g->pc, c = rank % g->pc;
    cint rows = grid_dense_count(g->n, g->nb, g->pr, r), cols = grid_dense_count(g->n, g->nb, g->pc, c);
    cint ld = grid_dense_ld(g, rank);
    for (cint lj = 0; lj < cols; lj++) {
        cint gj = global_index(lj, g->nb, g->pc, c);
        for (cint li = 0; li < rows; li++)
            loc[li + (size_t)lj * ld] = entry(g->kind, g->n, global_index(li, g->nb, g->pr, r), gj);
    }
}

static double rhs_entry(cint i, cint r)
{
    return hash2(~(uint64_t)i, (uint64_t)r + 0x5555);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double elapsed_max(double t)
{
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return t;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long n = 2000, nb = 128, lookahead = 1, repeat = 3, nrhs = 1;
    int pr = 0, pc = 0;
    const char *kindname = "llt";
    for (int a = 1; a < argc; a++) {
        const char *o = argv[a], *v = a + 1 < argc ? argv[a + 1] : NULL;
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
            usage();
            MPI_Finalize();
            return 0;
        }
        if (!v) {
            usage();
            MPI_Finalize();
            return 2;
        }
        a++;
        if (!strcmp(o, "--n")) n = atol(v);
        else if (!strcmp(o, "--nb")) nb = atol(v);
        else if (!strcmp(o, "--kind")) kindname = v;
        else if (!strcmp(o, "--lookahead")) lookahead = atol(v);
        else if (!strcmp(o, "--repeat")) repeat = atol(v);
        else if (!strcmp(o, "--nrhs")) nrhs = atol(v);
        else if (!strcmp(o, "--seed")) seed = (uint64_t)strtoull(v, NULL, 10);
        else if (!strcmp(o, "--grid")) {
            if (strcmp(v, "auto") && (sscanf(v, "%dx%d", &pr, &pc) != 2 || pr < 1 || pc < 1)) {
                usage();
                MPI_Finalize();
                return 2;
            }
        } else {
            usage();
            MPI_Finalize();
            return 2;
        }
    }
    canopy_factorization kind;
    if (!strcmp(kindname, "llt")) kind = CANOPY_FACT_LLT;
    else if (!strcmp(kindname, "ldlt")) kind = CANOPY_FACT_LDLT;
    else if (!strcmp(kindname, "lu")) kind = CANOPY_FACT_LU;
    else {
        usage();
        MPI_Finalize();
        return 2;
    }
    if (pr == 0) { /* auto: as square as possible, pr <= pc */
        for (int p = 1; p * p <= size; p++)
            if (size % p == 0) pr = p;
        pc = size / pr;
    }
    if (n < 1 || nb < 1 || repeat < 1 || nrhs < 1 || (lookahead != 0 && lookahead != 1) || pr * pc > size) {
        if (rank == 0) fprintf(stderr, "grid_dense_bench: bad arguments (grid %dx%d on %d ranks)\n", pr, pc, size);
        MPI_Finalize();
        return 2;
    }
    int old_threads = numeric_blas_single();

    /* the grid's communicator: the first pr * pc ranks */
    MPI_Comm comm;
    int ingrid = rank < pr * pc;
    MPI_Comm_split(MPI_COMM_WORLD, ingrid ? 0 : MPI_UNDEFINED, rank, &comm);
    double tfac = 0, tsol = 0, berr = 0;
    int64_t perturbed = 0;
    int status = 0;
    double *times = calloc((size_t)repeat, sizeof *times);
    if (ingrid) {
        grid_dense g = {.comm = comm, .pr = pr, .pc = pc, .n = (cint)n, .m = (cint)n, .nb = (cint)nb, .kind = kind,
                        .threshold = 1e-10, .tag = 100, .lookahead = (int)lookahead};
        canopy_err e = {0};
        if (grid_dense_check(&g, &e) != CANOPY_SUCCESS) {
            if (rank == 0) fprintf(stderr, "grid_dense_bench: %s\n", e.msg);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        size_t lsize = (size_t)grid_dense_local_size(&g, rank);
        double *loc = malloc(lsize * sizeof *loc + 8);
        cint *ipiv = calloc((size_t)n + 1, sizeof *ipiv);
        double *dsub = calloc((size_t)n + 1, sizeof *dsub);
        cint ld = grid_dense_rhs_ld(&g, rank), brows = grid_dense_rhs_rows(&g, rank);
        double *rhs = calloc((size_t)ld * (size_t)nrhs + 8, sizeof *rhs);
        if (!loc || !ipiv || !dsub || !rhs || !times) {
            fprintf(stderr, "grid_dense_bench: rank %d: out of memory\n", rank);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        for (long it = 0; it < repeat; it++) {
            fill(&g, loc);
            MPI_Barrier(comm);
            double t0 = MPI_Wtime();
            canopy_status st = grid_dense_factor_d(&g, loc, ipiv, dsub, &perturbed, &e);
            double t = MPI_Wtime() - t0;
            MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, comm);
            times[it] = t;
            if (st < 0) {
                if (rank == 0) fprintf(stderr, "grid_dense_bench: factor: %s\n", e.msg);
                status = 1;
                break;
            }
        }
        qsort(times, (size_t)repeat, sizeof *times, cmp_double);
        tfac = repeat % 2 ? times[repeat / 2] : 0.5 * (times[repeat / 2 - 1] + times[repeat / 2]);

        /* the right-hand sides, on grid column 0 */
        for (cint li = 0; li < brows; li++) {
            cint gi = global_index(li, g.nb, pr, rank / pc);
            for (cint r = 0; r < (cint)nrhs; r++) rhs[li + (size_t)r * ld] = rhs_entry(gi, r);
        }
        if (!status) {
            MPI_Barrier(comm);
            double t0 = MPI_Wtime();
            canopy_status st = grid_dense_solve_d(&g, loc, ipiv, dsub, (cint)nrhs, rhs, ld, &e);
            double t = MPI_Wtime() - t0;
            MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, comm);
            tsol = t;
            if (st != CANOPY_SUCCESS) {
                if (rank == 0) fprintf(stderr, "grid_dense_bench: solve: %s\n", e.msg);
                status = 1;
            }
        }
        if (!status) {
            /* backward error, distributed: x on every rank, A's tiles refilled, partial A x summed */
            size_t nr = (size_t)n * (size_t)nrhs;
            double *X = malloc(nr * sizeof *X + 8), *Y = calloc(nr + 1, sizeof *Y), *rowsum = calloc((size_t)n + 1, sizeof *rowsum);
            int r = rank / pc, c = rank % pc;
            cint lrows = grid_dense_count(g.n, g.nb, pr, r), lcols = grid_dense_count(g.n, g.nb, pc, c);
            double *Xl = malloc((size_t)lcols * (size_t)nrhs * sizeof *Xl + 8);
            double *Yl = calloc((size_t)lrows * (size_t)nrhs + 1, sizeof *Yl);
            if (!X || !Y || !rowsum || !Xl || !Yl) {
                fprintf(stderr, "grid_dense_bench: rank %d: out of memory\n", rank);
                MPI_Abort(MPI_COMM_WORLD, 3);
            }
            if (grid_dense_rhs_gather_d(&g, 0, rhs, ld, (cint)nrhs, X, (cint)n, &e) != CANOPY_SUCCESS) {
                if (rank == 0) fprintf(stderr, "grid_dense_bench: gather: %s\n", e.msg);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            MPI_Bcast(X, (int)nr, MPI_DOUBLE, 0, comm);
            fill(&g, loc);
            cint lda = grid_dense_ld(&g, rank);
            for (cint q = 0; q < (cint)nrhs; q++)
                for (cint lj = 0; lj < lcols; lj++)
                    Xl[lj + (size_t)q * lcols] = X[global_index(lj, g.nb, pc, c) + (size_t)q * n];
            if (lrows > 0 && lcols > 0)
                cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)lrows, (int)nrhs, (int)lcols, 1.0, loc,
                            (int)lda, Xl, (int)lcols, 0.0, Yl, (int)lrows);
            for (cint li = 0; li < lrows; li++) {
                cint gi = global_index(li, g.nb, pr, r);
                double s = 0;
                for (cint lj = 0; lj < lcols; lj++) s += fabs(loc[li + (size_t)lj * lda]);
                rowsum[gi] = s;
                for (cint q = 0; q < (cint)nrhs; q++) Y[gi + (size_t)q * n] = Yl[li + (size_t)q * lrows];
            }
            MPI_Reduce(rank == 0 ? MPI_IN_PLACE : Y, Y, (int)nr, MPI_DOUBLE, MPI_SUM, 0, comm);
            MPI_Reduce(rank == 0 ? MPI_IN_PLACE : rowsum, rowsum, (int)n, MPI_DOUBLE, MPI_SUM, 0, comm);
            if (rank == 0) {
                double anorm = 0;
                for (cint i = 0; i < (cint)n; i++) anorm = fmax(anorm, rowsum[i]);
                for (cint q = 0; q < (cint)nrhs; q++) {
                    double rn = 0, xn = 0, bn = 0;
                    for (cint i = 0; i < (cint)n; i++) {
                        double b = rhs_entry(i, q), x = X[i + (size_t)q * n];
                        rn = fmax(rn, fabs(Y[i + (size_t)q * n] - b));
                        xn = fmax(xn, fabs(x));
                        bn = fmax(bn, fabs(b));
                    }
                    berr = fmax(berr, rn / (anorm * xn + bn));
                }
            }
            free(X);
            free(Y);
            free(rowsum);
            free(Xl);
            free(Yl);
        }
        free(loc);
        free(ipiv);
        free(dsub);
        free(rhs);
        MPI_Comm_free(&comm);
    }
    MPI_Allreduce(MPI_IN_PLACE, &status, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    tfac = elapsed_max(tfac);
    if (rank == 0 && !status) {
        double flops = (kind == CANOPY_FACT_LU ? 2.0 : 1.0) * (double)n * (double)n * (double)n / 3.0;
        const char *core = "";
#ifdef BENCH_OPENBLAS
        core = openblas_get_corename();
        if (!core) core = "";
#endif
        printf("{\"bench\": \"grid_dense\", \"ranks\": %d, \"pr\": %d, \"pc\": %d, \"n\": %ld, \"nb\": %ld, \"kind\": \"%s\", "
               "\"lookahead\": %ld, \"repeat\": %ld, \"nrhs\": %ld, \"time_factor_median\": %.6f, \"time_factor_min\": %.6f, "
               "\"gflops\": %.3f, \"time_solve\": %.6f, \"backward_error\": %.3e, \"perturbed\": %lld, "
               "\"openblas_core\": \"%s\"}\n",
               size, pr, pc, n, nb, kindname, lookahead, repeat, nrhs, tfac, times[0], tfac > 0 ? flops / tfac * 1e-9 : 0.0,
               tsol, berr, (long long)perturbed, core);
        fflush(stdout);
    }
    free(times);
    numeric_blas_restore(old_threads);
    MPI_Finalize();
    return status;
}
