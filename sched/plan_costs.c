/*
 * The plan's costs (sched/plan.h, private parts in plan_parts.h): what each panel and update of
 * the factorization is predicted to take under the kernel cost model (the calls kdiag, koffdiag,
 * kpanel and kupdate_rows of src/numeric/factor_template.c make), and the cblk tree with its
 * subtree sums, which the proportional mapping (plan_mapping.c) divides. Its own file because it
 * is the one place that mirrors the kernels: a change there is a change here, and nowhere else.
 */
#include "plan_parts.h"

/* Column chunk of the symmetric update's diagonal square: K_SQUARE_CHUNK of factor_template.c. */
#define PLAN_SQUARE_CHUNK 192

/* Panel row of global row @p row inside cblk j, or -1 (binary search over j's bloks). */
static cint plan_trow(const symbolic *S, cint j, cint row)
{
    cint fc = S->cblk_fcol[j];
    if (row < fc) return -1;
    if (row < S->cblk_fcol[j + 1]) return row - fc;
    cint lo = S->cblk_fblok[j] + 1, hi = S->cblk_fblok[j + 1] - 1;
    while (lo <= hi) {
        cint mid = lo + (hi - lo) / 2;
        if (S->blok_lrow[mid] < row) lo = mid + 1;
        else if (S->blok_frow[mid] > row) hi = mid - 1;
        else return S->blok_coefrow[mid] + (row - S->blok_frow[mid]);
    }
    return -1;
}


/* Do k's panel rows of bloks sb..se-1 land on consecutive rows of j's panel? They are a subset of
 * j's rows (closure), so it suffices that the first and last are as far apart as their count: two
 * binary searches instead of the kernel's walk over all of j's bloks. */
static int plan_contiguous(const symbolic *S, cint k, cint sb, cint se, cint j)
{
    cint count = plan_row_end(S, k, se) - S->blok_coefrow[sb];
    cint r0 = plan_trow(S, j, S->blok_frow[sb]), r1 = plan_trow(S, j, S->blok_lrow[se - 1]);
    return r0 >= 0 && r1 >= 0 && r1 - r0 + 1 == count;
}

/* What kdiag of src/numeric/factor_template.c calls for cblk k. */
double plan_diag_cost(const plan_build *B, cint k)
{
    double w = (double)(B->S->cblk_fcol[k + 1] - B->S->cblk_fcol[k]);
    switch (B->kind) {
    case CANOPY_FACT_LLT: return cost_potrf(B->cm, w) * B->scale;
    case CANOPY_FACT_LDLT: return cost_sytrf(B->cm, w) * B->scale;
    default: return cost_getrf(B->cm, w) * B->scale;
    }
}

/* What koffdiag calls for m rows of cblk k: one TRSM (two for LU: L and U^T), plus the pass
 * that keeps L*D and scales by D^-1 for LDL^T. */
double plan_offdiag_cost(const plan_build *B, cint k, double m)
{
    const sched_cost_model *cm = B->cm;
    double w = (double)(B->S->cblk_fcol[k + 1] - B->S->cblk_fcol[k]);
    switch (B->kind) {
    case CANOPY_FACT_LLT: return cost_trsm(cm, m, w) * B->scale;
    case CANOPY_FACT_LDLT: return (cost_trsm(cm, m, w) + cost_scatter(cm, m * w)) * B->scale;
    default: return 2 * cost_trsm(cm, m, w) * B->scale;
    }
}

/* What kpanel calls for cblk k. */
static double plan_panel_cost(const plan_build *B, cint k)
{
    double w = (double)(B->S->cblk_fcol[k + 1] - B->S->cblk_fcol[k]);
    return plan_diag_cost(B, k) + plan_offdiag_cost(B, k, (double)B->S->cblk_stride[k] - w);
}

/* What kupdate_rows calls for k's rows in bloks rb0..rb1-1 against its bloks fb0..fb1-1 facing
 * one cblk (fb0 <= rb0): GEMM(rows x facing height x width of k), the symmetric kinds in column
 * chunks of the lower part when the rows start with the facing square, LU once for L and once
 * for U^T; a scatter when the rows are not contiguous in the target. */
