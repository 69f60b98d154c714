/*
 * The matrix of a distributed input in block columns over the ranks (contract in dist_matrix.h).
 *
 * Assembly: every entry of a piece becomes a record (row, column, kind) sent to the owner of its
 * column; a symmetric kind given by one triangle also sends the mirror (row and column swapped,
 * conjugated for Hermitian) to the owner of the row, and one given by both triangles sends the
 * mirror as a partner that is only compared, never summed. Records arrive in rank order and keep
 * their places from one call to the next, so later values travel without their indices.
 */
#include "matrix/dist_matrix.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comm/agree.h"
#include "comm/share.h"
#include "matrix/matrix.h"

struct api_dist {
    int vsz;              /* doubles per value: 1 real, 2 complex */
    int herm;             /* Hermitian complex: mirrors are conjugated */
    int sym, both;        /* symmetric kind; given by both triangles (mirrors are partners) */
    int64_t nloc;         /* entries of this rank's piece (length of its values) */
    /* the piece's structure, 0-based (new values are packed into records as the first ones were;
     * 4 bytes an entry, where positions would take 16) */
    cint ncols, *cols, *colptr, *rowind;
    int64_t *send_counts; /* [nranks] records sent to each rank */
    int64_t *recv_counts; /* [nranks] records received from each rank */
    int64_t nsend, nrecv;
    cint *recv_pos;       /* [nrecv] position in s->A of each received record; -1 for a partner */
};

enum { REC_SUM = 0, REC_PARTNER = 1 };

void api_dist_free(canopy_solver *s)
{
    if (s == NULL || s->dist == NULL) return;
    struct api_dist *d = s->dist;
    canopy_free(d->cols);
    canopy_free(d->colptr);
    canopy_free(d->rowind);
    canopy_free(d->send_counts);
    canopy_free(d->recv_counts);
    canopy_free(d->recv_pos);
    canopy_free(d);
    s->dist = NULL;
}

cint distm_first_col(cint n, int P, int r)
{
    return (cint)((int64_t)n * r / P);
}

int distm_col_owner(cint n, int P, cint j)
{
    int r = (int)((int64_t)j * P / n);
    while (r + 1 < P && distm_first_col(n, P, r + 1) <= j) r++;
    while (r > 0 && distm_first_col(n, P, r) > j) r--;
    return r;
}

bool distm_active(const canopy_solver *s)
{
    return s->nranks > 1 && s->dist != NULL;
}

int64_t distm_piece_entries(const canopy_solver *s)
{
    return s->dist ? s->dist->nloc : 0;
}

static canopy_status nomem(canopy_err *err)
{
    return err->status != CANOPY_SUCCESS ? err->status : canopy_err_set(err, CANOPY_ERR_NOMEM, "out of memory");
}

/* One local column's records, sorted by row and then by arrival. */
typedef struct rec_ref {
    cint row;
    int64_t q;
} rec_ref;

static int rec_cmp(const void *a, const void *b)
{
    const rec_ref *x = a, *y = b;
    if (x->row != y->row) return x->row < y->row ? -1 : 1;
    return x->q < y->q ? -1 : x->q > y->q;
}

/*
 * The records of the piece's values v, grouped by destination (fill: each destination's first
 * record, advanced): the values into sval, and with spat the (row, column, kind) triples. The same
 * walk at every call puts every value at the same place.
 */
static void pack_walk(const struct api_dist *d, cint n, int P, const double *v, int64_t *fill, cint *spat, double *sval)
{
    const int vsz = d->vsz;
    for (cint k = 0; k < d->ncols; k++) {
        cint j = d->cols[k];
        for (cint p = d->colptr[k]; p < d->colptr[k + 1]; p++) {
            cint i = d->rowind[p];
            int64_t q = fill[distm_col_owner(n, P, j)]++;
            if (spat) {
                spat[3 * q] = i;
                spat[3 * q + 1] = j;
                spat[3 * q + 2] = REC_SUM;
            }
            for (int c = 0; c < vsz; c++) sval[q * vsz + c] = v[(size_t)p * vsz + c];
            if (!d->sym || i == j) continue;
            q = fill[distm_col_owner(n, P, i)]++;
            if (spat) {
                spat[3 * q] = j;
                spat[3 * q + 1] = i;
                spat[3 * q + 2] = d->both ? REC_PARTNER : REC_SUM;
            }
            sval[q * vsz] = v[(size_t)p * vsz];
            if (vsz == 2) sval[q * 2 + 1] = d->herm ? -v[(size_t)p * 2 + 1] : v[(size_t)p * 2 + 1];
        }
    }
}

