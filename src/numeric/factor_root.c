/*
 * The root of the tree factored on a 2D grid of ranks (sched/root.h; MUMPS's "type-3 root").
 *
 * When the factorization's tasks are done, the root's cblks hold A's entries and every update
 * from below: their panel tasks only gathered them (the plan gives the root no update task). Here
 * every rank sends the entries of its root cblks to the tiles' owners of a pr x pc grid,
 * grid_dense factors the dense front (every step's panel broadcast along the grid's rows and
 * columns, one step of lookahead), and the factor goes back to the same cblks in the layout the
 * solve and the selected inversion read (numeric.h).
 *
 * The root is dense: cblk k's panel holds rows fcol(k) .. n-1 in order, so panel row p of k is
 * root row f + p (f = fcol(k) - fcol(first)). Entries travel in one canonical order both ways
 * (root_walk): cblk by cblk, column by column, tile by tile; the L part of column c from the
 * diagonal (LL^T, LDL^T) or from the cblk's first row (LU: the diagonal block's U too), and for LU
 * the U part (the U panel holds U^T: its row p >= w of column c is U(f + c, f + p)). Sender and
 * receiver walk the same order, so no index travels.
 *
 * Pivots: the grid's steps are the tiles cut at every cblk boundary (sched_root_steps), and it
 * pivots inside each step's diagonal block, so never across cblks. The sparse kernels apply a
 * cblk's interchanges to all its earlier columns ("plain permuted form", factor_template.c), the
 * grid only inside the step: the owner applies each later step's interchanges to the rows of the
 * earlier steps of the same cblk, and ipiv becomes relative to the cblk.
 *
 * Collective over the solver's communicator; every allocation is agreed before the first
 * message, and the grid agrees its own outcome, so no rank waits for another that failed.
 */
#include "numeric/numeric.h"
#include "numeric/grid_dense.h"

#include <stdio.h>
#include <string.h>

#include "comm/agree.h"
#include "comm/share.h"

typedef struct root_ctx {
    const numeric *F;
    const sched_root *r;
    cint r0;             /* first column of the root */
    int me, P, G;        /* rank, ranks, grid ranks (pr * pc) */
    size_t sb;
    int lu, sym;
    grid_dense g;
} root_ctx;

/* one contiguous run of a cblk's panel column: rows [p0, p0 + len) of column c of part (0 L, 1 U);
 * it lands at root (x, y) onwards, down the column (L) or along the row (U) */
typedef void (*root_fn)(void *arg, const root_ctx *R, cint k, int part, cint c, cint p0, cint len, cint x, cint y);

static int root_owner(const root_ctx *R, cint x, cint y)
{
    cint nb = R->r->nb;
    return (int)((x / nb) % R->r->pr) * R->r->pc + (int)((y / nb) % R->r->pc);
}

/* Position of root entry (x, y) in its owner's local array. */
static int64_t root_local(const root_ctx *R, cint x, cint y)
{
    cint nb = R->r->nb;
    int64_t lr = (int64_t)(x / nb / R->r->pr) * nb + x % nb, lc = (int64_t)(y / nb / R->r->pc) * nb + y % nb;
    return lr + lc * (int64_t)grid_dense_ld(&R->g, root_owner(R, x, y));
}

/* Every run of cblk k, in the canonical order, each inside one tile. */
static void root_walk(const root_ctx *R, cint k, root_fn fn, void *arg)
{
    const symbolic *S = R->F->S;
    cint f = S->cblk_fcol[k] - R->r0, w = S->cblk_fcol[k + 1] - S->cblk_fcol[k], st = S->cblk_stride[k];
    cint nb = R->r->nb;
    for (cint c = 0; c < w; c++) {
        cint y = f + c;
        for (cint p = R->sym ? c : 0; p < st;) { /* L: rows down the root's column y */
            cint x = f + p, len = CANOPY_MIN(st - p, nb - x % nb);
            fn(arg, R, k, 0, c, p, len, x, y);
            p += len;
        }
        for (cint p = w; R->lu && p < st;) { /* U^T: along the root's row y */
            cint x = f + p, len = CANOPY_MIN(st - p, nb - x % nb);
            fn(arg, R, k, 1, c, p, len, y, x);
            p += len;
        }
    }
}

/* A walk's state: counts or running offsets per rank, the buffer, the local array. */
typedef struct root_io {
    int64_t *cnt;        /* [P] entries per peer */
    int64_t *off;        /* [P] running offsets (starts of each peer's region, advanced) */
    char *buf;
    char *local;
    int to_grid;         /* 1: panels -> tiles; 0: tiles -> panels */
} root_io;

