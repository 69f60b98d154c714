/*
 * The plan as a pure function of (block structure, ranks P, threads per rank T, kind): no MPI, no
 * threads. For P in {1, 2, 3, 4, 5, 7, 8, 16, 64, 256, 1024} x T in {1, 2, 3, 4, 6, 8, 16, 32, 64}
 * (every pair) the two-level mapping, the simulation and every rank's local plan are built on
 * the block structures of real shared matrices (LL^T, LDL^T, LU, real and complex costs; split as
 * the library does for P x T threads) and on generated trees (deep chains, stars, random trees
 * with extra fill, forests with isolated vertices, a single column block, a single column), and
 * every invariant the runtime relies on is checked against counts made here:
 *  - the candidate ranges of the cblks and the Snodes are laminar, the Snodes nest, every cblk
 *    lies inside its rank's threads, its data owner inside its range;
 *  - every cblk is factored by exactly one task and every facing group updated by exactly one,
 *    every task runs on one thread of its cblk's rank, inside its Snode;
 *  - the simulation: a topological sequence, starts after every predecessor's end, no two tasks
 *    of one thread overlap, the makespan is the latest end;
 *  - the contribution numbers into each cblk are 0..m-1, private ones exactly inside SUBTREEs;
 *  - the ranks' shares partition the tasks; local graphs pass the engine's checks, their edges are
 *    the plan's edges between tasks of the same rank, their lists follow the plan's order;
 *  - fan-in: every (target, source rank) pair that crosses ranks is sent exactly once by the
 *    source and expected exactly once by the owner, ext[] of a panel = parts x its remote source
 *    ranks, local contribution numbers are 0..m-1 per target and keep the plan's order;
 *  - ranks that own nothing get an empty, valid plan.
 * CANOPY_TEST_QUICK=1 keeps a subset (every P and T still appears).
 */
#include "testutil.h"
#include "sched/plan.h"
#include "sched/distribute.h"
#include "symbolic/symbolic.h"

static const int P_list[] = {1, 2, 3, 4, 5, 7, 8, 16, 64, 256, 1024};
static const int T_list[] = {1, 2, 3, 4, 6, 8, 16, 32, 64};
#define NP ((int)(sizeof P_list / sizeof *P_list))
#define NT ((int)(sizeof T_list / sizeof *T_list))
static const canopy_factorization kinds[] = {CANOPY_FACT_LLT, CANOPY_FACT_LDLT, CANOPY_FACT_LU};

/* Check's ck_assert_* report every passing check to the runner (a write each): millions of them
 * would dominate. These cost a branch, and fail through Check. */
#define REQUIRE(cond, ...)                       \
    do {                                         \
        if (!(cond)) ck_abort_msg(__VA_ARGS__);  \
    } while (0)
#define REQUIRE_(cond) REQUIRE(cond, "%s", #cond)

static int quick(void)
{
    const char *q = getenv("CANOPY_TEST_QUICK");
    return q && *q && strcmp(q, "0") != 0;
}

/* ---- structures -------------------------------------------------------------------------------- */

/* A graph given as its edges (i, j), i != j: the symmetric pattern, through matrix_graph. */
static void graph_from_edges(cint n, int64_t ne, const cint *ei, const cint *ej, canopy_csc *G)
{
    canopy_csc A = {0};
    A.n = n;
    A.base = 0;
    A.kind = CANOPY_KIND_GENERAL;
    A.triangle = CANOPY_TRIANGLE_BOTH;
    A.colptr = calloc((size_t)n + 1, sizeof(cint));
    A.rowind = malloc(sizeof(cint) * ((size_t)ne + 1));
    for (int64_t e = 0; e < ne; e++) A.colptr[ej[e] + 1]++;
    for (cint j = 0; j < n; j++) A.colptr[j + 1] += A.colptr[j];
    cint *fill = malloc(sizeof(cint) * ((size_t)n + 1));
    memcpy(fill, A.colptr, sizeof(cint) * (size_t)n);
    for (int64_t e = 0; e < ne; e++) A.rowind[fill[ej[e]]++] = ei[e];
    canopy_err err = {0};
    ck_assert_msg(matrix_graph(&A, G, &err) == CANOPY_SUCCESS, "%s", err.msg);
    free(fill);
    free(A.colptr);
    free(A.rowind);
}

/* The block structure of G under @p perm (NULL: natural order), split as the library splits for
 * @p all threads in total (split=auto), or not at all (all = 1). */
static void structure(const canopy_csc *G, const cint *perm, int all, int amalg, symbolic *S)
{
    cint n = G->n;
    cint *id = NULL;
    if (perm == NULL) {
        id = malloc(sizeof(cint) * ((size_t)n + 1));
        for (cint i = 0; i < n; i++) id[i] = i;
        perm = id;
    }
    symbolic_opts o = {amalg, 0.12, all > 1 ? 256 : 0, all > 1 ? 1.0 / (2.0 * all) : 0.0};
    canopy_err err = {0};
    memset(S, 0, sizeof *S);
    ck_assert_msg(symbolic_analyze(G, perm, &o, S, &err) == CANOPY_SUCCESS, "%s", err.msg);
    free(id);
}

/* Generated trees: the elimination tree of a pattern whose lower part holds (parent(i), i) is
 * parent (natural order); extra edges from i to its ancestors add fill without changing it. */
enum tree_shape { TREE_CHAIN, TREE_STAR, TREE_RANDOM_DEEP, TREE_RANDOM_BUSHY, TREE_FOREST, TREE_DENSE, TREE_ONE };
static const char *shape_name[] = {"chain", "star", "random deep", "random bushy", "forest", "single cblk",
                                   "single column"};

static void tree_graph(enum tree_shape shape, cint n, uint64_t seed, canopy_csc *G)
{
    uint64_t st = seed;
    cint *parent = malloc(sizeof(cint) * ((size_t)n + 1));
    for (cint i = 0; i < n; i++) {
        cint rest = n - 1 - i;
        switch (shape) {
        case TREE_CHAIN: parent[i] = i + 1 < n ? i + 1 : -1; break;
        case TREE_STAR: parent[i] = i + 1 < n ? n - 1 : -1; break;
        case TREE_RANDOM_DEEP: parent[i] = rest > 0 ? i + 1 + (cint)(testutil_rand(&st) % (uint64_t)(rest < 3 ? rest : 3)) : -1; break;
        case TREE_RANDOM_BUSHY: parent[i] = rest > 0 ? i + 1 + (cint)(testutil_rand(&st) % (uint64_t)rest) : -1; break;
        case TREE_FOREST: /* about every 10th vertex a root, a few isolated vertices */
            parent[i] = rest > 0 && testutil_rand(&st) % 10 != 0 ? i + 1 + (cint)(testutil_rand(&st) % (uint64_t)(rest < 20 ? rest : 20)) : -1;
            break;
        case TREE_DENSE: parent[i] = i + 1 < n ? i + 1 : -1; break;
        default: parent[i] = -1; break;
        }
    }
    int64_t cap = (int64_t)n * 8 + (shape == TREE_DENSE ? (int64_t)n * n : 0) + 1, ne = 0;
    cint *ei = malloc(sizeof(cint) * (size_t)cap), *ej = malloc(sizeof(cint) * (size_t)cap);
    for (cint i = 0; i < n; i++) {
        if (parent[i] < 0) continue;
        ei[ne] = parent[i];
        ej[ne++] = i;
        if (shape == TREE_DENSE) {
            for (cint a = parent[i] + 1; a < n; a++) ei[ne] = a, ej[ne++] = i;
            continue;
        }
        /* up to 4 random proper ancestors beyond the parent (fill, several bloks per cblk) */
        int extra = (int)(testutil_rand(&st) % 5);
        cint a = parent[i];
        for (int q = 0; q < extra && parent[a] >= 0; q++) {
            int hops = 1 + (int)(testutil_rand(&st) % 3);
            for (int h = 0; h < hops && parent[a] >= 0; h++) a = parent[a];
            ei[ne] = a;
            ej[ne++] = i;
        }
    }
    graph_from_edges(n, ne, ei, ej, G);
    free(parent);
    free(ei);
    free(ej);
}

