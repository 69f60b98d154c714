/*
 * canopy_selinv over several ranks (the phase driver's part: what the ranks agree on and move).
 * The inversion itself runs on every rank over its own cblks, the other ranks' finished panels
 * broadcast to it along the solve's restricted trees (numeric_selinv_dist, selinv_template.c).
 * Then rank 0 gets what the request asks for:
 *  - listed entries (and the diagonal): rank 0 broadcasts their places, each rank fills those its
 *    cblks hold, a sum over the ranks brings them to rank 0; entries outside the factors' block
 *    structure come from solves over the ranks with unit vectors, SELINV_BATCH columns at a time
 *    (the one-rank pruned solves are not distributed yet);
 *  - the whole pattern: every rank sends rank 0 its own panels of the inverse, which rank 0 turns
 *    into the CSC matrix as one rank does (rank 0 then holds the inverse's pattern once, as the
 *    result does anyway).
 */
#include "selinv/selinv.h"
#include "matrix/matrix.h"
#include "comm/agree.h"
#include "comm/peerstats.h"
#include "comm/share.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define SELINV_BATCH 64          /* unit right-hand sides per solve */
#define SELINV_CHUNK (1 << 24)   /* elements per reduction call */
#define SELINV_TAG 4242          /* rank 0's gather of the panels (blocking, on the solver's communicator) */

static canopy_status nomem(canopy_solver *s, const char *what)
{
    return s->err.status < 0 ? s->err.status : canopy_err_set(&s->err, CANOPY_ERR_NOMEM, "canopy_selinv: out of memory (%s)", what);
}

/* the inversion over the ranks, once per factorization; the status is agreed */
static canopy_status invert_all(canopy_solver *s, double *flops, int64_t sent[2])
{
    numeric *F = &s->F;
    *flops = 0;
    sent[0] = sent[1] = 0;
    if (F->inv_state != 0) return CANOPY_SUCCESS;
    bool separate = s->opts.selinv_memory == CANOPY_SELINV_SEPARATE;
    void *Lx = F->L, *Ux = F->U;
    if (separate) {
        F->inv_L = canopy_alloc(F->coef_bytes + 1, 1, "selected inverse (selinv-memory=separate)", &s->err);
        F->inv_U = F->U ? canopy_alloc(F->coef_bytes + 1, 1, "selected inverse (selinv-memory=separate)", &s->err) : NULL;
        if (!F->inv_L || (F->U && !F->inv_U)) nomem(s, "selinv-memory=separate");
    }
    canopy_status st = comm_agree(s->comm, &s->err);
    if (st == CANOPY_SUCCESS) {
        if (separate) {
            memcpy(F->inv_L, F->L, F->coef_bytes);
            if (F->U) memcpy(F->inv_U, F->U, F->coef_bytes);
            Lx = F->inv_L;
            Ux = F->inv_U;
        }
        numeric_selinv_dist(F, Lx, Ux, flops, sent, &s->err);
        st = comm_agree(s->comm, &s->err);
        /* in place, a failure leaves half inverse, half factors: neither is usable */
        if (st == CANOPY_SUCCESS) F->inv_state = separate ? 2 : 1;
        else if (!separate) F->inv_state = 3;
    }
    if (st != CANOPY_SUCCESS && separate) {
        canopy_free(F->inv_L);
        canopy_free(F->inv_U);
        F->inv_L = F->inv_U = NULL;
    }
    return st;
}

/* Z(zr[e], zc[e]) for rank 0's list (ne on rank 0): each rank fills those its cblks hold, summed
 * on rank 0 into vals with found[e] = 1 where a rank held it. Agreed status. */