/* Each destination's first record (fill[0..P]), from the send counts. */
static void record_starts(const struct api_dist *d, int P, int64_t *fill)
{
    fill[0] = 0;
    for (int r = 0; r < P; r++) fill[r + 1] = fill[r] + d->send_counts[r];
}

/* The piece's structure kept (0-based), the records counted, packed into spat and sval. */
static canopy_status pack_records(const canopy_dist_csc *A, int P, struct api_dist *d, cint **spat, double **sval,
                                  canopy_err *err)
{
    const cint n = A->n, b = A->base;
    d->sym = A->kind != CANOPY_KIND_GENERAL;
    d->both = d->sym && A->triangle == CANOPY_TRIANGLE_BOTH;
    d->ncols = A->colptr != NULL ? A->ncols : 0;
    int64_t *fill = canopy_calloc((size_t)P + 1, sizeof(int64_t), "record offsets", err);
    d->cols = canopy_alloc((size_t)d->ncols + 1, sizeof(cint), "piece structure", err);
    d->colptr = canopy_alloc((size_t)d->ncols + 1, sizeof(cint), "piece structure", err);
    d->rowind = canopy_alloc((size_t)d->nloc + 1, sizeof(cint), "piece structure", err);
    if (!fill || !d->cols || !d->colptr || !d->rowind) {
        canopy_free(fill);
        return nomem(err);
    }
    d->colptr[0] = 0;
    for (cint k = 0; k < d->ncols; k++) {
        cint j = A->cols[k] - b;
        d->cols[k] = j;
        d->colptr[k + 1] = A->colptr[k + 1] - b;
        for (cint p = A->colptr[k] - b; p < A->colptr[k + 1] - b; p++) {
            cint i = A->rowind[p] - b;
            d->rowind[p] = i;
            d->send_counts[distm_col_owner(n, P, j)]++;
            if (d->sym && i != j) d->send_counts[distm_col_owner(n, P, i)]++;
        }
    }
    record_starts(d, P, fill);
    d->nsend = fill[P];
    *spat = canopy_alloc(3 * (size_t)d->nsend + 1, sizeof(cint), "records", err);
    *sval = canopy_alloc((size_t)d->nsend * d->vsz + 1, sizeof(double), "record values", err);
    if (*spat && *sval) pack_walk(d, n, P, A->values, fill, *spat, *sval);
    canopy_free(fill);
    return *spat && *sval ? CANOPY_SUCCESS : nomem(err);
}

/* Position of row i in column j of the local matrix M, or -1. */
static int64_t find_entry(const canopy_csc *M, cint i, cint j)
{
    cint lo = M->colptr[j], hi = M->colptr[j + 1] - 1;
    while (lo <= hi) {
        cint mid = lo + (hi - lo) / 2;
        if (M->rowind[mid] < i) lo = mid + 1;
        else if (M->rowind[mid] > i) hi = mid - 1;
        else return mid;
    }
    return -1;
}