/* ---- the invariants ------------------------------------------------------------------------------ */

static int cmp_range(const void *a, const void *b)
{
    const int *x = a, *y = b;
    if (x[0] != y[0]) return x[0] < y[0] ? -1 : 1;
    return x[1] > y[1] ? -1 : x[1] < y[1];
}

/* A family of ranges [a, b) is laminar: sorted by (a ascending, b descending), each range lies in
 * the innermost open one that still contains its start, or after it. */
static int laminar(int *r, int64_t m, char *why, size_t len)
{
    qsort(r, (size_t)m, 2 * sizeof(int), cmp_range);
    int64_t *stack = malloc(sizeof(int64_t) * ((size_t)m + 1));
    int64_t sp = 0;
    int ok = 1;
    for (int64_t q = 0; q < m && ok; q++) {
        int a = r[2 * q], b = r[2 * q + 1];
        while (sp > 0 && r[2 * stack[sp - 1] + 1] <= a) sp--;
        if (sp > 0 && r[2 * stack[sp - 1] + 1] < b) {
            snprintf(why, len, "[%d, %d) and [%d, %d) overlap", r[2 * stack[sp - 1]], r[2 * stack[sp - 1] + 1], a, b);
            ok = 0;
        }
        stack[sp++] = q;
    }
    free(stack);
    return ok;
}

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* a contribution: target, number in the plan, source blok (and its local number, where one) */
typedef struct contrib_t {
    cint j;
    int num;
    cint b;
    int local;
} contrib_t;

static int cmp_contrib(const void *a, const void *b)
{
    const contrib_t *x = a, *y = b;
    if (x->j != y->j) return x->j < y->j ? -1 : 1;
    return x->num < y->num ? -1 : x->num > y->num;
}

static int group_start(const symbolic *S, cint k, cint b)
{
    return b == S->cblk_fblok[k] + 1 || S->blok_fcblk[b] != S->blok_fcblk[b - 1];
}

static cint group_end(const symbolic *S, cint k, cint b)
{
    cint e = b + 1;
    while (e < S->cblk_fblok[k + 1] && S->blok_fcblk[e] == S->blok_fcblk[b]) e++;
    return e;
}

/* (message << 32 | panel row) of every row a contribution writes into remote cblk j */
typedef struct rowbag {
    int64_t *v;
    size_t n, cap;
} rowbag;

static int bag_rows(const symbolic *S, const sched_local *L, const cint *sendq, cint j, int num, cint b0, cint b1, rowbag *bag)
{
    cint q = sendq[j];
    if (q < 0 || num < 0) return -1;
    int seg = 0;
    while (seg + 1 < L->send_nmsg[q] && L->send_cut[(size_t)q * (SCHED_FANIN_SEGS - 1) + seg] <= num) seg++;
    for (cint sb = b0; sb < b1; sb++)
        for (cint g = S->blok_frow[sb]; g <= S->blok_lrow[sb]; g++) {
            cint at = -1;
            for (cint tb = S->cblk_fblok[j]; tb < S->cblk_fblok[j + 1] && at < 0; tb++)
                if (S->blok_frow[tb] <= g && g <= S->blok_lrow[tb]) at = S->blok_coefrow[tb] + g - S->blok_frow[tb];
            if (at < 0) return -1;
            if (bag->n == bag->cap) bag->v = realloc(bag->v, sizeof(int64_t) * (bag->cap *= 2));
            bag->v[bag->n++] = (((int64_t)q * SCHED_FANIN_SEGS + seg) << 32) | at;
        }
    return 0;
}

typedef struct layout_stats {
    int64_t plans, local_plans, empty_ranks, twod_plans, cut_msgs;
} layout_stats;

