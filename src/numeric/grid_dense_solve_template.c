/*
 * Arithmetic-generic part of grid_dense_solve.c (right-hand sides' scatter and gather, forward and
 * backward solves): see grid_dense_solve.h. Not compiled on its own: grid_dense_solve.c (_d) and
 * grid_dense_solve_z.c (_z) define the macros (those of grid_dense_template.c: SCALAR, KSFX, K_ONE,
 * K_MONE, K_BS, K_GEMM, K_TRSM, K_TRANS_H, K_MPI_MULT) and include it. LL^T's backward solve uses
 * L^H for complex (Hermitian), LDL^T's uses L^T (complex symmetric), as solve_template.c does.
 */
#include "numeric/grid_dense_solve.h"
#include "comm/tree.h"
#include "comm/agree.h"

#include <limits.h>
#include <string.h>
#include <cblas.h>

/* ---- scatter and gather ------------------------------------------------------------------ */

/* Copy the rows of grid row r between B (ldb) and a packed rows x nrhs array (dir 0: B -> P). */
static void gds_pack(const grid_dense *g, int r, SCALAR *B, cint ldb, cint nrhs, SCALAR *P, int dir)
{
    cint R = grid_dense_count(g->n, g->nb, g->pr, r);
    for (cint j = 0; j < nrhs; j++)
        for (cint li = 0; li < R; li += g->nb) {
            cint gi = ((li / g->nb) * g->pr + r) * g->nb, h = CANOPY_MIN(g->nb, R - li);
            SCALAR *b = B + gi + (size_t)j * ldb, *p = P + li + (size_t)j * R;
            if (dir == 0) memcpy(p, b, (size_t)h * sizeof *p);
            else memcpy(b, p, (size_t)h * sizeof *p);
        }
}

/* Between a packed rows x nrhs array and a local one of leading dimension ld (dir 0: L -> P). */
static void gds_copy(cint rows, cint nrhs, SCALAR *L, cint ld, SCALAR *P, int dir)
{
    for (cint j = 0; j < nrhs && rows > 0; j++) {
        if (dir == 0) memcpy(P + (size_t)j * rows, L + (size_t)j * ld, (size_t)rows * sizeof *P);
        else memcpy(L + (size_t)j * ld, P + (size_t)j * rows, (size_t)rows * sizeof *P);
    }
}

