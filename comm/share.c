/* Analysis and entries between ranks (see share.h). */
#include "share.h"
#include "agree.h"

#include <limits.h>
#include <string.h>

#define SHARE_CHUNK (1 << 26) /* elements per MPI call: well inside int */

static int share_bcast(MPI_Comm comm, void *buf, int64_t count, MPI_Datatype type, size_t size)
{
    char *p = buf;
    for (int64_t off = 0; off < count; off += SHARE_CHUNK) {
        int64_t c = count - off < SHARE_CHUNK ? count - off : SHARE_CHUNK;
        if (MPI_Bcast(p + (size_t)off * size, (int)c, type, 0, comm) != MPI_SUCCESS) return 0;
    }
    return 1;
}

canopy_status comm_share_symbolic(MPI_Comm comm, symbolic *S, canopy_status ok, canopy_err *err)
{
    int rank, nranks;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &nranks);
    if (err && ok < 0 && err->status == CANOPY_SUCCESS) canopy_err_set(err, ok, "analysis failed");
    canopy_status st = comm_agree(comm, err);
    if (st < 0 || nranks == 1) return st;
    int64_t head[4] = {S->n, S->ncblk, S->nblok, 0};
    double fig[5] = {(double)S->nnz_l, S->flops_llt, S->flops_lu, (double)S->max_update_rows,
                     (double)S->max_update_buf};
    MPI_Bcast(head, 4, MPI_INT64_T, 0, comm);
    MPI_Bcast(fig, 5, MPI_DOUBLE, 0, comm);
    int64_t width = S->max_width;
    MPI_Bcast(&width, 1, MPI_INT64_T, 0, comm);
    if (rank != 0) {
        symbolic_free(S);
        memset(S, 0, sizeof *S);
        S->n = (cint)head[0];
        S->ncblk = (cint)head[1];
        S->nblok = (cint)head[2];
        S->nnz_l = (int64_t)fig[0];
        S->flops_llt = fig[1];
        S->flops_lu = fig[2];
        S->max_update_rows = (size_t)fig[3];
        S->max_update_buf = (size_t)fig[4];
        S->max_width = (cint)width;
        size_t nc = (size_t)S->ncblk + 1, nb = (size_t)S->nblok + 1, n = (size_t)S->n + 1;
        S->cblk_fcol = canopy_alloc(nc, sizeof(cint), "block structure", err);
        S->cblk_fblok = canopy_alloc(nc, sizeof(cint), "block structure", err);
        S->cblk_stride = canopy_alloc(nc, sizeof(cint), "block structure", err);
        S->cblk_parent = canopy_alloc(nc, sizeof(cint), "block structure", err);
        S->cblk_coef = canopy_alloc(nc, sizeof(int64_t), "block structure", err);
        S->blok_frow = canopy_alloc(nb, sizeof(cint), "block structure", err);
        S->blok_lrow = canopy_alloc(nb, sizeof(cint), "block structure", err);
        S->blok_fcblk = canopy_alloc(nb, sizeof(cint), "block structure", err);
        S->blok_coefrow = canopy_alloc(nb, sizeof(cint), "block structure", err);
        S->col2cblk = canopy_alloc(n, sizeof(cint), "block structure", err);
        S->perm = canopy_alloc(n, sizeof(cint), "block structure", err);
        S->iperm = canopy_alloc(n, sizeof(cint), "block structure", err);
    }
    int have = S->cblk_fcol && S->cblk_fblok && S->cblk_stride && S->cblk_parent && S->cblk_coef && S->blok_frow &&
               S->blok_lrow && S->blok_fcblk && S->blok_coefrow && S->col2cblk && S->perm && S->iperm;
    if (err && !have && err->status == CANOPY_SUCCESS) canopy_err_set(err, CANOPY_ERR_NOMEM, "block structure copy");
    if ((st = comm_agree(comm, err)) < 0) return st;
    MPI_Datatype ct = sizeof(cint) == 8 ? MPI_INT64_T : MPI_INT32_T;
    int64_t nc = (int64_t)S->ncblk, nb = (int64_t)S->nblok, n = (int64_t)S->n;
    int okc = share_bcast(comm, S->cblk_fcol, nc + 1, ct, sizeof(cint)) &&
              share_bcast(comm, S->cblk_fblok, nc + 1, ct, sizeof(cint)) &&
              share_bcast(comm, S->cblk_stride, nc, ct, sizeof(cint)) &&
              share_bcast(comm, S->cblk_parent, nc, ct, sizeof(cint)) &&
              share_bcast(comm, S->cblk_coef, nc + 1, MPI_INT64_T, sizeof(int64_t)) &&
              share_bcast(comm, S->blok_frow, nb, ct, sizeof(cint)) &&
              share_bcast(comm, S->blok_lrow, nb, ct, sizeof(cint)) &&
              share_bcast(comm, S->blok_fcblk, nb, ct, sizeof(cint)) &&
              share_bcast(comm, S->blok_coefrow, nb, ct, sizeof(cint)) &&
              share_bcast(comm, S->col2cblk, n, ct, sizeof(cint)) && share_bcast(comm, S->perm, n, ct, sizeof(cint)) &&
              share_bcast(comm, S->iperm, n, ct, sizeof(cint));
    if (!okc) return canopy_err_set(err, CANOPY_ERR_MPI, "broadcast of the block structure failed");
    return CANOPY_SUCCESS;
}

