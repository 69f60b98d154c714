/* The root on a 2D grid of ranks: which cblks, tiles and grid (sched/root.h). */
#include "root.h"

#include <math.h>

#include "cost.h"

void sched_root_grid(int nranks, cint ntiles, int *pr, int *pc)
{
    int bp = 1, bq = 1;
    for (int p = 1; (int64_t)p * p <= nranks; p++) {
        if (p > ntiles) break;
        int q = nranks / p;
        if (q > ntiles) q = (int)ntiles;
        if (q < p) continue;
        if (p + q - 1 > SCHED_ROOT_MAX_MEMBERS) q = SCHED_ROOT_MAX_MEMBERS + 1 - p;
        if (q < p) continue;
        int64_t have = (int64_t)p * q, best = (int64_t)bp * bq;
        if (have > best || (have == best && q - p < bq - bp)) {
            bp = p;
            bq = q;
        }
    }
    *pr = bp;
    *pc = bq;
}

canopy_status sched_root_choose(const symbolic *S, int nranks, canopy_factorization kind, int mode, sched_root *out,
                                canopy_err *err)
{
    if (S == NULL || out == NULL || nranks < 1 || mode < SCHED_ROOT_OFF || mode > SCHED_ROOT_AUTO ||
        (kind != CANOPY_FACT_LLT && kind != CANOPY_FACT_LDLT && kind != CANOPY_FACT_LU))
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "sched_root_choose: bad argument");
    cint nc = S->ncblk, n = S->n;
    *out = (sched_root){.first = nc, .n = 0, .nb = 0, .pr = 1, .pc = 1};
    if (nranks < 2 || mode == SCHED_ROOT_OFF || nc < 1) return CANOPY_SUCCESS;
    cint k0 = nc;
    while (k0 > 0 && S->cblk_stride[k0 - 1] == n - S->cblk_fcol[k0 - 1]) k0--;
    if (k0 >= nc) return CANOPY_SUCCESS;
    cint w = n - S->cblk_fcol[k0], nb = CANOPY_MIN(w, (cint)SCHED_ROOT_NB);
    if (mode == SCHED_ROOT_AUTO && (double)w < fmax(800.0, 70.0 * sqrt((double)nranks))) return CANOPY_SUCCESS;
    int pr, pc;
    sched_root_grid(nranks, (w + nb - 1) / nb, &pr, &pc);
    if (pr * pc < 2) return CANOPY_SUCCESS; /* one tile: nothing to share */
    *out = (sched_root){.first = k0, .n = w, .nb = nb, .pr = pr, .pc = pc};
    return CANOPY_SUCCESS;
}

cint sched_root_steps(const symbolic *S, const sched_root *r, cint *steps)
{
    cint cnt = 0, r0 = S->cblk_fcol[r->first], k = r->first + 1;
    for (cint t = 0; t < r->n;) {
        steps[cnt++] = t;
        cint next = CANOPY_MIN((t / r->nb + 1) * r->nb, r->n); /* the tile's end, or the next cblk's start */
        while (k < S->ncblk && S->cblk_fcol[k] - r0 <= t) k++;
        if (k < S->ncblk && S->cblk_fcol[k] - r0 < next) next = S->cblk_fcol[k] - r0;
        t = next;
    }
    steps[cnt] = r->n;
    return cnt;
}

static int root_hops(int p)
{
    int h = 0;
    while ((1 << h) < p) h++;
    return h;
}

double sched_root_time(const sched_root *r, const struct sched_cost_model *cm, canopy_factorization kind, double scale,
                       int threads, double latency, double byte_time)
{
    double T = threads > 1 ? threads : 1; /* the rank's BLAS runs on its worker's cores meanwhile */
    if (r == NULL || cm == NULL || r->n <= 0 || r->nb <= 0) return 0;
    double n = (double)r->n, nb = (double)r->nb, pr = r->pr, pc = r->pc;
    double sb = (scale > 1 ? 16.0 : 8.0) * (kind == CANOPY_FACT_LU ? 2.0 : 1.0), half = kind == CANOPY_FACT_LU ? 1.0 : 0.5;
    int hops = root_hops(r->pr) + root_hops(r->pc);
    /* the two redistributions: every rank sends and receives about its share */
    double t = 2 * (latency * root_hops(r->pr * r->pc) + n * n * half * sb / (pr * pc) * byte_time);
    for (double k0 = 0; k0 < n; k0 += nb) {
        double w = fmin(nb, n - k0), m = n - k0 - w; /* this step's columns, the rows below them */
        double diag = kind == CANOPY_FACT_LLT ? cost_potrf(cm, w) : kind == CANOPY_FACT_LU ? cost_getrf(cm, w) : cost_sytrf(cm, w);
        double panel = diag + cost_trsm(cm, ceil(m / pr), w) * (kind == CANOPY_FACT_LU ? 2 : 1);
        double msg = hops * (latency + ceil(m / pr) * w * sb * byte_time);
        double upd = m > 0 ? cost_gemm(cm, ceil(m / pr), ceil(m / pc), w) * half : 0;
        t += (panel + upd) * scale / T + msg;
    }
    return t;
}