static canopy_status gds_move(const grid_dense *g, int root, SCALAR *B, cint ldb, cint nrhs, SCALAR *local, cint ld,
                              int dir, canopy_err *err)
{
    canopy_err e = {0};
    if (grid_dense_check(g, &e) == CANOPY_SUCCESS && g->comm == MPI_COMM_NULL)
        canopy_err_set(&e, CANOPY_ERR_ARGUMENT, "grid_dense: no communicator");
    if (e.status == CANOPY_SUCCESS && nrhs < 0)
        canopy_err_set(&e, CANOPY_ERR_ARGUMENT, "grid_dense: %" CINT_FMT " right-hand sides", nrhs);
    if (e.status != CANOPY_SUCCESS) {
        if (err) *err = e;
        return e.status;
    }
    int me, np = g->pr * g->pc;
    MPI_Comm_rank(g->comm, &me);
    cint rows = grid_dense_rhs_rows(g, me);
    int64_t big = (int64_t)grid_dense_count(g->n, g->nb, g->pr, 0) * nrhs;
    SCALAR *buf = NULL;
    if (big > INT_MAX / K_MPI_MULT) canopy_err_set(&e, CANOPY_ERR_TOO_LARGE, "grid_dense: right-hand sides over INT_MAX entries");
    else if (me == root && nrhs > 0 && (B == NULL || ldb < CANOPY_MAX(1, g->n)))
        canopy_err_set(&e, CANOPY_ERR_ARGUMENT, "grid_dense: no right-hand sides on the root");
    else if (rows * nrhs > 0 && (local == NULL || ld < rows))
        canopy_err_set(&e, CANOPY_ERR_ARGUMENT, "grid_dense: NULL local right-hand sides or ld too small");
    else if (me == root || rows * nrhs > 0)
        buf = canopy_alloc((size_t)big + 1, sizeof *buf, "grid_dense rhs buffer", &e);
    if (comm_agree(g->comm, &e) != CANOPY_SUCCESS) {
        canopy_free(buf);
        if (err) *err = e;
        return e.status;
    }
    int rc = MPI_SUCCESS;
    if (me == root) {
        for (int q = 0; q < np && rc == MPI_SUCCESS; q += g->pc) {
            cint qr = grid_dense_rhs_rows(g, q);
            int cnt = (int)(qr * nrhs);
            if (cnt == 0) continue;
            if (dir == 0) {
                gds_pack(g, q / g->pc, B, ldb, nrhs, buf, 0);
                if (q == me) gds_copy(qr, nrhs, local, ld, buf, 1);
                else rc = MPI_Send(buf, cnt * K_MPI_MULT, MPI_DOUBLE, q, g->tag, g->comm);
            } else {
                if (q == me) gds_copy(qr, nrhs, local, ld, buf, 0);
                else rc = MPI_Recv(buf, cnt * K_MPI_MULT, MPI_DOUBLE, q, g->tag, g->comm, MPI_STATUS_IGNORE);
                if (rc == MPI_SUCCESS) gds_pack(g, q / g->pc, B, ldb, nrhs, buf, 1);
            }
        }
    } else if (rows * nrhs > 0) {
        int cnt = (int)(rows * nrhs);
        if (dir == 0) {
            rc = MPI_Recv(buf, cnt * K_MPI_MULT, MPI_DOUBLE, root, g->tag, g->comm, MPI_STATUS_IGNORE);
            if (rc == MPI_SUCCESS) gds_copy(rows, nrhs, local, ld, buf, 1);
        } else {
            gds_copy(rows, nrhs, local, ld, buf, 0);
            rc = MPI_Send(buf, cnt * K_MPI_MULT, MPI_DOUBLE, root, g->tag, g->comm);
        }
    }
    canopy_free(buf);
    if (rc != MPI_SUCCESS)
        canopy_err_set(&e, CANOPY_ERR_MPI, "grid_dense: right-hand sides %s failed", dir ? "gather" : "scatter");
    canopy_status st = comm_agree(g->comm, &e);
    if (err) *err = e;
    return st;
}

canopy_status KSFX(grid_dense_rhs_scatter)(const grid_dense *g, int root, const SCALAR *B, cint ldb, cint nrhs,
                                       SCALAR *local, cint ld, canopy_err *err)
{
    return gds_move(g, root, (SCALAR *)B, ldb, nrhs, local, ld, 0, err); /* dir 0 only reads B */
}

canopy_status KSFX(grid_dense_rhs_gather)(const grid_dense *g, int root, const SCALAR *local, cint ld, cint nrhs,
                                      SCALAR *B, cint ldb, canopy_err *err)
{
    return gds_move(g, root, B, ldb, nrhs, (SCALAR *)local, ld, 1, err); /* dir 1 only reads local */
}

/* ---- the solves -------------------------------------------------------------------------- */

typedef struct gds_ctx {
    const grid_dense *g;
    int me, myr, myc, pr, pc;
    cint n, m, nb, nt, nsteps, R, lld, nrhs;
    const SCALAR *A;       /* the factor (local array) */
    const cint *ipiv;
    const SCALAR *dsub;
    SCALAR *B;             /* the right-hand sides (grid column 0) */
    cint ldb;
    SCALAR *W;             /* grid column 0: B; elsewhere a zeroed R x nrhs array (partial sums, or
                              the symmetric backward's copy of the solution's rows) */
    cint ldw;
    SCALAR *own;           /* R x nrhs (at least nb x nrhs) where W is not B */
    SCALAR *buf, *scr;     /* a message and a child's contribution, max(R, nb) x nrhs each */
    int *members;
    int mpi_failed, tree_failed;
} gds_ctx;