/* Everything about one plan and the local plans of all its ranks. */
static void check_layout(const symbolic *S, int R, int T, canopy_factorization kind, int cpx, int twod,
                         const char *what, layout_stats *ls)
{
    char ctx[256], why[256];
    snprintf(ctx, sizeof ctx, "%s, %d ranks x %d threads, %s%s, 2D levels %d", what, R, T,
             kind == CANOPY_FACT_LLT ? "LLT" : kind == CANOPY_FACT_LDLT ? "LDLT" : "LU", cpx ? " complex" : "", twod);
    sched_plan P;
    canopy_err err = {0};
    /* every other layout cuts its fan-in buffers (fanin-cuts=on): deferred SUBTREE contributions,
     * several messages per buffer */
    sched_plan_opts o = {.nthreads = T, .kind = kind, .complex_arith = cpx, .nranks = R, .comm_latency = 2e-6,
                         .comm_byte_time = 1e-10, .twod_levels = twod, .fanin_cuts = (R + T) % 2 ? 2 : 0,
                         .update_cap = (R * 7 + T) % 3 == 0 ? 0 : (R * 7 + T) % 3 == 1 ? 64 : 4096};
    REQUIRE(sched_plan_build(S, NULL, &o, &P, &err) == CANOPY_SUCCESS, "%s: %s", ctx, err.msg);
    ls->plans++;
    const sched_dag *D = &P.factor;
    cint n = S->ncblk;
    int TT = R * T, nt = D->ntasks;
    REQUIRE(P.nthreads == TT && P.nranks == R && P.threads_per_rank == T && D->nthreads == TT, "%s: sizes", ctx);
    REQUIRE(sched_dag_check(D, why, sizeof why) == 0, "%s: plan graph: %s", ctx, why);

    /* cblks: rank, range inside the rank, owner inside the range; the ranges are laminar */
    int *rng = malloc(sizeof(int) * 2 * ((size_t)n + (size_t)D->nsnodes + 1));
    for (cint k = 0; k < n; k++) {
        int r = P.cblk_rank[k];
        REQUIRE(r >= 0 && r < R, "%s: cblk %d on rank %d", ctx, (int)k, r);
        REQUIRE(P.cblk_t0[k] >= r * T && P.cblk_t0[k] < P.cblk_t1[k] && P.cblk_t1[k] <= r * T + T,
                      "%s: cblk %d range [%d, %d) outside rank %d", ctx, (int)k, P.cblk_t0[k], P.cblk_t1[k], r);
        REQUIRE(P.cblk_owner[k] >= P.cblk_t0[k] && P.cblk_owner[k] < P.cblk_t1[k], "%s: owner of cblk %d", ctx,
                      (int)k);
        int s = P.cblk_snode[k];
        REQUIRE(s >= 0 && s < D->nsnodes && D->snode_t0[s] == P.cblk_t0[k] && D->snode_t1[s] == P.cblk_t1[k],
                      "%s: Snode of cblk %d is not its range", ctx, (int)k);
        rng[2 * k] = P.cblk_t0[k];
        rng[2 * k + 1] = P.cblk_t1[k];
    }
    for (int s = 0; s < D->nsnodes; s++) {
        rng[2 * (n + s)] = D->snode_t0[s];
        rng[2 * (n + s) + 1] = D->snode_t1[s];
    }
    REQUIRE(laminar(rng, (int64_t)n + D->nsnodes, why, sizeof why), "%s: ranges not laminar: %s", ctx, why);
    free(rng);

    /* tasks: each cblk factored once, each facing group updated once, on the cblk's rank */
    int *factored = calloc((size_t)n + 1, sizeof(int)), *updated = calloc((size_t)S->nblok + 1, sizeof(int));
    int *is2d = calloc((size_t)n + 1, sizeof(int)), *trsm = calloc((size_t)S->nblok + 1, sizeof(int));
    int *upd2d = calloc((size_t)S->nblok + 1, sizeof(int));
    int64_t n2d = 0;
    int *in_subtree = malloc(sizeof(int) * ((size_t)n + 1));
    for (cint k = 0; k < n; k++) in_subtree[k] = -1;
    for (int i = 0; i < nt; i++) {
        cint k = D->cblk[i];
        REQUIRE(k >= 0 && k < n, "%s: task %d cblk", ctx, i);
        int own = D->owner[i], s = D->snode[i];
        REQUIRE(own / T == P.cblk_rank[k], "%s: task %d on thread %d, its cblk %d on rank %d", ctx, i, own, (int)k,
                      P.cblk_rank[k]);
        REQUIRE(own >= D->snode_t0[s] && own < D->snode_t1[s], "%s: task %d outside its Snode", ctx, i);
        REQUIRE(fabs(P.task_end[i] - P.task_start[i] - D->cost[i]) <= 1e-12 * (1 + D->cost[i]),
                      "%s: task %d simulated length", ctx, i);
        if (D->kind[i] == SCHED_TASK_SUBTREE) {
            REQUIRE_(D->first[i] <= k);
            for (cint q = D->first[i]; q <= k; q++) {
                factored[q]++;
                in_subtree[q] = i;
                REQUIRE(P.cblk_task[q] == i, "%s: cblk_task of %d", ctx, (int)q);
                REQUIRE(P.cblk_rank[q] == P.cblk_rank[k] && P.cblk_owner[q] == own,
                              "%s: subtree task %d spans threads", ctx, i);
            }
        } else if (D->kind[i] == SCHED_TASK_PANEL || D->kind[i] == SCHED_TASK_DIAG) {
            factored[k]++;
            REQUIRE(P.cblk_task[k] == i, "%s: cblk_task of %d", ctx, (int)k);
            if (D->kind[i] == SCHED_TASK_DIAG) {
                is2d[k] = 1;
                n2d++;
                REQUIRE(twod != 0, "%s: 2D task without 2D levels", ctx);
                REQUIRE(P.cblk_t1[k] - P.cblk_t0[k] >= 2 || R > 1, "%s: 2D cblk %d with one candidate", ctx, (int)k);
            }
        } else if (D->kind[i] == SCHED_TASK_TRSM) {
            cint b = D->first[i];
            REQUIRE(b > S->cblk_fblok[k] && b < S->cblk_fblok[k + 1] && group_start(S, k, b), "%s: trsm task %d blok",
                    ctx, i);
            trsm[b]++;
            /* after its DIAG, before every UPDATE2D that reads its rows */
            int found = 0;
            for (int e = D->succ_ptr[P.cblk_task[k]]; e < D->succ_ptr[P.cblk_task[k] + 1]; e++) found |= D->succ[e] == i;
            REQUIRE(found, "%s: trsm task %d does not follow its DIAG", ctx, i);
        } else if (D->kind[i] == SCHED_TASK_UPDATE2D) {
            cint b = D->first[i], rb = D->tile[i];
            REQUIRE(b > S->cblk_fblok[k] && rb >= b && rb < S->cblk_fblok[k + 1] && group_start(S, k, b) &&
                        group_start(S, k, rb), "%s: update2d task %d bloks %d, %d", ctx, i, (int)b, (int)rb);
            upd2d[b]++;
            /* one successor: the task factoring the target */
            REQUIRE(D->succ_ptr[i + 1] - D->succ_ptr[i] == 1 && D->succ[D->succ_ptr[i]] == P.cblk_task[S->blok_fcblk[b]],
                    "%s: update2d task %d successor", ctx, i);
            REQUIRE(D->npred[i] == (rb == b ? 1 : 2), "%s: update2d task %d has %d predecessors", ctx, i, D->npred[i]);
        } else {
            REQUIRE(D->kind[i] == SCHED_TASK_UPDATE, "%s: task %d kind %d", ctx, i, D->kind[i]);
            cint b = D->first[i];
            REQUIRE(b > S->cblk_fblok[k] && b < S->cblk_fblok[k + 1] && group_start(S, k, b),
                          "%s: update task %d blok", ctx, i);
            updated[b]++;
        }
    }
    ls->twod_plans += n2d > 0;
    REQUIRE(n2d == P.twod_cblks, "%s: %lld 2D cblks, plan says %lld", ctx, (long long)n2d, (long long)P.twod_cblks);
    for (cint k = 0; k < n; k++) {
        REQUIRE(factored[k] == 1, "%s: cblk %d factored %d times", ctx, (int)k, factored[k]);
        int ng = 0, g = 0;
        for (cint b = S->cblk_fblok[k] + 1; b < S->cblk_fblok[k + 1]; b = group_end(S, k, b)) ng++;
        for (cint b = S->cblk_fblok[k] + 1; b < S->cblk_fblok[k + 1]; b = group_end(S, k, b), g++) {
            REQUIRE(updated[b] == (in_subtree[k] < 0 && !is2d[k]), "%s: group at blok %d updated %d times", ctx, (int)b,
                    updated[b]);
            /* 2D: one TRSM per group, one UPDATE2D per (group, later-or-same group) */
            REQUIRE(trsm[b] == is2d[k] && upd2d[b] == (is2d[k] ? ng - g : 0),
                    "%s: 2D cblk %d group %d: %d trsm, %d update2d of %d groups", ctx, (int)k, g, trsm[b], upd2d[b], ng);
        }
    }
    free(trsm);
    free(upd2d);

    /* simulation: a topological sequence, starts after the predecessors, threads never overlap */
    int *byseq = malloc(sizeof(int) * ((size_t)nt + 1));
    for (int i = 0; i < nt; i++) byseq[i] = -1;
    double mk = 0;
    for (int i = 0; i < nt; i++) {
        REQUIRE(P.task_seq[i] >= 0 && P.task_seq[i] < nt && byseq[P.task_seq[i]] < 0, "%s: task_seq", ctx);
        byseq[P.task_seq[i]] = i;
        mk = fmax(mk, P.task_end[i]);
        for (int e = D->succ_ptr[i]; e < D->succ_ptr[i + 1]; e++) {
            int s = D->succ[e];
            REQUIRE(P.task_seq[i] < P.task_seq[s], "%s: edge %d -> %d against the sequence", ctx, i, s);
            REQUIRE(P.task_end[i] <= P.task_start[s] * (1 + 1e-12) + 1e-15, "%s: task %d starts before %d ends",
                          ctx, s, i);
        }
    }
    REQUIRE(fabs(mk - D->predicted_time) <= 1e-12 * (1 + mk), "%s: makespan", ctx);
    for (int t = 0; t < TT; t++)
        for (int q = D->list_ptr[t] + 1; q < D->list_ptr[t + 1]; q++) {
            int a = D->list[q - 1], b = D->list[q];
            REQUIRE(P.task_seq[a] < P.task_seq[b], "%s: thread %d list out of order", ctx, t);
            REQUIRE(P.task_end[a] <= P.task_start[b] * (1 + 1e-12) + 1e-15, "%s: thread %d runs two tasks at once",
                          ctx, t);
        }
    free(byseq);

    /* contribution numbers of the plan: 0..m-1 per target; private exactly inside a SUBTREE */
    int *seen = calloc((size_t)S->nblok + 1, sizeof(int));
    for (cint k = 0; k < n; k++)
        for (cint b = S->cblk_fblok[k] + 1; b < S->cblk_fblok[k + 1]; b = group_end(S, k, b)) {
            cint j = S->blok_fcblk[b];
            int c = P.blok_contrib[b], priv = in_subtree[k] >= 0 && in_subtree[k] == in_subtree[j];
            REQUIRE((c < 0) == (priv || is2d[k]), "%s: blok %d private %d but number %d", ctx, (int)b, priv, c);
            if (c < 0) continue;
            REQUIRE(c < P.cblk_ncontrib[j], "%s: contribution %d into cblk %d of %d", ctx, c, (int)j,
                          P.cblk_ncontrib[j]);
            REQUIRE(seen[S->cblk_fblok[j] + 0] < P.cblk_ncontrib[j], "%s: too many into %d", ctx, (int)j);
            seen[S->cblk_fblok[j]]++;
        }
    for (int i = 0; i < nt; i++) {
        if (D->kind[i] != SCHED_TASK_UPDATE2D) {
            REQUIRE(P.task_contrib[i] == -1, "%s: task %d (kind %d) numbered", ctx, i, D->kind[i]);
            continue;
        }
        cint j = S->blok_fcblk[D->first[i]];
        REQUIRE(P.task_contrib[i] >= 0 && P.task_contrib[i] < P.cblk_ncontrib[j], "%s: update2d %d number %d of %d", ctx,
                i, P.task_contrib[i], P.cblk_ncontrib[j]);
        seen[S->cblk_fblok[j]]++;
    }
    for (cint j = 0; j < n; j++)
        REQUIRE(seen[S->cblk_fblok[j]] == P.cblk_ncontrib[j], "%s: cblk %d counts %d contributions, plan %d", ctx,
                      (int)j, seen[S->cblk_fblok[j]], P.cblk_ncontrib[j]);
    free(seen);
    /* ... and distinct: sorted by (target, number) they are 0, 1, 2, ... per target */
    {
        contrib_t *all = malloc(sizeof(contrib_t) * ((size_t)S->nblok + (size_t)nt + 1));
        size_t m = 0;
        for (cint k = 0; k < n; k++)
            for (cint b = S->cblk_fblok[k] + 1; b < S->cblk_fblok[k + 1]; b = group_end(S, k, b))
                if (P.blok_contrib[b] >= 0) all[m++] = (contrib_t){S->blok_fcblk[b], P.blok_contrib[b], b, -1};
        for (int i = 0; i < nt; i++)
            if (D->kind[i] == SCHED_TASK_UPDATE2D) all[m++] = (contrib_t){S->blok_fcblk[D->first[i]], P.task_contrib[i], -1, -1};
        qsort(all, m, sizeof *all, cmp_contrib);
        for (size_t q = 0; q < m; q++)
            REQUIRE(all[q].num == (q > 0 && all[q - 1].j == all[q].j ? all[q - 1].num + 1 : 0),
                    "%s: contribution numbers into cblk %d are not 0..m-1", ctx, (int)all[q].j);
        free(all);
    }

    /* fan-in pairs (target j, source rank r), counted here */
    int parts = kind == CANOPY_FACT_LU ? 2 : 1;
    int64_t npairs = 0;
    int64_t *pairs = malloc(sizeof(int64_t) * ((size_t)S->nblok + 1));
    for (cint k = 0; k < n; k++)
        for (cint b = S->cblk_fblok[k] + 1; b < S->cblk_fblok[k + 1]; b++) {
            cint j = S->blok_fcblk[b];
            if (P.cblk_rank[k] != P.cblk_rank[j]) pairs[npairs++] = (int64_t)j * R + P.cblk_rank[k];
        }
    qsort(pairs, (size_t)npairs, sizeof *pairs, cmp64);
    int64_t nu = 0;
    for (int64_t q = 0; q < npairs; q++)
        if (nu == 0 || pairs[q] != pairs[nu - 1]) pairs[nu++] = pairs[q];
    /* buffers the plan cuts into several messages (sched_fanin_cuts): 1 to SCHED_FANIN_SEGS each, the
     * cuts strictly ascending after the first contribution */
    int *nmsg = malloc(sizeof(int) * ((size_t)nu + 1));
    int *cuts = malloc(sizeof(int) * ((size_t)nu + 1) * (SCHED_FANIN_SEGS - 1));
    REQUIRE(sched_fanin_cuts(S, &P, pairs, (size_t)nu, nmsg, cuts, &err) == CANOPY_SUCCESS, "%s: cuts: %s", ctx, err.msg);
    int64_t allmsgs = 0;
    for (int64_t q = 0; q < nu; q++) {
        REQUIRE(nmsg[q] >= 1 && nmsg[q] <= SCHED_FANIN_SEGS, "%s: pair %lld in %d messages", ctx, (long long)q, nmsg[q]);
        for (int x = 0; x + 1 < nmsg[q]; x++)
            REQUIRE(cuts[q * (SCHED_FANIN_SEGS - 1) + x] > (x ? cuts[q * (SCHED_FANIN_SEGS - 1) + x - 1] : 0),
                    "%s: pair %lld: cuts not ascending", ctx, (long long)q);
        allmsgs += nmsg[q];
    }

    /* every rank's share */
    uint64_t *msg_fp = calloc((size_t)nu * SCHED_FANIN_SEGS + 1, sizeof(uint64_t));
    uint64_t *recv_fp = calloc((size_t)nu * SCHED_FANIN_SEGS + 1, sizeof(uint64_t));
    int *covered = calloc((size_t)nt + 1, sizeof(int));
    int64_t sends = 0, recvs = 0;
    int *lseen = calloc((size_t)n + 1, sizeof(int));
    int *lastnum = malloc(sizeof(int) * ((size_t)n + 1));
    contrib_t *trip = malloc(sizeof(contrib_t) * ((size_t)S->nblok + (size_t)nt + 1));
    for (int r = 0; r < R; r++) {
        sched_local L;
        REQUIRE(sched_plan_local(S, &P, r, parts, &L, &err) == CANOPY_SUCCESS, "%s: rank %d: %s", ctx, r, err.msg);
        ls->local_plans++;
        REQUIRE(sched_dag_check(&L.factor, why, sizeof why) == 0, "%s: rank %d local graph: %s", ctx, r, why);
        REQUIRE(L.factor.nthreads == T && L.nthreads == T && L.rank == r && L.nranks == R, "%s: rank %d sizes", ctx, r);
        REQUIRE(L.fanin_msgs == allmsgs * parts, "%s: rank %d: fan-in messages %lld, counted %lld", ctx, r,
                      (long long)L.fanin_msgs, (long long)(allmsgs * parts));
        int nl = L.factor.ntasks;
        if (nl == 0) ls->empty_ranks++;
        int *g2l = malloc(sizeof(int) * ((size_t)nt + 1));
        for (int i = 0; i < nt; i++) g2l[i] = -1;
        for (int l = 0; l < nl; l++) {
            int g = L.task_global[l];
            REQUIRE(g >= 0 && g < nt && covered[g]++ == 0, "%s: rank %d: task %d twice", ctx, r, g);
            REQUIRE(P.cblk_rank[D->cblk[g]] == r, "%s: rank %d holds task %d of rank %d", ctx, r, g,
                          P.cblk_rank[D->cblk[g]]);
            REQUIRE(L.factor.owner[l] == D->owner[g] - r * T, "%s: rank %d task %d owner", ctx, r, g);
            int ls_ = L.factor.snode[l], gs = D->snode[g];
            REQUIRE(L.factor.snode_t0[ls_] == D->snode_t0[gs] - r * T && L.factor.snode_t1[ls_] == D->snode_t1[gs] - r * T,
                          "%s: rank %d task %d Snode", ctx, r, g);
            g2l[g] = l;
        }
        /* each thread's buffers: the largest need among the tasks of its local Snodes' tree it may
         * take (an Snode holding it, or a son of one: the engine's visiting order), by the chunk
         * rule written out here (whole up to the cap, else max(cap, the facing square, the tallest
         * blok) x the group's rows) */
        for (int t = 0; t < T; t++) {
            double eu = 0, ep = 0;
            for (int l = 0; l < nl; l++) {
                int s = L.factor.snode[l], pa = L.factor.snode_parent[s];
                int mine = (t >= L.factor.snode_t0[s] && t < L.factor.snode_t1[s]) ||
                           (pa >= 0 && t >= L.factor.snode_t0[pa] && t < L.factor.snode_t1[pa]);
                if (!mine) continue;
                int kd = L.factor.kind[l];
                cint k = L.factor.cblk[l], k0 = kd == SCHED_TASK_SUBTREE ? L.factor.first[l] : k;
                for (cint q = k0; q <= k; q++) {
                    double pw = (double)S->cblk_stride[q] * (double)(S->cblk_fcol[q + 1] - S->cblk_fcol[q]);
                    if (kd == SCHED_TASK_SUBTREE || ((kd == SCHED_TASK_PANEL || kd == SCHED_TASK_DIAG) && !sched_root_has(&P.root, q)))
                        ep = ep > pw ? ep : pw;
                    if (kd != SCHED_TASK_SUBTREE && kd != SCHED_TASK_UPDATE && kd != SCHED_TASK_UPDATE2D) continue;
                    for (cint b = S->cblk_fblok[q] + 1; b < S->cblk_fblok[q + 1]; b = group_end(S, q, b)) {
                        if (kd != SCHED_TASK_SUBTREE && b != L.factor.first[l]) continue;
                        cint e = group_end(S, q, b), rb = kd == SCHED_TASK_UPDATE2D ? L.factor.tile[l] : b;
                        cint re = kd == SCHED_TASK_UPDATE2D ? group_end(S, q, rb) : S->cblk_fblok[q + 1];
                        double h = 0, rows = 0, tall = 0;
                        for (cint x = b; x < e; x++) h += S->blok_lrow[x] - S->blok_frow[x] + 1;
                        for (cint x = rb; x < re; x++) {
                            double hx = S->blok_lrow[x] - S->blok_frow[x] + 1;
                            rows += hx;
                            if (x >= e) tall = tall > hx ? tall : hx;
                        }
                        double need = rows * h;
                        if (kd != SCHED_TASK_UPDATE2D && o.update_cap > 0 && need > (double)o.update_cap) {
                            need = (double)o.update_cap;
                            need = need > h * h ? need : h * h;
                            need = need > tall * h ? need : tall * h;
                        }
                        eu = eu > need ? eu : need;
                    }
                }
            }
            REQUIRE(L.thread_upd[t] == eu && L.thread_panel[t] == ep,
                    "%s: rank %d thread %d buffers %g, %g; the tasks it may run need %g, %g", ctx, r, t, L.thread_upd[t],
                    L.thread_panel[t], eu, ep);
        }
        /* local edges = the plan's edges inside the rank; ext = parts x remote source ranks */
        int *rpred = calloc((size_t)nl + 1, sizeof(int));
        for (int l = 0; l < nl; l++) {
            int g = L.task_global[l], cnt = 0;
            for (int e = D->succ_ptr[g]; e < D->succ_ptr[g + 1]; e++) cnt += g2l[D->succ[e]] >= 0;
            REQUIRE(L.factor.succ_ptr[l + 1] - L.factor.succ_ptr[l] == cnt, "%s: rank %d task %d local edges", ctx, r, g);
            for (int e = L.factor.succ_ptr[l]; e < L.factor.succ_ptr[l + 1]; e++) {
                int s = L.factor.succ[e], found = 0;
                for (int f = D->succ_ptr[g]; f < D->succ_ptr[g + 1] && !found; f++) found = D->succ[f] == L.task_global[s];
                REQUIRE(found, "%s: rank %d local edge %d -> %d not in the plan", ctx, r, g, L.task_global[s]);
                rpred[s]++;
            }
        }
        for (int l = 0; l < nl; l++)
            REQUIRE(rpred[l] == L.factor.npred[l], "%s: rank %d task %d npred", ctx, r, L.task_global[l]);
        free(rpred);
        for (int l = 0; l < nl; l++) {
            int g = L.task_global[l];
            if (D->kind[g] != SCHED_TASK_PANEL && D->kind[g] != SCHED_TASK_DIAG) {
                REQUIRE(L.ext[l] == 0, "%s: rank %d task %d waits for messages", ctx, r, g);
                continue;
            }
            cint j = D->cblk[g];
            int64_t lo = 0, hi = nu;
            while (lo < hi) {
                int64_t mid = (lo + hi) / 2;
                if (pairs[mid] < (int64_t)j * R) lo = mid + 1;
                else hi = mid;
            }
            int cnt = 0;
            for (int64_t q = lo; q < nu && pairs[q] / R == j; q++) cnt += nmsg[q];
            REQUIRE(L.ext[l] == cnt * parts, "%s: rank %d panel %d waits for %d messages, counted %d", ctx, r,
                          (int)j, L.ext[l], cnt);
            REQUIRE(L.recv_ptr[j + 1] - L.recv_ptr[j] == cnt, "%s: rank %d cblk %d receive list", ctx, r, (int)j);
            for (int64_t q = lo, c = L.recv_ptr[j]; q < nu && pairs[q] / R == j; q++)
                for (int x = 0; x < nmsg[q]; x++, c++)
                    REQUIRE(L.recv_rank[c] == (int)(pairs[q] % R) && L.recv_seg[c] == x,
                            "%s: rank %d cblk %d receives from the wrong rank or message", ctx, r, (int)j);
        }
        for (cint j = 0; j < n; j++)
            if (P.cblk_rank[j] != r)
                REQUIRE(L.recv_ptr[j + 1] == L.recv_ptr[j], "%s: rank %d receives into cblk %d of another rank", ctx,
                              r, (int)j);
        recvs += L.recv_ptr[n];
        /* sends: exactly the pairs with source r */
        int64_t mine = 0;
        for (int64_t q = 0; q < nu; q++) mine += pairs[q] % R == r;
        REQUIRE(L.nsend == mine, "%s: rank %d sends %lld buffers, counted %lld", ctx, r, (long long)L.nsend,
                      (long long)mine);
        for (cint q = 0, c = 0; q < L.nsend; q++) {
            cint j = L.send_cblk[q];
            REQUIRE(q == 0 || L.send_cblk[q - 1] < j, "%s: rank %d send list order", ctx, r);
            while (c < nu && !(pairs[c] % R == r && pairs[c] / R == j)) c++;
            REQUIRE(c < nu, "%s: rank %d sends to cblk %d without a crossing update", ctx, r, (int)j);
        }
        for (cint q = 0; q < L.nsend; q++) {
            /* the sender's messages are the receiver's: the same count for the same pair */
            int64_t key = (int64_t)L.send_cblk[q] * R + r, *at = bsearch(&key, pairs, (size_t)nu, sizeof *pairs, cmp64);
            REQUIRE(at != NULL && L.send_nmsg[q] == nmsg[at - pairs], "%s: rank %d buffer %d: %d messages", ctx, r, (int)q,
                    L.send_nmsg[q]);
            /* every message is sent: the last cut comes before the rank's last contribution */
            int nm = L.send_nmsg[q];
            REQUIRE(nm == 1 || L.send_cut[(size_t)q * (SCHED_FANIN_SEGS - 1) + nm - 2] < L.cblk_ncontrib[L.send_cblk[q]],
                    "%s: rank %d buffer %d: a cut at or after its %d contributions", ctx, r, (int)q,
                    L.cblk_ncontrib[L.send_cblk[q]]);
            ls->cut_msgs += nm - 1;
            sends += L.send_nmsg[q];
        }
        /* the compressed messages, sent side: every message holds exactly the panel rows that the
         * contributions it carries write (the local numbers against the cuts, as the workers count
         * them), its map numbering them in order */
        {
            cint *sendq = malloc(sizeof(cint) * ((size_t)n + 1));
            for (cint j = 0; j < n; j++) sendq[j] = -1;
            for (cint q = 0; q < L.nsend; q++) sendq[L.send_cblk[q]] = q;
            /* (message, panel row) of every contribution's every row: the groups numbered in
             * L.blok_contrib (rows from the group on), the local UPDATE2D tasks (one group's rows) */
            rowbag bag = {malloc(sizeof(int64_t) * 1024), 0, 1024};
            for (cint k = 0; k < n; k++) {
                if (P.cblk_rank[k] != r) continue;
                for (cint b = S->cblk_fblok[k] + 1; b < S->cblk_fblok[k + 1]; b = group_end(S, k, b)) {
                    cint j = S->blok_fcblk[b];
                    if (sched_local_contrib(&L, S, k, b) >= 0 && P.cblk_rank[j] != r)
                        REQUIRE(bag_rows(S, &L, sendq, j, sched_local_contrib(&L, S, k, b), b, S->cblk_fblok[k + 1], &bag) == 0,
                                "%s: rank %d: a contribution of cblk %d into cblk %d outside its buffer", ctx, r, (int)k, (int)j);
                }
            }
            for (int i = 0; i < L.factor.ntasks; i++) {
                if (L.factor.kind[i] != SCHED_TASK_UPDATE2D) continue;
                cint k = L.factor.cblk[i], j = S->blok_fcblk[L.factor.first[i]];
                if (P.cblk_rank[j] != r)
                    REQUIRE(bag_rows(S, &L, sendq, j, L.task_contrib[i], L.factor.tile[i], group_end(S, k, L.factor.tile[i]), &bag) == 0,
                            "%s: rank %d: a 2D contribution of cblk %d into cblk %d outside its buffer", ctx, r, (int)k, (int)j);
            }
            int64_t *rowsof = bag.v;
            size_t m = bag.n;
            qsort(rowsof, m, sizeof *rowsof, cmp64);
            size_t x = 0;
            for (cint q = 0; q < L.nsend; q++)
                for (int seg = 0; seg < L.send_nmsg[q]; seg++) {
                    int64_t key = (int64_t)q * SCHED_FANIN_SEGS + seg;
                    cint j = L.send_cblk[q], next = 0;
                    const cint *map = L.fan_rmap + L.send_moff[key];
                    int64_t jkey = (int64_t)j * R + r, *at = bsearch(&jkey, pairs, (size_t)nu, sizeof *pairs, cmp64);
                    for (cint i = 0; i < S->cblk_stride[j]; i++) {
                        int held = x < m && (rowsof[x] >> 32) == key && (cint)(rowsof[x] & 0xffffffff) == i;
                        REQUIRE((map[i] >= 0) == held, "%s: rank %d: message %d of its buffer of cblk %d: panel row %d %s",
                                ctx, r, seg, (int)j, (int)i, held ? "missing" : "held but never written");
                        if (held) {
                            REQUIRE(map[i] == next++, "%s: rank %d: cblk %d: rows out of order", ctx, r, (int)j);
                            msg_fp[(size_t)(at - pairs) * SCHED_FANIN_SEGS + seg] += (uint64_t)i * 2654435761u + 1;
                        }
                        while (x < m && (rowsof[x] >> 32) == key && (cint)(rowsof[x] & 0xffffffff) == i) x++;
                    }
                    REQUIRE(next == L.send_rows[key] && next > 0, "%s: rank %d: cblk %d: %d rows, counted %d", ctx, r, (int)j,
                            (int)L.send_rows[key], (int)next);
                    REQUIRE(x == m || (rowsof[x] >> 32) > key, "%s: rank %d: rows past cblk %d's panel", ctx, r, (int)j);
                }
            REQUIRE(x == m, "%s: rank %d: contributions into buffers it does not send", ctx, r);
            free(rowsof);
            free(sendq);
        }
        /* received side: each message's rows ascending, the same rows as its sender's (fingerprints,
         * compared after every rank), and a pair's messages together exactly the panel rows the
         * sender's updates write, found here row by row (a few ranks: it is slow) */
        for (cint j = 0; j < n; j++)
            for (cint q = L.recv_ptr[j]; q < L.recv_ptr[j + 1]; q++) {
                int src = L.recv_rank[q];
                const cint *rows = L.fan_rmap + L.recv_moff[q];
                int64_t jkey = (int64_t)j * R + src, *at = bsearch(&jkey, pairs, (size_t)nu, sizeof *pairs, cmp64);
                REQUIRE(at != NULL && L.recv_rows[q] > 0, "%s: rank %d: an empty or unknown message into cblk %d", ctx, r, (int)j);
                for (cint i = 0; i < L.recv_rows[q]; i++) {
                    REQUIRE(rows[i] >= 0 && rows[i] < S->cblk_stride[j] && (i == 0 || rows[i] > rows[i - 1]),
                            "%s: rank %d: message from rank %d into cblk %d: rows out of order", ctx, r, src, (int)j);
                    recv_fp[(size_t)(at - pairs) * SCHED_FANIN_SEGS + L.recv_seg[q]] += (uint64_t)rows[i] * 2654435761u + 1;
                }
            }
        if (R <= 8)
            for (cint j = 0; j < n; j++)
                for (cint q0 = L.recv_ptr[j], q1; q0 < L.recv_ptr[j + 1]; q0 = q1) {
                    int src = L.recv_rank[q0];
                    for (q1 = q0; q1 < L.recv_ptr[j + 1] && L.recv_rank[q1] == src; q1++) {}
                    cint st = S->cblk_stride[j];
                    char *touched = calloc((size_t)st + 1, 1), *held = calloc((size_t)st + 1, 1);
                    for (cint q = q0; q < q1; q++)
                        for (cint i = 0; i < L.recv_rows[q]; i++) held[L.fan_rmap[L.recv_moff[q] + i]] = 1;
                    for (cint k = 0; k < n; k++) {
                        if (P.cblk_rank[k] != src) continue;
                        cint first = -1;
                        for (cint b = S->cblk_fblok[k] + 1; b < S->cblk_fblok[k + 1] && first < 0; b++)
                            if (S->blok_fcblk[b] == j) first = b;
                        if (first < 0) continue;
                        /* every row of k from its first blok facing j on, located in j's bloks */
                        for (cint b = first; b < S->cblk_fblok[k + 1]; b++)
                            for (cint g = S->blok_frow[b]; g <= S->blok_lrow[b]; g++) {
                                cint at = -1;
                                for (cint tb = S->cblk_fblok[j]; tb < S->cblk_fblok[j + 1] && at < 0; tb++)
                                    if (S->blok_frow[tb] <= g && g <= S->blok_lrow[tb])
                                        at = S->blok_coefrow[tb] + g - S->blok_frow[tb];
                                REQUIRE(at >= 0, "%s: rank %d: row %d of cblk %d is not in cblk %d", ctx, r, (int)g,
                                        (int)k, (int)j);
                                touched[at] = 1;
                            }
                    }
                    for (cint i = 0; i < st; i++)
                        REQUIRE(held[i] == touched[i], "%s: rank %d: messages of cblk %d from rank %d: panel row %d %s", ctx,
                                r, (int)j, src, (int)i, touched[i] ? "missing" : "held but never written");
                    free(touched);
                    free(held);
                }
        /* local contribution numbers: 0..m-1 per target, in the plan's order */
        for (cint j = 0; j < n; j++) {
            lseen[j] = 0;
            lastnum[j] = -1;
        }
        for (cint k = 0; k < n; k++) {
            for (cint b = S->cblk_fblok[k] + 1; b < S->cblk_fblok[k + 1]; b = group_end(S, k, b)) {
                int c = sched_local_contrib(&L, S, k, b);
                if (P.cblk_rank[k] != r) {
                    REQUIRE(c < 0, "%s: rank %d numbers another rank's blok %d", ctx, r, (int)b);
                    continue;
                }
                REQUIRE((c < 0) == (P.blok_contrib[b] < 0), "%s: rank %d blok %d private mismatch", ctx, r, (int)b);
                if (c < 0) continue;
                cint j = S->blok_fcblk[b];
                REQUIRE(c < L.cblk_ncontrib[j], "%s: rank %d number %d into %d of %d", ctx, r, c, (int)j,
                              L.cblk_ncontrib[j]);
                lseen[j]++;
            }
        }
        for (int l = 0; l < nl; l++) {
            int g = L.task_global[l];
            REQUIRE((L.task_contrib[l] >= 0) == (D->kind[g] == SCHED_TASK_UPDATE2D), "%s: rank %d task %d numbered %d", ctx,
                    r, g, L.task_contrib[l]);
            if (L.task_contrib[l] >= 0) lseen[S->blok_fcblk[D->first[g]]]++;
        }
        for (cint j = 0; j < n; j++)
            REQUIRE(lseen[j] == L.cblk_ncontrib[j], "%s: rank %d counts %d into %d, plan %d", ctx, r, lseen[j], (int)j,
                          L.cblk_ncontrib[j]);
        /* the plan's order: sorted by (target, plan number), the local numbers are 0, 1, 2, ... */
        size_t m = 0;
        for (cint k = 0; k < n; k++)
            for (cint b = S->cblk_fblok[k] + 1; b < S->cblk_fblok[k + 1]; b = group_end(S, k, b))
                if (P.cblk_rank[k] == r && sched_local_contrib(&L, S, k, b) >= 0)
                    trip[m++] = (contrib_t){S->blok_fcblk[b], P.blok_contrib[b], b, sched_local_contrib(&L, S, k, b)};
        for (int l = 0; l < nl; l++)
            if (L.task_contrib[l] >= 0) /* b = -1 - local task */
                trip[m++] = (contrib_t){S->blok_fcblk[D->first[L.task_global[l]]], P.task_contrib[L.task_global[l]], -1 - l, -1};
        qsort(trip, m, sizeof *trip, cmp_contrib);
        for (size_t q = 0; q < m; q++) {
            cint b = trip[q].b, j = trip[q].j;
            int local = b >= 0 ? trip[q].local : L.task_contrib[-1 - b];
            REQUIRE(local == ++lastnum[j], "%s: rank %d: renumbering into cblk %d breaks the plan's order", ctx, r, (int)j);
        }
        /* static lists: this rank's tasks of each thread, in the plan's order */
        for (int t = 0; t < T; t++) {
            int a = D->list_ptr[r * T + t], b = D->list_ptr[r * T + t + 1];
            REQUIRE(L.factor.list_ptr[t + 1] - L.factor.list_ptr[t] == b - a, "%s: rank %d thread %d list", ctx, r, t);
            for (int q = a; q < b; q++)
                REQUIRE(L.task_global[L.factor.list[L.factor.list_ptr[t] + q - a]] == D->list[q],
                              "%s: rank %d thread %d list differs from the plan's", ctx, r, t);
        }
        for (cint k = 0; k < n; k++) {
            if (P.cblk_rank[k] == r) {
                REQUIRE(L.cblk_task[k] >= 0 && L.task_global[L.cblk_task[k]] == P.cblk_task[k], "%s: rank %d cblk_task",
                              ctx, r);
                REQUIRE(L.cblk_owner[k] == P.cblk_owner[k] - r * T, "%s: rank %d cblk_owner", ctx, r);
            } else {
                REQUIRE(L.cblk_task[k] == -1 && L.cblk_owner[k] == -1, "%s: rank %d claims cblk %d", ctx, r, (int)k);
            }
        }
        free(g2l);
        sched_local_free(&L);
    }
    for (int i = 0; i < nt; i++) REQUIRE(covered[i] == 1, "%s: task %d on %d ranks", ctx, i, covered[i]);
    for (int64_t x = 0; x < nu * SCHED_FANIN_SEGS; x++)
        REQUIRE(msg_fp[x] == recv_fp[x], "%s: pair %lld, message %d: the sender's rows are not the receiver's", ctx,
                (long long)(x / SCHED_FANIN_SEGS), (int)(x % SCHED_FANIN_SEGS));
    free(msg_fp);
    free(recv_fp);
    REQUIRE(sends == allmsgs && recvs == allmsgs, "%s: %lld sends, %lld receives, %lld messages", ctx, (long long)sends,
                  (long long)recvs, (long long)allmsgs);
    free(covered);
    free(lseen);
    free(lastnum);
    free(trip);
    free(pairs);
    free(nmsg);
    free(cuts);
    free(factored);
    free(updated);
    free(in_subtree);
    free(is2d);

    /* one rank: the solve graph too */
    if (R == 1) {
        sched_dag SD;
        REQUIRE(sched_plan_solve_dag(S, &P, &SD, &err) == CANOPY_SUCCESS, "%s: solve graph: %s", ctx, err.msg);
        REQUIRE(sched_dag_check(&SD, why, sizeof why) == 0, "%s: solve graph: %s", ctx, why);
        sched_dag_free(&SD);
    }
    sched_plan_free(&P);
}


