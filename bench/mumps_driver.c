/*
 * mumps_driver.c: MUMPS (dmumps, centralized assembled input on the host, PAR = 1) on one matrix,
 * reported as one JSON line with canopy-solve --json's keys. JOB = 1, 2, 3 are timed separately
 * with MPI_Wtime: all ranks start a phase together (barrier) and the phase's time is the slowest
 * rank's (max over ranks), so that several ranks are timed as Canopy times them.
 * SYM = 1 for SPD, 2 for symmetric, 0 otherwise. The default ordering is
 * sequential SCOTCH (ICNTL(28) = 1, ICNTL(7) = 3); the ordering MUMPS reports as actually used
 * (INFOG(7), INFOG(32)) goes into the output.
 * Link with a MUMPS built with SCOTCH (Debian: libmumps-ptscotch-dev, -ldmumps_ptscotch);
 * the plain Debian libdmumps has AMD/AMF/PORD/QAMD only.
 */
#include <sys/resource.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include <dmumps_c.h>

#include "bench_common.h"

#define ICNTL(i) icntl[(i) - 1]
#define INFOG(i) infog[(i) - 1]
#define RINFOG(i) rinfog[(i) - 1]
#define INFO(i) info[(i) - 1]
#define USE_COMM_WORLD_HOST 0

/* MUMPS returns counts above 2^31 as negative millions. */
static int64_t mumps_count(MUMPS_INT v)
{
    return v >= 0 ? (int64_t)v : -(int64_t)v * 1000000;
}

static const char *seq_order_name(int v)
{
    switch (v) {
    case 0: return "amd";
    case 1: return "given";
    case 2: return "amf";
    case 3: return "scotch";
    case 4: return "pord";
    case 5: return "metis";
    case 6: return "qamd";
    default: return "unknown";
    }
}

static const char *par_order_name(int v)
{
    switch (v) {
    case 1: return "ptscotch";
    case 2: return "parmetis";
    default: return "unknown";
    }
}

/* Set ICNTL(28) / ICNTL(7) / ICNTL(29) from an ordering name. */
static int set_ordering(DMUMPS_STRUC_C *id, const char *name)
{
    static const struct { const char *name; int par, seq; } tab[] = {
        {"scotch", 1, 3}, {"ptscotch", 2, 1}, {"parmetis", 2, 2}, {"amd", 1, 0}, {"amf", 1, 2},
        {"pord", 1, 4}, {"metis", 1, 5}, {"qamd", 1, 6}, {"auto", 1, 7},
    };
    if (name == NULL)
        name = "scotch";
    for (size_t k = 0; k < sizeof(tab) / sizeof(tab[0]); k++)
        if (strcmp(name, tab[k].name) == 0) {
            id->ICNTL(28) = tab[k].par;
            if (tab[k].par == 2)
                id->ICNTL(29) = tab[k].seq;
            else
                id->ICNTL(7) = tab[k].seq;
            return 0;
        }
    return -1;
}

/* One phase (JOB) on every rank, started together; its time is the slowest rank's. */
static double timed_job(DMUMPS_STRUC_C *id, int job)
{
    double t, tmax;
    MPI_Barrier(MPI_COMM_WORLD);
    t = MPI_Wtime();
    id->job = job;
    dmumps_c(id);
    t = MPI_Wtime() - t;
    MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return tmax;
}