static cint gds_lrow(const gds_ctx *c, cint gidx, int r)
{
    return grid_dense_local_index(gidx, c->nb, c->pr, r);
}
static cint gds_lcol(const gds_ctx *c, cint gidx, int q)
{
    return grid_dense_local_index(gidx, c->nb, c->pc, q);
}
static cint gds_rows_from(const gds_ctx *c, int r, cint gidx)
{
    return grid_dense_count(c->n, c->nb, c->pr, r) - gds_lrow(c, gidx, r);
}
static cint gds_cols_from(const gds_ctx *c, int q, cint gidx)
{
    return grid_dense_count(c->n, c->nb, c->pc, q) - gds_lcol(c, gidx, q);
}

static bool gds_is_member(const gds_ctx *c, int p)
{
    for (int i = 0; i < p; i++)
        if (c->members[i] == c->me) return true;
    return false;
}

static bool gds_tree(gds_ctx *c, int p, comm_tree *t)
{
    if (comm_tree_build(c->members, p, c->me, CANOPY_TREE_BINARY, 0, t, NULL) != CANOPY_SUCCESS) {
        c->tree_failed = 1; /* cannot happen: the members are distinct and at most 64 */
        return false;
    }
    return true;
}

/* Broadcast @p count scalars of @p buf from members[0] to the members (blocking: every rank runs
 * the same sequence of operations, each one's messages only wait for the same or earlier ones). */
static void gds_bcast(gds_ctx *c, int p, SCALAR *buf, int count, int what)
{
    comm_tree t;
    if (p <= 1 || count <= 0 || !gds_is_member(c, p) || !gds_tree(c, p, &t)) return;
    int tag = c->g->tag + what;
    if (t.parent >= 0 && MPI_Recv(buf, count * K_MPI_MULT, MPI_DOUBLE, t.parent, tag, c->g->comm, MPI_STATUS_IGNORE) != MPI_SUCCESS)
        c->mpi_failed = 1;
    for (int k = 0; k < t.nchildren; k++)
        if (MPI_Send(buf, count * K_MPI_MULT, MPI_DOUBLE, t.kids[k], tag, c->g->comm) != MPI_SUCCESS) c->mpi_failed = 1;
}

