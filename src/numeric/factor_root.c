/*
 * The root of the tree factored on a 2D grid of ranks (sched/root.h; MUMPS's "type-3 root").
 *
 * When the factorization's tasks are done, the root's cblks hold A's entries and every update
 * from below: their panel tasks only gathered them (the plan gives the root no update task). Here
 * every rank sends the entries of its root cblks straight from its panels into the tiles of a
 * pr x pc grid (MPI derived datatypes on both sides: no packed copy),
 * grid_dense factors the dense front (every step's panel broadcast along the grid's rows and
 * columns, one step of lookahead), and the factor goes back to the same cblks in the layout the
 * solve and the selected inversion read (numeric.h).
 *
 * The root is dense: cblk k's panel holds rows fcol(k) .. n-1 in order, so panel row p of k is
 * root row f + p (f = fcol(k) - fcol(first)). Entries travel in one canonical order both ways
 * (root_walk): cblk by cblk, column by column, tile by tile; the L part of column c from the
 * diagonal (LL^T, LDL^T) or from the cblk's first row (LU: the diagonal block's U too), and for LU
 * the U part (the U panel holds U^T: its row p >= w of column c is U(f + c, f + p)). Sender and
 * receiver walk the same order, so each side's datatype lists the same runs and no index travels.
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

#include <limits.h>
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

/*
 * The redistribution moves entries straight between the panels and the tiles: per peer, one MPI
 * datatype over this rank's panel runs bound for it (hindexed, absolute addresses) and one over
 * the tile runs it receives from it (a struct: L runs contiguous, U runs strided along a tile row),
 * both in the canonical order, so the same pair serves the way back. No packed copy of the root
 * exists beside the panels and the tiles. A peer's runs are cut into messages of at most
 * ROOT_CHUNK bytes at the same runs on both sides (they count the same lengths in the same order).
 */
#define ROOT_CHUNK ((int64_t)1 << 28)

typedef struct root_side {
    int64_t *ptr;        /* [P + 1] each peer's runs (counted first, then used as fill positions) */
    int *len;            /* [runs] entries */
    MPI_Aint *at;        /* [runs] absolute address of the run's first entry */
    unsigned char *row;  /* [runs] tile side: 1 for a U run (along a tile row) */
    int64_t nruns;
} root_side;

typedef struct root_build {
    root_side pan, til;  /* this rank's panel runs by tile owner; its tile runs by panel owner */
    char *local;
    int count;           /* 1: count the runs; 0: record them */
} root_build;

static char *root_panel(const root_ctx *R, cint k, int part, cint c, cint p)
{
    const numeric *F = R->F;
    const symbolic *S = F->S;
    char *base = (char *)(part ? F->U : F->L);
    return base + ((size_t)F->coef[k] + (size_t)c * (size_t)S->cblk_stride[k] + (size_t)p) * R->sb;
}

static void root_add(root_side *sd, int q, int count, cint len, const void *addr, int row)
{
    if (count) {
        sd->ptr[q + 1]++;
        return;
    }
    int64_t i = sd->ptr[q]++;
    sd->len[i] = (int)len;
    MPI_Get_address(addr, &sd->at[i]);
    if (sd->row) sd->row[i] = (unsigned char)row;
}

/* a run of the panels this rank owns (to its tile owner), a run of its tiles (from its panel's
 * owner); a run on both sides of this rank is copied at once in the direction of @p arg's count
 * (-1: panels to tiles, -2: back) */
static void root_runs(void *arg, const root_ctx *R, cint k, int part, cint c, cint p0, cint len, cint x, cint y)
{
    root_build *b = arg;
    int q = root_owner(R, x, y), owner = R->F->exec.local->cblk_rank[k];
    if (b->count < 0) { /* the runs inside this rank */
        if (owner != R->me || q != R->me) return;
        char *pan = root_panel(R, k, part, c, p0), *loc = b->local + (size_t)root_local(R, x, y) * R->sb;
        int to_grid = b->count == -1;
        if (part == 0) { /* an L run: contiguous on both sides */
            memcpy(to_grid ? loc : pan, to_grid ? pan : loc, (size_t)len * R->sb);
            return;
        }
        size_t step = (size_t)grid_dense_ld(&R->g, R->me) * R->sb; /* a U run goes along a tile row */
        for (cint i = 0; i < len; i++, pan += R->sb, loc += step)
            memcpy(to_grid ? loc : pan, to_grid ? pan : loc, R->sb);
        return;
    }
    if (owner == R->me && q != R->me) root_add(&b->pan, q, b->count, len, root_panel(R, k, part, c, p0), 0);
    if (q == R->me && owner != R->me)
        root_add(&b->til, owner, b->count, len, b->count ? NULL : b->local + (size_t)root_local(R, x, y) * R->sb, part);
}

