/*
 * Node runtime (see runtime.h): glue between the phase driver and numa/ + sched/. Decides nothing
 * numerical; it places the workers, builds the plan, and collects what the runs measured.
 */
#include "numeric/runtime.h"
#include "numa/placement.h"
#include "sched/grid.h"
#include "sched/trace.h"

#include <math.h>
#include <stdio.h>
#include <string.h>


/* Each worker binds itself when it starts (a failure leaves it unbound, which is only slower). */
static void bind_worker(void *arg, int t)
{
    runtime *rt = arg;
    canopy_err err = {0};
    (void)numa_bind_self(rt->topo, &rt->workers, t, &err);
}

canopy_status runtime_init(runtime *rt, const canopy_options *o, int ranks_on_node, int node_rank, canopy_err *err)
{
    memset(rt, 0, sizeof *rt);
    canopy_status st = numa_topo_load(&rt->topo, err);
    if (st != CANOPY_SUCCESS) return st;
    int usable = numa_topo_cores(rt->topo);
    if (ranks_on_node > 1 && node_rank >= 0 && node_rank < ranks_on_node && usable >= ranks_on_node &&
        (o->threads <= 0 || (int64_t)o->threads * ranks_on_node <= usable) &&
        usable == numa_topo_allowed_cores(rt->topo) && o->bind == CANOPY_BIND_CORE && !numa_topo_dry_run(rt->topo)) {
        /* several ranks share the node and the launcher did not split it (mpirun --bind-to none):
         * each rank takes its own consecutive share of the cores, so that the ranks' workers do
         * not pile up on the first cores */
        char list[4096];
        size_t len = 0;
        int c0 = (int)((int64_t)usable * node_rank / ranks_on_node), c1 = (int)((int64_t)usable * (node_rank + 1) / ranks_on_node);
        for (int c = c0; c < c1 && len + 16 < sizeof list; c++)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%d", c > c0 ? "," : "", numa_topo_core_os(rt->topo, c));
        canopy_err rerr = {0};
        if (numa_topo_restrict(rt->topo, list, &rerr) == CANOPY_SUCCESS) usable = numa_topo_cores(rt->topo);
    }
    rt->nthreads = o->threads > 0 ? o->threads : numa_default_threads(rt->topo);
    rt->ranks_on_node = ranks_on_node > 1 ? ranks_on_node : 1;
    st = numa_workers_plan(rt->topo, rt->nthreads, o->bind, o->bind_list, &rt->workers, err);
    if (st != CANOPY_SUCCESS) return st;
    snprintf(rt->warning, sizeof rt->warning, "%s", rt->workers.warning);
    int machine = numa_topo_machine_cores(rt->topo);
    if (rt->warning[0] == '\0' && o->threads <= 0 && ranks_on_node <= 1 && usable < machine)
        /* the default follows the cpuset: say when that is what a launcher imposed */
        snprintf(rt->warning, sizeof rt->warning,
                 "using %d thread%s: this process may only use %d of the %d cores (its CPU binding); if that is "
                 "not intended, run mpirun --bind-to none (Open MPI binds a lone rank to one core) or "
                 "--map-by slot:PE=N, or set --threads", rt->nthreads, rt->nthreads > 1 ? "s" : "", usable, machine);
    else if (rt->warning[0] == '\0' && ranks_on_node > 1 && (int64_t)ranks_on_node * rt->nthreads > machine)
        snprintf(rt->warning, sizeof rt->warning,
                 "%d ranks x %d threads on this node exceed its %d cores: threads will share cores",
                 ranks_on_node, rt->nthreads, machine);
    rt->nnodes = numa_topo_nodes(rt->topo);
    rt->node_planned = canopy_calloc((size_t)rt->nnodes, sizeof(int64_t), "placement report", err);
    rt->node_found = canopy_calloc((size_t)rt->nnodes, sizeof(int64_t), "placement report", err);
    rt->thread_bytes = canopy_calloc((size_t)rt->nthreads, sizeof(int64_t), "placement report", err);
    if (!rt->node_planned || !rt->node_found || !rt->thread_bytes) return err && err->status ? err->status : CANOPY_ERR_NOMEM;
    return CANOPY_SUCCESS;
}