/* Sum the members' @p buf onto members[0]'s (c->scr receives the children's). */
static void gds_reduce(gds_ctx *c, int p, SCALAR *buf, int count, int what)
{
    comm_tree t;
    if (p <= 1 || count <= 0 || !gds_is_member(c, p) || !gds_tree(c, p, &t)) return;
    int tag = c->g->tag + what;
    for (int k = 0; k < t.nchildren; k++) {
        if (MPI_Recv(c->scr, count * K_MPI_MULT, MPI_DOUBLE, t.kids[k], tag, c->g->comm, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
            c->mpi_failed = 1;
            continue;
        }
        for (int i = 0; i < count; i++) buf[i] += c->scr[i];
    }
    if (t.parent >= 0 && MPI_Send(buf, count * K_MPI_MULT, MPI_DOUBLE, t.parent, tag, c->g->comm) != MPI_SUCCESS)
        c->mpi_failed = 1;
}

/* Rank (kr, 0) gets the step's w solved rows from the diagonal owner @p root into B's rows. */
static void gds_store(gds_ctx *c, int root, int kr, cint kb, cint w)
{
    int holder = kr * c->pc;
    int count = (int)(w * c->nrhs);
    cint lr = gds_lrow(c, kb, kr);
    if (root == holder) {
        if (c->me == root) gds_copy(w, c->nrhs, c->B + lr, c->ldb, c->buf, 1);
        return;
    }
    if (c->me == root && MPI_Send(c->buf, count * K_MPI_MULT, MPI_DOUBLE, holder, c->g->tag + 2, c->g->comm) != MPI_SUCCESS)
        c->mpi_failed = 1;
    if (c->me == holder) {
        if (MPI_Recv(c->scr, count * K_MPI_MULT, MPI_DOUBLE, root, c->g->tag + 2, c->g->comm, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            c->mpi_failed = 1;
        else gds_copy(w, c->nrhs, c->B + lr, c->ldb, c->scr, 1);
    }
}

/* Pointer to the diagonal tile of the step starting at kb (on its owner). */
static const SCALAR *gds_diag(const gds_ctx *c, cint kb)
{
    return c->A + gds_lrow(c, kb, c->myr) + (size_t)gds_lcol(c, kb, c->myc) * c->lld;
}

static void gds_forward(gds_ctx *c)
{
    const canopy_factorization kind = c->g->kind;
    cint nrhs = c->nrhs;
    for (cint k = 0; k < c->nsteps; k++) {
        cint kb = k * c->nb, ke = CANOPY_MIN(kb + c->nb, c->m), w = ke - kb;
        int kr = (int)(k % c->pr), kc = (int)(k % c->pc), root = kr * c->pc + kc, p = 0;
        int count = (int)(w * nrhs);
        /* 1. the step's rows summed along grid row kr: b_k from grid column 0, - L_kj y_j from the
         * ranks holding columns left of the step */
        if (c->myr == kr) {
            c->members[p++] = root;
            for (int q = 0; q < c->pc; q++)
                if (q != kc && (q == 0 || gds_lcol(c, kb, q) > 0)) c->members[p++] = kr * c->pc + q;
            if (gds_is_member(c, p)) {
                gds_copy(w, nrhs, c->W + gds_lrow(c, kb, kr), c->ldw, c->buf, 0);
                gds_reduce(c, p, c->buf, count, 0);
            }
            if (c->me == root) {
                const SCALAR *T = gds_diag(c, kb);
                if (kind != CANOPY_FACT_LLT) /* the step's interchanges, in order */
                    for (cint j = 0; j < w; j++) {
                        cint pj = c->ipiv[kb + j];
                        if (pj >= 0 && pj != j)
                            for (cint r = 0; r < nrhs; r++) {
                                SCALAR *col = c->buf + r * w, t = col[j];
                                col[j] = col[pj];
                                col[pj] = t;
                            }
                    }
                if (count > 0)
                    K_TRSM(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans,
                           kind == CANOPY_FACT_LLT ? CblasNonUnit : CblasUnit, (int)w, (int)nrhs, K_BS(K_ONE), T,
                           (int)c->lld, c->buf, (int)w);
            }
        }
        /* 2. y_k down grid column kc; the rows below the step get b -= L y_k */
        if (c->myc == kc) {
            p = 0;
            c->members[p++] = root;
            for (int r = 0; r < c->pr; r++)
                if (r != kr && gds_rows_from(c, r, ke) > 0) c->members[p++] = r * c->pc + kc;
            if (gds_is_member(c, p)) {
                gds_bcast(c, p, c->buf, count, 1);
                cint rows = gds_rows_from(c, c->myr, ke), lr = gds_lrow(c, ke, c->myr);
                if (rows > 0 && nrhs > 0)
                    K_GEMM(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)rows, (int)nrhs, (int)w, K_BS(K_MONE),
                           c->A + lr + (size_t)gds_lcol(c, kb, kc) * c->lld, (int)c->lld, c->buf, (int)w, K_BS(K_ONE),
                           c->W + lr, (int)c->ldw);
            }
        }
        /* 3. LDL^T: D^-1 y_k (1x1 and 2x2 pivots of the diagonal tile), then stored on grid column 0 */
        if (c->me == root && kind == CANOPY_FACT_LDLT) {
            const SCALAR *T = gds_diag(c, kb);
            for (cint j = 0; j < w;) {
                if (c->ipiv[kb + j] < 0) {
                    SCALAR a = T[j + (size_t)j * c->lld], b = c->dsub[kb + j];
                    SCALAR d = T[(j + 1) + (size_t)(j + 1) * c->lld], det = a * d - b * b;
                    for (cint r = 0; r < nrhs; r++) {
                        SCALAR *col = c->buf + r * w, x1 = col[j], x2 = col[j + 1];
                        col[j] = (d * x1 - b * x2) / det;
                        col[j + 1] = (a * x2 - b * x1) / det;
                    }
                    j += 2;
                } else {
                    SCALAR a = T[j + (size_t)j * c->lld];
                    for (cint r = 0; r < nrhs; r++) c->buf[j + r * w] /= a;
                    j++;
                }
            }
        }
        gds_store(c, root, kr, kb, w);
    }
    /* the trailing rows: their partial sums along each grid row onto grid column 0 */
    cint rows = gds_rows_from(c, c->myr, c->m), lr = gds_lrow(c, c->m, c->myr);
    if (c->m < c->n && c->m > 0 && rows > 0) {
        int p = 0;
        c->members[p++] = c->myr * c->pc;
        for (int q = 1; q < c->pc; q++)
            if (gds_lcol(c, c->m, q) > 0) c->members[p++] = c->myr * c->pc + q;
        if (gds_is_member(c, p)) {
            gds_copy(rows, nrhs, c->W + lr, c->ldw, c->buf, 0);
            gds_reduce(c, p, c->buf, (int)(rows * nrhs), 3);
            if (c->myc == 0) gds_copy(rows, nrhs, c->B + lr, c->ldb, c->buf, 1);
        }
    }
}

static void gds_backward(gds_ctx *c)
{
    const bool lu = c->g->kind == CANOPY_FACT_LU;
    cint nrhs = c->nrhs;
    /* the trailing solution x2, one tile's rows at a time, to the ranks whose factor uses it: LU,
     * U12's grid column; LL^T and LDL^T, L21's grid row (kept in W) */
    for (cint t = c->m / c->nb; c->m > 0 && t < c->nt; t++) {
        cint s0 = CANOPY_MAX(t * c->nb, c->m), len = CANOPY_MIN((t + 1) * c->nb, c->n) - s0;
        int tr = (int)(t % c->pr), tc = (int)(t % c->pc), holder = tr * c->pc, p = 0;
        int count = (int)(len * nrhs);
        if (len <= 0) continue;
        c->members[p++] = holder;
        if (lu) {
            for (int r = 0; r < c->pr; r++)
                if (r * c->pc + tc != holder && gds_lrow(c, c->m, r) > 0) c->members[p++] = r * c->pc + tc;
        } else {
            for (int q = 1; q < c->pc; q++)
                if (gds_lcol(c, c->m, q) > 0) c->members[p++] = tr * c->pc + q;
        }
        if (!gds_is_member(c, p)) continue;
        if (c->me == holder) gds_copy(len, nrhs, c->B + gds_lrow(c, s0, tr), c->ldb, c->buf, 0);
        gds_bcast(c, p, c->buf, count, 1);
        if (lu) {
            cint rows = gds_lrow(c, c->m, c->myr);
            if (c->myc == tc && rows > 0 && nrhs > 0)
                K_GEMM(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)rows, (int)nrhs, (int)len, K_BS(K_MONE),
                       c->A + (size_t)gds_lcol(c, s0, tc) * c->lld, (int)c->lld, c->buf, (int)len, K_BS(K_ONE), c->W,
                       (int)c->ldw);
        } else if (c->me != holder) {
            gds_copy(len, nrhs, c->W + gds_lrow(c, s0, tr), c->ldw, c->buf, 1);
        }
    }
    for (cint k = c->nsteps - 1; k >= 0; k--) {
        cint kb = k * c->nb, ke = CANOPY_MIN(kb + c->nb, c->m), w = ke - kb;
        int kr = (int)(k % c->pr), kc = (int)(k % c->pc), root = kr * c->pc + kc, holder = kr * c->pc, p = 0;
        int count = (int)(w * nrhs);
        cint lr_kb = gds_lrow(c, kb, c->myr);
        if (lu) {
            /* y_k - U_kj x_j summed along grid row kr (the U_kj x_j are already in W) */
            if (c->myr == kr) {
                c->members[p++] = root;
                for (int q = 0; q < c->pc; q++)
                    if (q != kc && (q == 0 || gds_cols_from(c, q, ke) > 0)) c->members[p++] = kr * c->pc + q;
                if (gds_is_member(c, p)) {
                    gds_copy(w, nrhs, c->W + lr_kb, c->ldw, c->buf, 0);
                    gds_reduce(c, p, c->buf, count, 0);
                }
                if (c->me == root && count > 0)
                    K_TRSM(CblasColMajor, CblasLeft, CblasUpper, CblasNoTrans, CblasNonUnit, (int)w, (int)nrhs,
                           K_BS(K_ONE), gds_diag(c, kb), (int)c->lld, c->buf, (int)w);
            }
            /* x_k down grid column kc to the U tiles above the step */
            if (c->myc == kc) {
                p = 0;
                c->members[p++] = root;
                for (int r = 0; r < c->pr; r++)
                    if (r != kr && gds_lrow(c, kb, r) > 0) c->members[p++] = r * c->pc + kc;
                if (gds_is_member(c, p)) {
                    gds_bcast(c, p, c->buf, count, 1);
                    if (lr_kb > 0 && nrhs > 0)
                        K_GEMM(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)lr_kb, (int)nrhs, (int)w, K_BS(K_MONE),
                               c->A + (size_t)gds_lcol(c, kb, kc) * c->lld, (int)c->lld, c->buf, (int)w, K_BS(K_ONE),
                               c->W, (int)c->ldw);
                }
            }
            gds_store(c, root, kr, kb, w);
            continue;
        }
        /* symmetric: y_k from grid column 0, - L_jk^T x_j summed down grid column kc (W holds the
         * x_j of each rank's rows) */
        if (c->me == root) {
            if (root == holder) {
                gds_copy(w, nrhs, c->B + lr_kb, c->ldb, c->buf, 0);
            } else if (count > 0 &&
                       MPI_Recv(c->buf, count * K_MPI_MULT, MPI_DOUBLE, holder, c->g->tag + 2, c->g->comm, MPI_STATUS_IGNORE) !=
                           MPI_SUCCESS) {
                c->mpi_failed = 1;
            }
        } else if (c->me == holder && count > 0) {
            gds_copy(w, nrhs, c->B + lr_kb, c->ldb, c->scr, 0);
            if (MPI_Send(c->scr, count * K_MPI_MULT, MPI_DOUBLE, root, c->g->tag + 2, c->g->comm) != MPI_SUCCESS) c->mpi_failed = 1;
        }
        if (c->myc == kc) {
            c->members[p++] = root;
            for (int r = 0; r < c->pr; r++)
                if (r != kr && gds_rows_from(c, r, ke) > 0) c->members[p++] = r * c->pc + kc;
            if (gds_is_member(c, p)) {
                cint rows = gds_rows_from(c, c->myr, ke), lr = gds_lrow(c, ke, c->myr);
                if (c->me != root) memset(c->buf, 0, (size_t)count * sizeof *c->buf);
                if (rows > 0 && nrhs > 0)
                    K_GEMM(CblasColMajor, c->g->kind == CANOPY_FACT_LLT ? K_TRANS_H : CblasTrans, CblasNoTrans, (int)w,
                           (int)nrhs, (int)rows, K_BS(K_MONE),
                           c->A + lr + (size_t)gds_lcol(c, kb, kc) * c->lld, (int)c->lld, c->W + lr,
                           (int)c->ldw, K_BS(K_ONE), c->buf, (int)w);
                gds_reduce(c, p, c->buf, count, 0);
            }
        }
        if (c->me == root) {
            if (count > 0)
                K_TRSM(CblasColMajor, CblasLeft, CblasLower, c->g->kind == CANOPY_FACT_LLT ? K_TRANS_H : CblasTrans,
                       c->g->kind == CANOPY_FACT_LLT ? CblasNonUnit : CblasUnit, (int)w, (int)nrhs, K_BS(K_ONE),
                       gds_diag(c, kb), (int)c->lld, c->buf, (int)w);
            if (c->g->kind == CANOPY_FACT_LDLT) /* the symmetric interchanges back, in reverse order */
                for (cint j = w - 1; j >= 0; j--) {
                    cint pj = c->ipiv[kb + j];
                    if (pj >= 0 && pj != j)
                        for (cint r = 0; r < nrhs; r++) {
                            SCALAR *col = c->buf + r * w, tmp = col[j];
                            col[j] = col[pj];
                            col[pj] = tmp;
                        }
                }
        }
        /* x_k along grid row kr: into W (grid column 0: B, the result) where L's tiles left of
         * the step use it */
        if (c->myr == kr) {
            p = 0;
            c->members[p++] = root;
            for (int q = 0; q < c->pc; q++)
                if (q != kc && (q == 0 || gds_lcol(c, kb, q) > 0)) c->members[p++] = kr * c->pc + q;
            if (gds_is_member(c, p)) {
                gds_bcast(c, p, c->buf, count, 1);
                gds_copy(w, nrhs, c->W + lr_kb, c->ldw, c->buf, 1);
            }
        }
    }
}

