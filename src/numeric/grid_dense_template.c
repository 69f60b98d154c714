/*
 * Arithmetic-generic part of grid_dense.c (scatter, gather, the factorization): see grid_dense.h.
 * Not compiled on its own: grid_dense.c (real double, _d) and grid_dense_z.c (complex double, _z)
 * define the macros below and include it, as kernels_d.c / kernels_z.c do with factor_template.c.
 *
 * Macros the includer must define:
 *   SCALAR               scalar type (double, double _Complex)
 *   KSFX(name)           name with the arithmetic suffix (name##_d, name##_z)
 *   K_ONE, K_MONE        1, -1
 *   K_BS(x)              how alpha/beta are handed to cblas (value for d, pointer for z)
 *   K_GEMM, K_TRSM       cblas_dgemm / cblas_dtrsm (or the z ones)
 *   K_POTRF              LAPACKE_dpotrf_work (or zpotrf)
 *   K_LAPACK_PTR(p)      cast of a SCALAR* to the LAPACKE array type
 *   K_TRANS_H            transpose of LL^T (CblasTrans for real, CblasConjTrans: Hermitian L L^H)
 *   K_REAL(x)            real part (identity for real)
 *   K_MPI_MULT           MPI_DOUBLEs per SCALAR (1, 2)
 * As the sparse code (factor_template.c): LL^T is Hermitian positive definite for complex (L L^H),
 * LDL^T is complex symmetric (L D L^T, plain transpose, numeric_dense_ldlt_z) and LU uses no
 * conjugate anywhere. The real instantiation performs exactly the operations it did before.
 */
#include "numeric/grid_dense.h"
#include "numeric/numeric.h"
#include "comm/tree.h"
#include "comm/agree.h"

#include <limits.h>
#include <string.h>
#include <cblas.h>
#include <lapacke.h>

/* Global index of local index l of coordinate q (of p). */
static cint gd_l2g(cint l, cint nb, int p, int q)
{
    return ((l / nb) * p + q) * nb + l % nb;
}

/* ---- scatter and gather ------------------------------------------------------------------ */

/* Copy between rank q's local array (packed, leading dimension its row count) and A (dir 0: A ->
 * local, 1: local -> A). */
static void gd_pack(const grid_dense *g, int q, SCALAR *A, cint lda, SCALAR *loc, int dir)
{
    int r = q / g->pc, c = q % g->pc;
    cint R = grid_dense_count(g->n, g->nb, g->pr, r), C = grid_dense_count(g->n, g->nb, g->pc, c);
    for (cint lj = 0; lj < C; lj++) {
        cint gj = gd_l2g(lj, g->nb, g->pc, c);
        for (cint li = 0; li < R; li += g->nb) {
            cint gi = gd_l2g(li, g->nb, g->pr, r), h = CANOPY_MIN(g->nb, R - li);
            SCALAR *a = A + gi + (size_t)gj * lda, *b = loc + li + (size_t)lj * R;
            if (dir == 0) memcpy(b, a, (size_t)h * sizeof *a);
            else memcpy(a, b, (size_t)h * sizeof *a);
        }
    }
}