/* The owner's side: the received records summed into the local block columns c0..c1-1 of M. */
static canopy_status build_local(cint n, cint c0, cint c1, int vsz, struct api_dist *d, const cint *rpat,
                                 const double *rval, canopy_csc *M, canopy_err *err)
{
    const cint w = c1 - c0;
    int64_t *start = canopy_calloc((size_t)w + 2, sizeof(int64_t), "assembly counts", err);
    int64_t nsum = 0;
    for (int64_t q = 0; start && q < d->nrecv; q++)
        if (rpat[3 * q + 2] == REC_SUM) {
            start[rpat[3 * q + 1] - c0 + 1]++;
            nsum++;
        }
    rec_ref *refs = canopy_alloc((size_t)nsum + 1, sizeof *refs, "assembly order", err);
    d->recv_pos = canopy_alloc((size_t)d->nrecv + 1, sizeof(cint), "assembly map", err);
    M->colptr = canopy_calloc((size_t)n + 1, sizeof(cint), "column pointers", err);
    if (!start || !refs || !d->recv_pos || !M->colptr) {
        canopy_free(start);
        canopy_free(refs);
        return nomem(err);
    }
    for (cint c = 0; c < w; c++) start[c + 1] += start[c];
    for (int64_t q = 0; q < d->nrecv; q++)
        if (rpat[3 * q + 2] == REC_SUM) refs[start[rpat[3 * q + 1] - c0]++] = (rec_ref){rpat[3 * q], q};
    /* start[c] is now the end of local column c: sort each column, count distinct rows */
    int64_t pos = 0, from = 0;
    for (cint c = 0; c < w; c++) {
        int64_t to = start[c];
        qsort(refs + from, (size_t)(to - from), sizeof *refs, rec_cmp);
        for (int64_t e = from; e < to; e++)
            if (e == from || refs[e].row != refs[e - 1].row) pos++;
        from = to;
    }
    if (pos > CINT_MAX - 1) {
        canopy_free(start);
        canopy_free(refs);
        return canopy_err_set(err, CANOPY_ERR_TOO_LARGE, "problem too large: %lld entries on one rank overflow the index type",
                              (long long)pos);
    }
    M->rowind = canopy_alloc((size_t)pos + 1, sizeof(cint), "row indices", err);
    M->values = canopy_calloc((size_t)pos + 1, (size_t)vsz * sizeof(double), "values", err);
    if (!M->rowind || !M->values) {
        canopy_free(start);
        canopy_free(refs);
        return nomem(err);
    }
    pos = 0;
    from = 0;
    double *mv = M->values;
    for (cint c = 0; c < w; c++) {
        int64_t to = start[c];
        for (int64_t e = from; e < to; e++) {
            if (e == from || refs[e].row != refs[e - 1].row) M->rowind[pos++] = refs[e].row;
            int64_t q = refs[e].q;
            d->recv_pos[q] = (cint)(pos - 1); /* pos <= CINT_MAX - 1: checked above */
            for (int k = 0; k < vsz; k++) mv[(size_t)(pos - 1) * vsz + k] += rval[q * vsz + k];
        }
        M->colptr[c0 + c + 1] = (cint)pos;
        from = to;
    }
    for (cint j = c1; j < n; j++) M->colptr[j + 1] = (cint)pos;
    for (int64_t q = 0; q < d->nrecv; q++)
        if (rpat[3 * q + 2] == REC_PARTNER) d->recv_pos[q] = -1;
    canopy_free(start);
    canopy_free(refs);
    M->n = n;
    M->base = 0;
    return CANOPY_SUCCESS;
}

/*
 * Both triangles given: the partner records (A(j,i) given, mirrored to (i,j)) summed must equal
 * the local entries, pattern and values, to 1e-12 relative to the largest entry. Messages use the
 * caller's index base.
 */
static canopy_status check_partners(const canopy_csc *M, int vsz, const cint *rpat, const double *rval, int64_t nrecv,
                                    double tol, int base, canopy_err *err)
{
    int64_t nnz = matrix_nnz(M);
    double *psum = canopy_calloc((size_t)nnz + 1, (size_t)vsz * sizeof(double), "symmetry check", err);
    unsigned char *seen = canopy_calloc((size_t)nnz + 1, 1, "symmetry check", err);
    canopy_status st = CANOPY_SUCCESS;
    if (!psum || !seen) st = nomem(err);
    for (int64_t q = 0; st == CANOPY_SUCCESS && q < nrecv; q++) {
        if (rpat[3 * q + 2] != REC_PARTNER) continue;
        cint i = rpat[3 * q], j = rpat[3 * q + 1];
        int64_t p = find_entry(M, i, j);
        if (p < 0) {
            st = canopy_err_set(err, CANOPY_ERR_MATRIX, "column %" CINT_FMT ", row %" CINT_FMT ": entry has no symmetric partner (row %"
                                CINT_FMT ", column %" CINT_FMT ") although both triangles are given", i + base, j + base,
                                i + base, j + base);
            break;
        }
        seen[p] = 1;
        for (int c = 0; c < vsz; c++) psum[(size_t)p * vsz + c] += rval[q * vsz + c];
    }
    for (cint j = 0; st == CANOPY_SUCCESS && j < M->n; j++)
        for (cint p = M->colptr[j]; p < M->colptr[j + 1]; p++) {
            cint i = M->rowind[p];
            if (i == j) continue;
            if (!seen[p]) {
                st = canopy_err_set(err, CANOPY_ERR_MATRIX, "column %" CINT_FMT ", row %" CINT_FMT ": entry has no symmetric partner (row %"
                                    CINT_FMT ", column %" CINT_FMT ") although both triangles are given", j + base, i + base,
                                    j + base, i + base);
                break;
            }
            for (int c = 0; c < vsz; c++)
                if (fabs(((const double *)M->values)[(size_t)p * vsz + c] - psum[(size_t)p * vsz + c]) > tol) {
                    st = canopy_err_set(err, CANOPY_ERR_MATRIX, "column %" CINT_FMT ", row %" CINT_FMT ": value differs from its symmetric partner (row %"
                                        CINT_FMT ", column %" CINT_FMT ") beyond 1e-12 relative", j + base, i + base, j + base,
                                        i + base);
                    break;
                }
            if (st != CANOPY_SUCCESS) break;
        }
    canopy_free(psum);
    canopy_free(seen);
    return st;
}

