/*
 * Part of factor_template.c (included in its middle, compiled once per arithmetic): the
 * threaded factorization, with the ticket protocol of numeric.h and the fan-in buffers and
 * messages of several ranks (comm/README.md). Not compiled on its own.
 */
/* ---- threaded factorization (protocol in numeric.h) -------------------------------------- */

typedef struct kpar {
    kctx c;
    numeric *F;
    const sched_local *loc;
    const sched_dag *dag;
    int dynamic;
    int dist;                        /* several ranks: fan-in messages, never abort (see drain) */
    comm_exchange *x;
    atomic_int drain;                /* several ranks, after a failure: run every task without
                                        computing, so that every message is still sent */
    atomic_int failed_cblk;          /* first cblk whose LL^T pivot was not positive (-1: none) */
    atomic_int nomem;                /* several ranks: a fan-in buffer could not be allocated */
    atomic_int oversize;             /* an update product larger than the workers' buffers (a plan bug) */
    sched_run *run;                  /* for the arrivals */
    atomic_llong early;              /* messages added on arrival (scheduler=dynamic) */
    atomic_llong failed_info;
} kpar;

static _Thread_local unsigned kstress_seed = 987654321u;

/* A failure of this rank inside a run of several: go on without computing (drain), so that
 * every message is still sent, and report it after the run. */
static void kfail_nomem(kpar *pc)
{
    atomic_store(&pc->nomem, 1);
    atomic_store(&pc->drain, 1);
}

/* The message of this rank's fan-in buffer of remote cblk j (its fan-in slot q) that this rank's
 * contribution number @p contrib into j goes in: the plan cut the buffer after send_cut[s]
 * contributions (sched_fanin_cuts). */
static inline int kseg(const sched_local *L, int q, int contrib)
{
    const int *cuts = L->send_cut + (size_t)q * (SCHED_FANIN_SEGS - 1);
    int s = 0;
    while (s + 1 < L->send_nmsg[q] && cuts[s] <= contrib) s++;
    return s;
}

/*
 * Before a contribution is applied to cblk j (its ticket's turn: the ticket lock orders every
 * access to the buffer): a target on another rank is this rank's fan-in buffer of it, message
 * @p seg, allocated (zeroed) by its first contribution. False when there is nothing to apply to:
 * the allocation failed, now or before (the rank drains), or the rank drains already.
 */
static int kfan_ready(kpar *pc, cint j, int seg)
{
    numeric *F = pc->F;
    if (!pc->dist || pc->loc->cblk_rank[j] == pc->loc->rank) return 1;
    int parts = F->U ? 2 : 1, q = F->send_slot[j] / parts, m = F->send_msg[q] + seg * parts;
    if (F->fan_send[m] != NULL) return 1;
    if (atomic_load_explicit(&pc->drain, memory_order_relaxed)) return 0;
    size_t n = (size_t)pc->loc->send_rows[(size_t)q * SCHED_FANIN_SEGS + seg] *
               (size_t)(pc->c.S->cblk_fcol[j + 1] - pc->c.S->cblk_fcol[j]);
    void *b[2] = {NULL, NULL};
    for (int p = 0; p < parts; p++) b[p] = canopy_calloc(n, sizeof(SCALAR), "fan-in buffer", NULL);
    if (b[0] == NULL || (parts == 2 && b[1] == NULL)) {
        canopy_free(b[0]);
        canopy_free(b[1]);
        kfail_nomem(pc);
        return 0;
    }
    for (int p = 0; p < parts; p++) F->fan_send[m + p] = b[p];
    return 1;
}

/* Message seg of the fan-in buffers of remote cblk j is complete (the plan may cut a buffer into
 * several, sched_fanin_cuts): hand it to the communication, which frees it once sent (none: an
 * empty message, this rank failed). */
static void ksend_fanin(kpar *pc, cint j, int seg)
{
    numeric *F = pc->F;
    int parts = F->U ? 2 : 1, q = F->send_slot[j] / parts, m = F->send_msg[q] + seg * parts;
    size_t n = (size_t)pc->loc->send_rows[(size_t)q * SCHED_FANIN_SEGS + seg] *
               (size_t)(pc->c.S->cblk_fcol[j + 1] - pc->c.S->cblk_fcol[j]);
    int count = (int)(n * (sizeof(SCALAR) / sizeof(double)));
    for (int p = 0; p < parts; p++) {
        void *b = F->fan_send[m + p];
        F->fan_send[m + p] = NULL;
        comm_exchange_send(pc->x, m + p, b, b ? count : 0);
    }
}

/* A contribution into cblk j has been applied (or skipped: the rank drains), still in its turn:
 * the last one into a message of this rank's fan-in buffer of a remote j sends that message. */
static void kcontrib_done(kpar *pc, cint j, int seg)
{
    numeric *F = pc->F;
    if (!pc->dist || pc->loc->cblk_rank[j] == pc->loc->rank) return;
    int parts = F->U ? 2 : 1, q = F->send_slot[j] / parts;
    if (--F->send_left[F->send_msg[q] / parts + seg] == 0) ksend_fanin(pc, j, seg);
}