static canopy_status lookup(canopy_solver *s, int64_t ne, const cint *zr0, const cint *zc0, double *vals,
                            unsigned char *found)
{
    const symbolic *S = &s->S;
    const sched_local *L = s->F.exec.local;
    int vsz = s->F.arith == CANOPY_COMPLEX ? 2 : 1, me = s->rank;
    cint *zr = (cint *)zr0, *zc = (cint *)zc0;
    double *v = vals;
    unsigned char *f = found;
    if (me != 0) {
        zr = canopy_alloc((size_t)ne + 1, sizeof(cint), "canopy_selinv entries", &s->err);
        zc = canopy_alloc((size_t)ne + 1, sizeof(cint), "canopy_selinv entries", &s->err);
        v = canopy_alloc((size_t)ne * (size_t)vsz + 1, sizeof(double), "canopy_selinv entries", &s->err);
        f = canopy_alloc((size_t)ne + 1, 1, "canopy_selinv entries", &s->err);
        if (!zr || !zc || !v || !f) nomem(s, "entries");
    }
    canopy_status st = comm_agree(s->comm, &s->err);
    if (st == CANOPY_SUCCESS) {
        comm_share_bcast_bytes(s->comm, zr, ne * (int64_t)sizeof(cint), &s->err);
        comm_share_bcast_bytes(s->comm, zc, ne * (int64_t)sizeof(cint), &s->err);
        st = comm_agree(s->comm, &s->err);
    }
    if (st == CANOPY_SUCCESS) {
        memset(v, 0, (size_t)ne * (size_t)vsz * sizeof(double));
        memset(f, 0, (size_t)ne);
        for (int64_t e = 0; e < ne; e++) {
            cint Jr = S->col2cblk[zr[e]], Jc = S->col2cblk[zc[e]], J = Jr < Jc ? Jr : Jc;
            if (L->cblk_rank[J] == me && selinv_z_entry(&s->F, zr[e], zc[e], v + (size_t)e * vsz)) f[e] = 1;
        }
        for (int64_t a = 0; a < ne * vsz; a += SELINV_CHUNK) {
            int c = (int)(ne * vsz - a < SELINV_CHUNK ? ne * vsz - a : SELINV_CHUNK);
            if (MPI_Reduce(me == 0 ? MPI_IN_PLACE : v + a, v + a, c, MPI_DOUBLE, MPI_SUM, 0, s->comm) != MPI_SUCCESS)
                canopy_err_set(&s->err, CANOPY_ERR_MPI, "canopy_selinv: reduction of the entries failed");
        }
        for (int64_t a = 0; a < ne; a += SELINV_CHUNK) {
            int c = (int)(ne - a < SELINV_CHUNK ? ne - a : SELINV_CHUNK);
            if (MPI_Reduce(me == 0 ? MPI_IN_PLACE : f + a, f + a, c, MPI_UNSIGNED_CHAR, MPI_MAX, 0, s->comm) != MPI_SUCCESS)
                canopy_err_set(&s->err, CANOPY_ERR_MPI, "canopy_selinv: reduction of the entries failed");
        }
        st = comm_agree(s->comm, &s->err);
    }
    if (me != 0) {
        canopy_free(zr);
        canopy_free(zc);
        canopy_free(v);
        canopy_free(f);
    }
    return st;
}

static int cmp_col(const void *a, const void *b)
{
    const cint *x = a, *y = b;
    return (x[0] > y[0]) - (x[0] < y[0]);
}

/* Z(zr[q], zc[q]) for rank 0's nm entries by solves over the ranks with unit vectors (the factors
 * must be there); vals[q] on rank 0. Agreed status. */
static canopy_status solved(canopy_solver *s, int64_t nm, const cint *zr, const cint *zc, double *vals)
{
    const symbolic *S = &s->S;
    cint n = S->n;
    int vsz = s->F.arith == CANOPY_COMPLEX ? 2 : 1;
    cint *key = NULL, *slot = NULL;
    double *y = NULL;
    if (s->rank == 0 && nm > 0) {
        key = canopy_alloc(2 * (size_t)nm + 1, sizeof(cint), "canopy_selinv solves", &s->err);
        slot = canopy_alloc((size_t)n + 1, sizeof(cint), "canopy_selinv solves", &s->err);
        y = canopy_alloc((size_t)n * SELINV_BATCH * (size_t)vsz + 1, sizeof(double), "canopy_selinv solves", &s->err);
        if (!key || !slot || !y) nomem(s, "unit solves");
    }
    canopy_status st = comm_agree(s->comm, &s->err);
    if (st == CANOPY_SUCCESS && s->rank == 0 && nm > 0) {
        /* entries by column: (column, entry) pairs */
        for (int64_t q = 0; q < nm; q++) key[2 * q] = zc[q], key[2 * q + 1] = (cint)q;
        qsort(key, (size_t)nm, 2 * sizeof(cint), cmp_col);
        for (cint i = 0; i < n; i++) slot[i] = -1;
    }
    for (int64_t q0 = 0; st == CANOPY_SUCCESS;) {
        int nrhs = 0;
        int64_t q1 = q0;
        if (s->rank == 0 && nm > 0) {
            /* the next SELINV_BATCH distinct columns, unit vectors e_perm[c] in the scaled numbering */
            while (q1 < nm && (nrhs < SELINV_BATCH || slot[key[2 * q1]] >= 0)) {
                if (slot[key[2 * q1]] < 0) slot[key[2 * q1]] = nrhs++;
                q1++;
            }
            if (nrhs > 0) {
                memset(y, 0, (size_t)n * (size_t)nrhs * (size_t)vsz * sizeof(double));
                for (int64_t q = q0; q < q1; q++) {
                    cint c = key[2 * q];
                    y[((size_t)S->perm[c] + (size_t)slot[c] * n) * vsz] = 1.0;
                }
            }
        }
        MPI_Bcast(&nrhs, 1, MPI_INT, 0, s->comm);
        if (nrhs == 0) break;
        st = numeric_solve_dist(&s->F, nrhs, s->rank == 0 ? y : NULL, &s->err);
        if (st != CANOPY_SUCCESS || s->rank != 0) continue;
        for (int64_t q = q0; q < q1; q++) {
            cint c = key[2 * q], e = key[2 * q + 1];
            memcpy(vals + (size_t)e * vsz, y + ((size_t)S->perm[zr[e]] + (size_t)slot[c] * n) * vsz,
                   (size_t)vsz * sizeof(double));
        }
        for (int64_t q = q0; q < q1; q++) slot[key[2 * q]] = -1;
        q0 = q1;
    }
    canopy_free(key);
    canopy_free(slot);
    canopy_free(y);
    return st;
}

