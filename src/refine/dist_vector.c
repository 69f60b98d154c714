/* Vectors of a distributed matrix where its rows live (see dist_vector.h). */
#include "refine/dist_vector.h"

#include <string.h>

#include "comm/agree.h"
#include "comm/share.h"
#include "matrix/dist_matrix.h"
#include "matrix/matrix.h"

static size_t vsize(const canopy_solver *s)
{
    return s->A.arith == CANOPY_COMPLEX ? 2 * sizeof(double) : sizeof(double);
}

void distv_plan_free(distv_plan *p)
{
    canopy_free(p->scnt);
    canopy_free(p->sorder);
    canopy_free(p->ridx);
    memset(p, 0, sizeof *p);
}

canopy_status distv_plan_build(canopy_solver *s, cint nloc, const cint *rows, distv_plan *p)
{
    const int P = s->nranks, R = s->rank;
    const cint n = s->A.n;
    memset(p, 0, sizeof *p);
    p->n = n;
    p->c0 = distm_first_col(n, P, R);
    p->nl = distm_first_col(n, P, R + 1) - p->c0;
    p->nloc = nloc;
    p->scnt = canopy_calloc(2 * (size_t)P + 1, sizeof(int64_t), "row layout", &s->err);
    p->rcnt = p->scnt ? p->scnt + P : NULL;
    p->sorder = canopy_alloc((size_t)nloc + 1, sizeof(cint), "row layout", &s->err);
    int64_t *fill = canopy_alloc((size_t)P + 1, sizeof(int64_t), "row layout", &s->err);
    cint *sidx = canopy_alloc((size_t)nloc + 1, sizeof(cint), "row layout", &s->err);
    cint *seen = NULL;
    if (p->scnt && p->sorder && fill && sidx) {
        for (cint k = 0; k < nloc; k++) p->scnt[distm_col_owner(n, P, rows[k])]++;
        int64_t at = 0;
        for (int q = 0; q < P; q++) {
            fill[q] = at;
            at += p->scnt[q];
        }
        for (cint k = 0; k < nloc; k++) {
            int64_t q = fill[distm_col_owner(n, P, rows[k])]++;
            p->sorder[q] = k;
            sidx[q] = rows[k];
        }
    }
    if (comm_agree(s->comm, &s->err) < 0 || comm_share_counts(s->comm, p->scnt, p->rcnt, &s->err) != CANOPY_SUCCESS)
        goto out;
    int64_t nrecv = 0;
    for (int q = 0; q < P; q++) nrecv += p->rcnt[q];
    /* every block row must arrive once: more or fewer is a layout error, named below */
    if (nrecv <= (int64_t)p->nl) p->ridx = canopy_alloc((size_t)p->nl + 1, sizeof(cint), "row layout", &s->err);
    cint *got = nrecv <= (int64_t)p->nl ? p->ridx : NULL;
    bool toomany = nrecv > (int64_t)p->nl;
    if (toomany) got = canopy_alloc((size_t)nrecv + 1, sizeof(cint), "row layout", &s->err);
    seen = canopy_alloc((size_t)p->nl + 1, sizeof(cint), "row layout", &s->err);
    if (comm_agree(s->comm, &s->err) < 0 ||
        comm_share_alltoallv(s->comm, sidx, p->scnt, got, p->rcnt, sizeof(cint), &s->err) != CANOPY_SUCCESS) {
        if (toomany) canopy_free(got);
        goto out;
    }
    for (cint i = 0; i < p->nl; i++) seen[i] = -1;
    int64_t q = 0;
    for (int src = 0; src < P && s->err.status == CANOPY_SUCCESS; src++)
        for (int64_t t = 0; t < p->rcnt[src]; t++, q++) {
            cint i = got[q] - p->c0;
            if (seen[i] >= 0) {
                canopy_err_set(&s->err, CANOPY_ERR_ARGUMENT, "row %" CINT_FMT " is given by rank %d and by rank %d "
                               "(each row must be on exactly one rank)", got[q], (int)seen[i], src);
                break;
            }
            seen[i] = src;
            got[q] = i;
        }
    for (cint i = 0; i < p->nl && s->err.status == CANOPY_SUCCESS; i++)
        if (seen[i] < 0)
            canopy_err_set(&s->err, CANOPY_ERR_ARGUMENT, "row %" CINT_FMT " is given by no rank (each row must be on "
                           "exactly one rank)", p->c0 + i);
    if (toomany) canopy_free(got);
out:
    canopy_free(fill);
    canopy_free(sidx);
    canopy_free(seen);
    if (comm_agree(s->comm, &s->err) < 0) distv_plan_free(p);
    return s->err.status;
}

