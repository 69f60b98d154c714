/*
 * canopy_solve_distributed without rank 0 in the middle: every rank sends the rows of b it holds
 * straight to the owners of the cblks they land in (after the row scaling and the matching
 * permutation), the ranks solve, and the owners send each row of the solution straight back to
 * the rank that holds it. Rank 0 only broadcasts the scaling (n values, the same whatever nrhs).
 * The row layout is checked where the rows land: an owner that receives a row twice names both
 * senders. Refinement of a distributed matrix uses it for its corrections (refine_dist).
 */
#include "solve/solve.h"

#include <limits.h>
#include <string.h>

#include "comm/agree.h"
#include "comm/share.h"
#include "matrix/matrix.h"

#if CANOPY_INT64
#define DIRECT_CINT_MPI MPI_INT64_T
#else
#define DIRECT_CINT_MPI MPI_INT32_T
#endif

/* The scaling every rank needs to place rows: rank 0's (pointers into s->sc on rank 0; on the
 * others the copies the first solve after an analysis received, kept in the solver until the next
 * analysis: the scaling changes only there). */
typedef struct direct_scaling {
    const double *row, *col;
    const cint *row_perm;
} direct_scaling;

static void scaling_view(const canopy_solver *s, direct_scaling *d)
{
    if (s->rank == 0) {
        d->row = s->sc.row;
        d->col = s->sc.col;
        d->row_perm = s->sc.row_perm;
    } else {
        d->row = s->sc_row;
        d->col = s->sc_col;
        d->row_perm = s->sc_perm;
    }
}

void solve_direct_forget(canopy_solver *s)
{
    canopy_free(s->sc_row);
    canopy_free(s->sc_col);
    canopy_free(s->sc_perm);
    s->sc_row = s->sc_col = NULL;
    s->sc_perm = NULL;
    s->sc_shared = 0;
}

/* Shares the scaling once per analysis; sc_shared is set on every rank after the same agreed
 * success, so that every rank skips or reaches these collectives alike. */
static canopy_status share_scaling(canopy_solver *s, cint n, direct_scaling *d)
{
    memset(d, 0, sizeof *d);
    if (s->sc_shared) {
        scaling_view(s, d);
        return CANOPY_SUCCESS;
    }
    int have[3] = {0, 0, 0};
    if (s->rank == 0) {
        have[0] = s->sc.row != NULL;
        have[1] = s->sc.col != NULL;
        have[2] = s->sc.row_perm != NULL;
    }
    MPI_Bcast(have, 3, MPI_INT, 0, s->comm);
    if (s->rank != 0) {
        solve_direct_forget(s);
        if (have[0]) s->sc_row = canopy_alloc((size_t)n, sizeof(double), "scaling", &s->err);
        if (have[1]) s->sc_col = canopy_alloc((size_t)n, sizeof(double), "scaling", &s->err);
        if (have[2]) s->sc_perm = canopy_alloc((size_t)n, sizeof(cint), "scaling", &s->err);
    }
    scaling_view(s, d);
    if (comm_agree(s->comm, &s->err) < 0) return s->err.status;
    if (have[0]) comm_share_bcast(s->comm, (void *)(uintptr_t)d->row, n, &s->err);
    if (have[1]) comm_share_bcast(s->comm, (void *)(uintptr_t)d->col, n, &s->err);
    if (have[2]) MPI_Bcast((void *)(uintptr_t)d->row_perm, (int)n, DIRECT_CINT_MPI, 0, s->comm);
    canopy_status st = comm_agree(s->comm, &s->err);
    if (st >= 0) s->sc_shared = 1;
    return st;
}

/*
 * Where row g of b lands in the scaled, permuted system (new index, factor), and where row g of the
 * solution comes from. A x = b: b's row g is row row_perm[g] of Dr P b, x's row g is Dc's row g of
 * the solution; A^T x = b (s->trans) swaps the two: Dc b in, P^T Dr out (src/matrix/scaling.h).
 */
static cint row_in(const direct_scaling *d, int trans, cint g)
{
    return trans || d->row_perm == NULL ? g : d->row_perm[g];
}

static cint row_out(const direct_scaling *d, int trans, cint g)
{
    return trans && d->row_perm != NULL ? d->row_perm[g] : g;
}