/*
 * A^-1(rows[e], cols[e]) (user numbering) for rank 0's list of ne into vals: the entries outside
 * the factors' structure by solves first, while the factors are there; then with @p invert (DIAG)
 * the inversion (its flops, seconds and messages to *flops, *secs, sent); then the entries the
 * inverse holds from the ranks holding them. Agreed status.
 */
static canopy_status entries(canopy_solver *s, int64_t ne, const cint *rows, const cint *cols, double *vals, bool invert,
                             double *flops, double *secs, int64_t sent[2])
{
    const symbolic *S = &s->S;
    int vsz = s->F.arith == CANOPY_COMPLEX ? 2 : 1;
    bool inverse = invert || s->F.inv_state != 0; /* the inverse will hold what its structure holds */
    cint *r = NULL, *c = NULL, *at = NULL;
    unsigned char *found = NULL;
    double *v = NULL;
    int64_t nm = 0, nh = 0;
    MPI_Bcast(&ne, 1, MPI_INT64_T, 0, s->comm);
    if (s->rank == 0) {
        /* the solved entries first in r, c, at, the held ones from the end */
        r = canopy_alloc((size_t)ne + 1, sizeof(cint), "canopy_selinv entries", &s->err);
        c = canopy_alloc((size_t)ne + 1, sizeof(cint), "canopy_selinv entries", &s->err);
        at = canopy_alloc((size_t)ne + 1, sizeof(cint), "canopy_selinv entries", &s->err);
        found = canopy_calloc((size_t)ne + 1, 1, "canopy_selinv entries", &s->err);
        v = canopy_alloc((size_t)ne * (size_t)vsz + 1, sizeof(double), "canopy_selinv entries", &s->err);
        if (!r || !c || !at || !found || !v) nomem(s, "entries");
        for (int64_t e = 0; r && c && at && e < ne; e++) {
            cint zr = S->iperm[rows[e]], zc = S->iperm[selinv_matched(s, cols[e])];
            int64_t q = inverse && selinv_in_structure(S, zr, zc) ? ne - 1 - nh++ : nm++;
            r[q] = zr, c[q] = zc, at[q] = (cint)e;
        }
        if (nm > 0 && s->F.inv_state == 1 && s->err.status == CANOPY_SUCCESS)
            canopy_err_set(&s->err, CANOPY_ERR_PHASE,
                           "canopy_selinv: entry (%" CINT_FMT ", %" CINT_FMT ") of the inverse lies outside the "
                           "factors' pattern, and the factors were overwritten by an earlier canopy_selinv "
                           "(selinv-memory=inplace): factorize again, or use selinv-memory=separate",
                           rows[at[0]], cols[at[0]]);
    }
    canopy_status st = comm_agree(s->comm, &s->err);
    int64_t counts[2] = {nm, nh};
    if (st == CANOPY_SUCCESS) {
        MPI_Bcast(counts, 2, MPI_INT64_T, 0, s->comm);
        if (counts[0] > 0) st = solved(s, counts[0], r, c, v);
    }
    if (st == CANOPY_SUCCESS && invert) {
        double t0 = canopy_wtime();
        st = invert_all(s, flops, sent);
        *secs = canopy_wtime() - t0;
    }
    if (st == CANOPY_SUCCESS && counts[1] > 0) {
        int64_t h0 = s->rank == 0 ? ne - nh : 0;
        st = lookup(s, counts[1], r ? r + h0 : NULL, c ? c + h0 : NULL, v ? v + (size_t)h0 * vsz : NULL,
                    found ? found + h0 : NULL);
        for (int64_t q = h0; s->rank == 0 && st == CANOPY_SUCCESS && q < ne; q++)
            if (!found[q]) st = canopy_err_set(&s->err, CANOPY_ERR_INTERNAL, "canopy_selinv: no rank holds an entry of the structure");
        st = comm_agree(s->comm, &s->err);
    }
    if (st == CANOPY_SUCCESS && s->rank == 0)
        for (int64_t q = 0; q < ne; q++) {
            double *x = vals + (size_t)at[q] * vsz;
            memcpy(x, v + (size_t)q * vsz, (size_t)vsz * sizeof(double));
            selinv_unscale(s, rows[at[q]], selinv_matched(s, cols[at[q]]), x, vsz);
        }
    canopy_free(r), canopy_free(c), canopy_free(at), canopy_free(found), canopy_free(v);
    return st;
}

