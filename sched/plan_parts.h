/*
 * What the parts of the plan share (sched/plan.h is the plan's public face): the private tables of
 * one plan being built, its scratch of per-task data, small walkers over the block structure, and
 * the passes each part offers the driver. plan.c: the driver (checks, owners, 2D choice, the
 * simulation across ranks, the sweeps); plan_costs.c: task costs and the cblk tree;
 * plan_mapping.c: proportional mapping and Snodes; plan_tasks.c: tasks, edges, contribution
 * numbers. Not for use outside sched/plan*.c.
 */
#ifndef CANOPY_SCHED_PLAN_PARTS_H
#define CANOPY_SCHED_PLAN_PARTS_H

#include "plan.h"

static inline canopy_status plan_nomem(canopy_err *err)
{
    return err && err->status ? err->status : CANOPY_ERR_NOMEM;
}

/* A key and an index: the mapping's sort scratch (plan_mapping.c). */
typedef struct plan_pair {
    double key;
    cint idx;
} plan_pair;

/* The private tables of one plan being built (plan_build_one in plan.c owns and frees them). */
typedef struct plan_build {
    const symbolic *S;
    const sched_cost_model *cm;
    canopy_factorization kind;
    double scale;     /* 4 for complex arithmetic */
    int T;
    cint n;           /* ncblk; node n is the virtual root over the roots */
    double *ucost;    /* [nblok] at a group's first blok: its update task's cost */
    double *pcost;    /* [n] panel cost */
    cint *child_ptr;  /* [n + 2] children of node k: child[child_ptr[k] .. child_ptr[k+1]-1], ascending */
    cint *child;      /* [n] */
    double *sub;      /* [n + 1] cost of the subtree */
    cint *first;      /* [n] first (smallest) cblk of the subtree */
    cint *size;       /* [n] cblks in the subtree */
    cint *sroot;      /* [n] root of the SUBTREE task holding the cblk, -1 if none */
    int *t0, *t1;     /* [n + 1] candidate threads (the virtual root: [0, T)) */
    struct plan_pair *pairs; /* [n + 1] mapping scratch */
    double *tload;    /* [T] mapping scratch */
    int *theap;       /* [T] mapping scratch */
    int R;            /* ranks; T = R x threads per rank */
    int mapping;      /* enum sched_mapping: the ranks' weights */
    const int *pin;   /* sched_plan_opts.pin */
    int *rank;        /* [n] the rank of each cblk (R > 1) */
    unsigned char *shared; /* [n] the cblk had several candidate ranks */
    unsigned char *twod;   /* [n] the cblk's panel and updates are 2D tasks */
    cint *gstart;          /* [nblok] scratch: first bloks of one cblk's facing groups */
    cint root_first;       /* cblks from here on are the grid's root (sched/root.h): no updates, no 2D */
    int xchunk;            /* top2d flat: threads per rank, for the chunks of a tiled cblk's UPDATE2Ds
                              (plan_chunked); 0: one UPDATE2D per pair of groups */
    cint *cpre;            /* [nblok] scratch: chunks before each column group (plan_chunk_prefix) */
} plan_build;

/* Per-task data the simulation needs besides the graph. */
typedef struct plan_tasks {
    int *cand_t0, *cand_t1; /* [ntasks] candidate threads */
    int *pref;              /* [ntasks] preferred thread on ties: the data owner */
    cint *serial;           /* [ntasks] UPDATE: target cblk (updates into it are serialized), else -1 */
} plan_tasks;

/* Panel row just after blok b's rows (the stride after the last blok). */
static inline cint plan_row_end(const symbolic *S, cint k, cint b)
{
    return b < S->cblk_fblok[k + 1] ? S->blok_coefrow[b] : S->cblk_stride[k];
}

/* Id of the UPDATE2D task (columns of group x, rows of group y >= x) of the 2D cblk whose DIAG
 * task is d0 with ng facing groups: after the DIAG and the ng TRSMs, by x then y. */
static inline int plan_update2d_id(int d0, int ng, int x, int y)
{
    return d0 + 1 + ng + x * ng - x * (x - 1) / 2 + (y - x);
}