double plan_update_cost(const plan_build *B, cint k, cint fb0, cint fb1, cint rb0, cint rb1)
{
    const symbolic *S = B->S;
    const sched_cost_model *cm = B->cm;
    cint j = S->blok_fcblk[fb0];
    cint rows = plan_row_end(S, k, rb1) - S->blok_coefrow[rb0], hb = plan_row_end(S, k, fb1) - S->blok_coefrow[fb0];
    double w = (double)(S->cblk_fcol[k + 1] - S->cblk_fcol[k]), dr = (double)rows, dh = (double)hb;
    int single = fb1 - fb0 == 1, square = rb0 == fb0;
    double t = 0;
    if (B->kind != CANOPY_FACT_LU) {
        if (square) {
            for (cint c0 = 0; c0 < hb; c0 += PLAN_SQUARE_CHUNK) {
                cint nc = hb - c0 < PLAN_SQUARE_CHUNK ? hb - c0 : PLAN_SQUARE_CHUNK;
                t += cost_gemm(cm, (double)(rows - c0), (double)nc, w);
            }
        } else {
            t += cost_gemm(cm, dr, dh, w);
        }
        if (!(single && plan_contiguous(S, k, rb0, rb1, j)))
            t += cost_scatter(cm, square ? dr * dh - dh * (dh - 1) / 2 : dr * dh);
    } else {
        t += cost_gemm(cm, dr, dh, w);
        if (!(single && plan_contiguous(S, k, rb0, rb1, j))) t += cost_scatter(cm, dr * dh);
        cint ub0 = rb0 > fb1 ? rb0 : fb1;
        if (ub0 < rb1) {
            double du = (double)(plan_row_end(S, k, rb1) - S->blok_coefrow[ub0]);
            t += cost_gemm(cm, du, dh, w);
            if (!(single && plan_contiguous(S, k, ub0, rb1, j))) t += cost_scatter(cm, du * dh);
        }
    }
    return t * B->scale;
}

/* Facing groups of cblk k. */
cint plan_ngroups(const symbolic *S, cint k)
{
    cint ng = 0;
    for (cint b = S->cblk_fblok[k] + 1, bend = S->cblk_fblok[k + 1]; b < bend; b = symbolic_group_end(S, k, b)) ng++;
    return ng;
}

/* Panel and update costs (B->pcost, B->ucost) and cblk costs (@p cblk_cost, when not NULL). */
void plan_unit_costs(plan_build *B, double *cblk_cost)
{
    const symbolic *S = B->S;
    for (cint k = 0; k < B->n; k++) {
        B->pcost[k] = plan_panel_cost(B, k);
        double c = B->pcost[k];
        for (cint b = S->cblk_fblok[k] + 1, bend = S->cblk_fblok[k + 1]; b < bend;) {
            cint e = symbolic_group_end(S, k, b);
            B->ucost[b] = plan_update_cost(B, k, b, e, b, S->cblk_fblok[k + 1]);
            c += B->ucost[b];
            b = e;
        }
        if (cblk_cost) cblk_cost[k] = c;
    }
}

/* Panel and update costs, cblk costs, the tree and the subtree sums. */
void plan_costs_and_tree(plan_build *B, sched_plan *P)
{
    const symbolic *S = B->S;
    cint n = B->n;
    plan_unit_costs(B, P->cblk_cost);
    /* children lists by counting sort on the parent (node n: the roots), ascending */
    for (cint k = 0; k <= n + 1; k++) B->child_ptr[k] = 0;
    for (cint k = 0; k < n; k++) {
        cint p = S->cblk_parent[k] < 0 ? n : S->cblk_parent[k];
        B->child_ptr[p + 1]++;
    }
    for (cint k = 0; k <= n; k++) B->child_ptr[k + 1] += B->child_ptr[k];
    for (cint k = 0; k < n; k++) {
        cint p = S->cblk_parent[k] < 0 ? n : S->cblk_parent[k];
        B->child[B->child_ptr[p]++] = k;
    }
    for (cint k = n; k > 0; k--) B->child_ptr[k] = B->child_ptr[k - 1];
    B->child_ptr[0] = 0;
    /* children come before their parent: one ascending sweep accumulates the subtrees */
    B->sub[n] = 0;
    for (cint k = 0; k < n; k++) {
        B->sub[k] = P->cblk_cost[k];
        B->first[k] = k;
        B->size[k] = 1;
    }
    for (cint k = 0; k < n; k++) {
        cint p = S->cblk_parent[k];
        if (p < 0) {
            B->sub[n] += B->sub[k];
            continue;
        }
        B->sub[p] += B->sub[k];
        B->size[p] += B->size[k];
        if (B->first[k] < B->first[p]) B->first[p] = B->first[k];
    }
}