canopy_status distv_to_blocks(canopy_solver *s, const distv_plan *p, cint nrhs, const void *v, cint ld, void *out)
{
    const size_t vs = vsize(s), row = vs * (size_t)nrhs;
    char *sbuf = canopy_alloc((size_t)p->nloc * row + 1, 1, "row exchange", &s->err);
    char *rbuf = canopy_alloc((size_t)p->nl * row + 1, 1, "row exchange", &s->err);
    if (sbuf)
        for (cint q = 0; q < p->nloc; q++)
            for (cint k = 0; k < nrhs; k++)
                memcpy(sbuf + (size_t)q * row + (size_t)k * vs, (const char *)v + ((size_t)k * ld + p->sorder[q]) * vs, vs);
    if (comm_agree(s->comm, &s->err) == CANOPY_SUCCESS &&
        comm_share_alltoallv(s->comm, sbuf, p->scnt, rbuf, p->rcnt, row, &s->err) == CANOPY_SUCCESS)
        for (cint q = 0; q < p->nl; q++)
            for (cint k = 0; k < nrhs; k++)
                memcpy((char *)out + ((size_t)k * p->nl + p->ridx[q]) * vs, rbuf + (size_t)q * row + (size_t)k * vs, vs);
    canopy_free(sbuf);
    canopy_free(rbuf);
    return comm_agree(s->comm, &s->err);
}

canopy_status distv_from_blocks(canopy_solver *s, const distv_plan *p, cint nrhs, const void *in, void *v, cint ld)
{
    const size_t vs = vsize(s), row = vs * (size_t)nrhs;
    char *sbuf = canopy_alloc((size_t)p->nl * row + 1, 1, "row exchange", &s->err);
    char *rbuf = canopy_alloc((size_t)p->nloc * row + 1, 1, "row exchange", &s->err);
    if (sbuf)
        for (cint q = 0; q < p->nl; q++)
            for (cint k = 0; k < nrhs; k++)
                memcpy(sbuf + (size_t)q * row + (size_t)k * vs, (const char *)in + ((size_t)k * p->nl + p->ridx[q]) * vs, vs);
    if (comm_agree(s->comm, &s->err) == CANOPY_SUCCESS &&
        comm_share_alltoallv(s->comm, sbuf, p->rcnt, rbuf, p->scnt, row, &s->err) == CANOPY_SUCCESS)
        for (cint q = 0; q < p->nloc; q++)
            for (cint k = 0; k < nrhs; k++)
                memcpy((char *)v + ((size_t)k * ld + p->sorder[q]) * vs, rbuf + (size_t)q * row + (size_t)k * vs, vs);
    canopy_free(sbuf);
    canopy_free(rbuf);
    return comm_agree(s->comm, &s->err);
}

void distv_halo_free(distv_halo *h)
{
    canopy_free(h->scnt);
    canopy_free(h->srow);
    canopy_free(h->rrow);
    canopy_free(h->X);
    canopy_free(h->T);
    memset(h, 0, sizeof *h);
}