/* ---- the grid ------------------------------------------------------------------------------------ */

/* Every P x T of the lists (quick: a diagonal walk through them, every P and every T at least
 * once), each kind (@p all_kinds) or one kind per layout in turn, on the structure of G under
 * @p perm split for P x T threads as the library does. */
static void grid(const canopy_csc *G, const cint *perm, int amalg, int all_kinds, int cpx, const char *what,
                 layout_stats *ls)
{
    int q = quick();
    symbolic S;
    int built = -1;
    for (int a = 0; a < NP; a++)
        for (int b = 0; b < NT; b++) {
            if (q && (a + b) % 4 != 0 && a != 0 && b != NT - 1) continue;
            int R = P_list[a], T = T_list[b], all = R * T;
            /* the split depends on P x T only through 1 / (2 P T) for large ones: rebuild per total */
            if (built != all) {
                if (built >= 0) symbolic_free(&S);
                structure(G, perm, all, amalg, &S);
                built = all;
            }
            /* 2D tasks: none, in the top 3 levels, or as the simulation chooses, in turn */
            static const int twod[] = {0, 3, -1};
            for (int k = 0; k < 3; k++)
                if (all_kinds || k == (a + b) % 3)
                    check_layout(&S, R, T, kinds[k], cpx && k == 2, twod[(a + 2 * b + k) % 3], what, ls);
        }
    if (built >= 0) symbolic_free(&S);
}