/* min and max over the ranks of a per-rank quantity, added to the report's extra keys. */
static void rank_min_max(bench_report *rep, const char *prefix, double v)
{
    double lo, hi;
    char key[64];
    MPI_Allreduce(&v, &lo, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&v, &hi, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    snprintf(key, sizeof(key), "%s_rank_min", prefix);
    bench_report_extra(rep, key, lo);
    snprintf(key, sizeof(key), "%s_rank_max", prefix);
    bench_report_extra(rep, key, hi);
}

/* The process's peak resident set (getrusage), rank 0's, the mean of the others, the least and the
 * largest (as Canopy's rss_peak_rank0 / _mean / _min / _max), added to the report's extra keys. */
static void rss_rank0_mean(bench_report *rep)
{
    struct rusage ru;
    double v = getrusage(RUSAGE_SELF, &ru) == 0 ? (double)ru.ru_maxrss * 1024.0 : 0, first = v, sum = v;
    int np = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    MPI_Bcast(&first, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Allreduce(&v, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double lo = v, hi = v;
    MPI_Allreduce(&v, &lo, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&v, &hi, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    bench_report_extra(rep, "rss_peak_rank0", first);
    bench_report_extra(rep, "rss_peak_rank_mean", np > 1 ? (sum - first) / (np - 1) : first);
    bench_report_extra(rep, "rss_peak_rank_min", lo);
    bench_report_extra(rep, "rss_peak_rank_max", hi);
}

static void mumps_fail(bench_report *rep, const char *phase, const DMUMPS_STRUC_C *id)
{
    snprintf(rep->status, sizeof(rep->status), "error: %s INFOG(1)=%d INFOG(2)=%d", phase,
             (int)id->INFOG(1), (int)id->INFOG(2));
}

int main(int argc, char **argv)
{
    bench_args args;
    bench_report rep;
    canopy_csc A;
    int rank = 0, nprocs = 1, ok = 1;
    char msg[512];
    MUMPS_INT *irn = NULL, *jcn = NULL;
    double *a = NULL, *rhs = NULL, *b = NULL;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    /* --inverse-diag: after the solve, the diagonal of A^-1 by ICNTL(30) (time_selinv) */
    int inverse_diag = 0;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--inverse-diag")) {
            inverse_diag = 1;
            for (int k = i; k + 1 < argc; k++) argv[k] = argv[k + 1];
            argc--;
            break;
        }
    if (bench_parse_args(argc, argv, &args,
                         "  --ordering NAME   scotch (default), ptscotch, amd, amf, pord, qamd,\n"
                         "                    metis, parmetis, auto (ICNTL(7)=7)\n"
                         "  --inverse-diag    the diagonal of A^-1 after the solve (ICNTL(30))\n") != 0) {
        MPI_Finalize();
        return 2;
    }
    bench_report_init(&rep, "mumps", &args);
    rep.ranks = nprocs;
    memset(&A, 0, sizeof(A));

    /* Centralized input: rank 0 reads the matrix and builds the coordinate arrays. */
    int sym = 0;
    if (rank == 0) {
        if (bench_load(&args, &A, msg, sizeof(msg)) != 0) {
            snprintf(rep.status, sizeof(rep.status), "error: %s", msg);
            ok = 0;
        } else if (A.arith != CANOPY_REAL || A.values == NULL) {
            snprintf(rep.status, sizeof(rep.status), "n/a: not a real matrix");
            ok = 0;
        } else if ((int64_t)A.n >= INT32_MAX) {
            snprintf(rep.status, sizeof(rep.status), "n/a: order too large for 32-bit MUMPS");
            ok = 0;
        }
        if (ok) {
            rep.n = A.n;
            rep.nnz = bench_nnz_full(&A);
            if (A.kind == CANOPY_KIND_SPD || args.spd)
                sym = 1;
            else if (A.kind == CANOPY_KIND_GENERAL)
                sym = 0;
            else
                sym = 2;
        }
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Bcast(&sym, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!ok) {
        if (rank == 0)
            bench_report_print(&rep);
        if (rank == 0 && A.colptr != NULL)
            canopy_csc_free(&A);
        MPI_Finalize();
        return 1;
    }
    snprintf(rep.factorization, sizeof(rep.factorization), "%s",
             sym == 1 ? "ldlt-spd" : sym == 2 ? "ldlt" : "lu");

    int64_t nz = 0;
    if (rank == 0) {
        /* With SYM != 0 MUMPS sums (i,j) and (j,i): hand it a single triangle. */
        int64_t stored = A.colptr[A.n];
        const double *v = A.values;
        int keep_lower_only = sym != 0 && (A.kind == CANOPY_KIND_GENERAL || A.triangle == CANOPY_TRIANGLE_BOTH);
        irn = malloc((size_t)stored * sizeof(*irn));
        jcn = malloc((size_t)stored * sizeof(*jcn));
        a = malloc((size_t)stored * sizeof(*a));
        rhs = malloc((size_t)A.n * sizeof(*rhs));
        b = malloc((size_t)A.n * sizeof(*b));
        if (irn == NULL || jcn == NULL || a == NULL || rhs == NULL || b == NULL) {
            snprintf(rep.status, sizeof(rep.status), "error: out of memory copying the matrix");
            ok = 0;
        } else {
            for (canopy_int j = 0; j < A.n; j++)
                for (canopy_int p = A.colptr[j]; p < A.colptr[j + 1]; p++) {
                    if (keep_lower_only && A.rowind[p] < j)
                        continue;
                    irn[nz] = (MUMPS_INT)A.rowind[p] + 1;
                    jcn[nz] = (MUMPS_INT)j + 1;
                    a[nz++] = v[p];
                }
            for (canopy_int i = 0; i < A.n; i++)
                rhs[i] = 1.0;
            bench_matvec(&A, rhs, b);
            memcpy(rhs, b, (size_t)A.n * sizeof(*rhs));
        }
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!ok) {
        if (rank == 0) {
            bench_report_print(&rep);
            canopy_csc_free(&A);
        }
        free(irn), free(jcn), free(a), free(rhs), free(b);
        MPI_Finalize();
        return 1;
    }

    DMUMPS_STRUC_C id;
    memset(&id, 0, sizeof(id));
    id.comm_fortran = (MUMPS_INT)MPI_Comm_c2f(MPI_COMM_WORLD);
    id.par = 1;
    id.sym = sym;
    id.job = -1;
    dmumps_c(&id);
    int rc = 1;
    if (id.INFOG(1) < 0) {
        mumps_fail(&rep, "init", &id);
        goto done;
    }
    id.ICNTL(1) = -1; /* no error, diagnostic or global messages */
    id.ICNTL(2) = -1;
    id.ICNTL(3) = -1;
    id.ICNTL(4) = 0;
    id.ICNTL(5) = 0;  /* assembled */
    id.ICNTL(18) = 0; /* centralized on the host */
    if (set_ordering(&id, args.ordering) != 0) {
        snprintf(rep.status, sizeof(rep.status), "error: unknown ordering '%s'", args.ordering);
        goto finish;
    }
    if (rank == 0) {
        id.n = (MUMPS_INT)A.n;
        id.nnz = nz;
        id.irn = irn;
        id.jcn = jcn;
        id.a = a;
        id.rhs = rhs;
        id.nrhs = 1;
        id.lrhs = (MUMPS_INT)A.n;
    }

    rep.time_analyze = timed_job(&id, 1);
    if (id.INFOG(1) < 0) {
        mumps_fail(&rep, "analysis", &id);
        goto finish;
    }
    if (id.INFOG(32) == 2)
        snprintf(rep.ordering, sizeof(rep.ordering), "%s (parallel analysis)", par_order_name(id.INFOG(7)));
    else
        snprintf(rep.ordering, sizeof(rep.ordering), "%s", seq_order_name(id.INFOG(7)));
    {
        /* Say so when MUMPS did not use what was asked (library built without it, one rank). */
        const char *asked = args.ordering ? args.ordering : "scotch";
        size_t len = strlen(asked);
        if (strncmp(rep.ordering, asked, len) != 0 || (rep.ordering[len] != '\0' && rep.ordering[len] != ' ')) {
            size_t used = strlen(rep.ordering);
            snprintf(rep.ordering + used, sizeof(rep.ordering) - used, " (asked %s)", asked);
        }
    }
    rep.nnz_factor = mumps_count(id.INFOG(9)); /* predicted; replaced by INFOG(29) below */
    rep.flops = id.RINFOG(1);

    /* Delayed pivots can outgrow the workspace estimated at analysis (INFOG(1) = -8, -9, -14,
     * -15, -17, -20): double the relaxation ICNTL(14) and refactorize, as the MUMPS guide advises.
     * Only the successful attempt is timed. */
    for (int attempt = 0;; attempt++) {
        rep.time_factorize = timed_job(&id, 2);
        int e = id.INFOG(1);
        int workspace = e == -8 || e == -9 || e == -14 || e == -15 || e == -17 || e == -20;
        if (!workspace || attempt == 5)
            break;
        id.ICNTL(14) = id.ICNTL(14) > 0 ? 2 * id.ICNTL(14) : 40;
    }
    if (id.INFOG(1) < 0) {
        if (id.INFOG(1) == -10 || id.INFOG(1) == -6)
            snprintf(rep.status, sizeof(rep.status), "error: singular (INFOG(1)=%d)", (int)id.INFOG(1));
        else
            mumps_fail(&rep, "factorization", &id);
        goto finish;
    }
    snprintf(rep.note, sizeof(rep.note), "MUMPS %s; ICNTL(14)=%d; INFOG(9) predicted factor entries %lld",
             id.version_number, (int)id.ICNTL(14), (long long)mumps_count(id.INFOG(9)));
    rep.nnz_factor = mumps_count(id.INFOG(29));
    rep.flops = id.RINFOG(3);
    rep.perturbed_pivots = id.INFOG(25);
    rep.peak_memory_bytes = 1e6 * (double)id.INFOG(22); /* sum over the ranks */
    /* Per rank: INFO(22) MB used by the factorization, INFO(29) factor entries held. */
    rank_min_max(&rep, "peak_memory", 1e6 * (double)id.INFO(22));
    rank_min_max(&rep, "factor_bytes", 8.0 * (double)mumps_count(id.INFO(29)));

    rep.time_solve = timed_job(&id, 3);
    if (id.INFOG(1) < 0) {
        mumps_fail(&rep, "solve", &id);
        goto finish;
    }
    if (rank == 0)
        bench_errors(&A, b, rhs, &rep.backward_error, &rep.forward_error);
    if (inverse_diag) {
        /* ICNTL(30) = 1: the entries of A^-1 named by a sparse "right-hand side" (here (i, i)) */
        MUMPS_INT n = rank == 0 ? (MUMPS_INT)A.n : 0;
        MUMPS_INT *ptr = NULL, *irs = NULL;
        double *vals = NULL;
        if (rank == 0) {
            ptr = malloc(((size_t)n + 1) * sizeof *ptr);
            irs = malloc(((size_t)n + 1) * sizeof *irs);
            vals = malloc(((size_t)n + 1) * sizeof *vals);
            for (MUMPS_INT i = 0; i < n; i++) ptr[i] = i + 1, irs[i] = i + 1;
            ptr[n] = n + 1;
            id.nz_rhs = n;
            id.nrhs = n;
            id.lrhs = n;
            id.irhs_ptr = ptr;
            id.irhs_sparse = irs;
            id.rhs_sparse = vals;
        }
        id.ICNTL(30) = 1;
        double t = timed_job(&id, 3);
        id.ICNTL(30) = 0;
        if (id.INFOG(1) < 0) {
            mumps_fail(&rep, "inverse diagonal (ICNTL(30))", &id);
        } else {
            double mean = 0;
            for (MUMPS_INT i = 0; rank == 0 && i < n; i++) mean += vals[i] / n;
            snprintf(rep.extra, sizeof rep.extra, "\"time_selinv\": %.6g, \"selinv_diag_mean\": %.17g", t, mean);
        }
        free(ptr), free(irs), free(vals);
        if (id.INFOG(1) < 0) goto finish;
    }
    rss_rank0_mean(&rep);
    rc = 0;

finish:
    id.job = -2;
    dmumps_c(&id);
done:
    if (rank == 0) {
        bench_report_print(&rep);
        canopy_csc_free(&A);
    }
    free(irn), free(jcn), free(a), free(rhs), free(b);
    MPI_Finalize();
    return rc;
}
