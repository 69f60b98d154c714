/*
 * The solve over several ranks (numeric.h): which cblks each rank exchanges solution blocks for,
 * the right-hand sides' way to the owners and back, and the entry points of the distributed
 * solve and selected inversion (their kernels: solve_dist_template.c, selinv_template.c).
 */
#include "numeric/numeric.h"
#include "numeric/numeric_parts.h"

#include <limits.h>
#include <stdlib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "comm/agree.h"
#include "comm/share.h"
#include "matrix/matrix.h"
#include "numa/placement.h"

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}


/* The cblks whose subtree lies on this rank alone, with their tree restricted to them: the
 * children of such a cblk are such cblks too, so only roots have a parent outside. */
static canopy_status solve_setup_local(numeric *F, canopy_err *err)
{
    const symbolic *S = F->S;
    const sched_local *L = F->exec.local;
    cint nc = S->ncblk;
    cint *pos = canopy_alloc((size_t)nc + 1, sizeof(cint), "solve setup", err);
    if (!pos) return err && err->status ? err->status : CANOPY_ERR_NOMEM;
    for (cint k = 0; k < nc; k++) pos[k] = L->cblk_rank[k] == L->rank;
    for (cint k = 0; k < nc; k++) /* children come before their parent */
        if (!pos[k] && S->cblk_parent[k] >= 0) pos[S->cblk_parent[k]] = 0;
    cint nl = 0;
    for (cint k = 0; k < nc; k++) pos[k] = pos[k] ? nl++ : -1;
    F->sol_local = canopy_alloc((size_t)nl + 1, sizeof(cint), "solve setup", err);
    F->sol_lparent = canopy_alloc((size_t)nl + 1, sizeof(cint), "solve setup", err);
    F->sol_kptr = canopy_calloc((size_t)nl + 2, sizeof(cint), "solve setup", err);
    F->sol_kids = canopy_alloc((size_t)nl + 1, sizeof(cint), "solve setup", err);
    if (!F->sol_local || !F->sol_lparent || !F->sol_kptr || !F->sol_kids) {
        canopy_free(pos);
        return err && err->status ? err->status : CANOPY_ERR_NOMEM;
    }
    for (cint k = 0; k < nc; k++) {
        cint x = pos[k];
        if (x < 0) continue;
        cint p = S->cblk_parent[k] >= 0 ? pos[S->cblk_parent[k]] : -1;
        F->sol_local[x] = k;
        F->sol_lparent[x] = p;
        if (p >= 0) F->sol_kptr[p + 2]++;
    }
    for (cint x = 0; x < nl; x++) F->sol_kptr[x + 2] += F->sol_kptr[x + 1];
    for (cint x = 0; x < nl; x++)
        if (F->sol_lparent[x] >= 0) F->sol_kids[F->sol_kptr[F->sol_lparent[x] + 1]++] = x;
    F->sol_nlocal = nl;
    canopy_free(pos);
    return CANOPY_SUCCESS;
}

/* Members of the solve's collectives: for each cblk j, its owner and the ranks whose bloks face
 * it; kept for the cblks that include this rank among several members. All or nothing. */
static canopy_status solve_setup_build(numeric *F, canopy_err *err);

static canopy_status solve_setup(numeric *F, canopy_err *err)
{
    canopy_status st = solve_setup_build(F, err);
    if (st == CANOPY_SUCCESS) st = solve_setup_local(F, err);
    if (st != CANOPY_SUCCESS) numeric_solve_setup_free(F);
    return st;
}

static canopy_status solve_setup_build(numeric *F, canopy_err *err)
{
    const symbolic *S = F->S;
    const sched_local *L = F->exec.local;
    int R = L->nranks, me = L->rank;
    size_t np = 0;
    int64_t *pairs = canopy_alloc((size_t)S->nblok + 1, sizeof(int64_t), "solve setup", err);
    F->sol_op = canopy_alloc((size_t)S->ncblk + 1, sizeof(int), "solve setup", err);
    F->solve_counts = canopy_calloc(2, sizeof(int64_t), "solve setup", err);
    if (!pairs || !F->sol_op || !F->solve_counts) {
        canopy_free(pairs);
        return err && err->status ? err->status : CANOPY_ERR_NOMEM;
    }
    for (cint k = 0; k < S->ncblk; k++)
        for (cint b = S->cblk_fblok[k] + 1; b < S->cblk_fblok[k + 1]; b++) {
            cint j = S->blok_fcblk[b];
            if (L->cblk_rank[k] != L->cblk_rank[j]) pairs[np++] = (int64_t)j * R + L->cblk_rank[k];
        }
    qsort(pairs, np, sizeof *pairs, cmp_i64);
    size_t nu = 0;
    for (size_t q = 0; q < np; q++)
        if (nu == 0 || pairs[q] != pairs[nu - 1]) pairs[nu++] = pairs[q];
    /* pass 0 counts, pass 1 fills */
    int nops = 0;
    int64_t nmem = 0;
    for (int pass = 0; pass < 2; pass++) {
        nops = 0;
        nmem = 0;
        for (size_t q = 0; q < nu;) {
            cint j = (cint)(pairs[q] / R);
            size_t e = q;
            int mine = L->cblk_rank[j] == me;
            while (e < nu && pairs[e] / R == j) mine |= (int)(pairs[e++] % R) == me;
            if (mine) {
                if (pass == 1) {
                    F->sol_cblk[nops] = j;
                    F->sol_mptr[nops] = nmem;
                    F->sol_members[nmem] = L->cblk_rank[j];
                    for (size_t z = q; z < e; z++) F->sol_members[nmem + 1 + (int64_t)(z - q)] = (int)(pairs[z] % R);
                }
                nmem += 1 + (int64_t)(e - q);
                nops++;
            }
            q = e;
        }
        if (pass == 0) {
            F->sol_cblk = canopy_alloc((size_t)nops + 1, sizeof(cint), "solve setup", err);
            F->sol_mptr = canopy_alloc((size_t)nops + 2, sizeof(int64_t), "solve setup", err);
            F->sol_members = canopy_alloc((size_t)nmem + 1, sizeof(int), "solve setup", err);
            if (!F->sol_cblk || !F->sol_mptr || !F->sol_members) {
                canopy_free(pairs);
                return err && err->status ? err->status : CANOPY_ERR_NOMEM;
            }
        }
    }
    F->sol_mptr[nops] = nmem;
    F->sol_nops = nops;
    for (cint k = 0; k < S->ncblk; k++) F->sol_op[k] = -1;
    for (int i = 0; i < nops; i++) F->sol_op[F->sol_cblk[i]] = i;
    canopy_free(pairs);
    return CANOPY_SUCCESS;
}