static void report(const char *what, const layout_stats *ls)
{
    printf("%-28s %6lld plans (%lld with 2D tasks), %8lld local plans, %7lld ranks with no task, %lld messages from cuts\n",
           what, (long long)ls->plans, (long long)ls->twod_plans, (long long)ls->local_plans, (long long)ls->empty_ranks,
           (long long)ls->cut_msgs);
}

/* Real matrices: (file, complex costs). The structure is that of A + A^T under SCOTCH's ordering,
 * as analyze computes it. */
static const struct {
    const char *file;
    int cpx;
} real_cases[] = {
    {"sherman3.mtx", 0},      /* unsymmetric, 2364 cblks */
    {"bcsstk14.rsa", 0},      /* SPD structural */
    {"hangGlider_2.mtx", 0},  /* KKT */
    {"helmholtz_2D.mtx.gz", 1}, /* complex symmetric */
    {"west0479.mtx", 0},      /* small, very unsymmetric */
    {"494_bus.mtx", 0},       /* small SPD, long chains */
};

/* The structure of A + A^T under SCOTCH's ordering, as analyze computes it, over the grid. */
static int64_t matrix_grid(canopy_csc *A, int cpx, const char *what)
{
    canopy_csc G;
    canopy_err err = {0};
    ck_assert_int_eq(matrix_graph(A, &G, &err), CANOPY_SUCCESS);
    cint *perm = malloc(sizeof(cint) * ((size_t)G.n + 1)), *iperm = malloc(sizeof(cint) * ((size_t)G.n + 1));
    ck_assert_msg(order_compute(&G, CANOPY_ORDER_SCOTCH, NULL, 2, perm, iperm, &err) == CANOPY_SUCCESS, "%s", err.msg);
    layout_stats ls = {0};
    grid(&G, perm, 1, 1, cpx, what, &ls);
    report(what, &ls);
    free(perm);
    free(iperm);
    matrix_free(&G);
    return ls.cut_msgs;
}