/* A Hermitian matrix needs a real diagonal (the sums of what was given); small noise becomes 0. */
static canopy_status hermitian_diagonal(canopy_csc *M, double tol, int base, canopy_err *err)
{
    for (cint j = 0; j < M->n; j++)
        for (cint p = M->colptr[j]; p < M->colptr[j + 1]; p++) {
            if (M->rowind[p] != j) continue;
            double *im = (double *)M->values + 2 * (size_t)p + 1;
            if (fabs(*im) > tol)
                return canopy_err_set(err, CANOPY_ERR_MATRIX, "column %" CINT_FMT ": diagonal entry of a Hermitian matrix has imaginary part %g",
                                      j + base, *im);
            *im = 0;
        }
    return CANOPY_SUCCESS;
}

canopy_status distm_assemble(canopy_solver *s, const canopy_dist_csc *A, int64_t *nnz_out)
{
    const int P = s->nranks;
    const cint n = A->n;
    const int vsz = A->arith == CANOPY_COMPLEX ? 2 : 1;
    canopy_err *err = &s->err;
    cint *spat = NULL, *rpat = NULL;
    double *sval = NULL, *rval = NULL;
    canopy_csc M = {0};
    struct api_dist *d = canopy_calloc(1, sizeof *d, "distributed layout", err);
    if (d != NULL) {
        d->vsz = vsz;
        d->herm = A->kind == CANOPY_KIND_HERMITIAN && vsz == 2;
        d->nloc = A->colptr != NULL ? (int64_t)A->colptr[A->ncols] - A->base : 0;
        d->send_counts = canopy_calloc((size_t)P, sizeof(int64_t), "record counts", err);
        d->recv_counts = canopy_calloc((size_t)P, sizeof(int64_t), "record counts", err);
        if (d->send_counts && d->recv_counts) pack_records(A, P, d, &spat, &sval, err);
    }
    if (comm_agree(s->comm, err) < 0) goto out;
    if (comm_share_counts(s->comm, d->send_counts, d->recv_counts, err) != CANOPY_SUCCESS) goto out;
    for (int r = 0; r < P; r++) d->nrecv += d->recv_counts[r];
    rpat = canopy_alloc(3 * (size_t)d->nrecv + 1, sizeof(cint), "records", err);
    rval = canopy_alloc((size_t)d->nrecv * vsz + 1, sizeof(double), "record values", err);
    if (comm_agree(s->comm, err) < 0) goto out;
    if (comm_share_alltoallv(s->comm, spat, d->send_counts, rpat, d->recv_counts, 3 * sizeof(cint), err) !=
            CANOPY_SUCCESS ||
        comm_share_alltoallv(s->comm, sval, d->send_counts, rval, d->recv_counts, (size_t)vsz * sizeof(double), err) !=
            CANOPY_SUCCESS)
        goto out;
    canopy_free(spat);
    canopy_free(sval);
    spat = NULL;
    sval = NULL;
    build_local(n, distm_first_col(n, P, s->rank), distm_first_col(n, P, s->rank + 1), vsz, d, rpat, rval, &M, err);
    M.arith = A->arith;
    M.kind = A->kind;
    M.triangle = CANOPY_TRIANGLE_BOTH;
    /* every rank reaches the reductions, also after a local failure */
    double amax = err->status == CANOPY_SUCCESS ? matrix_abs_max(&M) : 0, gmax = amax;
    MPI_Allreduce(&amax, &gmax, 1, MPI_DOUBLE, MPI_MAX, s->comm);
    const double tol = 1e-12 * gmax;
    if (err->status == CANOPY_SUCCESS && A->kind != CANOPY_KIND_GENERAL && A->triangle == CANOPY_TRIANGLE_BOTH)
        check_partners(&M, vsz, rpat, rval, d->nrecv, tol, A->base, err);
    if (err->status == CANOPY_SUCCESS && d->herm) hermitian_diagonal(&M, tol, A->base, err);
    int64_t mine = err->status == CANOPY_SUCCESS ? matrix_nnz(&M) : 0, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT64_T, MPI_SUM, s->comm);
    *nnz_out = all;
    if (comm_agree(s->comm, err) < 0) goto out;
    s->A = M;
    memset(&M, 0, sizeof M);
    s->dist = d;
    d = NULL;
out:
    canopy_free(spat);
    canopy_free(sval);
    canopy_free(rpat);
    canopy_free(rval);
    matrix_free(&M);
    if (d != NULL) {
        s->dist = d;
        api_dist_free(s);
    }
    return err->status;
}