/* X (a panel, leading dimension st, w columns) += B (nr x w) at the panel rows rows[0 .. nr-1]. */
static void kadd_rows(SCALAR *X, cint st, cint w, const SCALAR *B, cint nr, const cint *rows)
{
    for (cint c = 0; c < w; c++) {
        SCALAR *x = X + (size_t)c * st;
        const SCALAR *b = B + (size_t)c * nr;
        for (cint i = 0; i < nr; i++) x[rows[i]] += b[i];
    }
}

/* Start of the panel task of j: add the fan-in messages of the other ranks, in rank order, each
 * at the panel rows it holds (sched_local.fan_rmap), and free them (a draining rank only frees
 * them; an empty one, from a failed sender, adds nothing). */
static void kfanin_add(kpar *pc, cint j, int add)
{
    const sched_local *L = pc->loc;
    const symbolic *S = pc->c.S;
    cint st = S->cblk_stride[j], w = S->cblk_fcol[j + 1] - S->cblk_fcol[j];
    int parts = pc->c.U ? 2 : 1;
    SCALAR *Lj = pc->c.L + pc->c.coef[j], *Uj = pc->c.U ? pc->c.U + pc->c.coef[j] : NULL;
    for (cint q = L->recv_ptr[j]; q < L->recv_ptr[j + 1]; q++) {
        const cint *rows = L->fan_rmap + L->recv_moff[q];
        cint nr = L->recv_rows[q];
        for (int p = 0; p < parts; p++) {
            SCALAR *X = p ? Uj : Lj, *B = pc->F->fan_recv[q * parts + p];
            pc->F->fan_recv[q * parts + p] = NULL;
            if (add && B) kadd_rows(X, st, w, B, nr, rows);
            canopy_free(B);
        }
    }
}

/* scheduler=dynamic: received message h (a ticket of target j's lock, its turn now) is added
 * into j's panel at its rows and freed (a draining rank only frees it). */
static void kfan_apply(kpar *pc, cint j, numeric_handover *h)
{
    const sched_local *L = pc->loc;
    const symbolic *S = pc->c.S;
    int parts = pc->c.U ? 2 : 1, p = h->recv % parts;
    cint q = h->recv / parts, st = S->cblk_stride[j], w = S->cblk_fcol[j + 1] - S->cblk_fcol[j], nr = L->recv_rows[q];
    SCALAR *X = (p ? pc->c.U : pc->c.L) + pc->c.coef[j], *B = h->buf;
    h->buf = NULL;
    if (B && !atomic_load_explicit(&pc->drain, memory_order_relaxed)) kadd_rows(X, st, w, B, nr, L->fan_rmap + L->recv_moff[q]);
    canopy_free(B);
}

/* Scalars of the product kupdate_rows computes into its buffer (LU: both sides). */
static size_t kproduct_scalars(const kpar *pc, cint k, cint fb0, cint fb1, cint rb0, cint rb1)
{
    const symbolic *S = pc->c.S;
    cint q1 = rb1 < S->cblk_fblok[k + 1] ? S->blok_coefrow[rb1] : S->cblk_stride[k];
    cint hb = 0;
    for (cint fb = fb0; fb < fb1; fb++) hb += S->blok_lrow[fb] - S->blok_frow[fb] + 1;
    return (size_t)(q1 - S->blok_coefrow[rb0]) * (size_t)hb * (pc->c.U ? 2 : 1);
}

/*
 * Ticket `next` of target j is due: publish it and, while the contribution holding it was handed
 * over, apply that one here (its turn, so this worker holds the lock for it) and go on.
 */
static void kadvance(kpar *pc, sched_worker *wk, cint j, int next, SCALAR *W)
{
    numeric *F = pc->F;
    /* tickets of j: this rank's contributions, then under dynamic its received messages */
    int slots = (int)(F->pending_off[j + 1] - F->pending_off[j]);
    for (;;) {
        /* seq_cst store, then load of the slot: with a hand-over's seq_cst store of the slot, then
           load of serving, at least one of the two sees the other (and the CAS picks one) */
        atomic_store(&F->serving[j], next);
        if (wk) sched_wake(wk);
        else sched_run_wake(pc->run); /* a message's thread: workers may wait for this lock */
        if (next >= slots) return;
        numeric_handover *_Atomic *slot = &F->pending[F->pending_off[j] + next];
        numeric_handover *h = atomic_load(slot);
        if (h == NULL || !atomic_compare_exchange_strong(slot, &h, NULL)) return;
        if (h->msg) {
            kfan_apply(pc, j, h);
        } else {
            /* KC_APPLY needs no scratch: a message's thread passes W = NULL */
            if (h->compute && kfan_ready(pc, j, h->seg))
                kupdate_rows(&pc->c, h->k, h->fb0, h->fb1, h->rb0, h->rb1, h->seg, W, h->buf, KC_APPLY);
            kcontrib_done(pc, j, h->seg);
            atomic_store_explicit(&h->busy, 0, memory_order_release); /* its owner may reuse the buffer */
        }
        next++;
    }
}

/*
 * An update whose product is larger than the worker's buffer (@p cap scalars a side: the plan's
 * update cap, sched_update_need): computed and applied at once, in chunks of whole bloks of at
 * most cap scalars, from row blok @p rb0 (the facing group's square first when rb0 == fb0: an
 * UPDATE, or a flat chunk from its own group). Into a shared target, the caller holds its
 * turn. A chunk that cannot fit (a plan bug) computes nothing and fails the run: drain, every
 * message still sent, "an update larger than a worker's buffer".
 */
