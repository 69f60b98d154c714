/*
 * Part of factor_template.c (included at its end, compiled once per arithmetic): the triangular
 * solves over the factors of several ranks. Not compiled on its own.
 */
/* ---- solve over several ranks ------------------------------------------------------------- */

/*
 * Message-driven substitution driven by the calling thread of each rank (the own subtrees and the
 * big products of the shared cblks run on all its workers, see below), over y (n x nrhs, new
 * numbering; every rank starts with the right-hand side's rows of its own cblks and fills them).
 * Forward: the contributions of one rank's cblks to a cblk j of another rank are summed into one
 * w_j x nrhs block and reduced along the tree of j's members (owner first, then the ranks holding
 * bloks facing j); the owner subtracts the sum before its diagonal solve. Backward: the owner of
 * j broadcasts x_j along the same members' tree to the ranks whose bloks face j. A rank only
 * ever waits inside a progress loop that advances every operation in flight, so the smallest
 * (forward) or largest (backward) awaited cblk always completes: no deadlock, whatever the
 * buffering of MPI.
 */
typedef struct ksop {
    cint j;
    int active;         /* 0 not posted, 1 in flight, 2 done, 3 done and unpacked */
    comm_tree t;
    comm_tree_op fwd, bwd;
    comm_tree_op *cur;  /* the operation of the current phase */
    SCALAR *buf;
} ksop;

typedef struct kdsolve {
    numeric *F;
    cint nrhs;
    SCALAR *y;
    ksop *ops;          /* [nmember_cblks] in cblk order */
    int *act;           /* active operations */
    int nact;
    canopy_err *err;
    int failed;
} kdsolve;

static void kds_progress(kdsolve *d)
{
    for (int a = 0; a < d->nact;) {
        ksop *o = &d->ops[d->act[a]];
        bool done = false;
        if (comm_tree_op_test(o->cur, &done, d->err) != CANOPY_SUCCESS) {
            d->failed = 1;
            done = true;
        }
        if (done) {
            o->active = 2;
            d->act[a] = d->act[--d->nact];
        } else {
            a++;
        }
    }
}

static void kds_wait(kdsolve *d, ksop *o)
{
    while (o->active == 1 && !d->failed) kds_progress(d);
}

/* Every operation of both phases is allocated before the first message (kds_prepare), so that a
 * rank short of memory fails before the others can wait for it; posting allocates nothing. */
static canopy_status kds_prepare(kdsolve *d, int idx)
{
    numeric *F = d->F;
    ksop *o = &d->ops[idx];
    const int *mem = F->sol_members + F->sol_mptr[idx];
    int p = (int)(F->sol_mptr[idx + 1] - F->sol_mptr[idx]);
    cint j = o->j, w = F->S->cblk_fcol[j + 1] - F->S->cblk_fcol[j];
    int count = (int)((int64_t)w * d->nrhs * (int64_t)(sizeof(SCALAR) / sizeof(double)));
    canopy_status st = comm_tree_build(mem, p, F->exec.local->rank, F->exec.tree, (unsigned)j, &o->t, d->err);
    if (st == CANOPY_SUCCESS) st = comm_tree_op_init(&o->fwd, &o->t, mem, COMM_TREE_REDUCE_SUM, count, d->err);
    if (st == CANOPY_SUCCESS) st = comm_tree_op_init(&o->bwd, &o->t, mem, COMM_TREE_BCAST, count, d->err);
    return st;
}

static void kds_start(kdsolve *d, int idx, comm_tree_op *op, int64_t id)
{
    numeric *F = d->F;
    ksop *o = &d->ops[idx];
    MPI_Comm comm;
    int tag;
    comm_tags_get(F->exec.tags, id, &comm, &tag);
    o->cur = op;
    if (comm_tree_op_post(op, comm, tag, (double *)o->buf, d->err) != CANOPY_SUCCESS) {
        d->failed = 1;
        return;
    }
    o->active = 1;
    d->act[d->nact++] = idx;
    int sends = op->kind == COMM_TREE_BCAST ? o->t.nchildren : o->t.parent >= 0;
    F->solve_counts[0] += sends;
    F->solve_counts[1] += (int64_t)sends * op->count * (int64_t)sizeof(double);
}

/*
 * The cblks shared by several ranks run on the calling thread between messages, but their big
 * products are cut into fixed pieces of KDS_PIECE rows (forward: the rows of j that this rank's
 * bloks face) or columns (backward: of k's panel), which the rank's workers take in any order.
 * A piece writes only its own rows and sums in a fixed order, and the calling thread alone runs
 * the same pieces: the bits depend neither on the number of threads nor on who ran what.
 */