canopy_status distm_update(canopy_solver *s, const void *values)
{
    struct api_dist *d = s->dist;
    canopy_err *err = &s->err;
    const int vsz = d->vsz;
    const int P = s->nranks;
    const size_t elem = (size_t)vsz * sizeof(double);
    /* nothing is packed after a failed check of the caller's, but the agreement is reached */
    bool go = err->status >= 0;
    double *sval = go ? canopy_alloc((size_t)d->nsend * vsz + 1, sizeof(double), "record values", err) : NULL;
    double *rval = go ? canopy_alloc((size_t)d->nrecv * vsz + 1, sizeof(double), "record values", err) : NULL;
    int64_t *fill = go ? canopy_alloc((size_t)P + 1, sizeof(int64_t), "record offsets", err) : NULL;
    MPI_Request *req = go ? comm_share_requests(s->comm, d->send_counts, d->recv_counts, elem, err) : NULL;
    if (sval && rval && fill && req) {
        record_starts(d, P, fill);
        pack_walk(d, s->A.n, P, values, fill, NULL, sval);
    }
    canopy_free(fill);
    /* the caller's checks, the buffers and the requests under one agreement */
    canopy_status agreed = comm_agree(s->comm, err);
    if (agreed >= 0) {
        if (comm_share_alltoallv_agreed(s->comm, sval, d->send_counts, rval, d->recv_counts, elem, req, err) ==
            CANOPY_SUCCESS) {
            double *mv = s->A.values;
            memset(mv, 0, (size_t)matrix_nnz(&s->A) * vsz * sizeof(double));
            for (int64_t q = 0; q < d->nrecv; q++) {
                int64_t p = d->recv_pos[q];
                if (p < 0) continue;
                for (int c = 0; c < vsz; c++) mv[p * vsz + c] += rval[q * vsz + c];
            }
            if (d->herm)
                for (cint j = 0; j < s->A.n; j++)
                    for (cint p = s->A.colptr[j]; p < s->A.colptr[j + 1]; p++)
                        if (s->A.rowind[p] == j) mv[2 * (size_t)p + 1] = 0;
        }
    } else {
        canopy_free(req);
    }
    canopy_free(sval);
    canopy_free(rval);
    return agreed < 0 ? agreed : CANOPY_SUCCESS;
}

canopy_status distm_gather(canopy_solver *s, const canopy_csc *local, bool values, canopy_csc *full)
{
    const int P = s->nranks, R = s->rank;
    canopy_err *err = &s->err;
    const cint n = local->n, c0 = distm_first_col(n, P, R), c1 = distm_first_col(n, P, R + 1);
    const int vsz = local->arith == CANOPY_COMPLEX ? 2 : 1;
    memset(full, 0, sizeof *full);
    int64_t *sc = canopy_calloc((size_t)P, sizeof(int64_t), "gather counts", err);
    int64_t *rc = canopy_calloc((size_t)P, sizeof(int64_t), "gather counts", err);
    int64_t *ec = canopy_calloc((size_t)P, sizeof(int64_t), "gather counts", err);
    cint *cnt = canopy_alloc((size_t)(c1 - c0) + 1, sizeof(cint), "gather counts", err);
    int64_t total = 0;
    if (comm_agree(s->comm, err) < 0) goto out;
    for (cint j = c0; j < c1; j++) cnt[j - c0] = local->colptr[j + 1] - local->colptr[j];
    /* column counts: one per column, rank order is column order */
    sc[0] = c1 - c0;
    if (comm_share_counts(s->comm, sc, rc, err) != CANOPY_SUCCESS) goto out;
    if (R == 0) {
        full->colptr = canopy_alloc((size_t)n + 1, sizeof(cint), "gathered column pointers", err);
        if (full->colptr == NULL) nomem(err);
    }
    if (comm_agree(s->comm, err) < 0) goto out;
    if (comm_share_alltoallv(s->comm, cnt, sc, R == 0 ? full->colptr + 1 : NULL, rc, sizeof(cint), err) != CANOPY_SUCCESS)
        goto out;
    if (R == 0) {
        full->colptr[0] = 0;
        for (cint j = 0; j < n; j++) {
            if ((int64_t)full->colptr[j] + full->colptr[j + 1] > CINT_MAX - 1) {
                canopy_err_set(err, CANOPY_ERR_TOO_LARGE, "problem too large: the matrix's entries overflow the index type");
                break;
            }
            full->colptr[j + 1] += full->colptr[j];
        }
        if (err->status == CANOPY_SUCCESS) total = full->colptr[n];
        full->rowind = canopy_alloc((size_t)total + 1, sizeof(cint), "gathered row indices", err);
        if (values) full->values = canopy_alloc((size_t)total * vsz + 1, sizeof(double), "gathered values", err);
        if (!full->rowind || (values && !full->values)) nomem(err);
    }
    if (comm_agree(s->comm, err) < 0) goto out;
    sc[0] = (int64_t)local->colptr[c1] - local->colptr[c0];
    if (comm_share_counts(s->comm, sc, ec, err) != CANOPY_SUCCESS ||
        comm_share_alltoallv(s->comm, local->rowind + local->colptr[c0], sc, full->rowind, ec, sizeof(cint), err) !=
            CANOPY_SUCCESS)
        goto out;
    if (values &&
        comm_share_alltoallv(s->comm, (const double *)local->values + (size_t)local->colptr[c0] * vsz, sc, full->values,
                             ec, (size_t)vsz * sizeof(double), err) != CANOPY_SUCCESS)
        goto out;
    if (R == 0) {
        full->n = n;
        full->base = 0;
        full->arith = values ? local->arith : CANOPY_PATTERN;
        full->kind = local->kind;
        full->triangle = CANOPY_TRIANGLE_BOTH;
    }
out:
    canopy_free(sc);
    canopy_free(rc);
    canopy_free(ec);
    canopy_free(cnt);
    if (err->status != CANOPY_SUCCESS) matrix_free(full);
    return comm_agree(s->comm, err);
}