/* The messages of one side: peer q's runs cut at ROOT_CHUNK bytes (@p type NULL: count them). */
typedef struct root_msgs {
    int64_t n;
    int *peer;
    MPI_Datatype *type;
} root_msgs;

/*
 * The datatypes of one side's messages (panel side: hindexed; tile side: a struct whose U runs
 * are len entries one local leading dimension apart, one hvector per length, made once). With
 * m->type NULL only counts them (m->n) and the largest message's runs (*maxruns).
 */
static int root_types(const root_ctx *R, const root_side *sd, MPI_Datatype elem, MPI_Datatype *rowtype,
                      root_msgs *m, int64_t *maxruns, MPI_Datatype *scratch_t, int *scratch_l)
{
    int ok = 1;
    MPI_Aint stride = (MPI_Aint)grid_dense_ld(&R->g, R->me) * (MPI_Aint)R->sb;
    int64_t nm = 0;
    for (int q = 0; ok && q < R->P; q++) {
        int64_t i = q ? sd->ptr[q - 1] : 0, end = sd->ptr[q];
        while (ok && i < end) {
            int64_t j = i, bytes = 0;
            while (j < end && (j == i || bytes + (int64_t)sd->len[j] * (int64_t)R->sb <= ROOT_CHUNK) && j - i < INT_MAX / 2)
                bytes += (int64_t)sd->len[j++] * (int64_t)R->sb;
            if (m->type == NULL) {
                if (j - i > *maxruns) *maxruns = j - i;
            } else {
                int n = (int)(j - i);
                MPI_Datatype *t = &m->type[nm];
                if (sd->row == NULL) {
                    ok = MPI_Type_create_hindexed(n, sd->len + i, sd->at + i, elem, t) == MPI_SUCCESS;
                } else {
                    for (int r = 0; ok && r < n; r++) {
                        int l = sd->len[i + r];
                        if (!sd->row[i + r]) {
                            scratch_t[r] = elem;
                            scratch_l[r] = l;
                            continue;
                        }
                        if (rowtype[l] == MPI_DATATYPE_NULL &&
                            (MPI_Type_create_hvector(l, 1, stride, elem, &rowtype[l]) != MPI_SUCCESS ||
                             MPI_Type_commit(&rowtype[l]) != MPI_SUCCESS))
                            ok = 0;
                        scratch_t[r] = rowtype[l];
                        scratch_l[r] = 1;
                    }
                    ok = ok && MPI_Type_create_struct(n, scratch_l, sd->at + i, scratch_t, t) == MPI_SUCCESS;
                }
                if (!ok) break;
                if (MPI_Type_commit(t) != MPI_SUCCESS) ok = 0;
                m->peer[nm] = q;
            }
            nm++;
            i = j;
        }
    }
    m->n = nm;
    return ok;
}

/* One direction (@p to_grid: panels to tiles, else back): the receives, the sends, the runs inside
 * this rank, then the waits. @p req holds one request per message of both sides. */