#define KDS_PIECE NUMERIC_SPLIT_PIECE
#define KDS_PAR_MIN NUMERIC_SPLIT_MIN /* fewer multiply-adds: waking the workers costs more */

typedef struct kdpieces {
    const numeric *F;
    cint j, nrhs;
    int backward;
    SCALAR alpha;   /* forward: dst += alpha * (this rank's bloks facing j) y */
    SCALAR *y;
    SCALAR *dst;    /* forward: row fcol(j) of the sum, leading dimension ld */
    size_t ld;
    cint r0, nr;    /* backward: the right-hand sides of work */
    const SCALAR *work;
    int npieces;
    _Atomic int next;
} kdpieces;

static void kdp_forward(const kdpieces *q, int p)
{
    const numeric *F = q->F;
    const symbolic *S = F->S;
    const sched_local *L = F->exec.local;
    cint n = S->n, j = q->j, fcol = S->cblk_fcol[j];
    cint lo = fcol + (cint)p * KDS_PIECE, hi = lo + KDS_PIECE - 1;
    if (hi >= S->cblk_fcol[j + 1]) hi = S->cblk_fcol[j + 1] - 1;
    for (cint e = F->fan_ptr[j]; e < F->fan_ptr[j + 1]; e++) {
        cint b = F->fan_blok[e], k = F->fan_cblk[e];
        if (L->cblk_rank[k] != L->rank) continue; /* another rank's block */
        cint r1 = S->blok_frow[b] > lo ? S->blok_frow[b] : lo, r2 = S->blok_lrow[b] < hi ? S->blok_lrow[b] : hi;
        if (r1 > r2) continue;
        cint wk = S->cblk_fcol[k + 1] - S->cblk_fcol[k];
        const SCALAR *Pb = ks_fwd_panel(F, k) + S->blok_coefrow[b] + (r1 - S->blok_frow[b]);
        ks_gemv_n(r2 - r1 + 1, wk, q->nrhs, q->alpha, Pb, S->cblk_stride[k], q->y + S->cblk_fcol[k], n,
                  q->dst + (r1 - fcol), (cint)q->ld);
    }
}

static void kdp_worker(void *arg, int t)
{
    (void)t;
    kdpieces *q = arg;
    cint w = q->F->S->cblk_fcol[q->j + 1] - q->F->S->cblk_fcol[q->j];
    for (;;) {
        int p = atomic_fetch_add_explicit(&q->next, 1, memory_order_relaxed);
        if (p >= q->npieces) return;
        if (!q->backward) {
            kdp_forward(q, p);
        } else {
            cint c0 = (cint)p * KDS_PIECE, c1 = c0 + KDS_PIECE < w ? c0 + KDS_PIECE : w;
            kbackward_product(q->F, q->j, q->r0, q->nr, c0, c1, q->y, q->work);
        }
    }
}

/* returns 1 when the workers ran the pieces */
static int kdp_run(kdpieces *q, double madds)
{
    const symbolic *S = q->F->S;
    cint w = S->cblk_fcol[q->j + 1] - S->cblk_fcol[q->j];
    sched_pool *pool = q->F->exec.pool;
    q->npieces = (int)((w + KDS_PIECE - 1) / KDS_PIECE);
    atomic_init(&q->next, 0);
    double least = q->F->sol_split_min > 0 ? q->F->sol_split_min : KDS_PAR_MIN;
    if (pool != NULL && sched_pool_threads(pool) > 1 && q->npieces > 1 && madds >= least) {
        sched_pool_run_all(pool, kdp_worker, q);
        return 1;
    }
    kdp_worker(q, 0);
    return 0;
}

/* dst (w x nrhs, ld) += alpha * (this rank's bloks facing j) y, on the rank's workers */
static int kds_fanin(const numeric *F, cint j, cint nrhs, SCALAR *y, SCALAR alpha, SCALAR *dst, size_t ld)
{
    const symbolic *S = F->S;
    const sched_local *L = F->exec.local;
    double madds = 0;
    for (cint e = F->fan_ptr[j]; e < F->fan_ptr[j + 1]; e++) {
        cint b = F->fan_blok[e], k = F->fan_cblk[e];
        if (L->cblk_rank[k] == L->rank)
            madds += (double)(S->blok_lrow[b] - S->blok_frow[b] + 1) * (double)(S->cblk_fcol[k + 1] - S->cblk_fcol[k]);
    }
    kdpieces q = {.F = F, .j = j, .nrhs = nrhs, .alpha = alpha, .y = y, .dst = dst, .ld = ld};
    return kdp_run(&q, madds * (double)nrhs);
}