/*
 * Rank 0's permuted right-hand sides (or solution) in the order the ranks' own rows follow: rank
 * by rank, each rank's cblks in order, each cblk's rows column after column. counts and displs
 * (in doubles) say where each rank's share lies.
 */
static void solve_layout(const numeric *F, cint nrhs, int64_t *counts, int64_t *displs)
{
    const sched_local *L = F->exec.local;
    const symbolic *S = F->S;
    int R = L->nranks, dps = F->arith == CANOPY_COMPLEX ? 2 : 1;
    for (int r = 0; r < R; r++) counts[r] = displs[r] = 0;
    for (cint k = 0; k < S->ncblk; k++) counts[L->cblk_rank[k]] += (int64_t)(S->cblk_fcol[k + 1] - S->cblk_fcol[k]) * nrhs * dps;
    for (int r = 1; r < R; r++) displs[r] = displs[r - 1] + counts[r - 1];
}

/* Between the user's b (original numbering, on rank 0) and the ranks' packed rows: to_user 0
 * packs b into all, 1 unpacks all into b. */
static canopy_status solve_pack_user(const numeric *F, cint nrhs, void *b, char *all, const int64_t *displs, int to_user,
                                     canopy_err *err)
{
    const sched_local *L = F->exec.local;
    const symbolic *S = F->S;
    cint n = S->n;
    int R = L->nranks, dps = F->arith == CANOPY_COMPLEX ? 2 : 1;
    size_t sb = F->scalar_bytes;
    int64_t *at = canopy_alloc((size_t)R, sizeof(int64_t), "solve workspace", err);
    if (at == NULL) return err && err->status ? err->status : CANOPY_ERR_NOMEM;
    for (int r = 0; r < R; r++) at[r] = displs[r] / dps;
    char *bb = b;
    for (cint k = 0; k < S->ncblk; k++) {
        int r0 = L->cblk_rank[k];
        cint f = S->cblk_fcol[k], w = S->cblk_fcol[k + 1] - f;
        for (cint r = 0; r < nrhs; r++, at[r0] += w)
            for (cint i = 0; i < w; i++) {
                char *u = bb + ((size_t)S->perm[f + i] + (size_t)r * n) * sb, *v = all + (size_t)(at[r0] + i) * sb;
                if (to_user)
                    memcpy(u, v, sb);
                else
                    memcpy(v, u, sb);
            }
    }
    canopy_free(at);
    return CANOPY_SUCCESS;
}

/* Between this rank's packed rows and y (new numbering, n x nrhs): to_y 1 unpacks, 0 packs. */
static void solve_pack_own(const numeric *F, cint nrhs, char *y, char *pack, int to_y)
{
    const sched_local *L = F->exec.local;
    const symbolic *S = F->S;
    cint n = S->n;
    size_t sb = F->scalar_bytes;
    int64_t p = 0;
    for (cint k = 0; k < S->ncblk; k++) {
        if (L->cblk_rank[k] != L->rank) continue;
        cint f = S->cblk_fcol[k], w = S->cblk_fcol[k + 1] - f;
        for (cint r = 0; r < nrhs; r++, p += w) {
            char *u = y + ((size_t)f + (size_t)r * n) * sb, *v = pack + (size_t)p * sb;
            if (to_y)
                memcpy(u, v, (size_t)w * sb);
            else
                memcpy(v, u, (size_t)w * sb);
        }
    }
}

canopy_status numeric_solve_dist_prepare(numeric *F, canopy_err *err)
{
    return F->sol_op == NULL ? solve_setup(F, err) : CANOPY_SUCCESS;
}