canopy_status comm_share_scatter(MPI_Comm comm, const void *send, const int64_t *counts, const int64_t *displs,
                                 void *recv, int64_t recv_count, canopy_err *err)
{
    int rank, nranks;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &nranks);
    /* rank 0 sends each rank its part with point-to-point messages of at most SHARE_CHUNK
     * elements; its own part is a copy */
    if (rank == 0) {
        int ok = 1;
        for (int r = 0; r < nranks; r++) {
            const char *p = (const char *)send + (size_t)displs[r] * 8;
            if (r == 0) {
                if (counts[0] > 0) memcpy(recv, p, (size_t)counts[0] * 8);
                continue;
            }
            for (int64_t off = 0; off < counts[r]; off += SHARE_CHUNK) {
                int64_t c = counts[r] - off < SHARE_CHUNK ? counts[r] - off : SHARE_CHUNK;
                if (MPI_Send(p + (size_t)off * 8, (int)c, MPI_DOUBLE, r, 77, comm) != MPI_SUCCESS) ok = 0;
            }
        }
        return ok ? CANOPY_SUCCESS : canopy_err_set(err, CANOPY_ERR_MPI, "scatter of the matrix entries failed");
    }
    for (int64_t off = 0; off < recv_count; off += SHARE_CHUNK) {
        int64_t c = recv_count - off < SHARE_CHUNK ? recv_count - off : SHARE_CHUNK;
        if (MPI_Recv((char *)recv + (size_t)off * 8, (int)c, MPI_DOUBLE, 0, 77, comm, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return canopy_err_set(err, CANOPY_ERR_MPI, "scatter of the matrix entries failed");
    }
    return CANOPY_SUCCESS;
}

canopy_status comm_share_gather(MPI_Comm comm, const void *send, int64_t send_count, void *recv,
                                const int64_t *counts, const int64_t *displs, canopy_err *err)
{
    int rank, nranks;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &nranks);
    int ok = 1;
    if (rank == 0) {
        if (counts[0] > 0) memcpy((char *)recv + (size_t)displs[0] * 8, send, (size_t)counts[0] * 8);
        for (int r = 1; r < nranks; r++)
            for (int64_t off = 0; off < counts[r]; off += SHARE_CHUNK) {
                int64_t c = counts[r] - off < SHARE_CHUNK ? counts[r] - off : SHARE_CHUNK;
                if (MPI_Recv((char *)recv + (size_t)(displs[r] + off) * 8, (int)c, MPI_DOUBLE, r, 78, comm,
                             MPI_STATUS_IGNORE) != MPI_SUCCESS)
                    ok = 0;
            }
    } else {
        for (int64_t off = 0; off < send_count; off += SHARE_CHUNK) {
            int64_t c = send_count - off < SHARE_CHUNK ? send_count - off : SHARE_CHUNK;
            if (MPI_Send((const char *)send + (size_t)off * 8, (int)c, MPI_DOUBLE, 0, 78, comm) != MPI_SUCCESS) ok = 0;
        }
    }
    return ok ? CANOPY_SUCCESS : canopy_err_set(err, CANOPY_ERR_MPI, "gather to rank 0 failed");
}