/* every rank's panels of the inverse to rank 0, laid out as one rank holds them, then the CSC
 * matrix from them; agreed status */
static canopy_status pattern(canopy_solver *s, canopy_csc *out)
{
    const symbolic *S = &s->S;
    const numeric *F = &s->F;
    const sched_local *L = F->exec.local;
    int R = s->nranks, me = s->rank, parts = F->kind == CANOPY_FACT_LU ? 2 : 1;
    size_t sb = F->scalar_bytes;
    const char *mine[2] = {F->inv_state == 2 ? F->inv_L : F->L, F->inv_state == 2 ? F->inv_U : F->U};
    int64_t *held = canopy_calloc((size_t)R, sizeof(int64_t), "canopy_selinv pattern", &s->err);
    char *all[2] = {NULL, NULL}, *tmp = NULL;
    for (cint k = 0; held && k < S->ncblk; k++) held[L->cblk_rank[k]] += S->cblk_coef[k + 1] - S->cblk_coef[k];
    if (me == 0 && held) {
        int64_t most = 0;
        for (int r = 1; r < R; r++) most = held[r] > most ? held[r] : most;
        for (int p = 0; p < parts; p++)
            all[p] = canopy_alloc((size_t)S->cblk_coef[S->ncblk] + 1, sb, "canopy_selinv pattern (the inverse's panels)", &s->err);
        tmp = canopy_alloc((size_t)most + 1, sb, "canopy_selinv pattern", &s->err);
        if (!all[0] || (parts == 2 && !all[1]) || !tmp) nomem(s, "the inverse's panels on rank 0");
    }
    if (!held) nomem(s, "pattern");
    canopy_status st = comm_agree(s->comm, &s->err);
    for (int p = 0; st == CANOPY_SUCCESS && p < parts; p++) {
        if (me != 0) {
            /* a rank's own panels come first in its storage, in cblk order */
            comm_share_send_bytes(s->comm, 0, SELINV_TAG, mine[p], held[me] * (int64_t)sb, &s->err);
            continue;
        }
        for (int r = 0; r < R && s->err.status == CANOPY_SUCCESS; r++) {
            const char *src = mine[p];
            if (r > 0) {
                if (comm_share_recv_bytes(s->comm, r, SELINV_TAG, tmp, held[r] * (int64_t)sb, &s->err) != CANOPY_SUCCESS) break;
                src = tmp;
            }
            int64_t off = 0;
            for (cint k = 0; k < S->ncblk; k++) {
                if (L->cblk_rank[k] != r) continue;
                int64_t len = S->cblk_coef[k + 1] - S->cblk_coef[k];
                memcpy(all[p] + (size_t)S->cblk_coef[k] * sb, src + (size_t)off * sb, (size_t)len * sb);
                off += len;
            }
        }
    }
    if (st == CANOPY_SUCCESS) st = comm_agree(s->comm, &s->err);
    canopy_free(tmp);
    tmp = NULL;
    if (st == CANOPY_SUCCESS && me == 0) {
        /* rank 0's view of the whole inverse: every cblk at its one-rank place */
        numeric G = *F;
        G.coef = S->cblk_coef;
        G.inv_state = 2;
        G.inv_L = all[0];
        G.inv_U = all[1];
        selinv_pattern(s, &G, out);
    }
    canopy_free(all[0]);
    canopy_free(all[1]);
    canopy_free(held);
    return comm_agree(s->comm, &s->err);
}