canopy_status numeric_solve_dist_own(numeric *F, cint nrhs, void *y, canopy_err *err)
{
    F->solve_counts[0] = F->solve_counts[1] = 0;
    int old = numeric_blas_single();
    /* the status is in err, agreed below */
    if (F->arith == CANOPY_COMPLEX) numeric_solve_dist_z(F, nrhs, (double _Complex *)y, err);
    else numeric_solve_dist_d(F, nrhs, y, err);
    numeric_blas_restore(old);
    return comm_agree(F->exec.comm, err);
}

/*
 * The solve over several ranks: rank 0 sends each rank only the rows of its own cblks (one
 * scatter, not the whole right-hand side to everyone), the ranks solve (message-driven, their own
 * subtrees on all threads), and the rows come back the same way.
 */
canopy_status numeric_selinv_dist(numeric *F, void *Lx, void *Ux, double *flops, int64_t sent[2], canopy_err *err)
{
    /* the solve's members and local subtrees: its broadcasts are the ones the inversion makes */
    sent[0] = sent[1] = 0;
    *flops = 0;
    if (F->sol_op == NULL) solve_setup(F, err);
    /* a rank short of memory here must not leave the others in the inversion's collectives (every
     * rank agrees, set up before or not, and all drop the setup on failure) */
    if (comm_agree(F->exec.comm, err) < 0) {
        numeric_solve_setup_free(F);
        return err->status;
    }
    canopy_status st;
    int old = numeric_blas_single();
    st = F->arith == CANOPY_COMPLEX ? numeric_selinv_dist_z(F, Lx, Ux, flops, sent, err)
                                    : numeric_selinv_dist_d(F, Lx, Ux, flops, sent, err);
    numeric_blas_restore(old);
    return st;
}

canopy_status numeric_solve_dist(numeric *F, cint nrhs, void *b, canopy_err *err)
{
    const numeric_exec *x = &F->exec;
    const sched_local *L = x->local;
    const symbolic *S = F->S;
    cint n = S->n;
    int R = L->nranks, me = L->rank, dps = F->arith == CANOPY_COMPLEX ? 2 : 1;
    size_t sb = F->scalar_bytes;
    double *y = NULL, *pack = NULL, *all = NULL;
    int64_t *counts = NULL, *displs = NULL;
    canopy_status st = CANOPY_SUCCESS;
    if (F->sol_op == NULL) st = solve_setup(F, err);
    size_t ny = 0;
    if (st == CANOPY_SUCCESS && !canopy_mul_ok((size_t)n, (size_t)nrhs, &ny))
        st = canopy_err_set(err, CANOPY_ERR_TOO_LARGE, "solve workspace too large");
    int64_t mine_rows = 0;
    for (cint k = 0; k < S->ncblk; k++)
        if (L->cblk_rank[k] == me) mine_rows += S->cblk_fcol[k + 1] - S->cblk_fcol[k];
    if (st == CANOPY_SUCCESS) {
        /* zeroed: the rows of other ranks' cblks are written (by their broadcasts) before use */
        y = canopy_calloc(ny + 1, sb, "solve workspace", err);
        pack = canopy_alloc((size_t)mine_rows * (size_t)nrhs + 1, sb, "solve workspace", err);
        counts = canopy_alloc((size_t)R, sizeof(int64_t), "solve workspace", err);
        displs = canopy_alloc((size_t)R, sizeof(int64_t), "solve workspace", err);
        if (me == 0) all = canopy_alloc(ny + 1, sb, "solve workspace", err);
        if (!y || !pack || !counts || !displs || (me == 0 && !all)) st = err && err->status ? err->status : CANOPY_ERR_NOMEM;
    }
    if (st == CANOPY_SUCCESS) {
        solve_layout(F, nrhs, counts, displs);
        if (me == 0) st = solve_pack_user(F, nrhs, b, (char *)all, displs, 0, err);
    }
    if (comm_agree(x->comm, err) < 0) {
        st = err->status;
        goto out;
    }
    /* each rank's own rows of the permuted right-hand side */
    if ((st = comm_share_scatter(x->comm, all, counts, displs, pack, mine_rows * nrhs * dps, err)) != CANOPY_SUCCESS)
        goto out;
    solve_pack_own(F, nrhs, (char *)y, (char *)pack, 1);
    if ((st = numeric_solve_dist_own(F, nrhs, y, err)) != CANOPY_SUCCESS) goto out;
    /* this rank's rows, cblk by cblk, back to rank 0 */
    solve_pack_own(F, nrhs, (char *)y, (char *)pack, 0);
    st = comm_share_gather(x->comm, pack, mine_rows * nrhs * dps, all, counts, displs, err);
    if (st == CANOPY_SUCCESS && me == 0) st = solve_pack_user(F, nrhs, b, (char *)all, displs, 1, err);
    /* rank 0's unpacking may fail alone: the status is agreed, as promised */
    st = comm_agree(x->comm, err);
out:
    canopy_free(all);
    canopy_free(y);
    canopy_free(pack);
    canopy_free(counts);
    canopy_free(displs);
    return st;
}