static int root_move(const root_ctx *R, root_build *b, const root_msgs *pan, const root_msgs *til, int to_grid,
                     MPI_Request *req)
{
    const numeric *F = R->F;
    int ok = 1;
    int64_t nreq = 0;
    const root_msgs *in = to_grid ? til : pan, *out = to_grid ? pan : til;
    /* a post that fails leaves a null request (waited for at once) */
    for (int64_t i = 0; i < in->n; i++, nreq++)
        if (MPI_Irecv(MPI_BOTTOM, 1, in->type[i], in->peer[i], 90, F->exec.comm, &req[nreq]) != MPI_SUCCESS) {
            req[nreq] = MPI_REQUEST_NULL;
            ok = 0;
        }
    for (int64_t i = 0; i < out->n; i++, nreq++)
        if (MPI_Isend(MPI_BOTTOM, 1, out->type[i], out->peer[i], 90, F->exec.comm, &req[nreq]) != MPI_SUCCESS) {
            req[nreq] = MPI_REQUEST_NULL;
            ok = 0;
        }
    b->count = to_grid ? -1 : -2;
    for (cint k = R->r->first; k < F->S->ncblk; k++)
        if (F->exec.local->cblk_rank[k] == R->me) root_walk(R, k, root_runs, b);
    /* one MPI_Wait each: GCC flags MPI_STATUSES_IGNORE with MPICH's headers (stringop-overflow) */
    for (int64_t i = 0; i < nreq; i++)
        if (MPI_Wait(&req[i], MPI_STATUS_IGNORE) != MPI_SUCCESS) ok = 0;
    return ok;
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
    MPI_Datatype elem = R.sb == 16 ? MPI_C_DOUBLE_COMPLEX : MPI_DOUBLE;
    root_build b = {.count = 1};
    root_msgs pan = {0}, til = {0};
    char *local = NULL;
    cint *gpiv = NULL, *steps = NULL;
    void *gdsub = NULL;
    MPI_Request *req = NULL;
    MPI_Datatype *rowtype = NULL, *scr_t = NULL;
    int *scr_l = NULL;
    MPI_Comm gcomm = MPI_COMM_NULL;
    if (MPI_Comm_split(x->comm, in_grid ? 0 : MPI_UNDEFINED, R.me, &gcomm) != MPI_SUCCESS)
        canopy_err_set(err, CANOPY_ERR_MPI, "root grid: MPI_Comm_split failed");
    R.g.comm = gcomm;
    int64_t nloc = in_grid ? grid_dense_local_size(&R.g, R.me) : 0, maxruns = 0;
    /* 1. every allocation first, agreed: the runs of each side, the tiles, the pivots, the steps */
    b.pan.ptr = canopy_calloc((size_t)P + 1, sizeof(int64_t), "root redistribution", err);
    b.til.ptr = canopy_calloc((size_t)P + 1, sizeof(int64_t), "root redistribution", err);
    if (b.pan.ptr && b.til.ptr) {
        for (cint k = r->first; k < S->ncblk; k++) root_walk(&R, k, root_runs, &b);
        for (int q = 0; q < P; q++) {
            b.pan.ptr[q + 1] += b.pan.ptr[q];
            b.til.ptr[q + 1] += b.til.ptr[q];
        }
        b.pan.nruns = b.pan.ptr[P];
        b.til.nruns = b.til.ptr[P];
        b.pan.len = canopy_alloc((size_t)b.pan.nruns + 1, sizeof(int), "root redistribution", err);
        b.pan.at = canopy_alloc((size_t)b.pan.nruns + 1, sizeof(MPI_Aint), "root redistribution", err);
        b.til.len = canopy_alloc((size_t)b.til.nruns + 1, sizeof(int), "root redistribution", err);
        b.til.at = canopy_alloc((size_t)b.til.nruns + 1, sizeof(MPI_Aint), "root redistribution", err);
        b.til.row = canopy_alloc((size_t)b.til.nruns + 1, 1, "root redistribution", err);
    }
    local = canopy_calloc((size_t)nloc + 1, R.sb, "root tiles", err);
    gpiv = canopy_alloc((size_t)r->n + 1, sizeof(cint), "root pivots", err);
    /* steps: the tiles cut at the cblks' boundaries, so pivoting never crosses a cblk */
    steps = canopy_alloc((size_t)(r->n / r->nb + S->ncblk - r->first) + 3, sizeof(cint), "root steps", err);
    if (steps) {
        R.g.steps = steps;
        R.g.nsteps = sched_root_steps(S, r, steps);
    }
    if (F->kind == CANOPY_FACT_LDLT) gdsub = canopy_calloc((size_t)r->n + 1, R.sb, "root pivots", err);
    rowtype = canopy_alloc((size_t)r->nb + 1, sizeof(MPI_Datatype), "root redistribution", err);
    for (cint t = 0; rowtype && t <= r->nb; t++) rowtype[t] = MPI_DATATYPE_NULL;
    if (err->status == CANOPY_SUCCESS && (!b.pan.ptr || !b.til.ptr || !b.pan.len || !b.pan.at || !b.til.len ||
                                          !b.til.at || !b.til.row || !local || !gpiv || !steps || !rowtype ||
                                          (F->kind == CANOPY_FACT_LDLT && !gdsub)))
        canopy_err_set(err, CANOPY_ERR_NOMEM, "root grid: out of memory");
    if (err->status == CANOPY_SUCCESS) {
        /* the runs recorded (ptr becomes each peer's end), then each side's messages counted */
        b.count = 0;
        b.local = local;
        for (cint k = r->first; k < S->ncblk; k++) root_walk(&R, k, root_runs, &b);
        root_types(&R, &b.pan, elem, rowtype, &pan, &maxruns, NULL, NULL);
        root_types(&R, &b.til, elem, rowtype, &til, &maxruns, NULL, NULL);
        pan.peer = canopy_alloc((size_t)pan.n + 1, sizeof(int), "root redistribution", err);
        pan.type = canopy_alloc((size_t)pan.n + 1, sizeof(MPI_Datatype), "root redistribution", err);
        til.peer = canopy_alloc((size_t)til.n + 1, sizeof(int), "root redistribution", err);
        til.type = canopy_alloc((size_t)til.n + 1, sizeof(MPI_Datatype), "root redistribution", err);
        req = canopy_alloc((size_t)(pan.n + til.n) + 1, sizeof(MPI_Request), "root redistribution", err);
        scr_t = canopy_alloc((size_t)maxruns + 1, sizeof(MPI_Datatype), "root redistribution", err);
        scr_l = canopy_alloc((size_t)maxruns + 1, sizeof(int), "root redistribution", err);
        if (err->status == CANOPY_SUCCESS && (!pan.peer || !pan.type || !til.peer || !til.type || !req || !scr_t || !scr_l))
            canopy_err_set(err, CANOPY_ERR_NOMEM, "root grid: out of memory");
        if (err->status == CANOPY_SUCCESS) {
            for (int64_t i = 0; i < pan.n; i++) pan.type[i] = MPI_DATATYPE_NULL;
            for (int64_t i = 0; i < til.n; i++) til.type[i] = MPI_DATATYPE_NULL;
            if (!root_types(&R, &b.pan, elem, rowtype, &pan, &maxruns, scr_t, scr_l) ||
                !root_types(&R, &b.til, elem, rowtype, &til, &maxruns, scr_t, scr_l))
                canopy_err_set(err, CANOPY_ERR_MPI, "root grid: an MPI datatype could not be made");
        } else {
            pan.n = til.n = 0; /* no datatype to free */
        }
    }
    if (comm_agree(x->comm, err) < 0) {
        st = err->status;
        goto out;
    }
    /* 2. the panels straight into the tiles */
    if (!root_move(&R, &b, &pan, &til, 1, req)) canopy_err_set(err, CANOPY_ERR_MPI, "root grid: the redistribution failed");
    if (comm_agree(x->comm, err) < 0) {
        st = err->status;
        goto out;
    }
    tm[1] = MPI_Wtime() - t0;
    t0 = MPI_Wtime();
    /* 3. the dense factorization on the grid: its outcome is agreed inside the grid, then with
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
    canopy_status ag = comm_agree(x->comm, err);
    tm[2] = MPI_Wtime() - t0;
    t0 = MPI_Wtime();
    if (ag < 0) {
        st = err->status;
        goto out;
    }
    /* 4. the pivots to every rank (the grid's are on its ranks), then the tiles back into the panels */
    if (F->kind != CANOPY_FACT_LLT &&
        (MPI_Bcast(gpiv, (int)r->n, sizeof(cint) == 8 ? MPI_INT64_T : MPI_INT32_T, 0, x->comm) != MPI_SUCCESS ||
         (gdsub && MPI_Bcast(gdsub, (int)r->n * (int)(R.sb / sizeof(double)), MPI_DOUBLE, 0, x->comm) != MPI_SUCCESS)))
        canopy_err_set(err, CANOPY_ERR_MPI, "root grid: MPI_Bcast of the pivots failed");
    if (!root_move(&R, &b, &pan, &til, 0, req))
        canopy_err_set(err, CANOPY_ERR_MPI, "root grid: the redistribution back failed");
    /* every rank returns the same status */
    if (comm_agree(x->comm, err) < 0) {
        st = err->status;
        goto out;
    }
    if (F->kind != CANOPY_FACT_LLT) root_pivots(&R, steps, R.g.nsteps, gpiv, gdsub);
    tm[3] = MPI_Wtime() - t0;
    st = gs == CANOPY_WARN_PIVOTS_PERTURBED ? CANOPY_WARN_PIVOTS_PERTURBED : CANOPY_SUCCESS;
out:
    if (gcomm != MPI_COMM_NULL) MPI_Comm_free(&gcomm);
    for (int64_t i = 0; pan.type && i < pan.n; i++)
        if (pan.type[i] != MPI_DATATYPE_NULL) MPI_Type_free(&pan.type[i]);
    for (int64_t i = 0; til.type && i < til.n; i++)
        if (til.type[i] != MPI_DATATYPE_NULL) MPI_Type_free(&til.type[i]);
    for (cint t = 0; rowtype && t <= r->nb; t++)
        if (rowtype[t] != MPI_DATATYPE_NULL) MPI_Type_free(&rowtype[t]);
    canopy_free(pan.peer);
    canopy_free(pan.type);
    canopy_free(til.peer);
    canopy_free(til.type);
    canopy_free(req);
    canopy_free(scr_t);
    canopy_free(scr_l);
    canopy_free(rowtype);
    canopy_free(b.pan.ptr);
    canopy_free(b.pan.len);
    canopy_free(b.pan.at);
    canopy_free(b.til.ptr);
    canopy_free(b.til.len);
    canopy_free(b.til.at);
    canopy_free(b.til.row);
    canopy_free(local);
    canopy_free(gpiv);
    canopy_free(steps);
    canopy_free(gdsub);
    return st;
}