static canopy_status gd_move(const grid_dense *g, int root, SCALAR *A, cint lda, SCALAR *local, int dir,
                             canopy_err *err)
{
    canopy_err e = {0};
    if (grid_dense_check(g, &e) == CANOPY_SUCCESS && g->comm == MPI_COMM_NULL)
        canopy_err_set(&e, CANOPY_ERR_ARGUMENT, "grid_dense: no communicator");
    if (e.status != CANOPY_SUCCESS) {
        if (err) *err = e;
        return e.status;
    }
    int me, np = g->pr * g->pc;
    MPI_Comm_rank(g->comm, &me);
    int64_t big = 0;
    for (int q = 0; q < np; q++) big = CANOPY_MAX(big, grid_dense_local_size(g, q));
    SCALAR *buf = NULL;
    if (big > INT_MAX / K_MPI_MULT) canopy_err_set(&e, CANOPY_ERR_TOO_LARGE, "grid_dense: a local array over INT_MAX entries");
    else if (me == root && (A == NULL || lda < CANOPY_MAX(1, g->n)))
        canopy_err_set(&e, CANOPY_ERR_ARGUMENT, "grid_dense: no dense matrix on the root");
    else if (grid_dense_local_size(g, me) > 0 && local == NULL)
        canopy_err_set(&e, CANOPY_ERR_ARGUMENT, "grid_dense: NULL local array");
    else if (me == root && np > 1)
        buf = canopy_alloc((size_t)big + 1, sizeof *buf, "grid_dense scatter buffer", &e);
    if (comm_agree(g->comm, &e) != CANOPY_SUCCESS) {
        canopy_free(buf);
        if (err) *err = e;
        return e.status;
    }
    int rc = MPI_SUCCESS;
    if (me == root) {
        for (int q = 0; q < np && rc == MPI_SUCCESS; q++) {
            int cnt = (int)grid_dense_local_size(g, q);
            if (q == me) {
                gd_pack(g, q, A, lda, local, dir);
            } else if (dir == 0) {
                gd_pack(g, q, A, lda, buf, 0);
                rc = MPI_Send(buf, cnt * K_MPI_MULT, MPI_DOUBLE, q, g->tag, g->comm);
            } else {
                rc = MPI_Recv(buf, cnt * K_MPI_MULT, MPI_DOUBLE, q, g->tag, g->comm, MPI_STATUS_IGNORE);
                if (rc == MPI_SUCCESS) gd_pack(g, q, A, lda, buf, 1);
            }
        }
    } else {
        int cnt = (int)grid_dense_local_size(g, me);
        if (dir == 0) rc = MPI_Recv(local, cnt * K_MPI_MULT, MPI_DOUBLE, root, g->tag, g->comm, MPI_STATUS_IGNORE);
        else rc = MPI_Send(local, cnt * K_MPI_MULT, MPI_DOUBLE, root, g->tag, g->comm);
    }
    canopy_free(buf);
    if (rc != MPI_SUCCESS) canopy_err_set(&e, CANOPY_ERR_MPI, "grid_dense: %s failed", dir ? "gather" : "scatter");
    canopy_status st = comm_agree(g->comm, &e);
    if (err) *err = e;
    return st;
}

canopy_status KSFX(grid_dense_scatter)(const grid_dense *g, int root, const SCALAR *A, cint lda, SCALAR *local,
                                   canopy_err *err)
{
    return gd_move(g, root, (SCALAR *)A, lda, local, 0, err); /* dir 0 only reads A */
}

canopy_status KSFX(grid_dense_gather)(const grid_dense *g, int root, const SCALAR *local, SCALAR *A, cint lda,
                                  canopy_err *err)
{
    return gd_move(g, root, A, lda, (SCALAR *)local, 1, err); /* dir 1 only reads local */
}

/* ---- the factorization ------------------------------------------------------------------- */

typedef struct gd_ctx {
    const grid_dense *g;
    int me, myr, myc, pr, pc;
    cint n, m, nb, nt, R, C, lld;
    SCALAR *A;
    SCALAR *dbuf[2];       /* a step's diagonal block (w x w, ld w), its pivots and dsub */
    SCALAR *rbuf[2];       /* a step's panel rows of this grid row (ld their count), then (LDL^T) D */
    SCALAR *cbuf[2];       /* a step's column factor of this grid column (LU: U's rows, ld w) */
    MPI_Request *req[2];   /* the sends of a step in flight, by parity */
    int nreq[2], maxreq;
    cint *ipiv;            /* the current step's pivots */
    SCALAR *work;          /* LDL^T kernel scratch */
    SCALAR *piv;           /* [2m + 1]: pivots + 2 and dsub where this rank factored, perturbed count */
    int *members;
    cint bad_col;          /* first column LL^T found not positive definite (CINT_MAX: none) */
    int mpi_failed, tree_failed;
} gd_ctx;

/* The columns [*kb, *ke) step k eliminates: a tile column's, or the caller's steps (each inside one tile). */
static void gd_step(const gd_ctx *c, cint k, cint *kb, cint *ke)
{
    if (c->g->steps != NULL) {
        *kb = c->g->steps[k];
        *ke = c->g->steps[k + 1];
    } else {
        *kb = k * c->nb;
        *ke = CANOPY_MIN(*kb + c->nb, c->m);
    }
}

/* Local rows (columns) of grid row r (column c) with global index >= gidx. */
static cint gd_rows_from(const gd_ctx *c, int r, cint gidx)
{
    return grid_dense_count(c->n, c->nb, c->pr, r) - grid_dense_local_index(gidx, c->nb, c->pr, r);
}
static cint gd_cols_from(const gd_ctx *c, int q, cint gidx)
{
    return grid_dense_count(c->n, c->nb, c->pc, q) - grid_dense_local_index(gidx, c->nb, c->pc, q);
}

/* Last block row of grid row r (the symmetric kinds' need test: some tile (I, J) with I >= J). */
static cint gd_last_block(const gd_ctx *c, int r)
{
    cint b = c->nt - 1;
    return b - ((b % c->pr) - r + c->pr) % c->pr;
}
/* First block column >= kk of grid column q. */
static cint gd_first_block(const gd_ctx *c, int q, cint kk)
{
    return kk + ((q - kk % c->pc) + c->pc) % c->pc;
}