void runtime_drop_plan(runtime *rt)
{
    if (!rt->have_plan) return;
    sched_plan_free(&rt->plan);
    sched_local_free(&rt->local);
    sched_dag_free(&rt->solve);
    rt->have_plan = 0;
}

void runtime_set_cost(runtime *rt, const sched_cost_model *cm)
{
    rt->cost = *cm;
    rt->have_cost = 1;
}

/* The plan's options and the cost model it prices with, for @p nranks ranks. */
static canopy_status plan_setup(runtime *rt, const canopy_options *o, canopy_factorization kind, int complex_arith,
                                int nranks, sched_plan_opts *po, sched_cost_model *loaded, canopy_err *err)
{
    canopy_status st = runtime_cost(rt, o, err);
    if (st != CANOPY_SUCCESS) return st;
    int T = runtime_plan_threads(rt), node = rt->virt_threads > 0 ? rt->virt_node_ranks : rt->ranks_on_node,
        busy = T * (node > 1 ? node : 1);
    *po = (sched_plan_opts){.nthreads = T, .kind = kind, .complex_arith = complex_arith,
                            .nranks = nranks > 1 ? nranks : 1, .comm_latency = rt->comm_latency,
                            .comm_byte_time = rt->comm_byte_time, .twod_levels = o->twod_levels < 0 && rt->twod_levels_kept > 0 ? rt->twod_levels_kept - 1 : o->twod_levels,
                            .top2d = rt->virt_threads > 0 && rt->top2d ? rt->top2d : o->top2d ? SCHED_GRID_FLAT : 0,
                            .fanin_cuts = o->fanin_cuts == 2 ? 2 : rt->cuts_now ? 1 : 0,
                            .flat_shadow = o->top2d_shadow == 2 ? 0 : o->top2d_shadow == 1 || rt->lean_now ? 2 : 1,
                            .update_cap = o->update_buffer < 0 ? 0 : o->update_buffer > 0 ? (int64_t)o->update_buffer
                                                                                           : CANOPY_UPDATE_BUFFER_AUTO};
    /* kernels run slower when every worker of the node computes: plan with the loaded rates */
    *loaded = rt->cost;
    cost_model_under_load(loaded, busy);
    return CANOPY_SUCCESS;
}

canopy_status runtime_cost(runtime *rt, const canopy_options *o, canopy_err *err)
{
    if (rt->have_cost) return CANOPY_SUCCESS;
    canopy_status st = cost_model_load(&rt->cost, o->cost_cache, &numeric_cost_kernels, err);
    if (st == CANOPY_SUCCESS) rt->have_cost = 1;
    return st;
}

int runtime_host_cores(const runtime *rt)
{
    int c = rt->topo ? numa_topo_cores(rt->topo) : 1;
    return c > 0 ? c : 1;
}

int runtime_plan_threads(const runtime *rt)
{
    return rt->virt_threads > 0 ? rt->virt_threads : rt->nthreads;
}

/* top2d=auto keeps the flat top when its simulated makespan is at most this share of the 1D top's */
#define RUNTIME_TOP2D_GAIN 0.9