/* buf (w x nrhs) += contributions of this rank's cblks facing j */
static int kds_partial(const numeric *F, cint j, cint nrhs, SCALAR *y, SCALAR *buf)
{
    const symbolic *S = F->S;
    return kds_fanin(F, j, nrhs, y, K_ONE, buf, (size_t)(S->cblk_fcol[j + 1] - S->cblk_fcol[j]));
}

/* forward(j) restricted to this rank's sources, after subtracting the other ranks' sum */
static int kds_forward(const numeric *F, cint j, cint nrhs, SCALAR *y, const SCALAR *remote)
{
    const symbolic *S = F->S;
    cint n = S->n, fcol = S->cblk_fcol[j], w = S->cblk_fcol[j + 1] - fcol;
    if (remote)
        for (cint r = 0; r < nrhs; r++)
            for (cint i = 0; i < w; i++) y[fcol + i + (size_t)r * n] -= remote[i + (size_t)r * w];
    int par = kds_fanin(F, j, nrhs, y, K_MONE, y + fcol, (size_t)n);
    kforward_diag(F, j, nrhs, y);
    return par;
}

/* backward(k) of a shared cblk: kbackward with the panel product on the rank's workers */
static int kds_backward(const numeric *F, cint k, cint nrhs, SCALAR *y, SCALAR *work)
{
    const symbolic *S = F->S;
    int par = 0;
    cint w = S->cblk_fcol[k + 1] - S->cblk_fcol[k], m = S->cblk_stride[k] - w;
    if (F->kind == CANOPY_FACT_LDLT) kdiag_solve(F, k, nrhs, y);
    for (cint r0 = 0; m > 0 && r0 < nrhs; r0 += KS_RHS_CHUNK) {
        cint nr = nrhs - r0 < KS_RHS_CHUNK ? nrhs - r0 : KS_RHS_CHUNK;
        kbackward_gather(F, k, r0, nr, y, work);
        kdpieces q = {.F = F, .j = k, .nrhs = nrhs, .backward = 1, .y = y, .r0 = r0, .nr = nr, .work = work};
        par |= kdp_run(&q, (double)m * (double)w * (double)nr);
    }
    kbackward_diag(F, k, nrhs, y);
    return par;
}

/*
 * The cblks whose whole subtree is on this rank (F->sol_local) exchange no message: the forward
 * solve runs them before the message-driven loop, the backward solve after it, on every worker of
 * the rank. A cblk is ready once its children are done (forward) or its parent is (backward);
 * ready cblks enter one queue in the order they become ready and the workers take them in that
 * order. Each writes only its own rows of y and reads rows already final in a fixed order: the
 * bits do not depend on the number of threads.
 */
typedef struct kdlocal {
    const numeric *F;
    cint nrhs;
    SCALAR *y;
    SCALAR *work;              /* ks_work_scalars per worker (backward) */
    size_t wld;
    int backward;
    int nthreads;
    _Atomic cint *slot;        /* [nlocal] the queue: local indices, -1 until written */
    _Atomic cint *pending;     /* forward: children not done yet */
    _Atomic int64_t head, tail;
    /* backward: run this on cblk k instead of its solve (the distributed selected inversion) */
    void (*cblk_fn)(void *ctx, cint k, int thread);
    void *fn_ctx;
} kdlocal;

static void kdl_push(kdlocal *q, cint x)
{
    int64_t at = atomic_fetch_add_explicit(&q->tail, 1, memory_order_relaxed);
    atomic_store_explicit(&q->slot[at], x, memory_order_release);
}

static void kdl_worker(void *arg, int t)
{
    kdlocal *q = arg;
    const numeric *F = q->F;
    cint nl = F->sol_nlocal;
    SCALAR *work = q->work + (size_t)t * q->wld;
    for (;;) {
        int64_t at = atomic_fetch_add_explicit(&q->head, 1, memory_order_relaxed);
        if (at >= nl) return;
        cint x;
        /* the cblk of this place is written once a running one completes: wait for it */
        while ((x = atomic_load_explicit(&q->slot[at], memory_order_acquire)) < 0) sched_yield();
        cint k = F->sol_local[x];
        if (!q->backward) {
            kforward_from(F, k, q->nrhs, q->y, -1, NULL);
            cint p = F->sol_lparent[x];
            if (p >= 0 && atomic_fetch_sub_explicit(&q->pending[p], 1, memory_order_acq_rel) == 1) kdl_push(q, p);
        } else {
            if (q->cblk_fn) q->cblk_fn(q->fn_ctx, k, t);
            else kbackward(F, k, q->nrhs, q->y, work);
            for (cint c = F->sol_kptr[x]; c < F->sol_kptr[x + 1]; c++) kdl_push(q, F->sol_kids[c]);
        }
    }
}