/*
 * top2d flat: a tiled cblk (2D and shared by several ranks) whose UPDATE2Ds go by chunks. Column
 * group x (0 = the nearest target) has its rows' groups x..ng-1 cut into plan_nchunks chunks of
 * consecutive groups, balanced to one group (chunk c from x + c * m / C, m = ng - x): one UPDATE2D
 * per chunk, run on the target's rank as the pairs were (sched_flat_chunks says why).
 */
static inline int plan_chunked(const plan_build *B, cint k)
{
    return B->xchunk > 0 && B->twod[k] && B->t1[k] - B->t0[k] > B->T / B->R;
}

/* Chunks of column group x with m groups from its own on: ceil(C / (x + 1)), at most m. */
static inline int plan_nchunks(const plan_build *B, int x, int m)
{
    int c0 = sched_flat_chunks(B->xchunk), c = (c0 + x) / (x + 1);
    return m < c ? m : c;
}

/* B->cpre[x] = the chunks of the column groups before x of a chunked cblk with ng groups, x <= ng;
 * returns the total. */
static inline int64_t plan_chunk_prefix(plan_build *B, int ng)
{
    int64_t t = 0;
    for (int x = 0; x < ng; x++) {
        B->cpre[x] = (cint)t;
        t += plan_nchunks(B, x, ng - x);
    }
    B->cpre[ng] = (cint)t;
    return t;
}

/* Id of the UPDATE2D of a chunked cblk (DIAG task d0, ng groups, B->cpre filled for it) for column
 * group x whose rows hold group y >= x. */
static inline int plan_chunk_id(const plan_build *B, int d0, int ng, int x, int y)
{
    int m = ng - x, c = (int)(((int64_t)(y - x + 1) * plan_nchunks(B, x, m) - 1) / m);
    return d0 + 1 + ng + (int)B->cpre[x] + c;
}

/* ---- plan_costs.c ---------------------------------------------------------------------------- */

/* What kdiag of src/numeric/factor_template.c calls for cblk k. */
double plan_diag_cost(const plan_build *B, cint k);
/* What koffdiag calls for m rows of cblk k. */
double plan_offdiag_cost(const plan_build *B, cint k, double m);
/* What kupdate_rows calls for k's rows in bloks rb0..rb1-1 against its bloks fb0..fb1-1 facing
 * one cblk (fb0 <= rb0). */
double plan_update_cost(const plan_build *B, cint k, cint fb0, cint fb1, cint rb0, cint rb1);
/* Facing groups of cblk k. */
cint plan_ngroups(const symbolic *S, cint k);
/* Panel and update costs (B->pcost, B->ucost) and cblk costs (@p cblk_cost, when not NULL). */
void plan_unit_costs(plan_build *B, double *cblk_cost);
/* Panel and update costs, cblk costs (P->cblk_cost), the tree and the subtree sums. */
void plan_costs_and_tree(plan_build *B, sched_plan *P);

/* ---- plan_mapping.c -------------------------------------------------------------------------- */

/* Give node's candidate threads B->t0/t1[node] to its children (proportional mapping). */
void plan_split(plan_build *B, cint node);
/* Two-level mapping onto B->R ranks, then each rank's threads (plan.h). */
canopy_status plan_map_ranks(plan_build *B, sched_plan *P, canopy_err *err);
/* The Snode tree of the candidate ranges (P->factor's Snodes) and P->cblk_snode. */
canopy_status plan_snodes(plan_build *B, sched_plan *P, canopy_err *err);

/* ---- plan_tasks.c ---------------------------------------------------------------------------- */

/* B->sroot: the SUBTREE tasks, maximal subtrees on one thread costing at most @p limit. */
void plan_subtrees(plan_build *B, double limit);
/* The tasks of P->factor, the per-task arrays, P->cblk_task and P->total_cost. */
canopy_status plan_make_tasks(plan_build *B, sched_plan *P, plan_tasks *X, canopy_err *err);
/* The edges of P->factor; @p stamp: [n] scratch. */
canopy_status plan_edges(plan_build *B, sched_plan *P, cint *stamp, canopy_err *err);
/* The contribution numbers (blok_contrib, task_contrib, cblk_ncontrib) from the simulated times. */
canopy_status plan_contributions(plan_build *B, sched_plan *P, canopy_err *err);

#endif