static canopy_status plan_for(runtime *rt, const canopy_options *o, const symbolic *S, canopy_factorization kind,
                              int complex_arith, int nranks, int prediction_only, int mapping, const int *pin,
                              int sweep_threads, sched_plan *P, canopy_err *err)
{
    sched_plan_opts po;
    sched_cost_model loaded;
    memset(P, 0, sizeof *P);
    canopy_status st = plan_setup(rt, o, kind, complex_arith, nranks, &po, &loaded, err);
    po.prediction_only = prediction_only;
    po.sweep_threads = sweep_threads;
    po.mapping = mapping;
    po.pin = pin;
    /* the root on a grid of every rank (sched/root.h): a pure function, the same on every rank */
    if (st == CANOPY_SUCCESS) st = sched_root_choose(S, po.nranks, kind, o->root_grid, &po.root, err);
    if (st == CANOPY_SUCCESS) st = sched_plan_build(S, &loaded, &po, P, err);
    if (st == CANOPY_SUCCESS && o->root_grid == SCHED_ROOT_AUTO && po.root.n > 0) {
        /* auto: wide enough by MUMPS's rule, and kept only where the simulation says it is faster
         * (the root's step waits for every other task: on few ranks the 1D chain overlaps more) */
        sched_plan Q;
        po.root = (sched_root){.first = S->ncblk, .pr = 1, .pc = 1};
        st = sched_plan_build(S, &loaded, &po, &Q, err);
        if (st == CANOPY_SUCCESS && Q.factor.predicted_time <= P->factor.predicted_time) {
            sched_plan_free(P);
            *P = Q;
        } else if (st == CANOPY_SUCCESS) {
            sched_plan_free(&Q);
        } else {
            sched_plan_free(P);
        }
    }
    if (st == CANOPY_SUCCESS && o->top2d == 2 && po.top2d == SCHED_GRID_FLAT && P->cblk_xgrid) {
        /* auto: the flat top only where the simulation predicts it clearly faster (on one 16-core
         * node it predicted 0-4% slower and measured 0-25% slower: the margin covers its messages) */
        sched_plan Q;
        po.top2d = 0;
        st = sched_plan_build(S, &loaded, &po, &Q, err);
        if (st == CANOPY_SUCCESS && P->factor.predicted_time > RUNTIME_TOP2D_GAIN * Q.factor.predicted_time) {
            sched_plan_free(P);
            *P = Q;
        } else if (st == CANOPY_SUCCESS) {
            sched_plan_free(&Q);
        } else {
            sched_plan_free(P);
        }
    }
    return st;
}

/* Each rank's predicted peak under @p P (the memory check's formula) in @p v [nranks]; the
 * heaviest's in @p worst. */
static canopy_status plan_peaks(const runtime *rt, const canopy_options *o, const symbolic *S, const sched_plan *P,
                                canopy_factorization kind, int complex_arith, double *v, double *worst, canopy_err *err)
{
    int R = P->nranks > 0 ? P->nranks : 1;
    canopy_status st = numeric_predict_ranks(S, P, kind, complex_arith ? CANOPY_COMPLEX : CANOPY_REAL, o->scheduler,
                                             rt->mem_nnz, v, NULL, err);
    *worst = 0;
    for (int q = 0; q < R && st == CANOPY_SUCCESS; q++) *worst = fmax(*worst, v[q]);
    return st;
}

/* plans the memory fallback's search tries at most (plans are pure functions: a count, never a
 * time, so that every rank stops at the same one) */
#define RUNTIME_MEMORY_TRIES 16

/*
 * The memory fallback: from @p P (the flops plan, its peaks in @p v, its heaviest @p worst), the
 * plan whose heaviest rank is lightest among the memory mapping's (sched_plan_opts.mapping) and a
 * local search from the better of the two: a shared cblk of the heaviest rank (the largest not
 * tried yet) pinned to the lightest of its candidate ranks, kept when the heaviest rank gets
 * lighter. The fan-in buffers alive at once and the workspaces follow the simulated times, not
 * the entries, so only the prediction itself can judge a move. @p memory: 1 when the plan left in
 * @p P is not the flops plan. Measured (canopy-simulate, fixed cost model, heaviest rank): 25^3 on
 * 4 x 1 15.0 -> 14.4 MB, 8 x 1 11.9 -> 11.2 MB; 30^3 on 4 x 2 30.2 -> 28.0 MB; 50^3 on 8 x 4
 * 151 -> 126 MB (median 124), for 1-17% more predicted time.
 */
