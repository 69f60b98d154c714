/*
 * superlu_dist_driver.c: SuperLU_DIST (pdgssvx, LU with static pivoting) on one matrix over all
 * MPI ranks, reported as one JSON line with canopy-solve --json's keys.
 *
 * Rank 0 reads the matrix through Canopy's reader (bench_common), expands a symmetric file to
 * full storage, and hands each rank a block of rows (SLU_NR_loc, the input pdgssvx wants); b is
 * A*ones. The process grid is 1 x P by default (--grid RxC). Options are SuperLU_DIST's defaults
 * (set_default_options_dist: equilibration, METIS on A'+A, Debian's NOROWPERM, static pivoting)
 * except: no iterative refinement (IterRefine = NOREFINE, as for the other peers) and no
 * statistics printout. --ordering picks ColPerm: metis (METIS_AT_PLUS_A, the default),
 * parmetis (PARMETIS; in Debian ParMETIS_V3_NodeND comes from PT-SCOTCH's ParMETIS interface),
 * mmd (MMD_AT_PLUS_A), mmd_ata (MMD_ATA), natural.
 *
 * Phases: pdgssvx does everything in one call, so it is called twice: with nrhs = 0 (Fact =
 * DOFACT: equilibration, orderings, symbolic factorization, distribution, numerical
 * factorization, no solve) and again with Fact = FACTORED and nrhs = 1 (the triangular solves).
 * time_factorize = SuperLU_DIST's own timers stat.utime[DIST] + stat.utime[FACT] (filling the
 * distributed L/U structures plus the numerical factorization); time_analyze = the rest of the
 * first call's wall time (equilibration, row/column orderings, elimination tree, symbolic
 * factorization); time_solve = the second call's wall time. Every time is the slowest rank's
 * (max over ranks, all ranks started together after a barrier). The JSON also carries the
 * per-phase timers (stat.utime[EQUIL], [ROWPERM], [COLPERM], [SYMBFAC], [DIST], [FACT], [SOLVE])
 * and both calls' wall times.
 */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include <superlu_ddefs.h>

#include "bench_common.h"

/* Indices travel as MPI_INT: the Debian build has 32-bit int_t (no XSDK_INDEX_SIZE=64). */
_Static_assert(sizeof(int_t) == sizeof(int), "int_t is not int: change MPI_INT below");

typedef struct {
    const char *name;
    colperm_t perm;
} order_name;

static const order_name orders[] = {
    {"metis", METIS_AT_PLUS_A}, {"parmetis", PARMETIS}, {"mmd", MMD_AT_PLUS_A},
    {"mmd_ata", MMD_ATA},       {"natural", NATURAL},
};

static const char *colperm_name(colperm_t p)
{
    for (size_t k = 0; k < sizeof(orders) / sizeof(orders[0]); k++)
        if (orders[k].perm == p)
            return orders[k].name;
    return "other";
}

/* OpenMP threads of SuperLU_DIST's factorization (libgomp is loaded with it). */
static int omp_threads(void)
{
    int (*get)(void);
    *(void **)&get = dlsym(RTLD_DEFAULT, "omp_get_max_threads");
    int t = get != NULL ? get() : 1;
    return t >= 1 ? t : 1;
}

/* Remove "--grid RxC" (this driver's own option) from argv. */
static int take_own_options(int *argc, char **argv, int *nprow, int *npcol)
{
    int out = 1;
    for (int i = 1; i < *argc; i++) {
        if (strcmp(argv[i], "--grid") == 0 && i + 1 < *argc) {
            if (sscanf(argv[++i], "%dx%d", nprow, npcol) != 2 || *nprow < 1 || *npcol < 1) {
                fprintf(stderr, "superlu_dist_driver: bad --grid '%s' (want RxC)\n", argv[i]);
                return -1;
            }
        } else {
            argv[out++] = argv[i];
        }
    }
    *argc = out;
    argv[out] = NULL;
    return 0;
}

/*
 * Full row-wise (CSR) copy of A on rank 0: row i lists every (i, j) of the full matrix, a stored
 * triangle of a symmetric matrix standing for both.
 */