static int cmp_cint(const void *a, const void *b)
{
    cint x = *(const cint *)a, y = *(const cint *)b;
    return x < y ? -1 : x > y;
}

canopy_status distm_graph_slice(canopy_solver *s, const canopy_csc *local, cint **vert, cint **edge, cint *nedge)
{
    const int P = s->nranks, R = s->rank;
    canopy_err *err = &s->err;
    const cint n = local->n, c0 = distm_first_col(n, P, R), c1 = distm_first_col(n, P, R + 1), nv = c1 - c0;
    /* the assembled columns of a symmetric kind hold both triangles already: no transpose to send;
     * unless a matching permuted its rows (LU of a symmetric matrix): the pattern is no longer
     * symmetric (PT-SCOTCH crashed on the one-sided graph) */
    const bool general = local->kind == CANOPY_KIND_GENERAL || s->sc.row_perm != NULL;
    *vert = *edge = NULL;
    *nedge = 0;
    int64_t *sc = canopy_calloc(3 * (size_t)P + 1, sizeof(int64_t), "graph counts", err);
    int64_t *rc = sc ? sc + P : NULL, *fill = sc ? sc + 2 * P : NULL;
    cint *spair = NULL, *rpair = NULL, *cnt = NULL, *rows = NULL;
    int64_t nsend = 0, nrecv = 0;
    if (sc && general) {
        for (cint j = c0; j < c1; j++)
            for (cint p = local->colptr[j]; p < local->colptr[j + 1]; p++)
                if (local->rowind[p] != j) sc[distm_col_owner(n, P, local->rowind[p])]++;
        for (int r = 0; r < P; r++) {
            fill[r] = nsend;
            nsend += sc[r];
        }
        spair = canopy_alloc(2 * (size_t)nsend + 1, sizeof(cint), "graph transpose", err);
        if (spair)
            for (cint j = c0; j < c1; j++)
                for (cint p = local->colptr[j]; p < local->colptr[j + 1]; p++) {
                    cint i = local->rowind[p];
                    if (i == j) continue;
                    int64_t q = fill[distm_col_owner(n, P, i)]++;
                    spair[2 * q] = i; /* column i of the transpose, */
                    spair[2 * q + 1] = j; /* row j */
                }
    }
    if (comm_agree(s->comm, err) < 0) goto out;
    if (general) {
        if (comm_share_counts(s->comm, sc, rc, err) != CANOPY_SUCCESS) goto out;
        for (int r = 0; r < P; r++) nrecv += rc[r];
        rpair = canopy_alloc(2 * (size_t)nrecv + 1, sizeof(cint), "graph transpose", err);
        if (comm_agree(s->comm, err) < 0 ||
            comm_share_alltoallv(s->comm, spair, sc, rpair, rc, 2 * sizeof(cint), err) != CANOPY_SUCCESS)
            goto out;
        canopy_free(spair);
        spair = NULL;
    }
    /* each column: its own rows and the transpose's, sorted, without repeats or the diagonal */
    cnt = canopy_calloc((size_t)nv + 2, sizeof(cint), "graph columns", err);
    int64_t total = (int64_t)local->colptr[c1] - local->colptr[c0] + nrecv;
    if (total > (int64_t)CINT_MAX - 1) {
        canopy_err_set(err, CANOPY_ERR_TOO_LARGE, "graph slice of %lld entries overflows the index type: rebuild Canopy "
                       "with --enable-int64", (long long)total);
        goto out;
    }
    rows = canopy_alloc((size_t)total + 1, sizeof(cint), "graph columns", err);
    if (!cnt || !rows) goto out;
    for (cint j = c0; j < c1; j++) cnt[j - c0 + 2] = local->colptr[j + 1] - local->colptr[j];
    for (int64_t q = 0; q < nrecv; q++) cnt[rpair[2 * q] - c0 + 2]++;
    for (cint k = 0; k < nv; k++) cnt[k + 2] += cnt[k + 1];
    for (cint j = c0; j < c1; j++)
        for (cint p = local->colptr[j]; p < local->colptr[j + 1]; p++) rows[cnt[j - c0 + 1]++] = local->rowind[p];
    for (int64_t q = 0; q < nrecv; q++) rows[cnt[rpair[2 * q] - c0 + 1]++] = rpair[2 * q + 1];
    /* cnt[k + 1] is now the end of column k, cnt[k] its start */
    cint out = 0;
    for (cint k = 0; k < nv; k++) {
        cint from = cnt[k], to = cnt[k + 1];
        qsort(rows + from, (size_t)(to - from), sizeof(cint), cmp_cint);
        cnt[k] = out;
        for (cint p = from; p < to; p++)
            if (rows[p] != c0 + k && (p == from || rows[p] != rows[p - 1])) rows[out++] = rows[p];
    }
    cnt[nv] = out;
    *vert = cnt;
    *edge = rows;
    *nedge = out;
    cnt = rows = NULL;
out:
    canopy_free(sc);
    canopy_free(spair);
    canopy_free(rpair);
    canopy_free(cnt);
    canopy_free(rows);
    if (comm_agree(s->comm, err) < 0) {
        canopy_free(*vert);
        canopy_free(*edge);
        *vert = *edge = NULL;
        *nedge = 0;
    }
    return err->status;
}