static canopy_status plan_memory_fallback(runtime *rt, const canopy_options *o, const symbolic *S,
                                          canopy_factorization kind, int complex_arith, int nranks, sched_plan *P,
                                          double *v, double worst, int *memory, canopy_err *err)
{
    cint n = S->ncblk;
    int R = nranks, mapping = SCHED_MAPPING_FLOPS;
    double *vq = canopy_alloc((size_t)R, sizeof(double), "memory mapping", err), wq = 0;
    int *pin = canopy_alloc((size_t)n + 1, sizeof(int), "memory mapping", err);
    unsigned char *tried = canopy_calloc((size_t)n + 1, 1, "memory mapping", err);
    canopy_status st = vq && pin && tried ? CANOPY_SUCCESS : (err && err->status ? err->status : CANOPY_ERR_NOMEM);
    sched_plan Q;
    memset(&Q, 0, sizeof Q);
    *memory = 0;
    if (st == CANOPY_SUCCESS &&
        (st = plan_for(rt, o, S, kind, complex_arith, R, 0, SCHED_MAPPING_MEMORY, NULL, 1, &Q, err)) == CANOPY_SUCCESS &&
        (st = plan_peaks(rt, o, S, &Q, kind, complex_arith, vq, &wq, err)) == CANOPY_SUCCESS && wq < worst) {
        sched_plan_free(P);
        *P = Q;
        memset(&Q, 0, sizeof Q);
        memcpy(v, vq, (size_t)R * sizeof *v);
        worst = wq;
        mapping = SCHED_MAPPING_MEMORY;
        *memory = 1;
    }
    sched_plan_free(&Q);
    for (cint k = 0; k < n && st == CANOPY_SUCCESS; k++)
        pin[k] = P->cblk_ranks[2 * k + 1] - P->cblk_ranks[2 * k] > 1 ? P->cblk_rank[k] : -1;
    /* auto stops at the first plan that fits: each move costs time (the simulation's choices
     * undone); mapping=memory goes on to the lightest it finds */
    for (int t = 0; t < RUNTIME_MEMORY_TRIES && st == CANOPY_SUCCESS && (o->mapping == 2 || worst > rt->mem_limit); t++) {
        int h = 0;
        for (int q = 1; q < R; q++)
            if (v[q] > v[h]) h = q;
        cint k = -1;
        double e = -1;
        for (cint j = 0; j < n; j++) {
            double ej = (double)S->cblk_stride[j] * (double)(S->cblk_fcol[j + 1] - S->cblk_fcol[j]);
            if (pin[j] == h && !tried[j] && ej > e) {
                k = j;
                e = ej;
            }
        }
        if (k < 0) break;
        tried[k] = 1;
        int to = -1;
        for (int q = P->cblk_ranks[2 * k]; q < P->cblk_ranks[2 * k + 1]; q++)
            if (q != h && (to < 0 || v[q] < v[to])) to = q;
        pin[k] = to;
        if ((st = plan_for(rt, o, S, kind, complex_arith, R, 0, mapping, pin, 1, &Q, err)) == CANOPY_SUCCESS &&
            (st = plan_peaks(rt, o, S, &Q, kind, complex_arith, vq, &wq, err)) == CANOPY_SUCCESS && wq < worst) {
            sched_plan_free(P);
            *P = Q;
            memset(&Q, 0, sizeof Q);
            memcpy(v, vq, (size_t)R * sizeof *v);
            worst = wq;
            *memory = 1;
        } else {
            pin[k] = h;
        }
        sched_plan_free(&Q);
    }
    canopy_free(vq);
    canopy_free(pin);
    canopy_free(tried);
    return st;
}

/* The memory ladder's step: the flops plan again with @p *flag (rt->cuts_now, rt->lean_now) set,
 * kept in @p P (its peaks in @p v, the heaviest in @p worst) when its heaviest rank is lighter;
 * else the flag is cleared. */