canopy_status selinv_dist(canopy_solver *s, canopy_selinv_what what, canopy_selinv_request *req)
{
    numeric *F = &s->F;
    int w = (int)what;
    if (s->rank == 0) selinv_request_ok(s, what, req);
    MPI_Bcast(&w, 1, MPI_INT, 0, s->comm);
    if (comm_agree(s->comm, &s->err) < 0) return s->err.status;
    what = (canopy_selinv_what)w;
    double t0 = canopy_wtime(), flops = 0, secs = 0;
    int64_t sent[2] = {0, 0};
    canopy_status st = CANOPY_SUCCESS;
    if (what == CANOPY_SELINV_PATTERN) {
        st = invert_all(s, &flops, sent);
        secs = canopy_wtime() - t0;
    }
    int64_t count = 0;
    cint n = s->S.n;
    if (st == CANOPY_SUCCESS && what == CANOPY_SELINV_DIAG) {
        cint *idx = NULL;
        if (s->rank == 0) {
            idx = canopy_alloc((size_t)n + 1, sizeof(cint), "canopy_selinv diagonal", &s->err);
            if (!idx) nomem(s, "diagonal");
            for (cint i = 0; idx && i < n; i++) idx[i] = i;
        }
        st = comm_agree(s->comm, &s->err);
        if (st == CANOPY_SUCCESS) st = entries(s, n, idx, idx, s->rank == 0 ? req->diag : NULL, true, &flops, &secs, sent);
        canopy_free(idx);
        count = n;
    } else if (st == CANOPY_SUCCESS && what == CANOPY_SELINV_PATTERN) {
        st = pattern(s, s->rank == 0 ? &req->pattern : NULL);
        if (s->rank == 0 && st == CANOPY_SUCCESS) count = req->pattern.colptr[n];
    } else if (st == CANOPY_SUCCESS) {
        st = entries(s, s->rank == 0 ? req->nentries : 0, s->rank == 0 ? req->rows : NULL, s->rank == 0 ? req->cols : NULL,
                     s->rank == 0 ? req->values : NULL, false, &flops, &secs, sent);
        count = s->rank == 0 ? req->nentries : 0;
    }
    /* the figures: flops and messages summed over the ranks, the bytes each rank sent */
    double fl = 0;
    int64_t tot[2] = {0, 0};
    MPI_Allreduce(&flops, &fl, 1, MPI_DOUBLE, MPI_SUM, s->comm);
    MPI_Allreduce(sent, tot, 2, MPI_INT64_T, MPI_SUM, s->comm);
    comm_summary cs = {0};
    canopy_err e = {0};
    comm_summary_allranks(s->comm, (double)sent[1], &cs, &e);
    canopy_stats *sts = &s->stats;
    sts->time_selinv = canopy_wtime() - t0;
    sts->flops_selinv = fl;
    sts->gflops_selinv = fl > 0 && secs > 0 ? fl / secs * 1e-9 : 0;
    sts->selinv_entries = st == CANOPY_SUCCESS ? count : 0;
    if (fl > 0) { /* an inversion ran in this call */
        sts->selinv_comm_msgs = tot[0];
        sts->selinv_comm_bytes = tot[1];
        sts->selinv_bytes_rank_min = cs.min;
        sts->selinv_bytes_rank_max = cs.max;
        sts->selinv_bytes_rank_median = cs.median;
        sts->selinv_bytes_rank_stddev = cs.stddev;
    }
    if (s->rank == 0) req->perturbed_pivots = F->perturbed;
    if (st == CANOPY_SUCCESS && F->perturbed > 0)
        st = canopy_err_set(&s->err, CANOPY_WARN_PIVOTS_PERTURBED,
                            "canopy_selinv: %" PRId64 " pivots were perturbed in the factorization: the entries are "
                            "of the inverse of the perturbed matrix",
                            F->perturbed);
    return st;
}