canopy_status comm_share_bcast(MPI_Comm comm, void *buf, int64_t count, canopy_err *err)
{
    return share_bcast(comm, buf, count, MPI_DOUBLE, sizeof(double))
               ? CANOPY_SUCCESS
               : canopy_err_set(err, CANOPY_ERR_MPI, "broadcast of the right-hand side failed");
}

canopy_status comm_share_scatter_bytes(MPI_Comm comm, const void *send, const int64_t *counts, const int64_t *displs,
                                       void *recv, int64_t recv_bytes, canopy_err *err)
{
    int rank, nranks;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &nranks);
    if (rank == 0) {
        int ok = 1;
        for (int r = 0; r < nranks; r++) {
            const char *p = (const char *)send + displs[r];
            if (r == 0) {
                if (counts[0] > 0) memcpy(recv, p, (size_t)counts[0]);
                continue;
            }
            for (int64_t off = 0; off < counts[r]; off += SHARE_CHUNK) {
                int64_t c = counts[r] - off < SHARE_CHUNK ? counts[r] - off : SHARE_CHUNK;
                if (MPI_Send(p + off, (int)c, MPI_BYTE, r, 79, comm) != MPI_SUCCESS) ok = 0;
            }
        }
        return ok ? CANOPY_SUCCESS : canopy_err_set(err, CANOPY_ERR_MPI, "scatter from rank 0 failed");
    }
    for (int64_t off = 0; off < recv_bytes; off += SHARE_CHUNK) {
        int64_t c = recv_bytes - off < SHARE_CHUNK ? recv_bytes - off : SHARE_CHUNK;
        if (MPI_Recv((char *)recv + off, (int)c, MPI_BYTE, 0, 79, comm, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return canopy_err_set(err, CANOPY_ERR_MPI, "scatter from rank 0 failed");
    }
    return CANOPY_SUCCESS;
}

canopy_status comm_share_bcast_bytes(MPI_Comm comm, void *buf, int64_t bytes, canopy_err *err)
{
    return share_bcast(comm, buf, bytes, MPI_BYTE, 1)
               ? CANOPY_SUCCESS
               : canopy_err_set(err, CANOPY_ERR_MPI, "broadcast from rank 0 failed");
}

canopy_status comm_share_counts(MPI_Comm comm, const int64_t *scounts, int64_t *rcounts, canopy_err *err)
{
    if (MPI_Alltoall(scounts, 1, MPI_INT64_T, rcounts, 1, MPI_INT64_T, comm) != MPI_SUCCESS)
        return canopy_err_set(err, CANOPY_ERR_MPI, "exchange of the message sizes failed");
    return CANOPY_SUCCESS;
}

canopy_status comm_share_alltoallv(MPI_Comm comm, const void *send, const int64_t *scounts, void *recv,
                                   const int64_t *rcounts, size_t elem, canopy_err *err)
{
    MPI_Request *req = comm_share_requests(comm, scounts, rcounts, elem, err);
    /* a rank without its requests must not leave the others waiting */
    canopy_status st = comm_agree(comm, err);
    if (st < 0) {
        canopy_free(req);
        return st;
    }
    return comm_share_alltoallv_agreed(comm, send, scounts, recv, rcounts, elem, req, err);
}

MPI_Request *comm_share_requests(MPI_Comm comm, const int64_t *scounts, const int64_t *rcounts, size_t elem,
                                 canopy_err *err)
{
    int rank, nranks;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &nranks);
    /* messages of at most SHARE_CHUNK bytes; the same tag from one source arrives in order */
    int64_t nreq = 0;
    for (int q = 0; q < nranks; q++) {
        if (q == rank) continue;
        nreq += ((int64_t)((size_t)scounts[q] * elem) + SHARE_CHUNK - 1) / SHARE_CHUNK;
        nreq += ((int64_t)((size_t)rcounts[q] * elem) + SHARE_CHUNK - 1) / SHARE_CHUNK;
    }
    return canopy_alloc((size_t)nreq + 1, sizeof(MPI_Request), "message requests", err);
}