static char *root_panel(const root_ctx *R, cint k, int part, cint c, cint p)
{
    const numeric *F = R->F;
    const symbolic *S = F->S;
    char *base = (char *)(part ? F->U : F->L);
    return base + ((size_t)F->coef[k] + (size_t)c * (size_t)S->cblk_stride[k] + (size_t)p) * R->sb;
}

static void root_count_own(void *arg, const root_ctx *R, cint k, int part, cint c, cint p0, cint len, cint x, cint y)
{
    (void)k, (void)part, (void)c, (void)p0;
    root_io *io = arg;
    io->cnt[root_owner(R, x, y)] += len;
}

static void root_count_tiles(void *arg, const root_ctx *R, cint k, int part, cint c, cint p0, cint len, cint x, cint y)
{
    (void)part, (void)c, (void)p0;
    root_io *io = arg;
    if (root_owner(R, x, y) == R->me) io->cnt[R->F->exec.local->cblk_rank[k]] += len;
}

/* the panel side: pack (to the grid) or unpack (back from it) a run of one of its cblks */
static void root_panel_io(void *arg, const root_ctx *R, cint k, int part, cint c, cint p0, cint len, cint x, cint y)
{
    root_io *io = arg;
    int q = root_owner(R, x, y);
    char *pan = root_panel(R, k, part, c, p0), *b = io->buf + (size_t)io->off[q] * R->sb;
    if (io->to_grid) memcpy(b, pan, (size_t)len * R->sb);
    else memcpy(pan, b, (size_t)len * R->sb);
    io->off[q] += len;
}

/* the tile side: unpack (to the grid) or pack (back) a run that lands in this rank's tiles */
static void root_tile_io(void *arg, const root_ctx *R, cint k, int part, cint c, cint p0, cint len, cint x, cint y)
{
    (void)c, (void)p0;
    root_io *io = arg;
    if (root_owner(R, x, y) != R->me) return;
    int q = R->F->exec.local->cblk_rank[k];
    char *b = io->buf + (size_t)io->off[q] * R->sb, *loc = io->local + (size_t)root_local(R, x, y) * R->sb;
    if (part == 0) { /* an L run goes down one column of one tile: contiguous in the local array */
        if (io->to_grid) memcpy(loc, b, (size_t)len * R->sb);
        else memcpy(b, loc, (size_t)len * R->sb);
    } else { /* a U run goes along a row */
        size_t step = (size_t)grid_dense_ld(&R->g, R->me) * R->sb;
        for (cint i = 0; i < len; i++, b += R->sb, loc += step) {
            if (io->to_grid) memcpy(loc, b, R->sb);
            else memcpy(b, loc, R->sb);
        }
    }
    io->off[q] += len;
}

/* Each later step's interchanges on the earlier steps' rows of the same cblk, and ipiv relative
 * to the cblk (sparse layout: numeric.h). A step lies inside one cblk. */
static void root_pivots(const root_ctx *R, const cint *steps, cint nsteps, const cint *gpiv, const void *gdsub)
{
    const numeric *F = R->F;
    const symbolic *S = F->S;
    cint k = R->r->first;
    for (cint s = 0; s < nsteps; s++) {
        cint t0 = steps[s], t1 = steps[s + 1];
        while (S->cblk_fcol[k + 1] - R->r0 <= t0) k++;
        cint f = S->cblk_fcol[k] - R->r0;
        int mine = F->exec.local->cblk_rank[k] == R->me;
        for (cint x = t0; x < t1; x++) {
            cint piv = gpiv[x], col = S->cblk_fcol[k] + (x - f);
            F->ipiv[col] = piv < 0 ? -1 : piv + (t0 - f);
            if (F->kind == CANOPY_FACT_LDLT)
                memcpy((char *)F->dsub + (size_t)col * R->sb, (const char *)gdsub + (size_t)x * R->sb, R->sb);
            /* the cblk's columns left of the step: its rows x and t0 + piv swap there too */
            if (!mine || piv < 0 || t0 == f || t0 + piv == x) continue;
            cint a = x - f, b = t0 + piv - f;
            for (cint c = 0; c < t0 - f; c++) {
                char *pa = root_panel(R, k, 0, c, a), *pb = root_panel(R, k, 0, c, b), tmp[16];
                memcpy(tmp, pa, R->sb);
                memcpy(pa, pb, R->sb);
                memcpy(pb, tmp, R->sb);
            }
        }
    }
}

/* The column the grid names in a NOT_SPD message, in the user's numbering. */
static canopy_status root_not_spd(const root_ctx *R, const canopy_err *ge, canopy_err *err)
{
    long long col = -1;
    const char *at = strstr(ge->msg, "column ");
    if (at) sscanf(at + 7, "%lld", &col);
    const symbolic *S = R->F->S;
    if (col < 0 || col >= R->r->n) return canopy_err_set(err, CANOPY_ERR_NOT_SPD, "matrix is not positive definite (%s)", ge->msg);
    return canopy_err_set(err, CANOPY_ERR_NOT_SPD,
                          "matrix is not positive definite: pivot of column %" CINT_FMT
                          " (original numbering, 0-based) is <= 0", S->perm[R->r0 + (cint)col]);
}