static void kupdate_chunks(kpar *pc, cint k, cint fb0, cint fb1, cint rb0, cint rb1, int seg, SCALAR *W, SCALAR *buf,
                           size_t cap)
{
    const symbolic *S = pc->c.S;
    if (sched_update_need(S, k, fb0, rb0, rb1, (int64_t)cap) > (double)cap) {
        atomic_store(&pc->oversize, 1);
        atomic_store(&pc->drain, 1);
        return;
    }
    cint hb = 0, end = S->cblk_fblok[k + 1];
    for (cint fb = fb0; fb < fb1; fb++) hb += S->blok_lrow[fb] - S->blok_frow[fb] + 1;
    for (cint a = rb0, z; a < rb1; a = z) {
        z = a == fb0 ? fb1 : a + 1;
        cint q0 = S->blok_coefrow[a];
        while (z < rb1 && (size_t)((z + 1 < end ? S->blok_coefrow[z + 1] : S->cblk_stride[k]) - q0) * (size_t)hb <= cap) z++;
        kupdate_rows(&pc->c, k, fb0, fb1, a, z, seg, W, buf, KC_ALL);
    }
}

/*
 * One contribution under the ticket lock of its target. Static runs hold the plan's number and
 * always compute the product into the worker's buffer first, then subtract it in ticket order: the
 * same arithmetic whatever the timing or the thread, so the factors are bitwise reproducible.
 * Dynamic runs draw the next ticket; when the lock is free at once they update the target directly
 * (the cheapest path), otherwise they compute their product into the buffer first.
 * A product whose turn has not come is handed over instead of waited for: computed in a free spare
 * buffer (when it fits one), the buffer is left in the target's slot for that ticket, the worker
 * goes on, and whoever applies the ticket before it applies it (kadvance). Products too large for
 * a spare, or with every spare still in use, wait for their turn.
 * Handed-over products are all applied once every contributing task has ended (induction on the
 * tickets: whoever ends ticket t - 1 or hands over t sees the other), so the task factoring the
 * target, which follows them all in the graph, sees them applied.
 * A target on another rank is this rank's fan-in buffer of it: the last contribution sends it.
 * Returns nonzero if the run was aborted while waiting.
 */
static int kupdate_guarded(kpar *pc, sched_worker *wk, cint k, cint fb0, cint fb1, cint rb0, cint rb1, int contrib,
                           SCALAR *W)
{
    cint j = pc->c.S->blok_fcblk[fb0];
    numeric *F = pc->F;
    int t = sched_worker_id(wk);
    numeric_handover *mine = F->hand + (size_t)t * (NUMERIC_SPARES + 1);
    SCALAR *buf = mine[0].buf; /* the full-size buffer: never handed over */
    /* a worker's buffer is sized by the tasks it may run (sched_thread_work): a product above the
     * update cap (a 1D update's, a 2D tile's or a flat chunk's) goes in row chunks, kupdate_chunks,
     * computed in its turn; a row chunk larger than the buffer is a bug, never an overflow */
    size_t cap = F->thread_sizes[3 * t];
    int chunked = pc->dist && kproduct_scalars(pc, k, fb0, fb1, rb0, rb1) > cap * (F->U ? 2 : 1);
    if (chunked && sched_update_need(pc->c.S, k, fb0, rb0, rb1, (int64_t)cap) > (double)cap) {
        atomic_store(&pc->oversize, 1);
        atomic_store(&pc->drain, 1);
    }
    int compute = !atomic_load_explicit(&pc->drain, memory_order_relaxed);
    /* into another rank's cblk: the message of the fan-in buffer it goes in, by its number in the
     * plan (under dynamic too, whatever ticket it draws: each message holds its own rows) */
    int seg = pc->dist && pc->loc->cblk_rank[j] != pc->loc->rank ? kseg(pc->loc, F->send_slot[j] / (F->U ? 2 : 1), contrib) : 0;
    int ticket = pc->dynamic ? atomic_fetch_add_explicit(&F->tickets[j], 1, memory_order_relaxed) : contrib;
    if (pc->dynamic && atomic_load_explicit(&F->serving[j], memory_order_acquire) == ticket) {
        if (compute && kfan_ready(pc, j, seg)) {
            if (chunked) kupdate_chunks(pc, k, fb0, fb1, rb0, rb1, seg, W, buf, cap);
            else kupdate_rows(&pc->c, k, fb0, fb1, rb0, rb1, seg, W, buf, KC_ALL);
        }
        kcontrib_done(pc, j, seg);
        kadvance(pc, wk, j, ticket + 1, W);
        return 0;
    }
    /* a product that fits a free spare is computed there, so that it can be handed over */
    int spare = 0;
    if (kproduct_scalars(pc, k, fb0, fb1, rb0, rb1) <= F->thread_sizes[3 * t + 2])
        for (int i = 1; i <= NUMERIC_SPARES && spare == 0; i++)
            if (!atomic_load_explicit(&mine[i].busy, memory_order_acquire)) spare = i;
    if (spare) buf = mine[spare].buf;
    if (compute && !chunked) kupdate_rows(&pc->c, k, fb0, fb1, rb0, rb1, seg, W, buf, KC_COMPUTE);
    if (atomic_load(&F->serving[j]) != ticket) {
        if (spare) {
            numeric_handover *h = &mine[spare];
            h->k = k;
            h->fb0 = fb0;
            h->fb1 = fb1;
            h->rb0 = rb0;
            h->rb1 = rb1;
            h->seg = seg;
            h->compute = compute;
            atomic_store_explicit(&h->busy, 1, memory_order_relaxed);
            numeric_handover *_Atomic *slot = &F->pending[F->pending_off[j] + ticket];
            atomic_store(slot, h);
            numeric_handover *expected = h;
            if (atomic_load(&F->serving[j]) != ticket || !atomic_compare_exchange_strong(slot, &expected, NULL)) {
                F->run.handed[t]++; /* handed over: whoever applies the ticket before it applies it */
                return 0;
            }
            atomic_store_explicit(&h->busy, 0, memory_order_relaxed); /* its turn came meanwhile */
        } else {
            /* measured, so that the lock's cost against fan-in buffers is known (numeric_run.lock_wait) */
            double t0 = canopy_wtime();
            int aborted = sched_wait_equal(wk, &F->serving[j], ticket);
            F->run.lock_wait[t] += canopy_wtime() - t0;
            if (aborted) return 1;
        }
    }
    if (compute && kfan_ready(pc, j, seg)) {
        if (chunked) kupdate_chunks(pc, k, fb0, fb1, rb0, rb1, seg, W, buf, cap);
        else kupdate_rows(&pc->c, k, fb0, fb1, rb0, rb1, seg, W, buf, KC_APPLY);
    }
    kcontrib_done(pc, j, seg);
    kadvance(pc, wk, j, ticket + 1, W);
    return 0;
}

