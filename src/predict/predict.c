/*
 * canopy-simulate's figures (see predict.h): the plan of a virtual layout and what it implies,
 * read off the same structures the real run uses. Nothing here is a second model of Canopy: the
 * times are the plan's simulation, the messages are the fan-in pairs sched_plan_local derives,
 * the memory is numeric_predict_bytes' formula, the solve's trees are comm_tree_build's.
 */
#include "predict/predict.h"
#include "api/api.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comm/tree.h"
#include "sched/grid.h"
#include "sched/trace.h"

static canopy_status nomem(canopy_solver *s)
{
    return s->err.status ? s->err.status : canopy_err_set(&s->err, CANOPY_ERR_NOMEM, "out of memory in the prediction");
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* min, max, median, standard deviation and total of v[0..n-1] (sorted in place) */
static predict_spread spread(double *v, int n)
{
    predict_spread p = {0};
    if (n < 1) return p;
    double sum = 0, sq = 0;
    for (int i = 0; i < n; i++) sum += v[i];
    double mean = sum / n;
    for (int i = 0; i < n; i++) sq += (v[i] - mean) * (v[i] - mean);
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    p.min = v[0];
    p.max = v[n - 1];
    p.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    p.stddev = sqrt(sq / n);
    p.total = sum;
    return p;
}

static inline double panel_entries(const symbolic *S, cint j)
{
    return (double)(S->cblk_coef[j + 1] - S->cblk_coef[j]);
}

/* Idle and busy thread-seconds per depth of the thread tree, from each thread's simulated list. */
static canopy_status levels(canopy_solver *s, const sched_plan *P, predict_report *r)
{
    const sched_dag *G = &P->factor;
    int depth = 0;
    for (int q = 0; q < G->nsnodes; q++) depth = CANOPY_MAX(depth, G->snode_depth[q]);
    r->nlevels = depth + 1;
    r->levels = canopy_calloc((size_t)r->nlevels, sizeof(predict_level), "prediction levels", &s->err);
    if (!r->levels) return nomem(s);
    for (int l = 0; l < r->nlevels; l++) r->levels[l].threads_min = P->nthreads;
    for (int q = 0; q < G->nsnodes; q++) {
        predict_level *L = &r->levels[G->snode_depth[q]];
        int w = G->snode_t1[q] - G->snode_t0[q];
        L->snodes++;
        L->threads_min = CANOPY_MIN(L->threads_min, w);
        L->threads_max = CANOPY_MAX(L->threads_max, w);
    }
    double T = G->predicted_time;
    for (int t = 0; t < P->nthreads; t++) {
        double at = 0;
        for (int x = G->list_ptr[t]; x < G->list_ptr[t + 1]; x++) {
            int i = G->list[x];
            predict_level *L = &r->levels[G->snode_depth[G->snode[i]]];
            L->tasks++;
            L->idle += fmax(0, P->task_start[i] - at);
            L->busy += P->task_end[i] - P->task_start[i];
            at = fmax(at, P->task_end[i]);
        }
        r->levels[0].idle += fmax(0, T - at);
    }
    return CANOPY_SUCCESS;
}

/* The (target cblk, sending rank) fan-in pairs, sorted and unique: exactly sched_plan_local's. */
static int64_t *fanin_pairs(canopy_solver *s, const sched_plan *P, size_t *np)
{
    const symbolic *S = &s->S;
    int R = P->nranks;
    int64_t *pairs = canopy_alloc((size_t)S->nblok + 1, sizeof(int64_t), "fan-in pairs", &s->err);
    if (!pairs) return NULL;
    size_t n = 0;
    for (cint k = 0; k < S->ncblk && !sched_root_has(&P->root, k); k++) /* the grid's root sends nothing */
        for (cint b = S->cblk_fblok[k] + 1; b < S->cblk_fblok[k + 1]; b++) {
            cint j = S->blok_fcblk[b];
            int src = sched_src_rank(P, k, j); /* top2d flat: j's own */
            if (src != P->cblk_rank[j]) pairs[n++] = (int64_t)j * R + src;
        }
    qsort(pairs, n, sizeof *pairs, cmp_i64);
    size_t u = 0;
    for (size_t q = 0; q < n; q++)
        if (u == 0 || pairs[q] != pairs[u - 1]) pairs[u++] = pairs[q];
    *np = u;
    return pairs;
}

/*
 * Messages, memory and the solve's trees per rank. Per rank: fan-in buffers sent (msgs, bytes: the
 * rows each message holds, sched_fanin_msgrows), panels held; the memory and the fan-in buffers alive at once
 * as the memory check counts them (numeric_predict_ranks).
 */
static canopy_status per_rank(canopy_solver *s, const sched_plan *P, const predict_opts *o, const int64_t *pairs,
                              size_t np, double *hop, double *net_sent, double *net_recv, predict_report *r)
{
    const symbolic *S = &s->S;
    int R = P->nranks;
    double sb = s->arith == CANOPY_COMPLEX ? 16.0 : 8.0, parts = s->fact == CANOPY_FACT_LU ? 2.0 : 1.0;
    double *v = canopy_calloc(11 * (size_t)R, sizeof(double), "prediction per rank", &s->err);
    int *mem = canopy_alloc((size_t)R + 1, sizeof(int), "prediction per rank", &s->err);
    cint *prow = canopy_alloc(np + 1, sizeof(cint), "prediction per rank", &s->err);
    int *nmsg = canopy_alloc(np + 1, sizeof(int), "prediction per rank", &s->err);
    int *cuts = canopy_alloc((np + 1) * (SCHED_FANIN_SEGS - 1), sizeof(int), "prediction per rank", &s->err);
    if (!v || !mem || !prow || !nmsg || !cuts) {
        canopy_free(v);
        canopy_free(mem);
        canopy_free(prow);
        canopy_free(nmsg);
        canopy_free(cuts);
        return nomem(s);
    }
    cint *mrows = canopy_alloc((np + 1) * SCHED_FANIN_SEGS, sizeof(cint), "prediction per rank", &s->err);
    canopy_status cst = mrows ? sched_fanin_cuts(S, P, pairs, np, nmsg, cuts, &s->err) : nomem(s);
    if (cst == CANOPY_SUCCESS) cst = sched_fanin_msgrows(S, P, pairs, np, nmsg, cuts, mrows, NULL, NULL, &s->err);
    canopy_free(cuts);
    /* each message holds the rows of its own contributions */
    for (size_t q = 0; cst == CANOPY_SUCCESS && q < np; q++) {
        prow[q] = 0;
        for (int x = 0; x < nmsg[q]; x++) prow[q] += mrows[q * SCHED_FANIN_SEGS + (size_t)x];
    }
    canopy_free(mrows);
    if (cst != CANOPY_SUCCESS ||
        numeric_predict_ranks(S, P, s->fact, s->arith, s->opts.scheduler, (double)s->stats.nnz, v + 7 * R, v + 4 * R, &s->err) !=
            CANOPY_SUCCESS) {
        canopy_free(v);
        canopy_free(mem);
        canopy_free(prow);
        canopy_free(nmsg);
        return s->err.status;
    }
    double *own = v, *msgs = v + 2 * R, *bytes = v + 3 * R, *fanin = v + 4 * R, *smsgs = v + 5 * R,
           *sbytes = v + 6 * R, *memory = v + 7 * R, *factor = v + 8 * R,
           *imsgs = v + 9 * R, *ibytes = v + 10 * R;
    for (cint k = 0; k < S->ncblk; k++) own[P->cblk_rank[k]] += panel_entries(S, k);
    /* remote updates without fan-in, for comparison */
    for (cint k = 0; k < S->ncblk && !sched_root_has(&P->root, k); k++)
        for (cint b = S->cblk_fblok[k] + 1, e; b < S->cblk_fblok[k + 1]; b = e) {
            for (e = b + 1; e < S->cblk_fblok[k + 1] && S->blok_fcblk[e] == S->blok_fcblk[b]; e++) {}
            cint j = S->blok_fcblk[b];
            if (sched_src_rank(P, k, j) == P->cblk_rank[j]) continue;
            double rows = (double)(S->cblk_stride[k] - S->blok_coefrow[b]);
            double h = (double)(S->blok_coefrow[e - 1] + (S->blok_lrow[e - 1] - S->blok_frow[e - 1] + 1) - S->blok_coefrow[b]);
            r->update_msgs += (int64_t)parts;
            r->update_bytes += (int64_t)(rows * h * parts * sb);
        }
    canopy_status st = CANOPY_SUCCESS;
    for (size_t q = 0; q < np; q++) {
        cint j = (cint)(pairs[q] / R);
        int src = (int)(pairs[q] % R), owner = P->cblk_rank[j];
        /* a buffer the plan cuts goes in several messages, each of its own rows (prow: all of them) */
        msgs[src] += parts * nmsg[q];
        double mb = (double)prow[q] * (double)(S->cblk_fcol[j + 1] - S->cblk_fcol[j]) * parts * sb;
        bytes[src] += mb;
        net_sent[src] += mb;
        net_recv[owner] += mb;
    }
    /* the solve's members of cblk j: its owner and the ranks whose cblks face it (solve_dist.c's
     * rule: the data's ranks, not the fan-in's, which top2d flat moves) */
    size_t ns = 0;
    int64_t *spairs = canopy_alloc((size_t)S->nblok + 1, sizeof(int64_t), "prediction per rank", &s->err);
    if (spairs == NULL) st = nomem(s);
    for (cint k = 0; k < S->ncblk && spairs; k++)
        for (cint b = S->cblk_fblok[k] + 1; b < S->cblk_fblok[k + 1]; b++) {
            cint j = S->blok_fcblk[b];
            if (P->cblk_rank[k] != P->cblk_rank[j]) spairs[ns++] = (int64_t)j * R + P->cblk_rank[k];
        }
    if (spairs) qsort(spairs, ns, sizeof *spairs, cmp_i64);
    size_t nsu = 0;
    for (size_t q = 0; q < ns; q++)
        if (nsu == 0 || spairs[q] != spairs[nsu - 1]) spairs[nsu++] = spairs[q];
    for (size_t q = 0; q < nsu && st == CANOPY_SUCCESS;) {
        cint j = (cint)(spairs[q] / R);
        int owner = P->cblk_rank[j], p = 0;
        double e = panel_entries(S, j);
        mem[p++] = owner;
        for (; q < nsu && spairs[q] / R == j; q++) mem[p++] = (int)(spairs[q] % R);
        /* the solve: j's members reduce a w x nrhs block to the owner, then the owner broadcasts
         * x_j back, along the tree the solve builds (heap order over the positions) */
        comm_tree t;
        st = comm_tree_build(mem, p, owner, s->opts.tree, (unsigned)j, &t, &s->err);
        double blk = (double)(S->cblk_fcol[j + 1] - S->cblk_fcol[j]) * o->nrhs * sb;
        if (st == CANOPY_SUCCESS) hop[j] = t.depth * (o->latency + blk / o->bandwidth);
        for (int pos = 0; pos < p && st == CANOPY_SUCCESS; pos++) {
            int rk = comm_tree_rank_at(&t, mem, pos);
            int kids = t.shape == CANOPY_TREE_FLAT ? (pos == 0 ? p - 1 : 0)
                                                   : (2 * (int64_t)pos + 1 < p) + (2 * (int64_t)pos + 2 < p);
            double sends = (pos > 0) + kids;
            smsgs[rk] += sends;
            sbytes[rk] += sends * blk;
            /* the selected inversion broadcasts j's finished panel(s) down the same tree */
            imsgs[rk] += kids * parts;
            ibytes[rk] += kids * e * parts * sb;
        }
    }
    canopy_free(spairs);
    for (int q = 0; q < R; q++) factor[q] = own[q] * parts * sb;
    /* the heaviest rank's parts, before spread() sorts the arrays */
    if (st == CANOPY_SUCCESS) {
        int h = 0;
        for (int q = 1; q < R; q++) h = memory[q] > memory[h] ? q : h;
        const double *fm = NULL;
        st = sched_plan_memory(S, P, &fm, &s->err);
        if (st == CANOPY_SUCCESS) {
            r->heavy_rank = h;
            r->heavy_factor = factor[h];
            r->heavy_fanin = fanin[h];
            size_t T = P->threads_per_rank > 0 ? (size_t)P->threads_per_rank : 1;
            /* as numeric_predict_ranks: workers sized by their tasks on several ranks only */
            r->heavy_work = numeric_predict_workspace(s->fact, s->arith, fm[3 * R + h], fm[4 * R + h], (int)T,
                                                      R > 1 ? fm + 5 * (size_t)R + (size_t)h * T : NULL,
                                                      R > 1 ? fm + 5 * (size_t)R + (size_t)R * T + (size_t)h * T : NULL);
        }
    }
    if (st == CANOPY_SUCCESS) {
        r->factor_bytes = spread(factor, R);
        r->fanin_bytes = spread(fanin, R);
        r->memory_bytes = spread(memory, R);
        r->msgs = spread(msgs, R);
        r->bytes = spread(bytes, R);
        r->solve_msgs = spread(smsgs, R);
        r->solve_bytes = spread(sbytes, R);
        r->selinv_msgs = spread(imsgs, R);
        r->selinv_bytes = spread(ibytes, R);
        r->solve_rhs_bytes = R > 1 ? (double)S->n * o->nrhs * sb * R : 0;
    }
    canopy_free(v);
    canopy_free(mem);
    canopy_free(prow);
    canopy_free(nmsg);
    return st;
}

/*
 * One solve as the code runs it. One rank: the plan's threaded solve graph, each thread running
 * its static list (forward in unit order, backward in reverse), each unit a memory-bound pass
 * over its panels at the scatter rate. Several ranks: each rank's own subtrees on its T threads,
 * then the rest of its cblks, forward in cblk order and backward in reverse (and the own subtrees
 * last), their diagonal blocks on one thread and their panels' products in pieces on T threads
 * (charged to the cblk itself, as the backward solve does them); a cblk waits for the partial sums (forward) or the solution block
 * (backward) of the other ranks, delivered through the members' tree: hop[j] = its depth x
 * (latency + w_j x nrhs scalars / bandwidth).
 */
static canopy_status solve_time(canopy_solver *s, const sched_plan *P, const sched_cost_model *cm,
                                const predict_opts *o, const double *hop, predict_report *r)
{
    const symbolic *S = &s->S;
    double parts = s->fact == CANOPY_FACT_LU ? 2.0 : 1.0;
    cint n = S->ncblk;
    if (n == 0) return CANOPY_SUCCESS;
    /* a pass reads each entry once per right-hand side block: the scatter's rate for entries */
    double *unit = canopy_alloc((size_t)n, sizeof(double), "solve prediction", &s->err);
    if (!unit) return nomem(s);
    for (cint k = 0; k < n; k++)
        unit[k] = cost_scatter(cm, panel_entries(S, k) * o->nrhs) * (s->fact == CANOPY_FACT_LU ? parts : 1.0);
    canopy_status st = CANOPY_SUCCESS;
    if (P->nranks <= 1) {
        sched_dag D;
        st = sched_plan_solve_dag(S, P, &D, &s->err);
        double *ready = NULL, *fin = NULL, *free_at = NULL;
        if (st == CANOPY_SUCCESS) {
            ready = canopy_calloc((size_t)D.ntasks + 1, sizeof(double), "solve prediction", &s->err);
            fin = canopy_calloc((size_t)D.ntasks + 1, sizeof(double), "solve prediction", &s->err);
            free_at = canopy_calloc((size_t)D.nthreads + 1, sizeof(double), "solve prediction", &s->err);
            if (!ready || !fin || !free_at) st = nomem(s);
        }
        if (st == CANOPY_SUCCESS) {
            int u = D.ntasks / 2;
            double end = 0;
            for (int x = 0; x < 2 * u; x++) {
                int i = x < u ? x : u + (2 * u - 1 - x); /* forward ascending, then backward descending */
                double c = 0;
                for (cint k = D.first[i]; k <= D.cblk[i]; k++) c += unit[k];
                int t = D.owner[i];
                fin[i] = fmax(free_at[t], ready[i]) + c;
                free_at[t] = fin[i];
                end = fmax(end, fin[i]);
                for (int e = D.succ_ptr[i]; e < D.succ_ptr[i + 1]; e++) ready[D.succ[e]] = fmax(ready[D.succ[e]], fin[i]);
            }
            r->time_solve = end;
        }
        canopy_free(ready);
        canopy_free(fin);
        canopy_free(free_at);
        if (st == CANOPY_SUCCESS) sched_dag_free(&D);
    } else {
        int R = P->nranks, T = P->threads_per_rank;
        double *ready = canopy_calloc((size_t)n, sizeof(double), "solve prediction", &s->err);
        double *fin = canopy_calloc((size_t)n, sizeof(double), "solve prediction", &s->err);
        double *free_at = canopy_calloc((size_t)R, sizeof(double), "solve prediction", &s->err);
        double *own = canopy_calloc((size_t)R * 2 + 1, sizeof(double), "solve prediction", &s->err);
        unsigned char *local = canopy_alloc((size_t)n, 1, "solve prediction", &s->err);
        double *chain = canopy_calloc((size_t)n, sizeof(double), "solve prediction", &s->err);
        if (!ready || !fin || !free_at || !own || !local || !chain) st = nomem(s);
        double end = 0;
        /* the cblks whose subtree is on their rank alone, solved on its T threads with no message
         * (numeric_solve_dist): max(work / T, longest chain) per rank, before the forward loop and
         * after the backward one */
        for (cint k = 0; k < n && st == CANOPY_SUCCESS; k++) local[k] = 1;
        for (cint k = 0; k < n && st == CANOPY_SUCCESS; k++) {
            cint p = S->cblk_parent[k];
            if (p >= 0 && (!local[k] || P->cblk_rank[p] != P->cblk_rank[k])) local[p] = 0;
        }
        for (cint k = 0; k < n && st == CANOPY_SUCCESS; k++) {
            if (!local[k]) continue;
            int rk = P->cblk_rank[k];
            chain[k] += unit[k];
            own[2 * rk] += unit[k];
            own[2 * rk + 1] = fmax(own[2 * rk + 1], chain[k]);
            cint p = S->cblk_parent[k];
            if (p >= 0 && local[p]) chain[p] = fmax(chain[p], chain[k]);
        }
        for (int q = 0; q < R && st == CANOPY_SUCCESS; q++) free_at[q] = fmax(own[2 * q] / T, own[2 * q + 1]);
        /* a shared cblk: the diagonal block on the calling thread, the panel's pieces on T */
        for (cint k = 0; k < n && st == CANOPY_SUCCESS; k++) {
            double w = (double)(S->cblk_fcol[k + 1] - S->cblk_fcol[k]), all = panel_entries(S, k), diag = w * w;
            double pieces = ceil(w / NUMERIC_SPLIT_PIECE), par = fmin((double)T, pieces);
            if (local[k] || par <= 1 || (all - diag) * o->nrhs < NUMERIC_SPLIT_MIN || all <= 0) continue;
            unit[k] *= (diag + (all - diag) / par) / all;
        }
        for (cint k = 0; k < n && st == CANOPY_SUCCESS; k++) {
            int rk = P->cblk_rank[k];
            if (local[k]) {
                fin[k] = free_at[rk]; /* its partial sums leave once the rank's own subtrees are done */
            } else {
                fin[k] = fmax(free_at[rk], ready[k]) + unit[k];
                free_at[rk] = fin[k];
            }
            end = fmax(end, fin[k]);
            for (cint b = S->cblk_fblok[k] + 1; b < S->cblk_fblok[k + 1]; b++) {
                cint j = S->blok_fcblk[b];
                ready[j] = fmax(ready[j], fin[k] + (P->cblk_rank[j] == rk ? 0 : hop[j]));
            }
        }
        /* backward, each rank once its forward is done: k needs x_j of every cblk j it faces,
         * broadcast by j's owner; the own subtrees start once every such x_j is there */
        for (cint k = n - 1; k >= 0 && st == CANOPY_SUCCESS; k--) {
            int rk = P->cblk_rank[k];
            double at = free_at[rk];
            for (cint b = S->cblk_fblok[k] + 1; b < S->cblk_fblok[k + 1]; b++) {
                cint j = S->blok_fcblk[b];
                if (!local[j]) at = fmax(at, fin[j] + (P->cblk_rank[j] == rk ? 0 : hop[j]));
            }
            if (local[k]) {
                free_at[rk] = at;
                continue;
            }
            fin[k] = at + unit[k];
            free_at[rk] = fin[k];
            end = fmax(end, fin[k]);
        }
        for (int q = 0; q < R && st == CANOPY_SUCCESS; q++)
            end = fmax(end, free_at[q] + fmax(own[2 * q] / T, own[2 * q + 1]));
        if (st == CANOPY_SUCCESS) r->time_solve = end;
        canopy_free(ready);
        canopy_free(fin);
        canopy_free(free_at);
        canopy_free(own);
        canopy_free(local);
        canopy_free(chain);
    }
    canopy_free(unit);
    return st;
}

/* top2d: the grids, their messages and the factor bytes each rank holds as tiles (sched/grid.h). */
static canopy_status top2d_figures(canopy_solver *s, const sched_plan *P, predict_report *r)
{
    const sched_grid *G = P->grid;
    int R = P->nranks;
    double sb = (s->arith == CANOPY_COMPLEX ? 16.0 : 8.0) * (s->fact == CANOPY_FACT_LU ? 2.0 : 1.0);
    double *held = canopy_calloc((size_t)R + 1, sizeof(double), "prediction per rank", &s->err);
    if (!held) return nomem(s);
    sched_grid_held(&s->S, G, P->cblk_rank, sb, held);
    r->top2d_factor_bytes = spread(held, R);
    canopy_free(held);
    r->top2d_shape = G->tiled_cblks > 0 ? G->shape : 0;
    r->top2d_shadow = G->tiled_cblks > 0 ? G->shadow : 0;
    r->top2d_cblks = G->tiled_cblks;
    r->top2d_shared = G->shared_cblks;
    r->top2d_grids = G->ngrids;
    for (int g = 0; g < G->ngrids; g++)
        if (G->grid_pr[g] * G->grid_pc[g] > r->top2d_root_pr * r->top2d_root_pc) {
            r->top2d_root_pr = G->grid_pr[g];
            r->top2d_root_pc = G->grid_pc[g];
        }
    r->top2d_diag_msgs = G->diag_msgs;
    r->top2d_trsm_msgs = G->trsm_msgs;
    r->top2d_fanin_msgs = G->fanin_msgs;
    r->top2d_bcast_bytes = G->diag_bytes + G->trsm_bytes;
    r->top2d_fanin_bytes = G->fanin_bytes;
    return CANOPY_SUCCESS;
}

/* The top's broadcasts (and the model's tile fan-ins) into @p sent and @p recv per rank: from the
 * ranks the simulation ran the tasks on. */
static canopy_status network_top2d(canopy_solver *s, const sched_plan *P, double *sent, double *recv)
{
    const sched_dag *G = &P->factor;
    int TR = P->threads_per_rank > 0 ? P->threads_per_rank : 1;
    double sb = (s->arith == CANOPY_COMPLEX ? 16.0 : 8.0) * (s->fact == CANOPY_FACT_LU ? 2.0 : 1.0);
    int *rank = canopy_alloc((size_t)G->ntasks + 1, sizeof(int), "network volume", &s->err);
    if (!rank) return nomem(s);
    for (int i = 0; i < G->ntasks; i++) rank[i] = G->owner[i] / TR;
    canopy_status st = sched_grid_volume(&s->S, G, P->grid, rank, sb, sent, recv, &s->err);
    canopy_free(rank);
    return st;
}

/* Per node (@p node consecutive ranks), what it sends and receives; the busiest node's time on the
 * wire at the network's bandwidth. */
static void network_bound(const predict_opts *o, int node, const double *sent, const double *recv, predict_report *r)
{
    for (int r0 = 0; r0 < o->ranks; r0 += node) {
        double a = 0, b = 0;
        for (int q = r0; q < r0 + node && q < o->ranks; q++) {
            a += sent[q];
            b += recv[q];
        }
        r->net_sent_max = fmax(r->net_sent_max, a);
        r->net_recv_max = fmax(r->net_recv_max, b);
        r->net_bound = fmax(r->net_bound, fmax(a, b) / o->bandwidth);
    }
}

/* The simulated schedule as a trace canopy-trace reads (phase "factorize", scheduler "simulated"). */
static canopy_status write_trace(canopy_solver *s, const sched_plan *P, const char *path)
{
    const sched_dag *G = &P->factor;
    if (P->nthreads > SCHED_TRACE_MAX_THREADS)
        return canopy_err_set(&s->err, CANOPY_ERR_ARGUMENT, "a trace holds at most %d threads; this layout has %d",
                              SCHED_TRACE_MAX_THREADS, P->nthreads);
    sched_event *ev = canopy_alloc((size_t)G->ntasks + 1, sizeof(sched_event), "simulated trace", &s->err);
    if (!ev) return nomem(s);
    for (int i = 0; i < G->ntasks; i++)
        ev[i] = (sched_event){.task = i, .thread = G->owner[i], .victim = -1, .start = P->task_start[i], .end = P->task_end[i]};
    canopy_status st = sched_trace_write(path, 0, "factorize", "simulated", G, ev, P->nthreads, NULL, NULL,
                                         G->predicted_time, &s->err);
    canopy_free(ev);
    return st;
}

canopy_status predict_layout(canopy_solver *s, const predict_opts *o, predict_report *r)
{
    memset(r, 0, sizeof *r);
    if (s == NULL || o == NULL) return CANOPY_ERR_ARGUMENT;
    int node = o->ranks_per_node > 1 ? o->ranks_per_node : 1;
    if (s->virt_ranks != o->ranks || s->rt.virt_threads != o->threads ||
        (s->rt.virt_node_ranks > 1 ? s->rt.virt_node_ranks : 1) != node || s->phase < PHASE_ANALYZED)
        return canopy_err_set(&s->err, CANOPY_ERR_ARGUMENT,
                              "predict_layout: analyze the solver for %d x %d, %d ranks a node, first "
                              "(api_analyze_virtual)", o->ranks, o->threads, node);
    if (o->nrhs < 1 || !(o->bandwidth > 0) || !(o->latency >= 0))
        return canopy_err_set(&s->err, CANOPY_ERR_ARGUMENT, "predict_layout: nrhs >= 1, bandwidth > 0, latency >= 0");
    double t0 = canopy_wtime();
    int cplx = s->arith == CANOPY_COMPLEX;
    sched_plan P, P1;
    /* 2d-levels=auto: the analysis chose the levels with the split width (rt.twod_levels_kept), and
     * every plan of this structure is built with them */
    canopy_options po = s->opts;
    /* the mapping's memory rule of the real run (runtime_plan_for), against an explicit limit only:
     * this machine's free memory says nothing of the one simulated */
    s->rt.mem_limit = s->opts.memory_limit;
    s->rt.mem_nnz = (double)s->stats.nnz;
    /* the planning's own peak by the allocator: the peak is reset for it and put back after */
    size_t held = canopy_mem_current(), before = canopy_mem_peak();
    canopy_mem_reset_peak();
    canopy_status st = runtime_plan_for(&s->rt, &po, &s->S, s->fact, cplx, o->ranks, &P, &s->err);
    size_t top = canopy_mem_peak();
    canopy_mem_raise_peak(before);
    if (st != CANOPY_SUCCESS) return st;
    /* what the plan holds, by the allocator (its scratch and the candidates it dropped are gone),
     * and what the planning held at most (its scratch, and a lighter candidate beside the plan
     * when the memory limit makes runtime_plan_for try one) */
    size_t now = canopy_mem_current();
    r->plan_bytes = now > held ? (double)(now - held) : 0;
    r->plan_peak_bytes = top > held ? (double)(top - held) : 0;
    /* the block structure beside it: perm, iperm and col2cblk a column, 4 arrays of 4 bytes and the
     * panel offsets (8) a cblk, 4 arrays of 4 bytes a blok (base/structure.h) */
    r->analysis_bytes = fmax(r->plan_bytes, r->plan_peak_bytes) + 12.0 * (double)s->S.n + 24.0 * (double)s->S.ncblk +
                        16.0 * (double)s->S.nblok;
    r->mapping = o->ranks > 1 ? (s->rt.mapping_last == SCHED_MAPPING_MEMORY ? 2 : 1) : 0;
    r->time_plan = canopy_wtime() - t0;
    /* the 1 x 1 reference: the same structure on one thread, no load */
    s->rt.virt_threads = 1;
    s->rt.virt_node_ranks = 1;
    st = runtime_plan_for(&s->rt, &s->opts, &s->S, s->fact, cplx, 1, &P1, &s->err);
    s->rt.virt_threads = o->threads;
    s->rt.virt_node_ranks = node;
    if (st == CANOPY_SUCCESS) {
        r->time_1x1 = P1.factor.predicted_time;
        sched_plan_free(&P1);
    }
    const sched_dag *G = &P.factor;
    r->ranks = o->ranks;
    r->threads = o->threads;
    r->tasks = G->ntasks;
    r->twod_levels = P.twod_levels;
    r->twod_cblks = P.twod_cblks;
    r->split_width = s->stats.split_width;
    r->time_factorize = G->predicted_time;
    r->root_columns = P.root.n > 0 ? P.root.n : 0;
    r->root_pr = r->root_columns ? P.root.pr : 0;
    r->root_pc = r->root_columns ? P.root.pc : 0;
    r->root_time = P.root_time;
    r->speedup = r->time_factorize > 0 ? r->time_1x1 / r->time_factorize : 0;
    r->efficiency = r->speedup / ((double)o->ranks * o->threads);
    for (int i = 0; i < G->ntasks; i++) {
        r->critical_path = fmax(r->critical_path, G->prio[i]);
        r->work += G->cost[i];
    }
    r->efficiency_loaded = r->time_factorize > 0 ? r->work / ((double)o->ranks * o->threads * r->time_factorize) : 0;
    if (st == CANOPY_SUCCESS) st = levels(s, &P, r);
    size_t np = 0;
    int64_t *pairs = st == CANOPY_SUCCESS ? fanin_pairs(s, &P, &np) : NULL;
    double *hop = st == CANOPY_SUCCESS ? canopy_calloc((size_t)s->S.ncblk + 1, sizeof(double), "solve hops", &s->err) : NULL;
    if (st == CANOPY_SUCCESS && (!pairs || !hop)) st = nomem(s);
    double *net = st == CANOPY_SUCCESS ? canopy_calloc(2 * (size_t)o->ranks + 1, sizeof(double), "network volume", &s->err) : NULL;
    if (st == CANOPY_SUCCESS && !net) st = nomem(s);
    if (st == CANOPY_SUCCESS) st = per_rank(s, &P, o, pairs, np, hop, net, net + o->ranks, r);
    if (st == CANOPY_SUCCESS && P.grid) st = network_top2d(s, &P, net, net + o->ranks);
    if (st == CANOPY_SUCCESS) network_bound(o, node, net, net + o->ranks, r);
    canopy_free(net);
    if (st == CANOPY_SUCCESS) {
        sched_cost_model loaded = s->rt.cost;
        cost_model_under_load(&loaded, o->threads * node);
        st = solve_time(s, &P, &loaded, o, hop, r);
    }
    canopy_free(pairs);
    canopy_free(hop);
    if (st == CANOPY_SUCCESS && P.grid) st = top2d_figures(s, &P, r);
    if (st == CANOPY_SUCCESS) st = numeric_selinv_top(&s->S, s->fact, cplx, NULL, NULL, &r->selinv, &s->err);
    if (st == CANOPY_SUCCESS && o->trace && o->trace[0]) st = write_trace(s, &P, o->trace);
    sched_plan_free(&P);
    if (st != CANOPY_SUCCESS) predict_report_free(r);
    return st;
}

void predict_report_free(predict_report *r)
{
    if (r == NULL) return;
    canopy_free(r->levels);
    r->levels = NULL;
    r->nlevels = 0;
}