/* dir 0: forward, 1: backward. */
static canopy_status gds_solve(const grid_dense *g, const SCALAR *factor, const cint *ipiv, const SCALAR *dsub,
                               cint nrhs, SCALAR *rhs, cint ld, int dir, canopy_err *err)
{
    canopy_err e = {0};
    if (grid_dense_check(g, &e) == CANOPY_SUCCESS && g->comm == MPI_COMM_NULL)
        canopy_err_set(&e, CANOPY_ERR_ARGUMENT, "grid_dense: no communicator");
    if (e.status == CANOPY_SUCCESS && nrhs < 0)
        canopy_err_set(&e, CANOPY_ERR_ARGUMENT, "grid_dense: %" CINT_FMT " right-hand sides", nrhs);
    if (e.status != CANOPY_SUCCESS) { /* the same arguments everywhere: the same refusal, no agreement */
        if (err) *err = e;
        return e.status;
    }
    gds_ctx c = {.g = g, .pr = g->pr, .pc = g->pc, .n = g->n, .m = g->m, .nb = g->nb, .nrhs = nrhs, .A = factor,
                 .ipiv = ipiv, .dsub = dsub, .B = rhs, .ldb = ld};
    MPI_Comm_rank(g->comm, &c.me);
    c.myr = c.me / c.pc;
    c.myc = c.me % c.pc;
    c.nt = (c.n + c.nb - 1) / c.nb;
    c.nsteps = (c.m + c.nb - 1) / c.nb;
    c.R = grid_dense_count(c.n, c.nb, c.pr, c.myr);
    c.lld = grid_dense_ld(g, c.me);
    bool lu = g->kind == CANOPY_FACT_LU, ldlt = g->kind == CANOPY_FACT_LDLT;
    int *tag_ub = NULL, flag = 0;
    MPI_Comm_get_attr(g->comm, MPI_TAG_UB, &tag_ub, &flag);
    cint R0 = grid_dense_count(c.n, c.nb, c.pr, 0); /* the most rows of any grid row */
    size_t bsz = (size_t)CANOPY_MAX(R0, c.nb) * (size_t)nrhs;
    cint lrows = grid_dense_rhs_rows(g, c.me);
    if (c.pr + 1 > GRID_DENSE_MAX_MEMBERS || c.pc + 1 > GRID_DENSE_MAX_MEMBERS)
        canopy_err_set(&e, CANOPY_ERR_UNSUPPORTED, "grid_dense: a %d x %d grid broadcasts to more than %d ranks",
                       c.pr, c.pc, GRID_DENSE_MAX_MEMBERS);
    else if (g->tag < 0 || (flag && g->tag > *tag_ub - grid_dense_solve_ntags(g)))
        canopy_err_set(&e, CANOPY_ERR_ARGUMENT, "grid_dense: tags %d + %d beyond MPI_TAG_UB", g->tag,
                       grid_dense_solve_ntags(g));
    else if (bsz > INT_MAX / K_MPI_MULT)
        canopy_err_set(&e, CANOPY_ERR_TOO_LARGE, "grid_dense: a message over INT_MAX entries");
    else if ((grid_dense_local_size(g, c.me) > 0 && factor == NULL) ||
             (c.m > 0 && (lu || ldlt) && ipiv == NULL) || (c.m > 0 && ldlt && dsub == NULL) ||
             (lrows * nrhs > 0 && (rhs == NULL || ld < lrows)))
        canopy_err_set(&e, CANOPY_ERR_ARGUMENT, "grid_dense: NULL factor, ipiv, dsub or right-hand sides, or ld too small");
    /* everything the loop needs, before any message (the loop never allocates) */
    if (e.status == CANOPY_SUCCESS) {
        c.buf = canopy_alloc(bsz + 1, sizeof *c.buf, "grid_dense solve buffers", &e);
        c.scr = canopy_alloc(bsz + 1, sizeof *c.scr, "grid_dense solve buffers", &e);
        c.members = canopy_alloc((size_t)(c.pr + c.pc + 2), sizeof *c.members, "grid_dense solve members", &e);
        if (c.myc != 0)
            c.own = canopy_calloc((size_t)c.R * (size_t)nrhs + 1, sizeof *c.own, "grid_dense solve partial sums", &e);
    }
    canopy_status st = comm_agree(g->comm, &e);
    if (st >= 0 && nrhs > 0) {
        if (c.myc == 0) {
            c.W = rhs;
            c.ldw = ld;
        } else {
            c.W = c.own;
            c.ldw = CANOPY_MAX(c.R, 1);
        }
        if (dir == 0) gds_forward(&c);
        else gds_backward(&c);
        if (c.mpi_failed) canopy_err_set(&e, CANOPY_ERR_MPI, "grid_dense: an MPI call of the solve failed");
        if (c.tree_failed) canopy_err_set(&e, CANOPY_ERR_INTERNAL, "grid_dense: a solve tree could not be built");
        st = comm_agree(g->comm, &e);
    }
    canopy_free(c.buf);
    canopy_free(c.scr);
    canopy_free(c.members);
    canopy_free(c.own);
    if (err) *err = e;
    return st;
}