/*
 * top2d flat (sched_src_rank): after TRSM task @p task of cblk k (its facing group from blok b),
 * the group goes to every other rank whose UPDATE2Ds read it: its rows of L (and of U), for LDL^T
 * the diagonal, dsub and pivots (numeric_xmsg_scalars). A draining rank, or one that finds no
 * memory for it, sends an empty message: the receiver drains too.
 */
static void kxsend(kpar *pc, int task, cint k, cint b)
{
    const sched_local *L = pc->loc;
    if (L->xsend_ptr == NULL || L->xsend_ptr[task] == L->xsend_ptr[task + 1]) return;
    const symbolic *S = pc->c.S;
    numeric *F = pc->F;
    cint st = S->cblk_stride[k], w = S->cblk_fcol[k + 1] - S->cblk_fcol[k], fcol = S->cblk_fcol[k];
    cint r0 = S->blok_coefrow[b], h = symbolic_group_rows(S, k, b);
    size_t n = numeric_xmsg_scalars(S, F->kind, k, h), hw = (size_t)h * (size_t)w;
    int dps = (int)(sizeof(SCALAR) / sizeof(double)), base = F->send_msg[L->nsend];
    /* packed once; the exchange frees a buffer once sent (at once, maybe, with comm-threads=0), so
     * the copies for the other ranks go first and the packed one last */
    SCALAR *first = NULL;
    if (!atomic_load_explicit(&pc->drain, memory_order_relaxed)) {
        first = canopy_alloc(n, sizeof(SCALAR), "top2d group message", NULL);
        if (first == NULL) kfail_nomem(pc);
    }
    if (first) {
        const SCALAR *P = pc->c.L + pc->c.coef[k];
        for (cint c = 0; c < w; c++) memcpy(first + (size_t)c * h, P + r0 + (size_t)c * st, (size_t)h * sizeof(SCALAR));
        if (F->kind == CANOPY_FACT_LU) {
            const SCALAR *U = pc->c.U + pc->c.coef[k];
            for (cint c = 0; c < w; c++) memcpy(first + hw + (size_t)c * h, U + r0 + (size_t)c * st, (size_t)h * sizeof(SCALAR));
        } else if (F->kind == CANOPY_FACT_LDLT) {
            SCALAR *aux = first + hw;
            for (cint c = 0; c < w; c++) {
                aux[c] = P[c + (size_t)c * st];
                aux[w + c] = pc->c.dsub[fcol + c];
                memset(&aux[2 * w + c], 0, sizeof(SCALAR));
                memcpy(&aux[2 * w + c], &pc->c.ipiv[fcol + c], sizeof(cint));
            }
        }
    }
    for (int q = L->xsend_ptr[task] + 1; q < L->xsend_ptr[task + 1]; q++) {
        SCALAR *buf = first ? canopy_alloc(n, sizeof(SCALAR), "top2d group message", NULL) : NULL;
        if (first && buf == NULL) kfail_nomem(pc);
        if (buf) memcpy(buf, first, n * sizeof(SCALAR));
        comm_exchange_send(pc->x, base + q, buf, buf ? (int)n * dps : 0);
    }
    comm_exchange_send(pc->x, base + L->xsend_ptr[task], first, first ? (int)n * dps : 0);
}

/* A facing group of another rank's cblk arrived (top2d flat, receive @p q, @p count doubles): into
 * this rank's copy of the cblk (allocated by its first group), on to its children in the group's
 * tree, then the UPDATE2Ds reading it may start. Arrivals
 * come one at a time (the receiving thread, or the workers' trylock with comm-threads=0). */