/* Whether rank (r, q) updates tiles from the row panel of the step whose trailing part starts at ke. */
static bool gd_needs_rows(const gd_ctx *c, int r, int q, cint ke)
{
    if (gd_rows_from(c, r, ke) <= 0 || gd_cols_from(c, q, ke) <= 0) return false;
    if (c->g->kind == CANOPY_FACT_LU) return true;
    return gd_last_block(c, r) >= gd_first_block(c, q, ke / c->nb);
}

/*
 * Broadcast of @p count scalars from members[0] along comm/tree's binary tree over the members:
 * receive from the parent, forward to the children without waiting (the requests of parity @p par
 * are waited for before that parity's buffers are reused). No allocation (p <= 64).
 */
static bool gd_is_member(const gd_ctx *c, int p);
static void gd_bcast(gd_ctx *c, int p, SCALAR *buf, int count, int tag, int par)
{
    if (p <= 1 || count <= 0 || !gd_is_member(c, p)) return;
    comm_tree t;
    if (comm_tree_build(c->members, p, c->me, CANOPY_TREE_BINARY, 0, &t, NULL) != CANOPY_SUCCESS) {
        c->tree_failed = 1; /* cannot happen for a checked descriptor: the members are distinct */
        return;
    }
    if (t.parent >= 0 && MPI_Recv(buf, count * K_MPI_MULT, MPI_DOUBLE, t.parent, tag, c->g->comm, MPI_STATUS_IGNORE) != MPI_SUCCESS)
        c->mpi_failed = 1;
    for (int k = 0; k < t.nchildren; k++)
        if (MPI_Isend(buf, count * K_MPI_MULT, MPI_DOUBLE, t.kids[k], tag, c->g->comm, &c->req[par][c->nreq[par]++]) != MPI_SUCCESS)
            c->mpi_failed = 1;
}

static bool gd_is_member(const gd_ctx *c, int p)
{
    for (int i = 0; i < p; i++)
        if (c->members[i] == c->me) return true;
    return false;
}

/* The sends of parity @p par done. One MPI_Wait each: GCC flags MPI_STATUSES_IGNORE with MPICH's
 * headers (stringop-overflow), as comm/share.c notes. */
static void gd_wait_sends(gd_ctx *c, int par)
{
    for (int i = 0; i < c->nreq[par]; i++)
        if (MPI_Wait(&c->req[par][i], MPI_STATUS_IGNORE) != MPI_SUCCESS) c->mpi_failed = 1;
    c->nreq[par] = 0;
}

/*
 * Drive the sends in flight while this rank computes. Without it a large send on a transport that
 * needs the sender inside MPI to move its fragments (Open MPI's shared memory without a single-copy
 * mechanism, the pipeline protocol of most networks) waits for this rank's next blocking call, and
 * every rank below it in the broadcast tree waits a whole trailing update for its panel.
 */