START_TEST(real_matrices)
{
    const char *dir = testutil_matrix_dir();
    if (dir == NULL) {
        printf("skip %s: shared matrices not found\n", real_cases[_i].file);
        return;
    }
    char path[4300], msg[512];
    canopy_csc A;
    snprintf(path, sizeof path, "%s/%s", dir, real_cases[_i].file);
    ck_assert_msg(canopy_read_matrix(path, &A, msg, sizeof msg) == CANOPY_SUCCESS, "%s", msg);
    matrix_grid(&A, real_cases[_i].cpx, real_cases[_i].file);
    canopy_csc_free(&A);
}
END_TEST

/* Runs without the shared matrices too. */
START_TEST(laplacian)
{
    canopy_csc A;
    ck_assert_int_eq(canopy_generate_laplacian(12, 11, 10, 7, &A), CANOPY_SUCCESS);
    /* the layouts with fanin-cuts=on cut some buffers here */
    ck_assert_msg(matrix_grid(&A, 0, "Laplacian 12x11x10") > 0, "Laplacian 12x11x10: no fan-in buffer cut");
    canopy_csc_free(&A);
}
END_TEST

/* Generated trees: (shape, vertices, amalgamation). */
static const struct {
    enum tree_shape shape;
    cint n;
    int amalg;
} tree_cases[] = {
    {TREE_CHAIN, 300, 0},        /* a chain of 300 cblks: no parallelism at all */
    {TREE_STAR, 200, 0},         /* 199 leaves under one root */
    {TREE_RANDOM_DEEP, 500, 0},  /* long paths, few branches */
    {TREE_RANDOM_BUSHY, 500, 0}, /* many branches */
    {TREE_RANDOM_BUSHY, 500, 1}, /* the same, amalgamated (wider cblks, fewer of them) */
    {TREE_FOREST, 400, 0},       /* about 40 trees and isolated vertices */
    {TREE_RANDOM_BUSHY, 20, 0},  /* fewer cblks than threads */
    {TREE_DENSE, 12, 1},         /* one column block */
    {TREE_ONE, 1, 1},            /* one column */
};