static void kxarrived(kpar *pc, cint q, void *msg, int count, int lost)
{
    const sched_local *L = pc->loc;
    const symbolic *S = pc->c.S;
    numeric *F = pc->F;
    cint k = L->xrecv_cblk[q], b = L->xrecv_blok[q];
    cint st = S->cblk_stride[k], w = S->cblk_fcol[k + 1] - S->cblk_fcol[k];
    cint r0 = S->blok_coefrow[b], h = symbolic_group_rows(S, k, b);
    if (lost) kfail_nomem(pc);
    if (msg == NULL) atomic_store(&pc->drain, 1); /* the sender failed: nothing to read */
    if (msg && !atomic_load(&pc->drain)) {
        SCALAR *X = F->xsh[k];
        if (X == NULL) {
            X = canopy_alloc(numeric_xcopy_bytes(S, F->kind, sizeof(SCALAR), k), 1, "top2d copy of a panel", NULL);
            if (X == NULL) kfail_nomem(pc);
            F->xsh[k] = X;
        }
        const SCALAR *B = msg;
        size_t hw = (size_t)h * (size_t)w;
        for (cint c = 0; X && c < w; c++) memcpy(X + r0 + (size_t)c * st, B + (size_t)c * h, (size_t)h * sizeof(SCALAR));
        if (X && F->kind == CANOPY_FACT_LU) {
            SCALAR *U = X + (size_t)st * (size_t)w;
            for (cint c = 0; c < w; c++) memcpy(U + r0 + (size_t)c * st, B + hw + (size_t)c * h, (size_t)h * sizeof(SCALAR));
        } else if (X && F->kind == CANOPY_FACT_LDLT) {
            SCALAR *dsub = X + (size_t)st * (size_t)w;
            cint *ipiv = (cint *)(dsub + w);
            for (cint c = 0; c < w; c++) {
                X[c + (size_t)c * st] = B[hw + c];
                dsub[c] = B[hw + w + c];
                memcpy(&ipiv[c], &B[hw + 2 * w + c], sizeof(cint));
            }
        }
    }
    /* down the group's tree: copies for all children but the last, which gets the message itself
     * (the exchange may free a sent buffer at once); an empty message stays empty */
    int f0 = L->xfwd_ptr[q], f1 = L->xfwd_ptr[q + 1], base = F->send_msg[L->nsend] + (int)L->nxsend;
    for (int c = f0; c < f1; c++) {
        void *out = c + 1 == f1 ? msg : NULL;
        if (msg && c + 1 < f1) {
            out = canopy_alloc((size_t)count, sizeof(double), "top2d group message", NULL);
            if (out == NULL) kfail_nomem(pc);
            else memcpy(out, msg, (size_t)count * sizeof(double));
        }
        comm_exchange_send(pc->x, base + c, out, out ? count : 0);
    }
    if (f1 == f0) canopy_free(msg);
    for (int i = L->xrecv_ptr[q]; i < L->xrecv_ptr[q + 1]; i++) sched_release(pc->run, L->xrecv_task[i]);
}

/* An UPDATE2D reading another rank's cblk k ended: the last one frees the copy. */
static void kxdone(kpar *pc, cint k)
{
    numeric *F = pc->F;
    if (atomic_fetch_sub(&F->xleft[k], 1) == 1) {
        canopy_free(F->xsh[k]);
        F->xsh[k] = NULL;
    }
}

/* Panel of cblk k by worker t; nonzero aborts the run (one rank only: with several, a failure
 * switches to draining so that the other ranks still get every message). */
static int kpar_panel(kpar *pc, cint k, int t, SCALAR *W, int diag_only)
{
    if (atomic_load_explicit(&pc->drain, memory_order_relaxed)) return 0;
    int64_t r = diag_only ? kdiag(&pc->c, k, W) : kpanel(&pc->c, k, W);
    if (r < 0) {
        int none = -1;
        if (atomic_compare_exchange_strong(&pc->failed_cblk, &none, (int)k))
            atomic_store(&pc->failed_info, (long long)(-r - 1));
        if (!pc->dist) return 1;
        atomic_store(&pc->drain, 1);
        return 0;
    }
    pc->F->thread_perturbed[t] += r;
    return 0;
}

static inline double ksub_weight(const symbolic *S, cint q)
{
    double w = (double)(S->cblk_fcol[q + 1] - S->cblk_fcol[q]), m = (double)S->cblk_stride[q];
    return w * m * m;
}

#define KSTOPPED 77 /* a task's result when canopy_interrupt asked the run to stop */