static void gd_progress(gd_ctx *c)
{
    for (int par = 0; par < 2; par++)
        for (int i = 0; i < c->nreq[par]; i++)
            if (c->req[par][i] != MPI_REQUEST_NULL) {
                int done = 0;
                if (MPI_Test(&c->req[par][i], &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) c->mpi_failed = 1;
                if (!done) return; /* one call drives the progress engine: the rest can wait */
            }
}

static int gd_tag(const gd_ctx *c, cint k, int what)
{
    return c->g->tag + (int)(k & 3) * (2 + c->pr) + what;
}

/* The 2x2 pivot's inverse as numeric_dense_ldlt_d and koffdiag apply it (factor_template.c). */
static void gd_dinv2(SCALAR a, SCALAR b, SCALAR cc, SCALAR *d11, SCALAR *d22, SCALAR *d21)
{
    SCALAR e11 = cc / b, e22 = a / b;
    SCALAR t = 1.0 / (e11 * e22 - 1.0);
    *d11 = e11;
    *d22 = e22;
    *d21 = t / b;
}

/*
 * Whether this part of a step's panel takes a broadcast: part 0 all of them; with lookahead, part
 * 1 (before the rest of the previous step's update) those this rank starts with data it already
 * holds, so its sends travel while it computes, and part 2 (after it) the others: those it
 * receives or forwards.
 */
static bool gd_part(int part, bool starts)
{
    return part == 0 || (part == 1) == starts;
}

/*
 * Step k up to the messages: the diagonal block, the panel (and U's rows), the row and column
 * broadcasts (@p part: gd_part; the diagonal block and the panel are part 1's). Every rank calls it
 * for every step in the same order: the receives of one step only wait for sends of the same or an
 * earlier step, so the ranks cannot wait on each other in a cycle.
 */
static void gd_panel(gd_ctx *c, cint k, int part)
{
    const grid_dense *g = c->g;
    cint kb, ke;
    gd_step(c, k, &kb, &ke);
    cint w = ke - kb, kt = kb / c->nb; /* the step's tile */
    int par = (int)(k & 1), kr = (int)(kt % c->pr), kc = (int)(kt % c->pc);
    bool lu = g->kind == CANOPY_FACT_LU, ldlt = g->kind == CANOPY_FACT_LDLT;
    SCALAR *D = c->dbuf[par], *rb = c->rbuf[par], *cb = c->cbuf[par];
    const SCALAR *dsub = D + w * w + w;
    cint rows = gd_rows_from(c, c->myr, ke), lr_ke = grid_dense_local_index(ke, c->nb, c->pr, c->myr);
    cint lc_kb = grid_dense_local_index(kb, c->nb, c->pc, c->myc);
    cint cols = gd_cols_from(c, c->myc, ke), lc_ke = grid_dense_local_index(ke, c->nb, c->pc, c->myc);
    int p = 0;
    if (part == 2) goto messages;
    /* the sends of step k - 2 read the buffers this step refills */
    gd_wait_sends(c, par);
    int dcount = (int)(w * w + (lu || ldlt ? 2 * w : 0));

    /* 1. the diagonal block */
    int root = kr * c->pc + kc;
    if (c->me == root) {
        SCALAR *P = c->A + grid_dense_local_index(kb, c->nb, c->pr, c->myr) +
                    (size_t)grid_dense_local_index(kb, c->nb, c->pc, c->myc) * c->lld;
        cint cnt = 0;
        if (g->kind == CANOPY_FACT_LLT) {
            lapack_int info = K_POTRF(LAPACK_COL_MAJOR, 'L', (lapack_int)w, K_LAPACK_PTR(P), (lapack_int)c->lld);
            if (info > 0 && kb + info - 1 < c->bad_col) c->bad_col = kb + (cint)info - 1;
        } else if (ldlt) {
            cnt = KSFX(numeric_dense_ldlt)(w, P, c->lld, c->ipiv, D + w * w + w, g->threshold, c->work);
        } else {
            cnt = KSFX(numeric_dense_lu)(w, P, c->lld, c->ipiv, g->threshold);
        }
        c->piv[2 * c->m] += (double)cnt;
        for (cint j = 0; j < w; j++) memcpy(D + j * w, P + (size_t)j * c->lld, (size_t)w * sizeof *D);
        if (lu || ldlt)
            for (cint j = 0; j < w; j++) {
                D[w * w + j] = (double)c->ipiv[j];
                c->piv[kb + j] = (double)c->ipiv[j] + 2;
                if (ldlt) c->piv[c->m + kb + j] = D[w * w + w + j];
            }
    }
    c->members[p++] = root;
    for (int r = 0; r < c->pr; r++)
        if (r != kr && gd_rows_from(c, r, ke) > 0) c->members[p++] = r * c->pc + kc;
    if (lu)
        for (int q = 0; q < c->pc; q++)
            if (q != kc && gd_cols_from(c, q, ke) > 0) c->members[p++] = kr * c->pc + q;
    bool in_diag = gd_is_member(c, p);
    gd_bcast(c, p, D, dcount, gd_tag(c, k, 0), par);
    if (in_diag && (lu || ldlt))
        for (cint j = 0; j < w; j++) c->ipiv[j] = (cint)K_REAL(D[w * w + j]);

    /* 2. the panel rows below the block (grid column kc) and, LU, U's rows right of it (grid row kr) */
    if (c->myc == kc && rows > 0) {
        SCALAR *X = c->A + lr_ke + (size_t)lc_kb * c->lld;
        if (g->kind == CANOPY_FACT_LLT) {
            K_TRSM(CblasColMajor, CblasRight, CblasLower, K_TRANS_H, CblasNonUnit, (int)rows, (int)w, K_BS(K_ONE), D,
                   (int)w, X, (int)c->lld);
        } else if (ldlt) {
            /* the block's symmetric interchanges are column interchanges of the rows below it */
            for (cint j = 0; j < w; j++)
                if (c->ipiv[j] >= 0 && c->ipiv[j] != j) {
                    SCALAR *a = X + (size_t)j * c->lld, *b = X + (size_t)c->ipiv[j] * c->lld;
                    for (cint i = 0; i < rows; i++) {
                        SCALAR t = a[i];
                        a[i] = b[i];
                        b[i] = t;
                    }
                }
            K_TRSM(CblasColMajor, CblasRight, CblasLower, CblasTrans, CblasUnit, (int)rows, (int)w, K_BS(K_ONE), D,
                   (int)w, X, (int)c->lld);
            for (cint j = 0; j < w;) {
                SCALAR *col = X + (size_t)j * c->lld;
                if (c->ipiv[j] < 0) {
                    SCALAR d11, d22, d21;
                    gd_dinv2(D[j + j * w], dsub[j], D[(j + 1) + (j + 1) * w], &d11, &d22, &d21);
                    SCALAR *col2 = col + c->lld;
                    for (cint i = 0; i < rows; i++) {
                        SCALAR x1 = col[i], x2 = col2[i];
                        col[i] = d21 * (d11 * x1 - x2);
                        col2[i] = d21 * (d22 * x2 - x1);
                    }
                    j += 2;
                } else {
                    SCALAR inv = 1.0 / D[j + j * w];
                    for (cint i = 0; i < rows; i++) col[i] *= inv;
                    j++;
                }
            }
        } else {
            K_TRSM(CblasColMajor, CblasRight, CblasUpper, CblasNoTrans, CblasNonUnit, (int)rows, (int)w, K_BS(K_ONE), D,
                   (int)w, X, (int)c->lld);
        }
    }
    if (lu && c->myr == kr && cols > 0) {
        SCALAR *Y = c->A + grid_dense_local_index(kb, c->nb, c->pr, c->myr) + (size_t)lc_ke * c->lld;
        for (cint j = 0; j < w; j++)
            if (c->ipiv[j] != j)
                for (cint q = 0; q < cols; q++) {
                    SCALAR *col = Y + (size_t)q * c->lld, t = col[j];
                    col[j] = col[c->ipiv[j]];
                    col[c->ipiv[j]] = t;
                }
        K_TRSM(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, CblasUnit, (int)w, (int)cols, K_BS(K_ONE), D, (int)w,
               Y, (int)c->lld);
    }
messages:
    if (ke >= c->n) return; /* nothing trails this step */

    /* 3. the panel rows along each grid row, from grid column kc */
    p = 0;
    if (rows > 0) {
        c->members[p++] = c->myr * c->pc + kc;
        for (int q = 0; q < c->pc; q++)
            if (q != kc && gd_needs_rows(c, c->myr, q, ke)) c->members[p++] = c->myr * c->pc + q;
    }
    if (p > 0 && gd_is_member(c, p) && gd_part(part, c->myc == kc)) {
        if (c->myc == kc) {
            const SCALAR *X = c->A + lr_ke + (size_t)lc_kb * c->lld;
            for (cint j = 0; j < w; j++) memcpy(rb + j * rows, X + (size_t)j * c->lld, (size_t)rows * sizeof *rb);
            if (ldlt)
                for (cint j = 0; j < w; j++) {
                    rb[rows * w + j] = D[j + j * w];
                    rb[rows * w + w + j] = dsub[j];
                    rb[rows * w + 2 * w + j] = c->ipiv[j] < 0 ? 1.0 : 0.0;
                }
        }
        gd_bcast(c, p, rb, (int)(rows * w + (ldlt ? 3 * w : 0)), gd_tag(c, k, 1), par);
    }

    /* 4. the column factor down each grid column */
    if (lu) {
        p = 0;
        if (cols > 0) {
            c->members[p++] = kr * c->pc + c->myc;
            for (int r = 0; r < c->pr; r++)
                if (r != kr && gd_rows_from(c, r, ke) > 0) c->members[p++] = r * c->pc + c->myc;
        }
        if (p > 0 && gd_is_member(c, p) && gd_part(part, c->myr == kr)) {
            if (c->myr == kr) {
                const SCALAR *Y = c->A + grid_dense_local_index(kb, c->nb, c->pr, c->myr) + (size_t)lc_ke * c->lld;
                for (cint q = 0; q < cols; q++) memcpy(cb + q * w, Y + (size_t)q * c->lld, (size_t)w * sizeof *cb);
            }
            gd_bcast(c, p, cb, (int)(w * cols), gd_tag(c, k, 2), par);
        }
        return;
    }
    /* symmetric kinds: block column J's factor rows (L, or L D for LDL^T) come from the rank of
     * tile (J, J), which holds them in its row panel; one message per root grid row, holding its
     * blocks J in increasing order (rows [max(J nb, ke), min((J+1) nb, n)) each) */
    cint kk = ke / c->nb;
    SCALAR *seg = cb;
    for (int r = 0; r < c->pr; r++) {
        cint segrows = 0, jmin = -1;
        for (cint J = gd_first_block(c, c->myc, kk); J < c->nt; J += c->pc)
            if (J % c->pr == r) {
                if (jmin < 0) jmin = J;
                segrows += CANOPY_MIN((J + 1) * c->nb, c->n) - CANOPY_MAX(J * c->nb, ke);
            }
        if (segrows == 0) continue;
        p = 0;
        c->members[p++] = r * c->pc + c->myc;
        for (int r2 = 0; r2 < c->pr; r2++)
            if (r2 != r && gd_rows_from(c, r2, ke) > 0 && gd_last_block(c, r2) >= jmin)
                c->members[p++] = r2 * c->pc + c->myc;
        /* the root (r, myc) holds its rows once it has the row panel: at once in grid column kc */
        if (gd_is_member(c, p) && gd_part(part, c->myr == r && c->myc == kc)) {
            if (c->myr == r) {
                cint pos = 0;
                const SCALAR *dd = rb + rows * w;
                for (cint J = gd_first_block(c, c->myc, kk); J < c->nt; J += c->pc) {
                    if (J % c->pr != r) continue;
                    cint s = CANOPY_MAX(J * c->nb, ke), h = CANOPY_MIN((J + 1) * c->nb, c->n) - s;
                    cint off = grid_dense_local_index(s, c->nb, c->pr, c->myr) - lr_ke;
                    for (cint j = 0; j < w;) {
                        const SCALAR *l1 = rb + off + j * rows;
                        SCALAR *o1 = seg + pos + j * segrows;
                        if (ldlt && dd[2 * w + j] != 0) {
                            /* rows of L D across a 2x2 pivot */
                            const SCALAR *l2 = l1 + rows;
                            SCALAR *o2 = o1 + segrows, d11 = dd[j], d21 = dd[w + j], d22 = dd[j + 1];
                            for (cint i = 0; i < h; i++) {
                                o1[i] = l1[i] * d11 + l2[i] * d21;
                                o2[i] = l1[i] * d21 + l2[i] * d22;
                            }
                            j += 2;
                        } else {
                            SCALAR d = ldlt ? dd[j] : 1.0;
                            if (ldlt)
                                for (cint i = 0; i < h; i++) o1[i] = l1[i] * d;
                            else
                                memcpy(o1, l1, (size_t)h * sizeof *o1);
                            j++;
                        }
                    }
                    pos += h;
                }
            }
            gd_bcast(c, p, seg, (int)(segrows * w), gd_tag(c, k, 2 + r), par);
        }
        seg += segrows * w;
    }
}

/* Step k's update of the owned trailing entries in rows [gr0, gr1) x columns [gc0, gc1). */
static void gd_update(gd_ctx *c, cint k, cint gr0, cint gr1, cint gc0, cint gc1)
{
    int par = (int)(k & 1);
    cint kb, ke;
    gd_step(c, k, &kb, &ke);
    cint w = ke - kb;
    gr0 = CANOPY_MAX(gr0, ke);
    gc0 = CANOPY_MAX(gc0, ke);
    if (gr0 >= gr1 || gc0 >= gc1 || !gd_needs_rows(c, c->myr, c->myc, ke)) return;
    cint rows = gd_rows_from(c, c->myr, ke), lr_ke = grid_dense_local_index(ke, c->nb, c->pr, c->myr);
    cint lc_ke = grid_dense_local_index(ke, c->nb, c->pc, c->myc);
    const SCALAR *L = c->rbuf[par];
    cint lr1 = grid_dense_local_index(gr1, c->nb, c->pr, c->myr);
    if (c->g->kind == CANOPY_FACT_LU) {
        cint lr0 = grid_dense_local_index(gr0, c->nb, c->pr, c->myr);
        cint lc0 = grid_dense_local_index(gc0, c->nb, c->pc, c->myc), lc1 = grid_dense_local_index(gc1, c->nb, c->pc, c->myc);
        if (lr0 >= lr1) return;
        /* a tile column at a time, the sends in flight driven between them */
        for (cint j0 = lc0; j0 < lc1; j0 += c->nb) {
            cint j1 = CANOPY_MIN(j0 + c->nb, lc1);
            K_GEMM(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)(lr1 - lr0), (int)(j1 - j0), (int)w, K_BS(K_MONE),
                   L + (lr0 - lr_ke), (int)rows, c->cbuf[par] + (j0 - lc_ke) * w, (int)w, K_BS(K_ONE),
                   c->A + lr0 + (size_t)j0 * c->lld, (int)c->lld);
            gd_progress(c);
        }
        return;
    }
    /* symmetric: per owned block column J, the tiles I >= J; its factor rows are in the segment of
     * root grid row J mod pr (laid out as gd_panel sends them) */
    cint kk = ke / c->nb, first = gd_first_block(c, c->myc, kk);
    const SCALAR *seg = c->cbuf[par];
    for (int r = 0; r < c->pr; r++) {
        cint segrows = 0;
        for (cint J = first; J < c->nt; J += c->pc)
            if (J % c->pr == r) segrows += CANOPY_MIN((J + 1) * c->nb, c->n) - CANOPY_MAX(J * c->nb, ke);
        cint pos = 0;
        for (cint J = first; J < c->nt; J += c->pc) {
            if (J % c->pr != r) continue;
            cint s = CANOPY_MAX(J * c->nb, ke), e = CANOPY_MIN((J + 1) * c->nb, c->n);
            cint cs = CANOPY_MAX(s, gc0), ce = CANOPY_MIN(e, gc1);
            cint lr0 = grid_dense_local_index(CANOPY_MAX(s, gr0), c->nb, c->pr, c->myr);
            if (cs < ce && lr0 < lr1) {
                cint lc0 = grid_dense_local_index(cs, c->nb, c->pc, c->myc);
                K_GEMM(CblasColMajor, CblasNoTrans, c->g->kind == CANOPY_FACT_LLT ? K_TRANS_H : CblasTrans,
                       (int)(lr1 - lr0), (int)(ce - cs), (int)w, K_BS(K_MONE),
                       L + (lr0 - lr_ke), (int)rows, seg + pos + (cs - s), (int)segrows, K_BS(K_ONE),
                       c->A + lr0 + (size_t)lc0 * c->lld, (int)c->lld);
                gd_progress(c);
            }
            pos += e - s;
        }
        seg += segrows * w;
    }
    (void)lc_ke;
}