/* The queue and the workers' workspace, allocated before the first message (see kds_prepare). */
static canopy_status kdl_init(kdlocal *q, numeric *F, cint nrhs, SCALAR *y, canopy_err *err)
{
    cint nl = F->sol_nlocal;
    sched_pool *pool = F->exec.pool;
    int nt = pool != NULL ? sched_pool_threads(pool) : 1;
    *q = (kdlocal){.F = F, .nrhs = nrhs, .y = y, .wld = ks_work_scalars(F, nrhs), .nthreads = nt};
    size_t nw;
    q->work = canopy_mul_ok(q->wld, (size_t)nt, &nw) ? canopy_alloc(nw, sizeof(SCALAR), "solve workspace", err) : NULL;
    q->slot = canopy_alloc((size_t)nl + 1, sizeof(*q->slot), "solve queue", err);
    q->pending = canopy_alloc((size_t)nl + 1, sizeof(*q->pending), "solve queue", err);
    if (q->work && q->slot && q->pending) return CANOPY_SUCCESS;
    return err && err->status ? err->status : canopy_err_set(err, CANOPY_ERR_NOMEM, "solve workspace");
}

static void kdl_free(kdlocal *q)
{
    canopy_free(q->work);
    canopy_free((void *)q->slot);
    canopy_free((void *)q->pending);
}

static void kdl_run(kdlocal *q, int backward)
{
    const numeric *F = q->F;
    cint nl = F->sol_nlocal;
    if (nl == 0) return;
    q->backward = backward;
    atomic_init(&q->head, 0);
    atomic_init(&q->tail, 0);
    for (cint x = 0; x < nl; x++) {
        atomic_init(&q->slot[x], -1);
        atomic_init(&q->pending[x], F->sol_kptr[x + 1] - F->sol_kptr[x]);
    }
    for (cint x = 0; x < nl; x++)
        if (backward ? F->sol_lparent[x] < 0 : F->sol_kptr[x + 1] == F->sol_kptr[x]) kdl_push(q, x);
    /* a few cblks are not worth waking the workers for */
    if (q->nthreads == 1 || nl < 2 * q->nthreads) kdl_worker(q, 0);
    else sched_pool_run_all(F->exec.pool, kdl_worker, q);
}