static canopy_status plan_try_lighter(runtime *rt, const canopy_options *o, const symbolic *S, canopy_factorization kind,
                                      int complex_arith, int nranks, int *flag, sched_plan *P, double *v, double *worst,
                                      canopy_err *err)
{
    sched_plan Q;
    double *vq = canopy_alloc((size_t)nranks, sizeof(double), "memory mapping", err), wq = 0;
    *flag = 1;
    canopy_status st = vq ? plan_for(rt, o, S, kind, complex_arith, nranks, 0, SCHED_MAPPING_FLOPS, NULL, 1, &Q, err)
                          : (err && err->status ? err->status : CANOPY_ERR_NOMEM);
    if (st == CANOPY_SUCCESS) {
        st = plan_peaks(rt, o, S, &Q, kind, complex_arith, vq, &wq, err);
        if (st == CANOPY_SUCCESS && wq < *worst) {
            sched_plan_free(P);
            *P = Q;
            memcpy(v, vq, (size_t)nranks * sizeof *v);
            *worst = wq;
        } else {
            sched_plan_free(&Q);
            *flag = 0;
        }
    }
    canopy_free(vq);
    return st;
}

canopy_status runtime_plan_for(runtime *rt, const canopy_options *o, const symbolic *S, canopy_factorization kind,
                               int complex_arith, int nranks, sched_plan *P, canopy_err *err)
{
    rt->mapping_last = SCHED_MAPPING_FLOPS;
    rt->cuts_now = 0;
    rt->lean_now = 0;
    canopy_status st = plan_for(rt, o, S, kind, complex_arith, nranks, 0, SCHED_MAPPING_FLOPS, NULL, 1, P, err);
    int limited = rt->mem_limit > 0 && isfinite(rt->mem_limit);
    int want = o->mapping == 2 || (o->mapping == 0 && limited) || (o->fanin_cuts == 0 && limited) ||
               (o->top2d_shadow == 0 && limited && P->cblk_xgrid);
    if (st != CANOPY_SUCCESS || nranks <= 1 || !want) return st;
    /* mapping=memory always; auto only when the flops plan (the fastest) has a rank over the limit */
    double worst = 0, *v = canopy_alloc((size_t)nranks, sizeof(double), "memory mapping", err);
    int memory = 0;
    st = v ? plan_peaks(rt, o, S, P, kind, complex_arith, v, &worst, err) : (err && err->status ? err->status : CANOPY_ERR_NOMEM);
    /* fanin-cuts=auto: over the limit, cut the fan-in buffers first (the same mapping, more
     * messages); the memory mapping below then keeps them cut */
    if (st == CANOPY_SUCCESS && o->fanin_cuts == 0 && limited && worst > rt->mem_limit)
        st = plan_try_lighter(rt, o, S, kind, complex_arith, nranks, &rt->cuts_now, P, v, &worst, err);
    /* top2d-shadow=auto: still over, the lean flat top next (the updates reading another rank's
     * copy of a column block run as soon as its groups are there, so the copy goes; sched/README,
     * "Shadows") */
    if (st == CANOPY_SUCCESS && o->top2d_shadow == 0 && limited && worst > rt->mem_limit && P->cblk_xgrid)
        st = plan_try_lighter(rt, o, S, kind, complex_arith, nranks, &rt->lean_now, P, v, &worst, err);
    if (st == CANOPY_SUCCESS && (o->mapping == 2 || (o->mapping == 0 && worst > rt->mem_limit)))
        st = plan_memory_fallback(rt, o, S, kind, complex_arith, nranks, P, v, worst, &memory, err);
    canopy_free(v);
    rt->cuts_now = rt->lean_now = 0; /* the plans built later (runtime_predict) are the flops plan's */
    if (st != CANOPY_SUCCESS) sched_plan_free(P);
    else if (memory) rt->mapping_last = SCHED_MAPPING_MEMORY;
    return st;
}