canopy_status numeric_root_factor(numeric *F, int64_t *perturbed, canopy_err *err)
{
    const numeric_exec *x = &F->exec;
    const sched_local *L = x->local;
    const symbolic *S = F->S;
    const sched_root *r = &L->root;
    *perturbed = 0;
    if (r->n <= 0) return CANOPY_SUCCESS;
    root_ctx R = {.F = F, .r = r, .r0 = S->cblk_fcol[r->first], .me = L->rank, .P = L->nranks, .G = r->pr * r->pc,
                  .sb = F->scalar_bytes, .lu = F->kind == CANOPY_FACT_LU, .sym = F->kind != CANOPY_FACT_LU};
    R.g = (grid_dense){.comm = MPI_COMM_NULL, .pr = r->pr, .pc = r->pc, .n = r->n, .m = r->n, .nb = r->nb, .kind = F->kind,
                       .threshold = F->threshold, .tag = 0, .lookahead = 1};
    int P = R.P, in_grid = R.me < R.G;
    canopy_status st = CANOPY_SUCCESS;
    double *tm = F->run.root, t0 = MPI_Wtime();
    tm[1] = tm[2] = tm[3] = 0;
    int64_t *v = canopy_calloc(4 * (size_t)P + 1, sizeof(int64_t), "root redistribution", err);
    char *sbuf = NULL, *rbuf = NULL, *local = NULL;
    cint *gpiv = NULL, *steps = NULL;
    void *gdsub = NULL;
    MPI_Comm gcomm = MPI_COMM_NULL;
    if (MPI_Comm_split(x->comm, in_grid ? 0 : MPI_UNDEFINED, R.me, &gcomm) != MPI_SUCCESS)
        canopy_err_set(err, CANOPY_ERR_MPI, "root grid: MPI_Comm_split failed");
    R.g.comm = gcomm;
    int64_t *scnt = v, *rcnt = v + P, *soff = v + 2 * P, *roff = v + 3 * P;
    int64_t nsend = 0, nrecv = 0, nloc = in_grid ? grid_dense_local_size(&R.g, R.me) : 0;
    if (v != NULL) {
        root_io cs = {.cnt = scnt}, cr = {.cnt = rcnt};
        for (cint k = r->first; k < S->ncblk; k++) {
            if (L->cblk_rank[k] == R.me) root_walk(&R, k, root_count_own, &cs);
            if (in_grid) root_walk(&R, k, root_count_tiles, &cr);
        }
        for (int q = 0; q < P; q++) {
            nsend += scnt[q];
            nrecv += rcnt[q];
        }
        /* phase by phase, each agreed: the peak is the tiles plus one redistribution buffer,
         * never the packed panels beside the tiles */
        sbuf = canopy_alloc((size_t)nsend + 1, R.sb, "root redistribution", err);
        rbuf = canopy_alloc((size_t)nrecv + 1, R.sb, "root redistribution", err);
        gpiv = canopy_alloc((size_t)r->n + 1, sizeof(cint), "root pivots", err);
        /* steps: the tiles cut at the cblks' boundaries, so pivoting never crosses a cblk */
        steps = canopy_alloc((size_t)(r->n / r->nb + S->ncblk - r->first) + 3, sizeof(cint), "root steps", err);
        if (steps) {
            R.g.steps = steps;
            R.g.nsteps = sched_root_steps(S, r, steps);
        }
        if (F->kind == CANOPY_FACT_LDLT) gdsub = canopy_calloc((size_t)r->n + 1, R.sb, "root pivots", err);
    }
    if (err->status == CANOPY_SUCCESS && (!v || !sbuf || !rbuf || !gpiv || !steps || (F->kind == CANOPY_FACT_LDLT && !gdsub)))
        canopy_err_set(err, CANOPY_ERR_NOMEM, "root grid: out of memory");
    if (comm_agree(x->comm, err) < 0) {
        st = err->status;
        goto out;
    }
    /* 1. the panels to the tiles' owners */
    for (int q = 1; q < P; q++) {
        soff[q] = soff[q - 1] + scnt[q - 1];
        roff[q] = roff[q - 1] + rcnt[q - 1];
    }
    {
        root_io ps = {.off = soff, .buf = sbuf, .to_grid = 1};
        for (cint k = r->first; k < S->ncblk; k++)
            if (L->cblk_rank[k] == R.me) root_walk(&R, k, root_panel_io, &ps);
    }
    if ((st = comm_share_alltoallv(x->comm, sbuf, scnt, rbuf, rcnt, R.sb, err)) != CANOPY_SUCCESS) goto out;
    canopy_free(sbuf);
    sbuf = NULL;
    local = canopy_calloc((size_t)nloc + 1, R.sb, "root tiles", err);
    if (comm_agree(x->comm, err) < 0) {
        st = err->status;
        goto out;
    }
    {
        root_io pr = {.off = roff, .buf = rbuf, .local = local, .to_grid = 1};
        for (cint k = r->first; in_grid && k < S->ncblk; k++) root_walk(&R, k, root_tile_io, &pr);
    }
    canopy_free(rbuf);
    rbuf = NULL;
    tm[1] = MPI_Wtime() - t0;
    t0 = MPI_Wtime();
    /* 2. the dense factorization on the grid: its outcome is agreed inside the grid, then with
     * the ranks outside it */
    canopy_err ge = {0};
    canopy_status gs = CANOPY_SUCCESS;
    if (in_grid) {
        /* the workers wait meanwhile: the grid's BLAS calls use the rank's cores */
        numeric_blas_threads(L->nthreads);
        gs = F->arith == CANOPY_COMPLEX
                 ? grid_dense_factor_z(&R.g, (double _Complex *)local, gpiv, (double _Complex *)gdsub, perturbed, &ge)
                 : grid_dense_factor_d(&R.g, (double *)local, gpiv, (double *)gdsub, perturbed, &ge);
        numeric_blas_threads(1);
        if (gs == CANOPY_ERR_NOT_SPD) root_not_spd(&R, &ge, err);
        else if (gs < 0) canopy_err_set(err, gs, "root grid: %s", ge.msg);
        if (R.me != 0) *perturbed = 0; /* summed over the ranks by the caller */
    }
    if (err->status == CANOPY_SUCCESS) rbuf = canopy_alloc((size_t)nrecv + 1, R.sb, "root redistribution", err);
    canopy_status ag = comm_agree(x->comm, err);
    tm[2] = MPI_Wtime() - t0;
    t0 = MPI_Wtime();
    if (ag < 0) {
        st = err->status;
        goto out;
    }
    /* 3. the pivots to every rank (the grid's are on its ranks), then the tiles back to the panels */
    if (F->kind != CANOPY_FACT_LLT) {
        if (MPI_Bcast(gpiv, (int)r->n, sizeof(cint) == 8 ? MPI_INT64_T : MPI_INT32_T, 0, x->comm) != MPI_SUCCESS ||
            (gdsub && MPI_Bcast(gdsub, (int)r->n * (int)(R.sb / sizeof(double)), MPI_DOUBLE, 0, x->comm) != MPI_SUCCESS)) {
            st = canopy_err_set(err, CANOPY_ERR_MPI, "root grid: MPI_Bcast of the pivots failed");
            goto out;
        }
    }
    soff[0] = roff[0] = 0;
    for (int q = 1; q < P; q++) {
        soff[q] = soff[q - 1] + scnt[q - 1];
        roff[q] = roff[q - 1] + rcnt[q - 1];
    }
    {
        root_io tp = {.off = roff, .buf = rbuf, .local = local, .to_grid = 0};
        for (cint k = r->first; in_grid && k < S->ncblk; k++) root_walk(&R, k, root_tile_io, &tp);
    }
    canopy_free(local);
    local = NULL;
    sbuf = canopy_alloc((size_t)nsend + 1, R.sb, "root redistribution", err);
    if (comm_agree(x->comm, err) < 0) {
        st = err->status;
        goto out;
    }
    if ((st = comm_share_alltoallv(x->comm, rbuf, rcnt, sbuf, scnt, R.sb, err)) != CANOPY_SUCCESS) goto out;
    {
        root_io pu = {.off = soff, .buf = sbuf, .to_grid = 0};
        for (cint k = r->first; k < S->ncblk; k++)
            if (L->cblk_rank[k] == R.me) root_walk(&R, k, root_panel_io, &pu);
    }
    if (F->kind != CANOPY_FACT_LLT) root_pivots(&R, steps, R.g.nsteps, gpiv, gdsub);
    tm[3] = MPI_Wtime() - t0;
    st = gs == CANOPY_WARN_PIVOTS_PERTURBED ? CANOPY_WARN_PIVOTS_PERTURBED : CANOPY_SUCCESS;
out:
    if (gcomm != MPI_COMM_NULL) MPI_Comm_free(&gcomm);
    canopy_free(v);
    canopy_free(sbuf);
    canopy_free(rbuf);
    canopy_free(local);
    canopy_free(gpiv);
    canopy_free(steps);
    canopy_free(gdsub);
    return st;
}