canopy_status KSFX(numeric_solve_dist)(numeric *F, cint nrhs, SCALAR *y, canopy_err *err)
{
    const symbolic *S = F->S;
    const sched_local *L = F->exec.local;
    cint n = S->n, nc = S->ncblk;
    int me = L->rank, nm = F->sol_nops;
    kdsolve d = {.F = F, .nrhs = nrhs, .y = y, .err = err};
    F->sol_split = 0;
    d.ops = canopy_calloc((size_t)nm + 1, sizeof(ksop), "solve messages", err);
    d.act = canopy_alloc((size_t)nm + 1, sizeof(int), "solve messages", err);
    int *left = canopy_calloc((size_t)nm + 1, sizeof(int), "solve messages", err);
    unsigned char *local = canopy_calloc((size_t)nc + 1, 1, "solve messages", err);
    kdlocal lq;
    canopy_status qst = kdl_init(&lq, F, nrhs, y, err);
    for (cint x = 0; local && x < F->sol_nlocal; x++) local[F->sol_local[x]] = 1;
    SCALAR *work = canopy_alloc(ks_work_scalars(F, nrhs), sizeof(SCALAR), "solve workspace", err);
    canopy_status st = d.ops && d.act && left && work && local && qst == CANOPY_SUCCESS ? CANOPY_SUCCESS
                                                      : (err && err->status ? err->status : CANOPY_ERR_NOMEM);
    for (int i = 0; st == CANOPY_SUCCESS && i < nm; i++) {
        cint j = F->sol_cblk[i];
        d.ops[i].j = j;
        d.ops[i].buf = canopy_calloc((size_t)(S->cblk_fcol[j + 1] - S->cblk_fcol[j]) * (size_t)nrhs + 1,
                                     sizeof(SCALAR), "solve messages", err);
        st = d.ops[i].buf ? kds_prepare(&d, i) : (err && err->status ? err->status : CANOPY_ERR_NOMEM);
    }
    /* nothing has been sent yet: every rank learns here whether all could allocate */
    if (comm_agree(F->exec.comm, err) < 0) {
        st = err->status;
        goto out;
    }
    /* this rank's own subtrees first: they need no message */
    kdl_run(&lq, 0);
    /* forward: the owners post their reductions first; this rank's bloks facing each j counted */
    for (int i = 0; i < nm; i++) {
        cint j = d.ops[i].j;
        if (L->cblk_rank[j] == me) kds_start(&d, i, &d.ops[i].fwd, comm_tags_id(j, COMM_ID_FORWARD));
        else
            for (cint q = F->fan_ptr[j]; q < F->fan_ptr[j + 1]; q++)
                if (L->cblk_rank[F->fan_cblk[q]] == me) left[i]++;
    }
    for (cint j = 0; j < nc && !d.failed; j++) {
        if (L->cblk_rank[j] != me) continue;
        int i = F->sol_op[j];
        if (i >= 0) kds_wait(&d, &d.ops[i]);
        if (!local[j]) F->sol_split += kds_forward(F, j, nrhs, y, i >= 0 ? d.ops[i].buf : NULL);
        /* remote targets whose last bloks on this rank are j's: their partial sums leave now */
        for (cint b = S->cblk_fblok[j] + 1; b < S->cblk_fblok[j + 1]; b++) {
            cint t = S->blok_fcblk[b];
            if (L->cblk_rank[t] == me || (b > S->cblk_fblok[j] + 1 && S->blok_fcblk[b - 1] == t)) continue;
            int it = F->sol_op[t];
            for (cint e = b; e < S->cblk_fblok[j + 1] && S->blok_fcblk[e] == t; e++) left[it]--;
            if (left[it] == 0) {
                F->sol_split += kds_partial(F, t, nrhs, y, d.ops[it].buf);
                kds_start(&d, it, &d.ops[it].fwd, comm_tags_id(t, COMM_ID_FORWARD));
            }
        }
        kds_progress(&d);
    }
    while (d.nact > 0 && !d.failed) kds_progress(&d);
    /* backward: the readers post their broadcasts first */
    for (int i = 0; i < nm && !d.failed; i++) {
        d.ops[i].active = 0;
        if (L->cblk_rank[d.ops[i].j] != me) kds_start(&d, i, &d.ops[i].bwd, comm_tags_id(d.ops[i].j, COMM_ID_BACKWARD));
    }
    for (cint k = nc - 1; k >= 0 && !d.failed; k--) {
        if (L->cblk_rank[k] != me) continue;
        for (cint b = S->cblk_fblok[k] + 1; b < S->cblk_fblok[k + 1]; b++) {
            cint j = S->blok_fcblk[b];
            if (L->cblk_rank[j] == me) continue;
            ksop *o = &d.ops[F->sol_op[j]];
            if (o->active == 3) continue;
            kds_wait(&d, o);
            cint fj = S->cblk_fcol[j], wj = S->cblk_fcol[j + 1] - fj;
            for (cint r = 0; r < nrhs; r++)
                memcpy(y + fj + (size_t)r * n, o->buf + (size_t)r * wj, (size_t)wj * sizeof(SCALAR));
            o->active = 3;
        }
        if (local[k]) continue; /* after the loop, on the workers */
        F->sol_split += kds_backward(F, k, nrhs, y, work);
        int i = F->sol_op[k];
        if (i >= 0) {
            cint fk = S->cblk_fcol[k], wk = S->cblk_fcol[k + 1] - fk;
            for (cint r = 0; r < nrhs; r++)
                memcpy(d.ops[i].buf + (size_t)r * wk, y + fk + (size_t)r * n, (size_t)wk * sizeof(SCALAR));
            kds_start(&d, i, &d.ops[i].bwd, comm_tags_id(k, COMM_ID_BACKWARD));
        }
        kds_progress(&d);
    }
    while (d.nact > 0 && !d.failed) kds_progress(&d);
    /* every solution row the own subtrees face is final now */
    if (!d.failed) kdl_run(&lq, 1);
    if (d.failed) st = err && err->status ? err->status : canopy_err_set(err, CANOPY_ERR_MPI, "the distributed solve's messages failed");
out:
    for (int i = 0; d.ops && i < nm; i++) {
        comm_tree_op_free(&d.ops[i].fwd);
        comm_tree_op_free(&d.ops[i].bwd);
        canopy_free(d.ops[i].buf);
    }
    canopy_free(d.ops);
    canopy_free(d.act);
    canopy_free(left);
    canopy_free(local);
    kdl_free(&lq);
    canopy_free(work);
    return st;
}