static int to_csr(const canopy_csc *A, int_t **rowptr, int_t **colind, double **val)
{
    int sym = A->kind != CANOPY_KIND_GENERAL && A->triangle != CANOPY_TRIANGLE_BOTH;
    int64_t n = A->n, nz = 0;
    int_t *rp = calloc((size_t)n + 1, sizeof(*rp));
    if (rp == NULL)
        return -1;
    for (canopy_int j = 0; j < A->n; j++)
        for (canopy_int p = A->colptr[j]; p < A->colptr[j + 1]; p++) {
            canopy_int i = A->rowind[p];
            rp[i + 1]++;
            if (sym && i != j)
                rp[j + 1]++;
        }
    for (int64_t i = 0; i < n; i++)
        rp[i + 1] += rp[i];
    nz = rp[n];
    int_t *ci = malloc((size_t)(nz ? nz : 1) * sizeof(*ci));
    double *v = malloc((size_t)(nz ? nz : 1) * sizeof(*v));
    int_t *next = malloc((size_t)(n ? n : 1) * sizeof(*next));
    if (ci == NULL || v == NULL || next == NULL) {
        free(rp), free(ci), free(v), free(next);
        return -1;
    }
    memcpy(next, rp, (size_t)n * sizeof(*next));
    const double *av = A->values;
    for (canopy_int j = 0; j < A->n; j++)
        for (canopy_int p = A->colptr[j]; p < A->colptr[j + 1]; p++) {
            canopy_int i = A->rowind[p];
            ci[next[i]] = (int_t)j;
            v[next[i]++] = av[p];
            if (sym && i != j) {
                ci[next[j]] = (int_t)i;
                v[next[j]++] = av[p];
            }
        }
    free(next);
    *rowptr = rp;
    *colind = ci;
    *val = v;
    return 0;
}

/* First row without a structurally nonzero diagonal entry, or -1. */
static int64_t missing_diagonal(int64_t n, const int_t *rowptr, const int_t *colind)
{
    for (int64_t i = 0; i < n; i++) {
        int found = 0;
        for (int_t p = rowptr[i]; p < rowptr[i + 1] && !found; p++)
            found = colind[p] == (int_t)i;
        if (!found)
            return i;
    }
    return -1;
}

/* Rows [first[r], first[r + 1]) go to rank r. */
static void row_blocks(int_t n, int nprocs, int_t *first)
{
    int_t q = n / nprocs, rem = n % nprocs;
    first[0] = 0;
    for (int r = 0; r < nprocs; r++)
        first[r + 1] = first[r] + q + (r < rem ? 1 : 0);
}

/* Entries stored in this rank's part of L and U (L blocks with the dense diagonal block). */
static double local_lu_entries(int_t n, dLUstruct_t *LU, gridinfo_t *grid)
{
    int_t *xsup = LU->Glu_persist->xsup;
    int_t nsupers = LU->Glu_persist->supno[n - 1] + 1;
    int myrow = MYROW(grid->iam, grid), mycol = MYCOL(grid->iam, grid);
    double nz = 0.0;
    for (int_t gb = mycol; gb < nsupers; gb += grid->npcol) {
        int_t *idx = LU->Llu->Lrowind_bc_ptr[LBj(gb, grid)];
        if (idx != NULL)
            nz += (double)idx[1] * (double)SuperSize(gb); /* rows of the block column x width */
    }
    for (int_t gb = myrow; gb < nsupers; gb += grid->nprow) {
        int_t *idx = LU->Llu->Ufstnz_br_ptr[LBi(gb, grid)];
        if (idx != NULL)
            nz += (double)idx[1]; /* values of the block row of U */
    }
    return nz;
}

static double max_over_ranks(double v)
{
    double m;
    MPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return m;
}