static int ktask(void *ctx, int task, sched_worker *wk)
{
    kpar *pc = ctx;
    const symbolic *S = pc->c.S;
    const sched_dag *d = pc->dag;
    int t = sched_worker_id(wk);
    SCALAR *W = (SCALAR *)pc->F->thread_work[t] + pc->F->thread_sizes[3 * t];
    cint k = d->cblk[task];
    if (pc->F->exec.stop && atomic_load_explicit(pc->F->exec.stop, memory_order_relaxed)) return KSTOPPED;
    if (pc->F->stress) comm_stress_delay(&kstress_seed, 100);
    switch (d->kind[task]) {
    case SCHED_TASK_PANEL:
    case SCHED_TASK_DIAG:
        if (pc->dist && pc->loc->recv_ptr[k + 1] > pc->loc->recv_ptr[k]) {
            if (pc->dynamic) {
                /* every ticket of k is drawn (its contributions ran, its messages arrived); a
                 * message's chain may still be applying the last ones: wait for it */
                if (sched_wait_equal(wk, &pc->F->serving[k], atomic_load(&pc->F->tickets[k])) != 0) return 1;
            } else {
                kfanin_add(pc, k, !atomic_load_explicit(&pc->drain, memory_order_relaxed));
            }
        }
        if (sched_root_has(&pc->loc->root, k)) return 0; /* gathered: the grid factors it (factor_root.c) */
        return kpar_panel(pc, k, t, W, d->kind[task] == SCHED_TASK_DIAG);
    case SCHED_TASK_TRSM: {
        cint b = d->first[task], e = symbolic_group_end(S, k, b);
        if (!atomic_load_explicit(&pc->drain, memory_order_relaxed))
            koffdiag(&pc->c, k, S->blok_coefrow[b], e < S->cblk_fblok[k + 1] ? S->blok_coefrow[e] : S->cblk_stride[k]);
        if (pc->dist) kxsend(pc, task, k, b);
        return 0;
    }
    case SCHED_TASK_UPDATE: {
        cint fb0 = d->first[task];
        return kupdate_guarded(pc, wk, k, fb0, symbolic_group_end(S, k, fb0), fb0, S->cblk_fblok[k + 1],
                               sched_local_contrib(pc->loc, S, k, fb0), W);
    }
    case SCHED_TASK_UPDATE2D: {
        cint fb0 = d->first[task], rb0 = d->tile[task];
        int r = kupdate_guarded(pc, wk, k, fb0, symbolic_group_end(S, k, fb0), rb0, d->tile_end[task],
                                pc->loc->task_contrib[task], W);
        if (pc->dist && pc->loc->cblk_rank[k] != pc->loc->rank) kxdone(pc, k); /* its product is out */
        return r;
    }
    case SCHED_TASK_SUBTREE: {
        /* progress as the subtree goes (the whole tree is one task on one thread): each cblk
         * weighs its panel's rows squared times its width, about its flops */
        double all = 0, done = 0;
        for (cint q = d->first[task]; q <= k; q++) all += ksub_weight(S, q);
        for (cint q = d->first[task]; q <= k; q++) {
            /* one thread may hold the whole tree as one task: canopy_interrupt is heard per cblk */
            if (pc->F->exec.stop && atomic_load_explicit(pc->F->exec.stop, memory_order_relaxed)) return KSTOPPED;
            if (kpar_panel(pc, q, t, W, 0) != 0) return 1;
            for (cint b = S->cblk_fblok[q] + 1, bend = S->cblk_fblok[q + 1]; b < bend;) {
                cint e = b + 1;
                while (e < bend && S->blok_fcblk[e] == S->blok_fcblk[b]) e++;
                int contrib = sched_local_contrib(pc->loc, S, q, b);
                cint j = S->blok_fcblk[b];
                if (contrib < 0) { /* target inside this subtree */
                    size_t cap = pc->F->thread_sizes[3 * t];
                    if (atomic_load_explicit(&pc->drain, memory_order_relaxed)) {
                    } else if (pc->dist && kproduct_scalars(pc, q, b, e, b, bend) > cap * (pc->F->U ? 2 : 1)) {
                        kupdate_chunks(pc, q, b, e, b, bend, 0, W, pc->F->thread_work[t], cap);
                    } else {
                        kupdate(&pc->c, q, b, e, W, pc->F->thread_work[t], KC_ALL);
                    }
                } else if (pc->dist && pc->loc->fanin_cuts && pc->loc->cblk_rank[j] != pc->loc->rank) {
                    /* into another rank's cblk: after the rest, below (sched_subtree_deferred) */
                } else if (kupdate_guarded(pc, wk, q, b, e, b, bend, contrib, W) != 0) {
                    return 1;
                }
                b = e;
            }
            done += ksub_weight(S, q);
            if (all > 0) sched_worker_progress(wk, done / all);
        }
        /* the contributions into other ranks' cblks, target by target, so that each fan-in
         * buffer lives only from its first to its send (sched_subtree_deferred; the plan numbered
         * them in this order) */
        for (int x = pc->dist ? pc->loc->defer_ptr[task] : 0; pc->dist && x < pc->loc->defer_ptr[task + 1]; x++) {
            cint q = pc->loc->defer_cblk[x], b = pc->loc->defer_blok[x];
            if (kupdate_guarded(pc, wk, q, b, symbolic_group_end(S, q, b), b, S->cblk_fblok[q + 1], sched_local_contrib(pc->loc, S, q, b), W) != 0)
                return 1;
        }
        return 0;
    }
    default:
        return 1;
    }
}

typedef struct kfill {
    numeric *F;
    const SCALAR *Ax;
} kfill;

/* First touch: worker t zeroes and assembles the cblks it owns (fan-in buffers are allocated
 * zeroed by their first contribution, kfan_ready). */
static void kfill_owned(void *arg, int t)
{
    kfill *kf = arg;
    numeric *F = kf->F;
    const sched_local *L = F->exec.local;
    const int64_t *cc = F->S->cblk_coef;
    int64_t r0 = 0, r1 = 0; /* a run of owned cblks contiguous in the factor, populated at once */
    for (cint k = 0; k < F->S->ncblk; k++) {
        if (L->cblk_owner[k] != t) continue;
        int64_t c0 = F->coef[k], c1 = c0 + (cc[k + 1] - cc[k]);
        if (c0 != r1) {
            kpopulate(F, r0, r1);
            r0 = c0;
        }
        r1 = c1;
    }
    kpopulate(F, r0, r1);
    for (cint k = 0; k < F->S->ncblk; k++)
        if (L->cblk_owner[k] == t) kassemble(F, kf->Ax, k);
}