canopy_status runtime_predict(runtime *rt, const canopy_options *o, const symbolic *S, canopy_factorization kind,
                              int complex_arith, int nranks, int sweep_threads, double *predicted, int *twod_levels,
                              canopy_err *err)
{
    sched_plan P;
    /* the flops mapping whatever options.mapping says: the analysis' choices (split width, 2D
     * levels) by it, so that the memory fallback works on the same structure */
    canopy_status st = plan_for(rt, o, S, kind, complex_arith, nranks, 1, SCHED_MAPPING_FLOPS, NULL, sweep_threads, &P, err);
    if (st != CANOPY_SUCCESS) return st;
    *predicted = P.factor.predicted_time;
    if (twod_levels) *twod_levels = P.twod_levels;
    sched_plan_free(&P);
    return CANOPY_SUCCESS;
}

canopy_status runtime_plan(runtime *rt, const canopy_options *o, const symbolic *S, canopy_factorization kind,
                           int complex_arith, canopy_err *err)
{
    if (rt->have_plan && rt->plan_kind == kind && rt->plan_complex == complex_arith) return CANOPY_SUCCESS;
    runtime_drop_plan(rt);
    if (rt->virt_threads > 0)
        return canopy_err_set(err, CANOPY_ERR_INTERNAL, "runtime_plan: a solver planning for a virtual machine runs nothing");
    int R = rt->nranks > 1 ? rt->nranks : 1;
    canopy_status st = runtime_plan_for(rt, o, S, kind, complex_arith, R, &rt->plan, err);
    if (st == CANOPY_SUCCESS)
        st = sched_plan_local(S, &rt->plan, R > 1 ? rt->rank : 0, kind == CANOPY_FACT_LU ? 2 : 1, &rt->local, err);
    if (st == CANOPY_SUCCESS && R == 1) st = sched_plan_solve_dag(S, &rt->plan, &rt->solve, err);
    /* several ranks: the factorization runs the local plan; every rank's task graph goes (also
     * when a new kind replans, the LL^T fallback) */
    if (st == CANOPY_SUCCESS && R > 1) sched_plan_keep_local(&rt->plan);
    if (st != CANOPY_SUCCESS) {
        sched_plan_free(&rt->plan);
        sched_local_free(&rt->local);
        sched_dag_free(&rt->solve);
        return st;
    }
    rt->have_plan = 1;
    rt->plan_mapping = rt->mapping_last;
    rt->plan_kind = kind;
    rt->plan_complex = complex_arith;
    if (rt->pool == NULL) {
        st = sched_pool_create(rt->nthreads, bind_worker, rt, rt->workers.distance, &rt->pool, err);
        if (st != CANOPY_SUCCESS) return st;
    }
    return CANOPY_SUCCESS;
}

void runtime_exec(const runtime *rt, const canopy_options *o, numeric_exec *x)
{
    memset(x, 0, sizeof *x);
    if (!rt->have_plan) return;
    x->pool = rt->pool;
    x->plan = &rt->plan;
    x->solve = rt->nranks > 1 ? NULL : &rt->solve;
    x->local = &rt->local;
    x->comm_threads = o->comm_threads;
    x->tags = rt->have_tags ? &rt->tags : NULL;
    x->comm = rt->comm;
    x->tree = o->tree;
    x->scheduler = o->scheduler;
    x->numa = o->numa;
    x->topo = rt->topo;
}

static const char *scheduler_name(canopy_scheduler s) { return s == CANOPY_SCHED_DYNAMIC ? "dynamic" : "static"; }