canopy_status KSFX(grid_dense_factor)(const grid_dense *g, SCALAR *local, cint *ipiv, SCALAR *dsub, int64_t *perturbed,
                                  canopy_err *err)
{
    canopy_err e = {0};
    if (perturbed) *perturbed = 0;
    if (grid_dense_check(g, &e) == CANOPY_SUCCESS && g->comm == MPI_COMM_NULL)
        canopy_err_set(&e, CANOPY_ERR_ARGUMENT, "grid_dense: no communicator");
    if (e.status != CANOPY_SUCCESS) { /* the same arguments everywhere: the same refusal, no agreement */
        if (err) *err = e;
        return e.status;
    }
    gd_ctx c = {.g = g, .pr = g->pr, .pc = g->pc, .n = g->n, .m = g->m, .nb = g->nb, .A = local,
                .bad_col = CINT_MAX};
    MPI_Comm_rank(g->comm, &c.me);
    c.myr = c.me / c.pc;
    c.myc = c.me % c.pc;
    c.nt = (c.n + c.nb - 1) / c.nb;
    c.R = grid_dense_count(c.n, c.nb, c.pr, c.myr);
    c.C = grid_dense_count(c.n, c.nb, c.pc, c.myc);
    c.lld = grid_dense_ld(g, c.me);
    bool lu = g->kind == CANOPY_FACT_LU, ldlt = g->kind == CANOPY_FACT_LDLT;
    int *tag_ub = NULL, flag = 0;
    MPI_Comm_get_attr(g->comm, MPI_TAG_UB, &tag_ub, &flag);
    size_t dsz = (size_t)c.nb * c.nb + 2 * (size_t)c.nb, rsz = (size_t)c.R * c.nb + 3 * (size_t)c.nb;
    size_t csz = (size_t)c.C * c.nb + 1;
    if (c.pr + c.pc - 1 > GRID_DENSE_MAX_MEMBERS)
        canopy_err_set(&e, CANOPY_ERR_UNSUPPORTED, "grid_dense: a %d x %d grid broadcasts to more than %d ranks",
                       c.pr, c.pc, GRID_DENSE_MAX_MEMBERS);
    else if (g->tag < 0 || (flag && g->tag > *tag_ub - grid_dense_ntags(g)))
        canopy_err_set(&e, CANOPY_ERR_ARGUMENT, "grid_dense: tags %d + %d beyond MPI_TAG_UB", g->tag,
                       grid_dense_ntags(g));
    else if (rsz > INT_MAX / K_MPI_MULT || csz > INT_MAX / K_MPI_MULT || dsz > INT_MAX / K_MPI_MULT)
        canopy_err_set(&e, CANOPY_ERR_TOO_LARGE, "grid_dense: a message over INT_MAX entries");
    else if ((c.R * c.C > 0 && local == NULL) || (c.m > 0 && (lu || ldlt) && ipiv == NULL) ||
             (c.m > 0 && ldlt && dsub == NULL))
        canopy_err_set(&e, CANOPY_ERR_ARGUMENT, "grid_dense: NULL local array, ipiv or dsub");
    /* everything the loop needs, before any message (the loop never allocates) */
    c.maxreq = 2 * (2 + c.pr);
    for (int t = 0; t < 2 && e.status == CANOPY_SUCCESS; t++) {
        c.dbuf[t] = canopy_alloc(dsz, sizeof(SCALAR), "grid_dense panel buffers", &e);
        c.rbuf[t] = canopy_alloc(rsz, sizeof(SCALAR), "grid_dense panel buffers", &e);
        c.cbuf[t] = canopy_alloc(csz, sizeof(SCALAR), "grid_dense panel buffers", &e);
        c.req[t] = canopy_alloc((size_t)c.maxreq, sizeof(MPI_Request), "grid_dense requests", &e);
    }
    if (e.status == CANOPY_SUCCESS) {
        c.ipiv = canopy_alloc((size_t)c.nb, sizeof *c.ipiv, "grid_dense pivots", &e);
        c.work = canopy_alloc((size_t)c.nb * (size_t)CANOPY_MIN(c.nb, 65) + 1, sizeof *c.work, "grid_dense work", &e);
        c.piv = canopy_calloc(2 * (size_t)c.m + 1, sizeof *c.piv, "grid_dense pivots", &e);
        c.members = canopy_alloc((size_t)(c.pr + c.pc), sizeof *c.members, "grid_dense members", &e);
    }
    canopy_status st = comm_agree(g->comm, &e);
    if (st >= 0) {
        cint nsteps = g->steps != NULL ? g->nsteps : (c.m + c.nb - 1) / c.nb;
        if (!g->lookahead) {
            for (cint k = 0; k < nsteps; k++) {
                gd_panel(&c, k, 0);
                gd_update(&c, k, 0, c.n, 0, c.n);
            }
        } else if (nsteps > 0) {
            gd_panel(&c, 0, 0);
            for (cint k = 0; k < nsteps; k++) {
                cint kb, ke;
                gd_step(&c, k, &kb, &ke);
                if (k + 1 < nsteps) {
                    /* the next panel's columns (LU: and its rows) first, then the panel and the
                     * messages it starts, then the rest of the update, then the messages it receives */
                    cint ke2;
                    gd_step(&c, k + 1, &kb, &ke2);
                    gd_update(&c, k, ke, c.n, ke, ke2);
                    if (lu) gd_update(&c, k, ke, ke2, ke2, c.n);
                    gd_panel(&c, k + 1, 1);
                    gd_update(&c, k, ke2, c.n, ke2, c.n);
                    gd_panel(&c, k + 1, 2);
                } else {
                    gd_update(&c, k, ke, c.n, ke, c.n);
                }
            }
        }
        for (int t = 0; t < 2; t++) gd_wait_sends(&c, t);
        /* pivots and perturbed counts of every diagonal owner onto every rank */
        if (MPI_Allreduce(MPI_IN_PLACE, c.piv, (int)(2 * c.m + 1) * K_MPI_MULT, MPI_DOUBLE, MPI_SUM, g->comm) != MPI_SUCCESS)
            c.mpi_failed = 1;
        if (lu || ldlt)
            for (cint j = 0; j < c.m; j++) {
                ipiv[j] = (cint)K_REAL(c.piv[j]) - 2;
                if (ldlt) dsub[j] = c.piv[c.m + j];
            }
        int64_t npert = (int64_t)K_REAL(c.piv[2 * c.m]);
        if (perturbed) *perturbed = npert;
        if (c.mpi_failed) canopy_err_set(&e, CANOPY_ERR_MPI, "grid_dense: an MPI call failed");
        if (c.tree_failed) canopy_err_set(&e, CANOPY_ERR_INTERNAL, "grid_dense: a broadcast tree could not be built");
        if (c.bad_col < CINT_MAX)
            canopy_err_set(&e, CANOPY_ERR_NOT_SPD, "grid_dense: not positive definite at column %" CINT_FMT, c.bad_col);
        int64_t v = c.bad_col;
        st = comm_agree_min(g->comm, &e, &v, 1);
        if (st == CANOPY_ERR_NOT_SPD) { /* the first column over the grid, whichever rank found it */
            canopy_err_clear(&e);
            canopy_err_set(&e, CANOPY_ERR_NOT_SPD, "grid_dense: not positive definite at column %" PRId64, v);
        } else if (st == CANOPY_SUCCESS && npert > 0) {
            st = canopy_err_set(&e, CANOPY_WARN_PIVOTS_PERTURBED, "grid_dense: %" PRId64 " pivots perturbed", npert);
        }
    }
    for (int t = 0; t < 2; t++) {
        canopy_free(c.dbuf[t]);
        canopy_free(c.rbuf[t]);
        canopy_free(c.cbuf[t]);
        canopy_free(c.req[t]);
    }
    canopy_free(c.ipiv);
    canopy_free(c.work);
    canopy_free(c.piv);
    canopy_free(c.members);
    if (err) *err = e;
    return st;
}