/* Arrival of a fan-in message (cookie: its place in fan_recv, then the panel task waiting for
 * it): the buffer is the panel task's now; one external dependency of it less. A message this
 * rank found no memory for fails the rank (it drains). */
static void karrived(void *arg, int64_t cookie, void *buf, int count, int lost)
{
    kpar *pc = arg;
    numeric *F = pc->F;
    if (cookie < 0) {
        kxarrived(pc, (cint)(-1 - cookie), buf, count, lost);
        return;
    }
    int i = (int)(cookie >> 32), task = (int)(cookie & 0xffffffff);
    if (lost) kfail_nomem(pc);
    if (!pc->dynamic) {
        F->fan_recv[i] = buf;
        sched_release(pc->run, task);
        return;
    }
    /*
     * scheduler=dynamic (no fixed order of the sums anyway): the message draws a ticket of its
     * target's lock like a local contribution and is added at its turn, by this thread at once or,
     * handed over, by whoever applies the ticket before it; so it lives only until then. Its
     * record is the ticket's own (msg_hand), so nothing is allocated here. The panel task waits
     * for every ticket drawn (ktask): releasing it once the ticket is drawn is enough.
     */
    cint j = pc->dag->cblk[task];
    int ticket = atomic_fetch_add_explicit(&F->tickets[j], 1, memory_order_relaxed);
    numeric_handover *h = &F->msg_hand[F->pending_off[j] + ticket];
    h->buf = buf;
    h->msg = 1;
    h->recv = i;
    if (buf) atomic_fetch_add_explicit(&pc->early, 1, memory_order_relaxed);
    if (atomic_load(&F->serving[j]) != ticket) {
        numeric_handover *_Atomic *slot = &F->pending[F->pending_off[j] + ticket];
        atomic_store(slot, h);
        numeric_handover *expected = h;
        if (atomic_load(&F->serving[j]) != ticket || !atomic_compare_exchange_strong(slot, &expected, NULL)) {
            sched_release(pc->run, task);
            return;
        }
    }
    kfan_apply(pc, j, h);
    kadvance(pc, NULL, j, ticket + 1, NULL);
    sched_release(pc->run, task);
}

/* What a run that stopped early left (no message is in flight any more). */
static void kfan_free_all(numeric *F)
{
    const sched_local *L = F->exec.local;
    int parts = F->U ? 2 : 1;
    for (int64_t i = 0; F->fan_send && F->send_msg && i < (int64_t)F->send_msg[L->nsend]; i++) {
        canopy_free(F->fan_send[i]);
        F->fan_send[i] = NULL;
    }
    for (int64_t i = 0; F->fan_recv && i < (int64_t)L->recv_ptr[F->S->ncblk] * parts; i++) {
        canopy_free(F->fan_recv[i]);
        F->fan_recv[i] = NULL;
    }
    for (int64_t i = 0; F->msg_hand && i < F->pending_off[F->S->ncblk]; i++) {
        canopy_free(F->msg_hand[i].buf);
        F->msg_hand[i].buf = NULL;
    }
    for (cint k = 0; F->xsh && k < F->S->ncblk; k++) {
        canopy_free(F->xsh[k]);
        F->xsh[k] = NULL;
    }
}

static int kstarving(void *run)
{
    return sched_run_sleepers(run);
}

static void knudge(void *arg)
{
    comm_exchange_nudge(*(comm_exchange **)arg);
}

/* MPI at MPI_THREAD_FUNNELED: the calling thread is the communication thread */
static void kdrive(void *arg)
{
    comm_exchange_drive(*(comm_exchange **)arg);
}

static void kpoll(void *arg, int thread)
{
    (void)thread;
    comm_exchange_poll(*(comm_exchange **)arg); /* created after the run was prepared */
}

