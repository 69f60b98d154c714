/*
 * The solve graph of a plan (sched/plan.h: sched_plan_solve_dag): a FORWARD and a BACKWARD task
 * per unit of the factorization (a SUBTREE task's range or one cblk), on the same owners and
 * Snodes, so the solve reads each panel where the factorization wrote it.
 */
#include "plan.h"
#include "simulate.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

static canopy_status solve_nomem(canopy_err *err)
{
    return err && err->status ? err->status : CANOPY_ERR_NOMEM;
}

/* Relative cost of one substitution over a unit: its panel entries, twice (read and update),
 * at a nominal memory-bound rate. Only the priorities use it. */
static double plan_solve_cost(const symbolic *S, cint f, cint r)
{
    double e = 0;
    for (cint k = f; k <= r; k++) {
        double w = (double)(S->cblk_fcol[k + 1] - S->cblk_fcol[k]), m = (double)S->cblk_stride[k] - w;
        e += w * (w + 1) / 2 + m * w;
    }
    return 2 * e * 1e-9;
}

canopy_status sched_plan_solve_dag(const symbolic *S, const sched_plan *P, sched_dag *D, canopy_err *err)
{
    if (S == NULL || P == NULL || D == NULL)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "sched_plan_solve_dag: NULL argument");
    memset(D, 0, sizeof *D);
    cint n = S->ncblk;
    if (P->ncblk != n || P->nthreads < 1 || (n > 0 && (!P->cblk_task || !P->cblk_owner || !P->cblk_snode)) ||
        P->factor.nsnodes < 1)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "sched_plan_solve_dag: plan does not match the structure");
    const sched_dag *F = &P->factor;
    int T = P->nthreads, ns = F->nsnodes;
    size_t n1 = (size_t)n + 1;
    canopy_status st = CANOPY_SUCCESS;
    int *uof = canopy_alloc(n1, sizeof(int), "solve graph scratch", err);
    cint *ufirst = canopy_alloc(n1, sizeof(cint), "solve graph scratch", err);
    cint *uroot = canopy_alloc(n1, sizeof(cint), "solve graph scratch", err);
    int *stamp = canopy_alloc(n1, sizeof(int), "solve graph scratch", err);
    int *outdeg = canopy_calloc(n1 + 1, sizeof(int), "solve graph scratch", err);
    int *indeg = canopy_calloc(n1 + 1, sizeof(int), "solve graph scratch", err);
    int *fill = canopy_alloc(n1 + (size_t)T, sizeof(int), "solve graph scratch", err);
    int *pdst = NULL;
    if (!uof || !ufirst || !uroot || !stamp || !outdeg || !indeg || !fill) {
        st = solve_nomem(err);
        goto out;
    }
    /* units: a SUBTREE task's range, or one cblk */
    int u = 0;
    for (cint k = 0; k < n; k++) {
        int t = P->cblk_task[k];
        int in_sub = t >= 0 && t < F->ntasks && F->kind[t] == SCHED_TASK_SUBTREE;
        if (in_sub && k != F->first[t]) {
            uof[k] = uof[k - 1];
            continue;
        }
        ufirst[u] = k;
        uroot[u] = in_sub ? F->cblk[t] : k;
        uof[k] = u++;
    }
    /* distinct (source unit -> facing unit) pairs: count, then fill */
    for (int x = 0; x < u; x++) stamp[x] = -1;
    int64_t np = 0;
    for (int pass = 0; pass < 2; pass++) {
        int64_t q = 0;
        for (int x = 0; x < u; x++) {
            for (cint k = ufirst[x]; k <= uroot[x]; k++)
                for (cint b = S->cblk_fblok[k] + 1; b < S->cblk_fblok[k + 1]; b++) {
                    int y = uof[S->blok_fcblk[b]];
                    if (y == x || stamp[y] == 2 * x + pass) continue;
                    stamp[y] = 2 * x + pass;
                    if (pass == 0) {
                        outdeg[x]++;
                        indeg[y]++;
                    } else {
                        pdst[q] = y;
                    }
                    q++;
                }
        }
        if (pass == 0) {
            np = q;
            if (np + 2 * (int64_t)u >= INT_MAX) {
                st = canopy_err_set(err, CANOPY_ERR_TOO_LARGE, "solve graph: too many edges");
                goto out;
            }
            pdst = canopy_alloc((size_t)np + 1, sizeof(int), "solve graph scratch", err);
            if (pdst == NULL) {
                st = solve_nomem(err);
                goto out;
            }
        }
    }
    int nt = 2 * u;
    D->nthreads = T;
    D->ntasks = nt;
    size_t m = (size_t)nt + 1;
    D->npred = canopy_calloc(m, sizeof(int), "solve graph", err);
    D->succ_ptr = canopy_alloc(m, sizeof(int), "solve graph", err);
    D->succ = canopy_alloc((size_t)(2 * np + u) + 1, sizeof(int), "solve graph", err);
    D->owner = canopy_alloc(m, sizeof(int), "solve graph", err);
    D->snode = canopy_alloc(m, sizeof(int), "solve graph", err);
    D->list_ptr = canopy_calloc((size_t)T + 1, sizeof(int), "solve graph", err);
    D->list = canopy_alloc(m, sizeof(int), "solve graph", err);
    D->kind = canopy_alloc(m, sizeof(int), "solve graph", err);
    D->cblk = canopy_alloc(m, sizeof(int), "solve graph", err);
    D->first = canopy_alloc(m, sizeof(int), "solve graph", err);
    D->level = canopy_alloc(m, sizeof(int), "solve graph", err);
    D->cost = canopy_alloc(m, sizeof(double), "solve graph", err);
    D->nsnodes = ns;
    D->snode_t0 = canopy_alloc((size_t)ns, sizeof(int), "solve graph", err);
    D->snode_t1 = canopy_alloc((size_t)ns, sizeof(int), "solve graph", err);
    D->snode_parent = canopy_alloc((size_t)ns, sizeof(int), "solve graph", err);
    D->snode_depth = canopy_alloc((size_t)ns, sizeof(int), "solve graph", err);
    if (!D->npred || !D->succ_ptr || !D->succ || !D->owner || !D->snode || !D->list_ptr || !D->list || !D->kind ||
        !D->cblk || !D->first || !D->level || !D->cost || !D->snode_t0 || !D->snode_t1 || !D->snode_parent ||
        !D->snode_depth) {
        st = solve_nomem(err);
        goto out;
    }
    memcpy(D->snode_t0, F->snode_t0, (size_t)ns * sizeof(int));
    memcpy(D->snode_t1, F->snode_t1, (size_t)ns * sizeof(int));
    memcpy(D->snode_parent, F->snode_parent, (size_t)ns * sizeof(int));
    memcpy(D->snode_depth, F->snode_depth, (size_t)ns * sizeof(int));
    for (int x = 0; x < u; x++)
        for (int h = 0; h < 2; h++) {
            int i = x + h * u;
            cint r = uroot[x];
            D->kind[i] = h ? SCHED_TASK_BACKWARD : SCHED_TASK_FORWARD;
            D->cblk[i] = (int)r;
            D->first[i] = (int)ufirst[x];
            D->owner[i] = P->cblk_owner[r];
            D->snode[i] = P->cblk_snode[r];
            D->level[i] = D->snode_depth[D->snode[i]];
            D->cost[i] = plan_solve_cost(S, ufirst[x], r);
        }
    /* FORWARD(x): its facing units, then BACKWARD(x); BACKWARD(y): the units facing y */
    D->succ_ptr[0] = 0;
    for (int x = 0; x < u; x++) D->succ_ptr[x + 1] = D->succ_ptr[x] + outdeg[x] + 1;
    for (int y = 0; y < u; y++) D->succ_ptr[u + y + 1] = D->succ_ptr[u + y] + indeg[y];
    for (int y = 0; y < u; y++) fill[y] = D->succ_ptr[u + y];
    int64_t q = 0;
    for (int x = 0; x < u; x++) {
        int p = D->succ_ptr[x];
        for (int e = 0; e < outdeg[x]; e++, q++) {
            int y = pdst[q];
            D->succ[p++] = y;
            D->succ[fill[y]++] = u + x;
        }
        D->succ[p] = u + x;
    }
    for (int e = 0; e < D->succ_ptr[nt]; e++) D->npred[D->succ[e]]++;
    if ((st = sched_bottom_level(D, err)) != CANOPY_SUCCESS) goto out;
    /* static lists: forward in cblk order, then backward in reverse (one global order) */
    for (int i = 0; i < nt; i++) D->list_ptr[D->owner[i] + 1]++;
    for (int t = 0; t < T; t++) D->list_ptr[t + 1] += D->list_ptr[t];
    for (int t = 0; t < T; t++) fill[t] = D->list_ptr[t];
    for (int x = 0; x < u; x++) D->list[fill[D->owner[x]]++] = x;
    for (int x = u - 1; x >= 0; x--) D->list[fill[D->owner[u + x]]++] = u + x;
    D->predicted_time = 0;
out:
    canopy_free(uof);
    canopy_free(ufirst);
    canopy_free(uroot);
    canopy_free(stamp);
    canopy_free(outdeg);
    canopy_free(indeg);
    canopy_free(fill);
    canopy_free(pdst);
    if (st != CANOPY_SUCCESS) sched_dag_free(D);
    return st;
}