void runtime_report_factorize(runtime *rt, const canopy_options *o, const numeric *F, canopy_stats *st)
{
    const numeric_run *r = &F->run;
    const symbolic *S = F->S;
    int T = rt->nthreads;
    st->threads_per_rank = T;
    st->scheduler = o->scheduler;
    st->numa = o->numa;
    st->numa_nodes = rt->nnodes;
    st->bound = rt->workers.bound && !rt->workers.dry_run;
    st->time_factorize_predicted = rt->have_plan ? rt->plan.factor.predicted_time : 0;
    st->twod_levels = rt->have_plan ? rt->plan.twod_levels : 0;
    st->twod_cblks = rt->have_plan ? rt->plan.twod_cblks : 0;
    st->top2d_cblks = 0;
    for (cint k = 0; rt->have_plan && rt->plan.cblk_xgrid && k < S->ncblk; k++) st->top2d_cblks += rt->plan.cblk_xgrid[k] >= 0;
    st->mapping = rt->have_plan && rt->nranks > 1 ? (rt->plan_mapping == SCHED_MAPPING_MEMORY ? 2 : 1) : 0;
    const sched_root *root = rt->have_plan ? &rt->plan.root : NULL;
    st->root_columns = root && root->n > 0 ? root->n : 0;
    st->root_pr = st->root_columns ? root->pr : 0;
    st->root_pc = st->root_columns ? root->pc : 0;
    st->time_root_wait = st->root_columns ? F->run.root[0] : 0;
    st->time_root_scatter = st->root_columns ? F->run.root[1] : 0;
    st->time_root_factor = st->root_columns ? F->run.root[2] : 0;
    st->time_root_gather = st->root_columns ? F->run.root[3] : 0;
    st->time_fill = F->run.fill;
    if (F->nthreads != T || !rt->have_plan) return;
    double busy = 0;
    int64_t steals = 0, remote = 0;
    double lock_wait = 0;
    int64_t handed = 0;
    for (int t = 0; t < T; t++) {
        busy += r->busy[t];
        steals += r->steals[t];
        lock_wait += r->lock_wait[t];
        handed += r->handed[t];
    }
    st->time_lock_wait = lock_wait;
    st->handovers = handed;
    for (int i = 0; i < r->ntasks; i++) {
        const sched_event *e = &r->events[i];
        if (e->victim >= 0 && e->thread >= 0 && rt->workers.node[e->victim] != rt->workers.node[e->thread]) remote++;
    }
    st->busy_fraction = r->wall > 0 ? busy / (T * r->wall) : 0;
    st->steals = steals;
    st->steals_remote = remote;
    /* placement: as planned (owners), and as the kernel reports the pages */
    memset(rt->node_planned, 0, (size_t)rt->nnodes * sizeof(int64_t));
    memset(rt->thread_bytes, 0, (size_t)T * sizeof(int64_t));
    int64_t sb = (int64_t)F->scalar_bytes * (F->U ? 2 : 1);
    for (cint k = 0; k < S->ncblk; k++) {
        if (rt->local.cblk_rank[k] != rt->local.rank) continue;
        int owner = o->numa == CANOPY_NUMA_GLOBAL ? -1 : rt->local.cblk_owner[k];
        int64_t bytes = (S->cblk_coef[k + 1] - S->cblk_coef[k]) * sb;
        if (owner >= 0) rt->thread_bytes[owner] += bytes;
        /* global: everything where the calling thread runs (unknown: count it on node 0) */
        rt->node_planned[owner >= 0 ? rt->workers.node[owner] : 0] += bytes;
    }
    canopy_err lerr = {0};
    int64_t unknown = 0;
    memset(rt->node_found, 0, (size_t)rt->nnodes * sizeof(int64_t));
    if (numa_locate(rt->topo, F->L, F->coef_bytes, 1 << 16, rt->node_found, &unknown, &lerr) != CANOPY_SUCCESS)
        unknown = (int64_t)F->coef_bytes;
    if (F->U) {
        int64_t *tmp = canopy_calloc((size_t)rt->nnodes, sizeof(int64_t), "placement report", &lerr);
        int64_t unk2 = 0;
        if (tmp && numa_locate(rt->topo, F->U, F->coef_bytes, 1 << 16, tmp, &unk2, &lerr) == CANOPY_SUCCESS) {
            for (int n = 0; n < rt->nnodes; n++) rt->node_found[n] += tmp[n];
            unknown += unk2;
        } else {
            unknown += (int64_t)F->coef_bytes;
        }
        canopy_free(tmp);
    }
    rt->unlocated = unknown;
    st->factor_bytes_unlocated = unknown;
    if (o->trace_file[0]) {
        canopy_err terr = {0};
        /* several ranks: one file per rank, FILE.<rank> */
        char path[CANOPY_PATH_MAX + 16];
        if (rt->nranks > 1) snprintf(path, sizeof path, "%s.%d", o->trace_file, rt->rank);
        else snprintf(path, sizeof path, "%s", o->trace_file);
        (void)sched_trace_write(path, 0, "factorize", scheduler_name(o->scheduler), &rt->local.factor,
                                r->events, T, rt->workers.core_os, rt->workers.node, r->wall, &terr);
    }
}