static canopy_status kfactorize_threaded(numeric *F, kctx *c, const SCALAR *Ax, canopy_err *err)
{
    const symbolic *S = F->S;
    const numeric_exec *x = &F->exec;
    const sched_local *L = x->local;
    if (x->numa == CANOPY_NUMA_INTERLEAVE && x->topo) {
        canopy_status st = numa_interleave(x->topo, F->L, F->coef_bytes, err);
        if (st == CANOPY_SUCCESS && F->U) st = numa_interleave(x->topo, F->U, F->coef_bytes, err);
        if (st != CANOPY_SUCCESS) return st;
    }
    double tf0 = canopy_wtime();
    if (x->numa == CANOPY_NUMA_GLOBAL) {
        /* the "V0" baseline: the calling thread allocates and fills everything */
        for (int t = 0; t < L->nthreads; t++) {
            kfill kf = {F, Ax};
            kfill_owned(&kf, t);
        }
    } else {
        kfill kf = {F, Ax};
        sched_pool_run_all(x->pool, kfill_owned, &kf);
    }
    F->run.fill = canopy_wtime() - tf0;
    F->fresh = 0;
    for (cint k = 0; k < S->ncblk; k++) {
        atomic_store_explicit(&F->serving[k], 0, memory_order_relaxed);
        atomic_store_explicit(&F->tickets[k], 0, memory_order_relaxed);
        if (F->xleft) atomic_store_explicit(&F->xleft[k], L->xuse[k], memory_order_relaxed);
    }
    /* every message of every fan-in buffer waits for its contributions (sched_local.send_cut) */
    for (cint q = 0; L->nranks > 1 && q < L->nsend; q++) {
        const int *cuts = L->send_cut + (size_t)q * (SCHED_FANIN_SEGS - 1);
        int *left = F->send_left + F->send_msg[q] / (F->U ? 2 : 1), nm = L->send_nmsg[q];
        for (int sg = 0; sg < nm; sg++)
            left[sg] = (sg + 1 < nm ? cuts[sg] : L->cblk_ncontrib[L->send_cblk[q]]) - (sg ? cuts[sg - 1] : 0);
    }
    for (int t = 0; t < F->nthreads; t++) {
        F->thread_perturbed[t] = 0;
        F->run.lock_wait[t] = 0;
        F->run.handed[t] = 0;
    }
    /* an aborted run may have left products behind */
    for (int64_t i = 0; i < F->pending_off[S->ncblk]; i++) atomic_store_explicit(&F->pending[i], NULL, memory_order_relaxed);
    for (size_t i = 0; i < (size_t)F->nthreads * (NUMERIC_SPARES + 1); i++)
        atomic_store_explicit(&F->hand[i].busy, 0, memory_order_relaxed);
    for (int64_t i = 0; F->msg_hand && i < F->pending_off[S->ncblk]; i++) F->msg_hand[i].buf = NULL;
    kpar pc = {.c = *c, .F = F, .loc = L, .dag = &L->factor, .dynamic = x->scheduler == CANOPY_SCHED_DYNAMIC,
               .dist = L->nranks > 1, .x = F->xch};
    atomic_init(&pc.drain, 0);
    atomic_init(&pc.failed_cblk, -1);
    atomic_init(&pc.failed_info, 0);
    atomic_init(&pc.nomem, 0);
    atomic_init(&pc.oversize, 0);
    atomic_init(&pc.early, 0);
    numeric_run *r = &F->run;
    sched_run_stats rs = {.busy = r->busy, .steals = r->steals, .tasks_run = r->tasks, .events = r->events};
    int result = 0;
    sched_run *run = NULL;
    sched_run_opts ro = {.ext = pc.dist ? L->ext : NULL,
                         .idle = pc.dist && x->comm_threads == 0 ? kpoll : NULL, .idle_arg = &F->xch,
                         .on_wait = pc.dist && x->comm_threads > 0 ? knudge : NULL, .on_wait_arg = &F->xch,
                         .drive = pc.dist && x->comm_threads == COMM_FUNNELED ? kdrive : NULL, .drive_arg = &F->xch};
    canopy_status st = sched_prepare(x->pool, pc.dag, x->scheduler, ktask, &pc, &ro, &rs, &run, err);
    if (pc.dist) {
        /* everything allocated (run, messages, threads) before any rank sends: agree first */
        pc.run = run;
        if (st == CANOPY_SUCCESS) st = numeric_exchange_create(F, karrived, &pc, err);
        pc.x = F->xch;
        comm_exchange_set_urgency(F->xch, kstarving, run);
        if (comm_agree(x->comm, err) < 0) {
            sched_discard(run);
            comm_exchange_free(F->xch);
            F->xch = NULL;
            return err->status;
        }
        /* the receives are posted before any worker can send */
        st = comm_exchange_start(F->xch, err);
    }
    if (st != CANOPY_SUCCESS) {
        sched_discard(run);
        comm_exchange_free(F->xch); /* an MPI failure: its threads stop on the failed flag */
        F->xch = NULL;
        return st;
    }
    st = sched_go(run, &result);
    r->wall = rs.wall;
    if (pc.dist) {
        /* the communication thread may look at the run until the exchange ends */
        canopy_status fs = numeric_exchange_end(F, err);
        if (st == CANOPY_SUCCESS) st = fs;
    }
    sched_discard(run);
    if (pc.dist) kfan_free_all(F);
    F->fan_early = atomic_load(&pc.early);
    if (st != CANOPY_SUCCESS) return st;
    if (atomic_load(&pc.oversize))
        return canopy_err_set(err, CANOPY_ERR_INTERNAL, "an update larger than a worker's buffer (its tasks' largest)");
    if (atomic_load(&pc.nomem))
        return canopy_err_set(err, CANOPY_ERR_NOMEM, "out of memory allocating a fan-in buffer (or a top2d message or copy) during the factorization");
    int bad = atomic_load(&pc.failed_cblk);
    if (bad >= 0) return knot_spd(S, bad, atomic_load(&pc.failed_info), err);
    if (result == KSTOPPED) return canopy_err_set(err, CANOPY_ERR_INTERRUPTED, "canopy_factorize: interrupted (canopy_interrupt)");
    if (result != 0) return canopy_err_set(err, CANOPY_ERR_INTERNAL, "factorization task failed (%d)", result);
    int64_t perturbed = 0;
    for (int t = 0; t < F->nthreads; t++) perturbed += F->thread_perturbed[t];
    F->perturbed = perturbed;
    return perturbed > 0 ? CANOPY_WARN_PIVOTS_PERTURBED : CANOPY_SUCCESS;
}