canopy_status distv_halo_build(canopy_solver *s, cint nrhs, distv_halo *h)
{
    const int P = s->nranks, R = s->rank;
    const canopy_csc *A = &s->A;
    const cint n = A->n, c0 = distm_first_col(n, P, R), c1 = distm_first_col(n, P, R + 1);
    memset(h, 0, sizeof *h);
    h->nrhs = nrhs;
    size_t len = (size_t)n * (vsize(s) / sizeof(double)) * (size_t)nrhs;
    h->scnt = canopy_calloc(2 * (size_t)P + 1, sizeof(int64_t), "product plan", &s->err);
    h->rcnt = h->scnt ? h->scnt + P : NULL;
    h->X = canopy_calloc(len + 1, sizeof(double), "product operand", &s->err);
    h->T = canopy_alloc(len + 1, sizeof(double), "product", &s->err);
    unsigned char *touched = canopy_calloc((size_t)n + 1, 1, "product plan", &s->err);
    int64_t ns = 0, nr = 0;
    if (h->scnt && h->X && h->T && touched) {
        for (cint j = c0; j < c1; j++)
            for (cint q = A->colptr[j]; q < A->colptr[j + 1]; q++) {
                cint i = A->rowind[q];
                if ((i < c0 || i >= c1) && !touched[i]) {
                    touched[i] = 1;
                    h->scnt[distm_col_owner(n, P, i)]++;
                    ns++;
                }
            }
        h->srow = canopy_alloc((size_t)ns + 1, sizeof(cint), "product plan", &s->err);
        if (h->srow) {
            /* increasing rows are grouped by owner already: the ranges are contiguous */
            int64_t t = 0;
            for (cint i = 0; i < n; i++)
                if (touched[i]) h->srow[t++] = i;
        }
    }
    canopy_free(touched);
    if (comm_agree(s->comm, &s->err) < 0 || comm_share_counts(s->comm, h->scnt, h->rcnt, &s->err) != CANOPY_SUCCESS)
        goto out;
    for (int q = 0; q < P; q++) nr += h->rcnt[q];
    h->rrow = canopy_alloc((size_t)nr + 1, sizeof(cint), "product plan", &s->err);
    if (comm_agree(s->comm, &s->err) == CANOPY_SUCCESS &&
        comm_share_alltoallv(s->comm, h->srow, h->scnt, h->rrow, h->rcnt, sizeof(cint), &s->err) == CANOPY_SUCCESS)
        for (int64_t q = 0; q < nr; q++) h->rrow[q] -= c0;
out:
    if (comm_agree(s->comm, &s->err) < 0) distv_halo_free(h);
    return s->err.status;
}

/* y = alpha A^T x + beta y: the rows of x this rank's columns touch come from their owners (the
 * halo's exchange backwards), then each own column is one dot product; nothing is summed across ranks */
static canopy_status spmv_t(canopy_solver *s, distv_halo *h, cint nrhs, double alpha, const void *x, double beta,
                            void *y)
{
    const int P = s->nranks;
    const cint n = s->A.n, c0 = distm_first_col(n, P, s->rank), nl = distm_first_col(n, P, s->rank + 1) - c0;
    const int vsz = s->A.arith == CANOPY_COMPLEX ? 2 : 1;
    const size_t col = (size_t)n * vsz, row = (size_t)vsz * nrhs;
    int64_t ns = 0, nr = 0;
    for (int q = 0; q < P; q++) {
        ns += h->scnt[q];
        nr += h->rcnt[q];
    }
    double *sbuf = canopy_alloc((size_t)nr * row + 1, sizeof(double), "product exchange", &s->err);
    double *rbuf = canopy_alloc((size_t)ns * row + 1, sizeof(double), "product exchange", &s->err);
    if (nrhs > h->nrhs) canopy_err_set(&s->err, CANOPY_ERR_INTERNAL, "product plan for %d columns, %d asked",
                                       (int)h->nrhs, (int)nrhs);
    if (comm_agree(s->comm, &s->err) < 0) goto out;
    for (int64_t q = 0; q < nr; q++)
        for (cint k = 0; k < nrhs; k++)
            memcpy(sbuf + (size_t)q * row + (size_t)k * vsz, (const double *)x + ((size_t)k * nl + h->rrow[q]) * vsz,
                   vsz * sizeof(double));
    if (comm_share_alltoallv(s->comm, sbuf, h->rcnt, rbuf, h->scnt, row * sizeof(double), &s->err) != CANOPY_SUCCESS)
        goto out;
    for (cint k = 0; k < nrhs; k++) {
        memcpy(h->X + k * col + (size_t)c0 * vsz, (const double *)x + (size_t)k * nl * vsz, (size_t)nl * vsz * sizeof(double));
        for (int64_t q = 0; q < ns; q++)
            memcpy(h->X + k * col + (size_t)h->srow[q] * vsz, rbuf + (size_t)q * row + (size_t)k * vsz, vsz * sizeof(double));
    }
    /* the columns held here are c0 .. c0 + nl - 1: the others of T stay untouched by the user */
    matrix_spmv_t(&s->A, nrhs, 1.0, h->X, n, 0.0, h->T, n);
    for (cint k = 0; k < nrhs; k++) {
        double *yk = (double *)y + (size_t)k * nl * vsz;
        const double *tk = h->T + k * col + (size_t)c0 * vsz;
        for (size_t i = 0; i < (size_t)nl * vsz; i++) yk[i] = (beta == 0 ? 0 : beta * yk[i]) + alpha * tk[i];
    }
out:
    canopy_free(sbuf);
    canopy_free(rbuf);
    return comm_agree(s->comm, &s->err);
}