void runtime_report_solve(runtime *rt, const canopy_options *o, const numeric *F)
{
    if (!o->trace_file[0] || !rt->have_plan || F->nthreads != rt->nthreads || rt->nranks > 1) return;
    canopy_err terr = {0};
    (void)sched_trace_write(o->trace_file, 1, "solve", scheduler_name(o->scheduler), &rt->solve, F->solve_run.events,
                            rt->nthreads, rt->workers.core_os, rt->workers.node, F->solve_run.wall, &terr);
}

canopy_status runtime_thread_stats(const runtime *rt, const numeric *F, int t, canopy_thread_stats *ts)
{
    if (t < 0 || t >= rt->nthreads) return CANOPY_ERR_ARGUMENT;
    memset(ts, 0, sizeof *ts);
    ts->core = rt->workers.bound ? rt->workers.core_os[t] : -1;
    ts->node = rt->workers.node[t];
    ts->factor_bytes = rt->thread_bytes[t];
    if (F->nthreads == rt->nthreads && F->run.busy) {
        ts->busy = F->run.busy[t];
        ts->tasks = F->run.tasks[t];
        ts->steals = F->run.steals[t];
    }
    return CANOPY_SUCCESS;
}

canopy_status runtime_node_stats(const runtime *rt, int node, canopy_node_stats *ns)
{
    if (node < 0 || node >= rt->nnodes) return CANOPY_ERR_ARGUMENT;
    ns->factor_bytes_planned = rt->node_planned[node];
    ns->factor_bytes_found = rt->node_found[node];
    return CANOPY_SUCCESS;
}

void runtime_free(runtime *rt)
{
    if (rt == NULL) return;
    runtime_drop_plan(rt);
    if (rt->have_tags) comm_tags_free(&rt->tags);
    sched_pool_destroy(rt->pool);
    numa_workers_free(&rt->workers);
    numa_topo_free(rt->topo);
    canopy_free(rt->node_planned);
    canopy_free(rt->node_found);
    canopy_free(rt->thread_bytes);
    memset(rt, 0, sizeof *rt);
}

canopy_status runtime_predict_peak(runtime *rt, const canopy_options *o, const symbolic *S,
                                      canopy_factorization kind, canopy_arith arith, int ranks, double nnz,
                                      double *worst, canopy_err *err)
{
    sched_plan P;
    *worst = 0;
    canopy_status st = runtime_plan_for(rt, o, S, kind, arith == CANOPY_COMPLEX, ranks, &P, err);
    if (st != CANOPY_SUCCESS) return st;
    int R = P.nranks > 0 ? P.nranks : 1;
    double *v = canopy_calloc((size_t)R, sizeof(double), "memory prediction", err);
    st = v ? numeric_predict_ranks(S, &P, kind, arith, o->scheduler, nnz, v, NULL, err)
           : (err && err->status ? err->status : CANOPY_ERR_NOMEM);
    for (int q = 0; q < R && st == CANOPY_SUCCESS; q++) *worst = fmax(*worst, v[q]);
    canopy_free(v);
    sched_plan_free(&P);
    return st;
}