static double sum_over_ranks(double v)
{
    double s;
    MPI_Allreduce(&v, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return s;
}

int main(int argc, char **argv)
{
    bench_args args;
    bench_report rep;
    canopy_csc A;
    int rank = 0, nprocs = 1, ok = 1, provided, rc = 1;
    int nprow = 1, npcol = 0;
    char msg[512];
    int_t *rowptr = NULL, *colind = NULL;
    double *val = NULL, *b_full = NULL, *x_full = NULL;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (take_own_options(&argc, argv, &nprow, &npcol) != 0 ||
        bench_parse_args(argc, argv, &args,
                         "  --ordering NAME   metis (METIS_AT_PLUS_A, default), parmetis, mmd\n"
                         "                    (MMD_AT_PLUS_A), mmd_ata, natural\n"
                         "  --grid RxC        process grid (default 1xP, P = MPI ranks)\n") != 0) {
        MPI_Finalize();
        return 2;
    }
    if (npcol == 0)
        npcol = nprocs / nprow;
    bench_report_init(&rep, "superlu_dist", &args);
    rep.ranks = nprocs;
    rep.threads_per_rank = rep.threads_per_rank > omp_threads() ? rep.threads_per_rank : omp_threads();
    snprintf(rep.factorization, sizeof(rep.factorization), "lu");
    memset(&A, 0, sizeof(A));

    superlu_dist_options_t options;
    set_default_options_dist(&options);
    options.IterRefine = NOREFINE; /* one plain solve, as for the other peers */
    options.PrintStat = NO;
    {
        const char *want = args.ordering ? args.ordering : "metis";
        size_t k;
        for (k = 0; k < sizeof(orders) / sizeof(orders[0]); k++)
            if (strcmp(want, orders[k].name) == 0)
                break;
        if (k == sizeof(orders) / sizeof(orders[0])) {
            snprintf(rep.status, sizeof(rep.status), "error: unknown ordering '%s'", want);
            ok = 0;
        } else {
            options.ColPerm = orders[k].perm;
        }
    }
    if (ok && nprow * npcol != nprocs) {
        snprintf(rep.status, sizeof(rep.status), "error: grid %dx%d needs %d ranks, have %d",
                 nprow, npcol, nprow * npcol, nprocs);
        ok = 0;
    }

    /* Rank 0 reads the matrix and builds its full CSR copy and b = A*ones. */
    int64_t n64 = 0;
    if (rank == 0 && ok) {
        if (bench_load(&args, &A, msg, sizeof(msg)) != 0) {
            snprintf(rep.status, sizeof(rep.status), "error: %s", msg);
            ok = 0;
        } else if (A.arith != CANOPY_REAL || A.values == NULL) {
            snprintf(rep.status, sizeof(rep.status), "n/a: not a real matrix");
            ok = 0;
        } else if ((int64_t)A.n >= INT32_MAX || bench_nnz_full(&A) >= INT32_MAX) {
            snprintf(rep.status, sizeof(rep.status), "n/a: too large for 32-bit int_t SuperLU_DIST");
            ok = 0;
        } else if (to_csr(&A, &rowptr, &colind, &val) != 0) {
            snprintf(rep.status, sizeof(rep.status), "error: out of memory copying the matrix");
            ok = 0;
        } else if (options.RowPerm == NOROWPERM && missing_diagonal(A.n, rowptr, colind) >= 0) {
            /* SuperLU_DIST's symbolic factorization aborts the whole job on a zero diagonal
             * when the rows are not permuted (Debian has no MC64): say so instead. */
            snprintf(rep.status, sizeof(rep.status),
                     "n/a: zero diagonal at row %lld and no row permutation (Debian: no MC64)",
                     (long long)missing_diagonal(A.n, rowptr, colind));
            ok = 0;
        } else {
            n64 = A.n;
            rep.n = A.n;
            rep.nnz = bench_nnz_full(&A);
            b_full = malloc((size_t)A.n * sizeof(*b_full));
            x_full = malloc((size_t)A.n * sizeof(*x_full));
            if (b_full == NULL || x_full == NULL) {
                snprintf(rep.status, sizeof(rep.status), "error: out of memory");
                ok = 0;
            } else {
                for (canopy_int i = 0; i < A.n; i++)
                    x_full[i] = 1.0;
                bench_matvec(&A, x_full, b_full);
            }
        }
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!ok) {
        if (rank == 0) {
            bench_report_print(&rep);
            if (A.colptr != NULL)
                canopy_csc_free(&A);
        }
        free(rowptr), free(colind), free(val), free(b_full), free(x_full);
        MPI_Finalize();
        return 1;
    }
    MPI_Bcast(&n64, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
    int_t n = (int_t)n64;

    /* Hand every rank its block of rows (SuperLU_DIST frees what it is given: its allocators). */
    int_t *first = malloc((size_t)(nprocs + 1) * sizeof(*first));
    int *cnt = malloc((size_t)nprocs * sizeof(*cnt)), *dsp = malloc((size_t)nprocs * sizeof(*dsp));
    row_blocks(n, nprocs, first);
    int_t m_loc = first[rank + 1] - first[rank], fst_row = first[rank];
    int_t nnz_loc = 0;
    if (rank == 0) {
        for (int r = 1; r < nprocs; r++) {
            int_t nzr = rowptr[first[r + 1]] - rowptr[first[r]];
            MPI_Send(&nzr, 1, MPI_INT, r, 0, MPI_COMM_WORLD);
        }
        nnz_loc = rowptr[first[1]];
    } else {
        MPI_Recv(&nnz_loc, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    int_t *rp_loc = intMalloc_dist(m_loc + 1);
    int_t *ci_loc = intMalloc_dist(nnz_loc);
    double *v_loc = doubleMalloc_dist(nnz_loc);
    double *b_loc = doubleMalloc_dist(m_loc);
    for (int r = 0; r < nprocs; r++) {
        cnt[r] = (int)(rank == 0 ? rowptr[first[r + 1]] - rowptr[first[r]] : 0);
        dsp[r] = (int)(rank == 0 ? rowptr[first[r]] : 0);
    }
    MPI_Scatterv(colind, cnt, dsp, MPI_INT, ci_loc, (int)nnz_loc, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Scatterv(val, cnt, dsp, MPI_DOUBLE, v_loc, (int)nnz_loc, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    for (int r = 0; r < nprocs; r++) {
        cnt[r] = (int)(first[r + 1] - first[r]);
        dsp[r] = (int)first[r];
    }
    MPI_Scatterv(b_full, cnt, dsp, MPI_DOUBLE, b_loc, (int)m_loc, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    /* Row pointers: rank 0 sends each block's, every rank rebases its own to 0. */
    if (rank == 0) {
        for (int r = 1; r < nprocs; r++)
            MPI_Send(rowptr + first[r], (int)(first[r + 1] - first[r] + 1), MPI_INT, r, 1,
                     MPI_COMM_WORLD);
        memcpy(rp_loc, rowptr, (size_t)(m_loc + 1) * sizeof(*rp_loc));
    } else {
        MPI_Recv(rp_loc, (int)(m_loc + 1), MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    for (int_t i = m_loc; i >= 0; i--)
        rp_loc[i] -= rp_loc[0];
    free(rowptr), free(colind), free(val);
    rowptr = NULL, colind = NULL, val = NULL;

    SuperMatrix SA;
    dCreate_CompRowLoc_Matrix_dist(&SA, n, n, nnz_loc, m_loc, fst_row, v_loc, ci_loc, rp_loc,
                                   SLU_NR_loc, SLU_D, SLU_GE);

    gridinfo_t grid;
    superlu_gridinit(MPI_COMM_WORLD, nprow, npcol, &grid);
    dScalePermstruct_t perm;
    dLUstruct_t LU;
    dSOLVEstruct_t solve;
    SuperLUStat_t stat;
    double berr[1];
    int info = 0;
    dScalePermstructInit(n, n, &perm);
    dLUstructInit(n, &LU);
    memset(&solve, 0, sizeof(solve));
    PStatInit(&stat);

    /* 1: everything up to and including the numerical factorization (nrhs = 0: no solve). */
    options.Fact = DOFACT;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    pdgssvx(&options, &SA, &perm, b_loc, (int)m_loc, 0, &grid, &LU, &solve, berr, &stat, &info);
    double wall_fact = max_over_ranks(MPI_Wtime() - t0);
    double ut[NPHASES];
    for (int k = 0; k < NPHASES; k++)
        ut[k] = max_over_ranks(stat.utime[k]);
    double flops = sum_over_ranks((double)stat.ops[FACT]);
    int info_max = (int)max_over_ranks((double)info);
    if (info_max != 0) {
        snprintf(rep.status, sizeof(rep.status), "error: pdgssvx factorization info=%d%s", info_max,
                 info_max > 0 && info_max <= n ? " (zero pivot U(i,i))" : "");
        goto cleanup;
    }
    rep.time_factorize = ut[DIST] + ut[FACT];
    rep.time_analyze = wall_fact - rep.time_factorize;
    rep.flops = flops;
    rep.nnz_factor = (int64_t)sum_over_ranks(local_lu_entries(n, &LU, &grid));
    rep.perturbed_pivots = (int64_t)sum_over_ranks((double)stat.TinyPivots);
    {
        superlu_dist_mem_usage_t mem;
        dQuerySpace_dist(n, &LU, &grid, &stat, &mem);
        float lo, hi;
        MPI_Allreduce(&mem.for_lu, &lo, 1, MPI_FLOAT, MPI_MIN, MPI_COMM_WORLD);
        MPI_Allreduce(&mem.for_lu, &hi, 1, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD);
        bench_report_extra(&rep, "factor_bytes_rank_min", lo);
        bench_report_extra(&rep, "factor_bytes_rank_max", hi);
        rep.peak_memory_bytes = sum_over_ranks((double)mem.total);
        /* per rank: L/U plus the factorization's peak buffer (what SuperLU_DIST accounts) */
        MPI_Allreduce(&mem.total, &lo, 1, MPI_FLOAT, MPI_MIN, MPI_COMM_WORLD);
        MPI_Allreduce(&mem.total, &hi, 1, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD);
        bench_report_extra(&rep, "peak_memory_rank_min", lo);
        bench_report_extra(&rep, "peak_memory_rank_max", hi);
        bench_report_extra(&rep, "factor_bytes", sum_over_ranks((double)mem.for_lu));
    }

    /* 2: the solve with the factors (Fact = FACTORED), b overwritten by x. */
    PStatFree(&stat);
    PStatInit(&stat);
    options.Fact = FACTORED;
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    pdgssvx(&options, &SA, &perm, b_loc, (int)m_loc, 1, &grid, &LU, &solve, berr, &stat, &info);
    rep.time_solve = max_over_ranks(MPI_Wtime() - t0);
    double ut_solve = max_over_ranks(stat.utime[SOLVE]);
    info_max = (int)max_over_ranks((double)info);
    if (info_max != 0) {
        snprintf(rep.status, sizeof(rep.status), "error: pdgssvx solve info=%d", info_max);
        goto cleanup;
    }
    MPI_Gatherv(b_loc, (int)m_loc, MPI_DOUBLE, x_full, cnt, dsp, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0)
        bench_errors(&A, b_full, x_full, &rep.backward_error, &rep.forward_error);

    bench_report_extra(&rep, "time_wall_factor_call", wall_fact);
    bench_report_extra(&rep, "time_wall_solve_call", rep.time_solve);
    bench_report_extra(&rep, "utime_equil", ut[EQUIL]);
    bench_report_extra(&rep, "utime_rowperm", ut[ROWPERM]);
    bench_report_extra(&rep, "utime_colperm", ut[COLPERM]);
    bench_report_extra(&rep, "utime_symbfac", ut[SYMBFAC]);
    bench_report_extra(&rep, "utime_dist", ut[DIST]);
    bench_report_extra(&rep, "utime_fact", ut[FACT]);
    bench_report_extra(&rep, "utime_solve", ut_solve);
    bench_report_extra(&rep, "grid_rows", nprow);
    bench_report_extra(&rep, "grid_cols", npcol);
    rc = 0;

cleanup:
    {
        int maj = 0, min = 0, bug = 0;
        superlu_dist_GetVersionNumber(&maj, &min, &bug);
        snprintf(rep.ordering, sizeof(rep.ordering), "%s", colperm_name(options.ColPerm));
        snprintf(rep.note, sizeof(rep.note),
                 "SuperLU_DIST %d.%d.%d; grid %dx%d; RowPerm=%s; Equil=%s; IterRefine=NOREFINE; "
                 "ReplaceTinyPivot=%s; OMP threads %d",
                 maj, min, bug, nprow, npcol,
                 options.RowPerm == NOROWPERM ? "NOROWPERM" :
                 options.RowPerm == LargeDiag_HWPM ? "LargeDiag_HWPM" : "LargeDiag_MC64",
                 options.Equil == YES ? "YES" : "NO", options.ReplaceTinyPivot == YES ? "YES" : "NO",
                 omp_threads());
    }
    PStatFree(&stat);
    Destroy_CompRowLoc_Matrix_dist(&SA);
    dScalePermstructFree(&perm);
    dDestroy_LU(n, &grid, &LU);
    dLUstructFree(&LU);
    if (options.SolveInitialized)
        dSolveFinalize(&options, &solve);
    superlu_gridexit(&grid);
    SUPERLU_FREE(b_loc);
    if (rank == 0) {
        bench_report_print(&rep);
        canopy_csc_free(&A);
    }
    free(b_full), free(x_full), free(first), free(cnt), free(dsp);
    MPI_Finalize();
    return rc;
}