START_TEST(generated_trees)
{
    uint64_t seed = 0x9E3779B97F4A7C15ull + 7919u * (uint64_t)_i;
    canopy_csc G;
    tree_graph(tree_cases[_i].shape, tree_cases[_i].n, seed, &G);
    char what[64];
    snprintf(what, sizeof what, "%s, n = %d%s", shape_name[tree_cases[_i].shape], (int)tree_cases[_i].n,
             tree_cases[_i].amalg ? ", amalgamated" : "");
    /* the structure is as generated: the shape is the point */
    symbolic S;
    structure(&G, NULL, 1, tree_cases[_i].amalg, &S);
    if (tree_cases[_i].shape == TREE_DENSE || tree_cases[_i].shape == TREE_ONE) ck_assert_int_eq(S.ncblk, 1);
    if (tree_cases[_i].shape == TREE_CHAIN) ck_assert_msg(S.ncblk >= tree_cases[_i].n / 2, "chain: %d cblks", (int)S.ncblk);
    symbolic_free(&S);
    layout_stats ls = {0};
    grid(&G, NULL, tree_cases[_i].amalg, !quick(), 1, what, &ls);
    report(what, &ls);
    matrix_free(&G);
}
END_TEST

/* The checker itself: an overlapping family is caught. */
START_TEST(laminar_checker)
{
    char why[128];
    int ok[] = {0, 8, 0, 4, 4, 8, 1, 3, 2, 3, 5, 6};
    ck_assert(laminar(ok, 6, why, sizeof why));
    int bad[] = {0, 8, 0, 3, 1, 3, 0, 2};
    ck_assert(!laminar(bad, 4, why, sizeof why));
    ck_assert_msg(strstr(why, "overlap") != NULL, "%s", why);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("plan_layouts");
    TCase *tc = tcase_create("plan_layouts");
    tcase_set_timeout(tc, 1200);
    tcase_add_test(tc, laminar_checker);
    tcase_add_loop_test(tc, generated_trees, 0, (int)(sizeof tree_cases / sizeof *tree_cases));
    tcase_add_test(tc, laplacian);
    tcase_add_loop_test(tc, real_matrices, 0, (int)(sizeof real_cases / sizeof *real_cases));
    suite_add_tcase(s, tc);
    return testutil_run(s);
}