canopy_status distv_spmv(canopy_solver *s, distv_halo *h, cint nrhs, double alpha, const void *x, double beta,
                         void *y)
{
    if (s->trans) return spmv_t(s, h, nrhs, alpha, x, beta, y);
    const int P = s->nranks;
    const cint n = s->A.n, c0 = distm_first_col(n, P, s->rank), nl = distm_first_col(n, P, s->rank + 1) - c0;
    const int vsz = s->A.arith == CANOPY_COMPLEX ? 2 : 1;
    const size_t col = (size_t)n * vsz, row = (size_t)vsz * nrhs;
    int64_t ns = 0, nr = 0;
    for (int q = 0; q < P; q++) {
        ns += h->scnt[q];
        nr += h->rcnt[q];
    }
    double *sbuf = canopy_alloc((size_t)ns * row + 1, sizeof(double), "product exchange", &s->err);
    double *rbuf = canopy_alloc((size_t)nr * row + 1, sizeof(double), "product exchange", &s->err);
    if (nrhs > h->nrhs) canopy_err_set(&s->err, CANOPY_ERR_INTERNAL, "product plan for %d columns, %d asked",
                                       (int)h->nrhs, (int)nrhs);
    if (comm_agree(s->comm, &s->err) < 0) goto out;
    /* this rank's columns times its rows of x; the partial sums of other ranks' rows go to them */
    for (cint k = 0; k < nrhs; k++)
        memcpy(h->X + k * col + (size_t)c0 * vsz, (const double *)x + (size_t)k * nl * vsz, (size_t)nl * vsz * sizeof(double));
    matrix_spmv(&s->A, nrhs, 1.0, h->X, n, 0.0, h->T, n);
    for (int64_t q = 0; q < ns; q++)
        for (cint k = 0; k < nrhs; k++)
            memcpy(sbuf + (size_t)q * row + (size_t)k * vsz, h->T + k * col + (size_t)h->srow[q] * vsz, vsz * sizeof(double));
    if (comm_share_alltoallv(s->comm, sbuf, h->scnt, rbuf, h->rcnt, row * sizeof(double), &s->err) != CANOPY_SUCCESS)
        goto out;
    /* own partial sums first, then the others' in rank order: the same bits on every run */
    for (int64_t q = 0; q < nr; q++)
        for (cint k = 0; k < nrhs; k++) {
            double *t = h->T + k * col + (size_t)(c0 + h->rrow[q]) * vsz;
            for (int c = 0; c < vsz; c++) t[c] += rbuf[(size_t)q * row + (size_t)k * vsz + c];
        }
    for (cint k = 0; k < nrhs; k++) {
        double *yk = (double *)y + (size_t)k * nl * vsz;
        const double *tk = h->T + k * col + (size_t)c0 * vsz;
        for (size_t i = 0; i < (size_t)nl * vsz; i++) yk[i] = (beta == 0 ? 0 : beta * yk[i]) + alpha * tk[i];
    }
out:
    canopy_free(sbuf);
    canopy_free(rbuf);
    return comm_agree(s->comm, &s->err);
}