/* Sum of n doubles over the ranks, on every rank, in messages whose counts fit an int. */
static bool allreduce_sum(MPI_Comm comm, double *v, int64_t n)
{
    for (int64_t off = 0; off < n; off += 1 << 26) {
        int c = (int)(n - off < (1 << 26) ? n - off : (1 << 26));
        if (MPI_Allreduce(MPI_IN_PLACE, v + off, c, MPI_DOUBLE, MPI_SUM, comm) != MPI_SUCCESS) return false;
    }
    return true;
}

double distm_norm_inf(canopy_solver *s, const canopy_csc *local)
{
    const cint n = local->n;
    double *rs = canopy_calloc((size_t)n + 1, sizeof(double), "row sums", &s->err);
    double worst = 0;
    int ok = rs != NULL, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, s->comm);
    if (!all) {
        canopy_free(rs);
        return NAN;
    }
    const double *v = local->values;
    const bool cplx = local->arith == CANOPY_COMPLEX;
    for (cint j = 0; j < n; j++)
        for (cint p = local->colptr[j]; p < local->colptr[j + 1]; p++)
            rs[local->rowind[p]] += cplx ? hypot(v[2 * (size_t)p], v[2 * (size_t)p + 1]) : fabs(v[p]);
    if (!allreduce_sum(s->comm, rs, n)) worst = NAN;
    for (cint i = 0; i < n; i++)
        if (!(rs[i] <= worst)) worst = rs[i];
    canopy_free(rs);
    return worst;
}

double distm_abs_max(canopy_solver *s, const canopy_csc *local)
{
    double m = matrix_abs_max(local), all = m;
    /* a NaN anywhere must win: send it as +Inf */
    if (isnan(m)) m = INFINITY;
    MPI_Allreduce(&m, &all, 1, MPI_DOUBLE, MPI_MAX, s->comm);
    return all;
}