canopy_status KSFX(grid_dense_forward)(const grid_dense *g, const SCALAR *factor, const cint *ipiv, const SCALAR *dsub,
                                   cint nrhs, SCALAR *rhs, cint ld, canopy_err *err)
{
    return gds_solve(g, factor, ipiv, dsub, nrhs, rhs, ld, 0, err);
}

canopy_status KSFX(grid_dense_backward)(const grid_dense *g, const SCALAR *factor, const cint *ipiv, const SCALAR *dsub,
                                    cint nrhs, SCALAR *rhs, cint ld, canopy_err *err)
{
    return gds_solve(g, factor, ipiv, dsub, nrhs, rhs, ld, 1, err);
}

canopy_status KSFX(grid_dense_solve)(const grid_dense *g, const SCALAR *factor, const cint *ipiv, const SCALAR *dsub,
                                 cint nrhs, SCALAR *rhs, cint ld, canopy_err *err)
{
    if (g != NULL && g->m != g->n) {
        canopy_status st = canopy_err_set(err, CANOPY_ERR_ARGUMENT,
                                          "grid_dense: a whole solve needs m = n (m < n: forward, then backward)");
        return st;
    }
    canopy_status st = KSFX(grid_dense_forward)(g, factor, ipiv, dsub, nrhs, rhs, ld, err);
    if (st < 0) return st;
    return KSFX(grid_dense_backward)(g, factor, ipiv, dsub, nrhs, rhs, ld, err);
}