canopy_status comm_share_alltoallv_agreed(MPI_Comm comm, const void *send, const int64_t *scounts, void *recv,
                                          const int64_t *rcounts, size_t elem, MPI_Request *req, canopy_err *err)
{
    int rank, nranks;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &nranks);
    int64_t soff = 0, roff = 0;
    int ok = 1;
    int64_t k = 0;
    for (int q = 0; q < nranks; q++) {
        size_t rb = (size_t)rcounts[q] * elem;
        char *p = (char *)recv + (size_t)roff * elem;
        if (q != rank)
            for (size_t off = 0; off < rb; off += SHARE_CHUNK) {
                size_t c = rb - off < SHARE_CHUNK ? rb - off : SHARE_CHUNK;
                if (MPI_Irecv(p + off, (int)c, MPI_BYTE, q, 80, comm, &req[k++]) != MPI_SUCCESS) ok = 0;
            }
        roff += rcounts[q];
    }
    for (int q = 0; q < nranks; q++) {
        size_t sb = (size_t)scounts[q] * elem;
        const char *p = (const char *)send + (size_t)soff * elem;
        if (q == rank) {
            /* the own part: a copy to where rank q's part lands */
            int64_t at = 0;
            for (int r = 0; r < rank; r++) at += rcounts[r];
            if (sb > 0) memcpy((char *)recv + (size_t)at * elem, p, sb);
        } else {
            for (size_t off = 0; off < sb; off += SHARE_CHUNK) {
                size_t c = sb - off < SHARE_CHUNK ? sb - off : SHARE_CHUNK;
                if (MPI_Isend(p + off, (int)c, MPI_BYTE, q, 80, comm, &req[k++]) != MPI_SUCCESS) ok = 0;
            }
        }
        soff += scounts[q];
    }
    /* one MPI_Wait each: GCC flags MPI_STATUSES_IGNORE with MPICH's headers (stringop-overflow) */
    for (int64_t i = 0; i < k; i++)
        if (MPI_Wait(&req[i], MPI_STATUS_IGNORE) != MPI_SUCCESS) ok = 0;
    canopy_free(req);
    return ok ? CANOPY_SUCCESS : canopy_err_set(err, CANOPY_ERR_MPI, "exchange of the matrix entries failed");
}

canopy_status comm_share_send_bytes(MPI_Comm comm, int dest, int tag, const void *buf, int64_t bytes, canopy_err *err)
{
    for (int64_t off = 0; off < bytes; off += SHARE_CHUNK) {
        int64_t c = bytes - off < SHARE_CHUNK ? bytes - off : SHARE_CHUNK;
        if (MPI_Send((const char *)buf + off, (int)c, MPI_BYTE, dest, tag, comm) != MPI_SUCCESS)
            return canopy_err_set(err, CANOPY_ERR_MPI, "message to rank %d failed", dest);
    }
    return CANOPY_SUCCESS;
}

canopy_status comm_share_recv_bytes(MPI_Comm comm, int src, int tag, void *buf, int64_t bytes, canopy_err *err)
{
    for (int64_t off = 0; off < bytes; off += SHARE_CHUNK) {
        int64_t c = bytes - off < SHARE_CHUNK ? bytes - off : SHARE_CHUNK;
        if (MPI_Recv((char *)buf + off, (int)c, MPI_BYTE, src, tag, comm, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return canopy_err_set(err, CANOPY_ERR_MPI, "message from rank %d failed", src);
    }
    return CANOPY_SUCCESS;
}

canopy_status comm_share_sum_cint(MPI_Comm comm, cint *v, int64_t count, canopy_err *err)
{
    MPI_Datatype ct = sizeof(cint) == 8 ? MPI_INT64_T : MPI_INT32_T;
    for (int64_t off = 0; off < count; off += SHARE_CHUNK) {
        int64_t c = count - off < SHARE_CHUNK ? count - off : SHARE_CHUNK;
        if (MPI_Allreduce(MPI_IN_PLACE, v + off, (int)c, ct, MPI_SUM, comm) != MPI_SUCCESS)
            return canopy_err_set(err, CANOPY_ERR_MPI, "sum over the ranks failed");
    }
    return CANOPY_SUCCESS;
}