canopy_status distm_spmv(canopy_solver *s, cint nrhs, double alpha, const void *x, cint ldx, double beta, void *y,
                         cint ldy)
{
    const cint n = s->A.n;
    const int vsz = s->A.arith == CANOPY_COMPLEX ? 2 : 1;
    const size_t col = (size_t)n * vsz, len = col * (size_t)nrhs;
    double *xb = canopy_alloc(len + 1, sizeof(double), "product operand", &s->err);
    double *t = canopy_calloc(len + 1, sizeof(double), "product", &s->err);
    canopy_status st = comm_agree(s->comm, &s->err);
    if (st >= 0) {
        if (s->rank == 0)
            for (cint k = 0; k < nrhs; k++) memcpy(xb + k * col, (const double *)x + (size_t)k * ldx * vsz, col * sizeof(double));
        st = comm_share_bcast(s->comm, xb, (int64_t)len, &s->err);
    }
    if (st >= 0) {
        /* each rank's columns give their rows of A x, or their entries of A^T x (the others zero) */
        if (s->trans) matrix_spmv_t(&s->A, nrhs, 1.0, xb, n, 0.0, t, n);
        else matrix_spmv(&s->A, nrhs, 1.0, xb, n, 0.0, t, n);
        for (size_t off = 0; off < len; off += (size_t)1 << 26) {
            int c = (int)(len - off < ((size_t)1 << 26) ? len - off : ((size_t)1 << 26));
            int rc = s->rank == 0 ? MPI_Reduce(MPI_IN_PLACE, t + off, c, MPI_DOUBLE, MPI_SUM, 0, s->comm)
                                  : MPI_Reduce(t + off, NULL, c, MPI_DOUBLE, MPI_SUM, 0, s->comm);
            if (rc != MPI_SUCCESS) st = canopy_err_set(&s->err, CANOPY_ERR_MPI, "sum of the matrix-vector products failed");
        }
    }
    if (st >= 0 && s->rank == 0)
        for (cint k = 0; k < nrhs; k++) {
            double *yk = (double *)y + (size_t)k * ldy * vsz;
            const double *tk = t + k * col;
            for (size_t i = 0; i < col; i++) yk[i] = (beta == 0 ? 0 : beta * yk[i]) + alpha * tk[i];
        }
    canopy_free(xb);
    canopy_free(t);
    return st;
}

static bool reduce_agree(void *ctx, canopy_err *err)
{
    return comm_agree(*(MPI_Comm *)ctx, err) >= 0;
}

static bool reduce_max(void *ctx, double *v, cint n)
{
    MPI_Comm comm = *(MPI_Comm *)ctx;
    for (int64_t off = 0; off < n; off += 1 << 26) {
        int c = (int)(n - off < (1 << 26) ? n - off : (1 << 26));
        if (MPI_Allreduce(MPI_IN_PLACE, v + off, c, MPI_DOUBLE, MPI_MAX, comm) != MPI_SUCCESS) return false;
    }
    return true;
}

canopy_status distm_scaling(canopy_solver *s, canopy_scaling mode, canopy_matrix_kind kind)
{
    canopy_err *err = &s->err;
    scaling_free(&s->sc);
    if (mode == CANOPY_SCALING_NONE || (mode == CANOPY_SCALING_AUTO && kind == CANOPY_KIND_SPD)) {
        scaling_compute(&s->A, CANOPY_SCALING_NONE, kind, &s->sc, err);
        return comm_agree(s->comm, err);
    }
    if (mode == CANOPY_SCALING_EQUILIBRATE) {
        /* Ruiz's iteration on the block columns: row and column maxima reduced over the ranks */
        scaling_reduce red = {.agree = reduce_agree, .max = reduce_max, .ctx = &s->comm};
        scaling_equilibrate_reduced(&s->A, mode, kind, &red, &s->sc, err);
        return comm_agree(s->comm, err);
    }
    /* the matching is sequential (a maximum-product matching over the whole bipartite graph): on
     * rank 0, over the gathered matrix, then its vectors and permutation go to every rank */
    canopy_csc full = {0};
    if (distm_gather(s, &s->A, true, &full) < 0) return err->status;
    if (s->rank == 0) scaling_compute(&full, mode, kind, &s->sc, err);
    matrix_free(&full);
    if (comm_agree(s->comm, err) < 0) return err->status;
    const cint n = s->A.n;
    int have[3] = {s->sc.row != NULL, s->sc.col != NULL, s->sc.row_perm != NULL};
    MPI_Bcast(have, 3, MPI_INT, 0, s->comm);
    if (s->rank != 0) {
        s->sc.n = n;
        if (have[0]) s->sc.row = canopy_alloc((size_t)n, sizeof(double), "row scaling", err);
        if (have[1]) s->sc.col = canopy_alloc((size_t)n, sizeof(double), "column scaling", err);
        if (have[2]) s->sc.row_perm = canopy_alloc((size_t)n, sizeof(cint), "row permutation", err);
        if ((have[0] && !s->sc.row) || (have[1] && !s->sc.col) || (have[2] && !s->sc.row_perm)) nomem(err);
    }
    if (comm_agree(s->comm, err) < 0) return err->status;
    if (have[0]) comm_share_bcast(s->comm, s->sc.row, n, err);
    if (have[1]) comm_share_bcast(s->comm, s->sc.col, n, err);
    if (have[2]) comm_share_bcast_bytes(s->comm, s->sc.row_perm, (int64_t)n * (int64_t)sizeof(cint), err);
    return comm_agree(s->comm, err);
}