static double scale_in(const direct_scaling *d, int trans, cint g)
{
    if (trans) return d->col ? d->col[g] : 1.0;
    return d->row ? d->row[row_in(d, 0, g)] : 1.0;
}

static double scale_out(const direct_scaling *d, int trans, cint g)
{
    if (trans) return d->row ? d->row[row_out(d, 1, g)] : 1.0;
    return d->col ? d->col[g] : 1.0;
}

/* Displacements of the counts sent and received; the total received. */
static void displacements(const int *send, const int *recv, int *sdispl, int *rdispl, int np, int64_t *rtotal)
{
    int64_t a = 0, b = 0;
    for (int r = 0; r < np; r++) {
        sdispl[r] = (int)a;
        rdispl[r] = (int)b;
        a += send[r];
        b += recv[r];
    }
    *rtotal = b;
}

canopy_status solve_direct(canopy_solver *s, cint n, canopy_arith arith, cint nrhs, cint nloc, const cint *rows, void *b,
                               cint ldb)
{
    const char *call = "canopy_solve_distributed";
    const symbolic *S = &s->S;
    const int *owner_of = s->rt.local.cblk_rank;
    int np = s->nranks, vsz = arith == CANOPY_COMPLEX ? 2 : 1;
    double t0 = canopy_wtime();
    direct_scaling sc;
    if (share_scaling(s, n, &sc) < 0) return s->err.status;
    /* counts of one message are ints: that many right-hand sides at a time */
    cint chunk = (cint)CANOPY_MIN((int64_t)nrhs, (int64_t)INT_MAX / CANOPY_MAX((int64_t)n, 1));
    /* counts, displacements, one message's counts (c4) and the paired counts of steps 1 and 3 */
    int *cnt = canopy_calloc(14 * (size_t)np, sizeof(int), "solve exchange", &s->err);
    int *dest_b = canopy_alloc((size_t)nloc + 1, sizeof(int), "solve exchange", &s->err);
    int *dest_x = canopy_alloc((size_t)nloc + 1, sizeof(int), "solve exchange", &s->err);
    cint *sidx = canopy_alloc((size_t)nloc + 1, sizeof(cint), "solve exchange", &s->err);
    int *order = canopy_alloc((size_t)nloc + 1, sizeof(int), "solve exchange", &s->err);
    double *sval = canopy_alloc((size_t)nloc * chunk + 1, (size_t)vsz * sizeof(double), "solve exchange", &s->err);
    double *y = canopy_calloc((size_t)n * nrhs + 1, (size_t)vsz * sizeof(double), "solve workspace", &s->err);
    cint *ridx = NULL, *xidx = NULL;
    double *rval = NULL;
    int *from = NULL;
    int64_t nrecv = 0, nxreq = 0;
    /* the solve's own plan (first solve after a factorization) under the same agreement */
    if (s->err.status >= 0) numeric_solve_dist_prepare(&s->F, &s->err);
    if (comm_agree(s->comm, &s->err) < 0) goto out;
    int *scnt = cnt, *rcnt = cnt + np, *sdis = cnt + 2 * np, *rdis = cnt + 3 * np, *xcnt = cnt + 4 * np, *xrcnt = cnt + 5 * np;
    int *c4 = cnt + 6 * np, *pair_s = cnt + 10 * np, *pair_r = cnt + 12 * np;

    /* where each local row of b goes (row scaling and matching first: row g of A is row
     * row_perm[g] of the matrix factorized, new index iperm of that), and where its solution
     * comes from (column g: new index iperm[g]) */
    const int tr = s->trans;
    for (cint k = 0; k < nloc; k++) {
        cint g = rows[k];
        dest_b[k] = owner_of[S->col2cblk[S->iperm[row_in(&sc, tr, g)]]];
        dest_x[k] = owner_of[S->col2cblk[S->iperm[row_out(&sc, tr, g)]]];
        scnt[dest_b[k]]++;
        xcnt[dest_x[k]]++;
    }

    /* the counts of steps 1 and 3 in one exchange: (b rows, x requests) per peer */
    for (int r = 0; r < np; r++) {
        pair_s[2 * r] = scnt[r];
        pair_s[2 * r + 1] = xcnt[r];
    }
    if (MPI_Alltoall(pair_s, 2, MPI_INT, pair_r, 2, MPI_INT, s->comm) != MPI_SUCCESS) goto mpi_fail;
    for (int r = 0; r < np; r++) {
        rcnt[r] = pair_r[2 * r];
        xrcnt[r] = pair_r[2 * r + 1];
        nxreq += xrcnt[r];
    }
    displacements(scnt, rcnt, sdis, rdis, np, &nrecv);

    /* 1. the rows of b to their owners: indices, then values chunk by chunk (every buffer of
     * steps 1 and 3 allocated here, under one agreement) */
    ridx = canopy_alloc((size_t)nrecv + 1, sizeof(cint), "solve exchange", &s->err);
    rval = canopy_alloc((size_t)CANOPY_MAX(nrecv, nxreq) * chunk + 1, (size_t)vsz * sizeof(double), "solve exchange",
                        &s->err);
    from = canopy_alloc((size_t)n, sizeof(int), "solve exchange", &s->err);
    xidx = canopy_alloc((size_t)nxreq + 1, sizeof(cint), "solve exchange", &s->err);
    if (comm_agree(s->comm, &s->err) < 0) goto out;
    {
        int *at = c4; /* borrowed as a cursor */
        for (int r = 0; r < np; r++) at[r] = sdis[r];
        for (cint k = 0; k < nloc; k++) order[at[dest_b[k]]++] = (int)k;
        for (int64_t q = 0; q < nloc; q++) sidx[q] = rows[order[q]];
    }
    if (MPI_Alltoallv(sidx, scnt, sdis, DIRECT_CINT_MPI, ridx, rcnt, rdis, DIRECT_CINT_MPI, s->comm) != MPI_SUCCESS)
        goto mpi_fail;
    /* each row once: the owner of its slot names the ranks that gave it twice */
    for (cint i = 0; i < n; i++) from[i] = -1;
    for (int r = 0; r < np && s->err.status == CANOPY_SUCCESS; r++)
        for (int64_t q = rdis[r]; q < (int64_t)rdis[r] + rcnt[r]; q++) {
            cint g = ridx[q];
            if (from[g] >= 0) {
                if (from[g] == r)
                    canopy_err_set(&s->err, CANOPY_ERR_ARGUMENT,
                                   "%s: row %" CINT_FMT " is given twice by rank %d (each row must be on exactly one rank)",
                                   call, g, r);
                else
                    canopy_err_set(&s->err, CANOPY_ERR_ARGUMENT,
                                   "%s: row %" CINT_FMT " is given by rank %d and by rank %d (each row must be on exactly "
                                   "one rank)", call, g, from[g], r);
                break;
            }
            from[g] = r;
        }
    if (comm_agree(s->comm, &s->err) < 0) goto out;
    for (cint c0 = 0; c0 < nrhs; c0 += chunk) {
        cint cc = CANOPY_MIN(chunk, nrhs - c0);
        /* values: sent as cc x (rows to that peer) blocks, one peer after the other */
        for (int r = 0; r < np; r++) {
            c4[r] = scnt[r] * cc;
            c4[np + r] = rcnt[r] * cc;
            c4[2 * np + r] = sdis[r] * cc;
            c4[3 * np + r] = rdis[r] * cc;
        }
        const double *bv = b;
        for (int r = 0; r < np; r++)
            for (cint c = 0; c < cc; c++)
                for (int q = 0; q < scnt[r]; q++) {
                    int k = order[sdis[r] + q];
                    memcpy(sval + ((size_t)c4[2 * np + r] + (size_t)c * scnt[r] + q) * vsz,
                           bv + ((size_t)(c0 + c) * ldb + k) * vsz, (size_t)vsz * sizeof(double));
                }
        MPI_Datatype vt = vsz == 2 ? MPI_C_DOUBLE_COMPLEX : MPI_DOUBLE;
        int rc = MPI_Alltoallv(sval, c4, c4 + 2 * np, vt, rval, c4 + np, c4 + 3 * np, vt, s->comm);
        if (rc == MPI_SUCCESS) {
            double *yv = y;
            for (int r = 0; r < np; r++)
                for (cint c = 0; c < cc; c++)
                    for (int q = 0; q < rcnt[r]; q++) {
                        cint g = ridx[rdis[r] + q];
                        double f = scale_in(&sc, tr, g);
                        const double *v = rval + ((size_t)c4[3 * np + r] + (size_t)c * rcnt[r] + q) * vsz;
                        double *t = yv + ((size_t)(c0 + c) * n + S->iperm[row_in(&sc, tr, g)]) * vsz;
                        for (int e = 0; e < vsz; e++) t[e] = v[e] * f;
                    }
        }
        if (rc != MPI_SUCCESS) goto mpi_fail;
    }

    /* 2. the solve on the owners */
    if (numeric_solve_dist_own(&s->F, nrhs, y, &s->err) < 0) goto out;

    /* 3. the solution's rows straight back: requests (the rows each rank holds) to the owners of
     * their columns, answers in the same order */
    {
        int64_t xr = 0;
        displacements(xcnt, xrcnt, sdis, rdis, np, &xr);
    }
    {
        int *at = scnt; /* the b counts are done with: a cursor over the x requests */
        for (int r = 0; r < np; r++) at[r] = sdis[r];
        for (cint k = 0; k < nloc; k++) order[at[dest_x[k]]++] = (int)k;
        for (int64_t q = 0; q < nloc; q++) sidx[q] = rows[order[q]];
    }
    if (MPI_Alltoallv(sidx, xcnt, sdis, DIRECT_CINT_MPI, xidx, xrcnt, rdis, DIRECT_CINT_MPI, s->comm) != MPI_SUCCESS)
        goto mpi_fail;
    for (cint c0 = 0; c0 < nrhs; c0 += chunk) {
        cint cc = CANOPY_MIN(chunk, nrhs - c0);
        for (int r = 0; r < np; r++) {
            c4[r] = xrcnt[r] * cc; /* answers go back: the owner sends what it was asked */
            c4[np + r] = xcnt[r] * cc;
            c4[2 * np + r] = rdis[r] * cc;
            c4[3 * np + r] = sdis[r] * cc;
        }
        const double *yv = y;
        for (int r = 0; r < np; r++)
            for (cint c = 0; c < cc; c++)
                for (int q = 0; q < xrcnt[r]; q++) {
                    cint g = xidx[rdis[r] + q];
                    double f = scale_out(&sc, tr, g);
                    const double *v = yv + ((size_t)(c0 + c) * n + S->iperm[row_out(&sc, tr, g)]) * vsz;
                    double *t = rval + ((size_t)c4[2 * np + r] + (size_t)c * xrcnt[r] + q) * vsz;
                    for (int e = 0; e < vsz; e++) t[e] = v[e] * f;
                }
        MPI_Datatype vt = vsz == 2 ? MPI_C_DOUBLE_COMPLEX : MPI_DOUBLE;
        int rc = MPI_Alltoallv(rval, c4, c4 + 2 * np, vt, sval, c4 + np, c4 + 3 * np, vt, s->comm);
        if (rc == MPI_SUCCESS) {
            double *bv = b;
            for (int r = 0; r < np; r++)
                for (cint c = 0; c < cc; c++)
                    for (int q = 0; q < xcnt[r]; q++) {
                        int k = order[sdis[r] + q];
                        memcpy(bv + ((size_t)(c0 + c) * ldb + k) * vsz,
                               sval + ((size_t)c4[3 * np + r] + (size_t)c * xcnt[r] + q) * vsz, (size_t)vsz * sizeof(double));
                    }
        }
        if (rc != MPI_SUCCESS) goto mpi_fail;
    }
    {
        cint row, col;
        if (nloc > 0 && matrix_find_nonfinite(arith, nloc, nrhs, b, ldb, &row, &col))
            canopy_err_set(&s->err, CANOPY_ERR_SINGULAR,
                           "%s: the solution is not finite (row %" CINT_FMT " of column %" CINT_FMT
                           "): the matrix is numerically singular or too badly scaled", call, rows[row], col);
    }
    comm_agree(s->comm, &s->err);
    s->stats.time_solve = canopy_wtime() - t0;
    solve_dist_stats(s);
    goto out;
mpi_fail:
    canopy_err_set(&s->err, CANOPY_ERR_MPI, "%s: exchanging right-hand sides with the owners failed", call);
    comm_agree(s->comm, &s->err);
out:
    canopy_free(cnt);
    canopy_free(dest_b);
    canopy_free(dest_x);
    canopy_free(sidx);
    canopy_free(order);
    canopy_free(sval);
    canopy_free(y);
    canopy_free(ridx);
    canopy_free(xidx);
    canopy_free(rval);
    canopy_free(from);
    return s->err.status;
}
