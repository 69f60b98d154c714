/*
 * Cost model of the dense kernels (see cost.h): the per-call formulas the planner evaluates for
 * every task, the calibration that measures this machine, and the text cache that spares the
 * calibration on later runs (keyed by CPU, BLAS and cores, and checked by a quick GEMM). Owns no
 * task logic: sched/plan_costs.c decides which calls a task makes; sched/blascheck.c says what the
 * machine is and whether its BLAS wastes it.
 */
#include "cost.h"
#include "blascheck.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <pthread.h>
#include <sched.h>
#include <cblas.h>
#include <lapacke.h>

static const char *const cost_names[COST_NKERNELS] = {"gemm", "trsm", "potrf", "getrf", "sytrf", "scatter"};

void cost_model_fixed(sched_cost_model *m)
{
    if (m == NULL) return;
    /* One core of a recent x86 server with a tuned BLAS: DGEMM near 50 GFlop/s for large inner
     * sizes, the triangular and factorization kernels slower and reaching their peak later. */
    static const double peak[COST_NKERNELS] = {50e9, 40e9, 30e9, 25e9, 20e9, 1e9};
    static const double dh[COST_NKERNELS] = {24, 32, 64, 64, 64, 0};
    memset(m, 0, sizeof *m);
    for (int k = 0; k < COST_NKERNELS; k++) {
        m->peak[k] = peak[k];
        m->d_half[k] = dh[k];
    }
    m->latency = 5e-7;
    m->load_threads = 1; /* no slowdown under load: tests and plans stay machine independent */
    m->load_gemm = m->load_scatter = 1;
    m->calibrated = 0;
    snprintf(m->source, sizeof m->source, "fixed");
}

/* ---- the formulas (called per task: no branches beyond the size checks) ------------------ */

/* flops / rate with rate = peak * d / (d + d_half) */
static inline double cost_flop_time(const sched_cost_model *m, int k, double flops, double d)
{
    return flops * (d + m->d_half[k]) / (m->peak[k] * d);
}

static inline double cost_min3(double a, double b, double c)
{
    double x = a < b ? a : b;
    return x < c ? x : c;
}

/* GEMM blocks on its smallest dimension: a thin product (few columns or a small inner size)
 * streams its operands from memory whichever dimension is thin. */
double cost_gemm(const sched_cost_model *m, double rows, double cols, double inner)
{
    if (!(rows > 0 && cols > 0 && inner > 0)) return 0;
    return m->latency + cost_flop_time(m, COST_GEMM, 2 * rows * cols * inner, cost_min3(rows, cols, inner));
}

double cost_trsm(const sched_cost_model *m, double rows, double tri)
{
    if (!(rows > 0 && tri > 0)) return 0;
    return m->latency + cost_flop_time(m, COST_TRSM, rows * tri * tri, rows < tri ? rows : tri);
}

double cost_potrf(const sched_cost_model *m, double n)
{
    if (!(n > 0)) return 0;
    return m->latency + cost_flop_time(m, COST_POTRF, n * n * n / 3, n);
}

double cost_getrf(const sched_cost_model *m, double n)
{
    if (!(n > 0)) return 0;
    return m->latency + cost_flop_time(m, COST_GETRF, 2 * n * n * n / 3, n);
}

double cost_sytrf(const sched_cost_model *m, double n)
{
    if (!(n > 0)) return 0;
    return m->latency + cost_flop_time(m, COST_SYTRF, n * n * n / 3, n);
}

/* A scatter is our own loop, not a library call: no call latency, a flat entry rate. */
double cost_scatter(const sched_cost_model *m, double entries)
{
    if (!(entries > 0)) return 0;
    return entries / m->peak[COST_SCATTER];
}

/* ---- calibration ---------------------------------------------------------------------------- */


/* Sizes measured for every kernel, then one larger size per kernel: the wide separators at the
 * top of the tree sit there, and an asymptote fitted only on small sizes extrapolates badly.
 * The buffers are sized for the largest. */
#define COST_NSIZES 6
static const int cost_sizes[COST_NSIZES] = {8, 16, 32, 64, 128, 256};
static const int cost_last[COST_NKERNELS] = {384, 384, 512, 512, 512, 0};
#define COST_GEMM_DMAX 384 /* GEMM and TRSM */
#define COST_DMAX 512      /* square operands */
/* The quick check of a cache and the rate reported as the BLAS's: the GEMM of size 256 (a
 * 576 x 256 x 256 update, about 75 MFlop: a few milliseconds), one of the calibration's shapes. */
#define COST_CHECK_D 256
#define COST_CHECK_TOLERANCE 1.3 /* measured / predicted beyond 1.3x either way: recalibrate */

/* CANOPY_TEST_GEMM_GFLOPS: the tests' stand-in for a measured DGEMM rate (0: none). */
static double cost_injected_gflops(void)
{
    const char *v = getenv("CANOPY_TEST_GEMM_GFLOPS");
    char *end;
    double r = v && *v ? strtod(v, &end) : 0;
    return v && *v && *end == '\0' && isfinite(r) && r > 0 ? r : 0;
}

typedef struct cost_bench {
    double *A, *B, *C;  /* GEMM/TRSM operands */
    double *T;          /* d x d triangle of the TRSM */
    double *F0, *F;     /* d x d factorization input, pristine and working copy */
    double *W;          /* LDL^T: dsub, then the kernel's work */
    cint *ipiv;
    const cost_kernels *kern; /* the factorization's LU and LDL^T (GETRF, SYTRF) */
} cost_bench;

/* The square operands for size d (leading dimension d). The TRSM triangle is unit-diagonal with
 * tiny entries below so that repeated solves leave C's magnitude alone (no drift into subnormal
 * numbers, which run far slower); the factorization input is diagonally dominant SPD (no pivoting
 * work, no perturbation). */
static void cost_prepare(cost_bench *b, int d)
{
    for (int j = 0; j < d; j++)
        for (int i = 0; i < d; i++) {
            double off = 1.0 / (double)(1 + i + j);
            b->T[i + (size_t)j * d] = i == j ? 1.0 : 1e-4 * off;
            b->F0[i + (size_t)j * d] = i == j ? 2.0 * d : off;
        }
}

/* Rows of the calibration GEMM/TRSM: a panel taller than wide, as the updates of a supernode. */
static int cost_rows(int d) { return 2 * d + 64; }

/* One call of kernel k at size d (restores the factorization input first). */
static void cost_run(cost_bench *b, int k, int d)
{
    int m = cost_rows(d);
    switch (k) {
    case COST_GEMM:
        cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, m, d, d, -1.0, b->A, m, b->B, COST_GEMM_DMAX, 1.0,
                    b->C, m);
        break;
    case COST_TRSM:
        cblas_dtrsm(CblasColMajor, CblasRight, CblasLower, CblasTrans, CblasNonUnit, m, d, 1.0, b->T, d, b->C, m);
        break;
    case COST_POTRF:
        memcpy(b->F, b->F0, (size_t)d * d * sizeof(double));
        (void)LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'L', d, b->F, d);
        break;
    case COST_GETRF: /* the LU kernel the panels run (src/numeric/factor_template.c) */
        memcpy(b->F, b->F0, (size_t)d * d * sizeof(double));
        (void)b->kern->lu(d, b->F, d, b->ipiv, 1e-300);
        break;
    case COST_SYTRF:
        memcpy(b->F, b->F0, (size_t)d * d * sizeof(double));
        (void)b->kern->ldlt(d, b->F, d, b->ipiv, b->W, 1e-300, b->W + d);
        break;
    case COST_SCATTER: { /* the inner loop of the update scatter: runs of 32 rows, target stride m */
        for (int c = 0; c < d; c++) {
            double *t = b->C + (size_t)c * m + 7;
            const double *s = b->A + (size_t)c * 32;
            for (int i = 0; i < 32; i++) t[i] -= s[i];
        }
        break;
    }
    default: /* latency probe: the smallest library call */
        cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, 1, 1, 1, -1.0, b->A, 1, b->B, 1, 1.0, b->C, 1);
        break;
    }
}

/* The copy that restores a factorization's input, timed alone so it can be subtracted. */
static void cost_run_copy(cost_bench *b, int d) { memcpy(b->F, b->F0, (size_t)d * d * sizeof(double)); }

/* Seconds per call: batches of at least ~1 ms, best of three (the minimum filters out
 * interruptions; the batch hides the timer's resolution for the tiny calls). */
static double cost_time(cost_bench *b, int k, int d, int copy_only)
{
    double t0 = canopy_wtime();
    if (copy_only) cost_run_copy(b, d);
    else cost_run(b, k, d);
    double one = canopy_wtime() - t0;
    long reps = one > 0 ? (long)(1e-3 / one) + 1 : 1000;
    if (reps > 100000) reps = 100000;
    double best = INFINITY;
    for (int r = 0; r < 3; r++) {
        t0 = canopy_wtime();
        for (long i = 0; i < reps; i++) {
            if (copy_only) cost_run_copy(b, d);
            else cost_run(b, k, d);
        }
        double t = (canopy_wtime() - t0) / (double)reps;
        if (t < best) best = t;
    }
    return best;
}

static double cost_flops(int k, int d)
{
    double m = cost_rows(d), n = d;
    switch (k) {
    case COST_GEMM: return 2 * m * n * n;
    case COST_TRSM: return m * n * n;
    case COST_POTRF: return n * n * n / 3;
    case COST_GETRF: return 2 * n * n * n / 3;
    case COST_SYTRF: return n * n * n / 3;
    default: return 32.0 * n; /* scatter: entries */
    }
}

/* d of the model for the calibration shape (matches the formulas above). */
static double cost_dim(int k, int d) { return k == COST_SCATTER ? 1 : d; }

/*
 * Fit y = a + b x (y = seconds per flop, x = 1/d) minimizing the RELATIVE residuals: the small
 * sizes have per-flop times ten times the large ones and would otherwise decide the fit alone.
 * @p max_peak (> 0) caps the asymptote. Returns 0 with peak = 1/a and d_half = b/a, or -1 if no
 * sane positive fit exists.
 */
static int cost_fit(int n, const double *x, const double *y, double max_peak, double *peak, double *d_half)
{
    /* rows (1/y, x/y), target 1: normal equations of a 2 x 2 least-squares problem */
    double s11 = 0, s12 = 0, s22 = 0, r1 = 0, r2 = 0;
    for (int i = 0; i < n; i++) {
        double u = 1 / y[i], v = x[i] / y[i];
        s11 += u * u;
        s12 += u * v;
        s22 += v * v;
        r1 += u;
        r2 += v;
    }
    double det = s11 * s22 - s12 * s12, a, b;
    if (det > 1e-12 * s11 * s22) {
        a = (r1 * s22 - r2 * s12) / det;
        b = (s11 * r2 - s12 * r1) / det;
    } else {
        a = -1;
        b = -1;
    }
    if (!(b >= 0) || !(a > 0)) {
        /* a rate that does not rise with d (b < 0): flat model; a rate still rising at the
         * largest size (a <= 0): pin the asymptote at twice the best measured rate */
        if (!(b >= 0)) {
            a = r1 / s11;
            b = 0;
        } else {
            double ymin = y[0];
            for (int i = 1; i < n; i++) ymin = y[i] < ymin ? y[i] : ymin;
            a = ymin / 2;
            b = (r2 - a * s12) / s22;
            if (!(b >= 0)) b = 0;
        }
    }
    if (max_peak > 0 && a < 1 / max_peak) {
        /* still rising at the largest size measured: the extrapolated asymptote would be
         * arbitrary, so cap it (blocked TRSM and factorizations spend their time in GEMM) */
        a = 1 / max_peak;
        b = (r2 - a * s12) / s22;
        if (!(b >= 0)) b = 0;
    }
    if (!(a > 0) || !isfinite(1 / a) || !isfinite(b / a)) return -1;
    *peak = 1 / a;
    *d_half = b / a;
    return 0;
}

/* ---- the same kernels with every core busy ------------------------------------------------ */

#define COST_LOAD_D 256       /* GEMM size of the loaded measurement (an update high in the tree) */
#define COST_LOAD_MAX 256     /* threads at most */

typedef struct cost_loaded {
    pthread_barrier_t *start;
    int kernel;
    double seconds; /* per call, or < 0 when the thread could not allocate */
} cost_loaded;

static int cost_bench_alloc(cost_bench *b, int d)
{
    size_t m = (size_t)cost_rows(d);
    b->A = calloc(m * (size_t)d + 32 * (size_t)d, sizeof(double));
    b->B = calloc((size_t)COST_GEMM_DMAX * d, sizeof(double));
    b->C = calloc(m * (size_t)d + 64, sizeof(double));
    if (!b->A || !b->B || !b->C) return -1;
    for (size_t i = 0; i < m * (size_t)d; i++) b->A[i] = b->C[i] = 1e-3 * (double)(i % 13 + 1);
    for (size_t i = 0; i < (size_t)COST_GEMM_DMAX * d; i++) b->B[i] = 1e-3 * (double)(i % 7 + 1);
    return 0;
}

static void cost_bench_release(cost_bench *b)
{
    free(b->A);
    free(b->B);
    free(b->C);
}

static void *cost_loaded_main(void *arg)
{
    cost_loaded *l = arg;
    cost_bench b = {0};
    int ok = cost_bench_alloc(&b, COST_LOAD_D) == 0;
    if (ok) cost_run(&b, l->kernel, COST_LOAD_D); /* first touch before the clock starts */
    pthread_barrier_wait(l->start);
    l->seconds = ok ? cost_time(&b, l->kernel, COST_LOAD_D, 0) : -1;
    cost_bench_release(&b);
    return NULL;
}

/* Median seconds per call of kernel k (GEMM or scatter) with nt threads running it at once; < 0
 * when threads could not be started. */
static double cost_time_loaded(int k, int nt)
{
    pthread_t th[COST_LOAD_MAX];
    cost_loaded l[COST_LOAD_MAX];
    pthread_barrier_t start;
    if (pthread_barrier_init(&start, NULL, (unsigned)nt) != 0) return -1;
    int started = 0;
    for (int t = 1; t < nt; t++) {
        l[t] = (cost_loaded){&start, k, -1};
        if (pthread_create(&th[t], NULL, cost_loaded_main, &l[t]) != 0) break;
        started++;
    }
    double med = -1;
    if (started == nt - 1) {
        l[0] = (cost_loaded){&start, k, -1};
        cost_loaded_main(&l[0]);
    }
    for (int t = 1; t <= started; t++) pthread_join(th[t], NULL);
    pthread_barrier_destroy(&start);
    if (started != nt - 1) return -1; /* the barrier was never completed: nobody waits on it */
    double v[COST_LOAD_MAX];
    for (int t = 0; t < nt; t++) {
        if (!(l[t].seconds > 0)) return -1;
        v[t] = l[t].seconds;
    }
    for (int i = 1; i < nt; i++) /* insertion sort: a few hundred at most */
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double x = v[j];
            v[j] = v[j - 1];
            v[j - 1] = x;
        }
    med = v[nt / 2];
    return med;
}

static int cost_usable_cores(void)
{
    cpu_set_t set;
    int n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) n = 1;
    return n > COST_LOAD_MAX ? COST_LOAD_MAX : n;
}

/* Slowdowns of GEMM and scatter with every usable core computing (1 when there is one core). */
static void cost_calibrate_load(sched_cost_model *r)
{
    int nt = cost_usable_cores();
    r->load_threads = 1;
    r->load_gemm = r->load_scatter = 1;
    if (nt < 2) return;
    for (int q = 0; q < 2; q++) {
        int k = q == 0 ? COST_GEMM : COST_SCATTER;
        /* the least disturbed of a few trials each: a shared host only ever adds time */
        double alone = INFINITY, loaded = INFINITY;
        for (int trial = 0; trial < 9; trial++) {
            double a = cost_time_loaded(k, 1), b = cost_time_loaded(k, nt);
            if (!(a > 0) || !(b > 0)) return; /* no threads: keep the model unloaded */
            alone = fmin(alone, a);
            loaded = fmin(loaded, b);
        }
        double s = loaded / alone;
        s = s < 1 ? 1 : s > 16 ? 16 : s; /* noise below, nonsense above */
        if (q == 0) r->load_gemm = s;
        else r->load_scatter = s;
    }
    r->load_threads = nt;
}

void cost_model_under_load(sched_cost_model *m, int busy)
{
    if (m == NULL || m->load_threads < 2 || busy < 2) return;
    double x = (double)((busy < m->load_threads ? busy : m->load_threads) - 1) / (double)(m->load_threads - 1);
    double g = 1 + (m->load_gemm - 1) * x, s = 1 + (m->load_scatter - 1) * x;
    for (int k = 0; k < COST_NKERNELS; k++) m->peak[k] /= k == COST_SCATTER ? s : g;
    m->load_threads = 1; /* applied: applying twice changes nothing */
    m->load_gemm = m->load_scatter = 1;
}

canopy_status cost_model_calibrate(sched_cost_model *m, const cost_kernels *kern, canopy_err *err)
{
    if (m == NULL || kern == NULL)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "cost_model_calibrate: NULL model or kernels");
    cost_bench b = {0};
    size_t big = (size_t)cost_rows(COST_GEMM_DMAX) * COST_GEMM_DMAX;
    b.A = canopy_alloc(big, sizeof(double), "calibration operand", err);
    b.B = canopy_alloc((size_t)COST_GEMM_DMAX * COST_GEMM_DMAX, sizeof(double), "calibration operand", err);
    b.C = canopy_alloc(big, sizeof(double), "calibration operand", err);
    b.T = canopy_alloc((size_t)COST_DMAX * COST_DMAX, sizeof(double), "calibration operand", err);
    b.F0 = canopy_alloc((size_t)COST_DMAX * COST_DMAX, sizeof(double), "calibration operand", err);
    b.F = canopy_alloc((size_t)COST_DMAX * COST_DMAX, sizeof(double), "calibration operand", err);
    b.W = canopy_alloc((size_t)COST_DMAX * 66 + COST_DMAX, sizeof(double), "calibration operand", err);
    b.ipiv = canopy_alloc(COST_DMAX, sizeof(cint), "calibration pivots", err);
    canopy_status st = CANOPY_SUCCESS;
    if (!b.A || !b.B || !b.C || !b.T || !b.F0 || !b.F || !b.W || !b.ipiv) {
        st = err && err->status ? err->status : CANOPY_ERR_NOMEM;
        goto done;
    }
    /* small well-conditioned values: repeated updates neither overflow nor go subnormal */
    for (size_t i = 0; i < big; i++) b.A[i] = b.C[i] = 1e-3 * (double)(i % 13 + 1);
    for (size_t i = 0; i < (size_t)COST_GEMM_DMAX * COST_GEMM_DMAX; i++) b.B[i] = 1e-3 * (double)(i % 7 + 1);

    b.kern = kern;
    int old = kern->blas_single();
    sched_cost_model r;
    memset(&r, 0, sizeof r);
    cost_run(&b, -1, 1); /* warm up the library (lazy initialization, page faults) */
    r.latency = cost_time(&b, -1, 1, 0);
    for (int k = 0; k < COST_NKERNELS && st == CANOPY_SUCCESS; k++) {
        double x[COST_NSIZES + 1], y[COST_NSIZES + 1];
        int n = 0;
        for (int s = 0; s <= COST_NSIZES; s++) {
            int d = s < COST_NSIZES ? cost_sizes[s] : cost_last[k];
            if (d == 0) break;
            if (k == COST_SCATTER && s != 3) continue;    /* one shape: a flat entry rate */
            cost_prepare(&b, d);
            double t = cost_time(&b, k, d, 0);
            /* restoring the factorization's input is not part of the kernel */
            if (k == COST_POTRF || k == COST_GETRF || k == COST_SYTRF) t -= cost_time(&b, k, d, 1);
            if (k != COST_SCATTER) t -= r.latency;
            double f = cost_flops(k, d);
            if (!(t > 0)) t = 1e-3 * f / 50e9; /* under the timer's noise: take a fast rate */
            if (k == COST_GEMM && d == COST_CHECK_D) r.gemm_gflops = f / (t + r.latency) * 1e-9;
            x[n] = 1 / cost_dim(k, d);
            y[n] = t / f;
            n++;
        }
        if (k == COST_SCATTER) {
            r.peak[k] = 1 / y[0];
            r.d_half[k] = 0;
        } else if (cost_fit(n, x, y, k == COST_GEMM ? 0 : r.peak[COST_GEMM], &r.peak[k], &r.d_half[k]) != 0) {
            st = canopy_err_set(err, CANOPY_ERR_INTERNAL, "cost model: no positive fit for %s", cost_names[k]);
        }
    }
    if (st == CANOPY_SUCCESS) cost_calibrate_load(&r);
    kern->blas_restore(old);
    if (st == CANOPY_SUCCESS) {
        for (int k = 0; k < COST_NKERNELS; k++)
            if (!isfinite(r.peak[k]) || !(r.peak[k] > 0) || !isfinite(r.d_half[k]) || r.d_half[k] < 0)
                st = canopy_err_set(err, CANOPY_ERR_INTERNAL, "cost model: calibration of %s not finite",
                                    cost_names[k]);
        if (!isfinite(r.latency) || r.latency < 0) r.latency = 0;
    }
    if (st == CANOPY_SUCCESS) {
        r.calibrated = 1;
        snprintf(r.source, sizeof r.source, "calibrated");
        /* one timed size is at the mercy of a busy host, the fit across sizes less so; a busy
         * host only ever slows a kernel down: the larger of the two */
        double fitted = cost_model_check_rate(&r), injected = cost_injected_gflops();
        if (fitted > r.gemm_gflops) r.gemm_gflops = fitted;
        if (injected > 0) r.gemm_gflops = injected;
        cost_model_stamp(&r);
        *m = r;
    }
done:
    canopy_free(b.A);
    canopy_free(b.B);
    canopy_free(b.C);
    canopy_free(b.T);
    canopy_free(b.F0);
    canopy_free(b.F);
    canopy_free(b.W);
    canopy_free(b.ipiv);
    return st;
}

/* ---- cache file ----------------------------------------------------------------------------- */

#define COST_FORMAT 3 /* 2: the slowdowns under load; 3: the machine's key and the GEMM rate */

canopy_status cost_model_write(const sched_cost_model *m, const char *path, canopy_err *err)
{
    if (m == NULL || path == NULL || *path == '\0')
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "cost_model_write: NULL model or empty path");
    /* write a private temporary and rename it over the cache: a reader (another rank of this
     * node) sees the old file or the new one, never half of one */
    char tmp[CANOPY_PATH_MAX + 32];
    int len = snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    if (len < 0 || (size_t)len >= sizeof tmp)
        return canopy_err_set(err, CANOPY_ERR_IO, "cost model cache path too long: %s", path);
    /* create the directory (and its parents) on the way */
    char dir[CANOPY_PATH_MAX + 32];
    memcpy(dir, tmp, (size_t)len + 1);
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
            canopy_status s = canopy_err_set(err, CANOPY_ERR_IO, "cannot create directory %s: %s", dir,
                                             strerror(errno));
            return s;
        }
        *p = '/';
    }
    FILE *f = fopen(tmp, "w");
    if (f == NULL) return canopy_err_set(err, CANOPY_ERR_IO, "cannot write %s: %s", tmp, strerror(errno));
    fprintf(f, "# Canopy kernel cost model: seconds = latency + flops / (peak * d / (d + d_half))\n");
    fprintf(f, "format %d\n", COST_FORMAT);
    fprintf(f, "key_cpu %s\n", m->key_cpu[0] ? m->key_cpu : "unknown");
    fprintf(f, "key_blas %s\n", m->key_blas[0] ? m->key_blas : "unknown");
    fprintf(f, "key_threads %d\n", m->key_threads);
    fprintf(f, "gemm_gflops %.17g\n", m->gemm_gflops);
    fprintf(f, "calibrated %d\n", m->calibrated ? 1 : 0);
    fprintf(f, "latency %.17g\n", m->latency);
    fprintf(f, "load_threads %d\n", m->load_threads);
    fprintf(f, "load_gemm %.17g\n", m->load_gemm);
    fprintf(f, "load_scatter %.17g\n", m->load_scatter);
    for (int k = 0; k < COST_NKERNELS; k++) {
        fprintf(f, "peak_%s %.17g\n", cost_names[k], m->peak[k]);
        fprintf(f, "d_half_%s %.17g\n", cost_names[k], m->d_half[k]);
    }
    int bad = fflush(f) != 0 || ferror(f);
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path) != 0) {
        canopy_status s = canopy_err_set(err, CANOPY_ERR_IO, "cannot write %s: %s", path, strerror(errno));
        remove(tmp);
        return s;
    }
    return CANOPY_SUCCESS;
}

/* Key of a line: returns the slot it fills (0 = format, 1 = calibrated, 2 = latency, then
 * peak/d_half pairs, the load figures, key_threads, gemm_gflops), or -1 when unknown. */
static int cost_key(const char *key)
{
    if (!strcmp(key, "key_threads")) return 6 + 2 * COST_NKERNELS;
    if (!strcmp(key, "gemm_gflops")) return 7 + 2 * COST_NKERNELS;
    if (!strcmp(key, "format")) return 0;
    if (!strcmp(key, "calibrated")) return 1;
    if (!strcmp(key, "latency")) return 2;
    if (!strcmp(key, "load_threads")) return 3 + 2 * COST_NKERNELS;
    if (!strcmp(key, "load_gemm")) return 4 + 2 * COST_NKERNELS;
    if (!strcmp(key, "load_scatter")) return 5 + 2 * COST_NKERNELS;
    for (int k = 0; k < COST_NKERNELS; k++) {
        if (!strncmp(key, "peak_", 5) && !strcmp(key + 5, cost_names[k])) return 3 + 2 * k;
        if (!strncmp(key, "d_half_", 7) && !strcmp(key + 7, cost_names[k])) return 4 + 2 * k;
    }
    return -1;
}

canopy_status cost_model_read(sched_cost_model *m, const char *path, canopy_err *err)
{
    if (m == NULL || path == NULL || *path == '\0')
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "cost_model_read: NULL model or empty path");
    FILE *f = fopen(path, "r");
    if (f == NULL) return canopy_err_set(err, CANOPY_ERR_IO, "cannot read %s: %s", path, strerror(errno));
    enum { NSLOTS = 8 + 2 * COST_NKERNELS };
    double val[NSLOTS];
    int seen[NSLOTS] = {0};
    char line[256], key_cpu[128] = "", key_blas[128] = "";
    int lineno = 0;
    canopy_status st = CANOPY_SUCCESS;
    while (st == CANOPY_SUCCESS && fgets(line, sizeof line, f)) {
        lineno++;
        if (strchr(line, '\n') == NULL && !feof(f)) {
            st = canopy_err_set(err, CANOPY_ERR_FORMAT, "%s:%d: line too long", path, lineno);
            break;
        }
        char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        if (*p == '#' || *p == '\n' || *p == '\r' || *p == '\0') continue;
        char key[64];
        int klen = 0;
        while (*p && *p != ' ' && *p != '\t' && klen < (int)sizeof key - 1) key[klen++] = *p++;
        key[klen] = '\0';
        if (!strcmp(key, "key_cpu") || !strcmp(key, "key_blas")) {
            /* a text value: the rest of the line, trimmed */
            char *dst = key[4] == 'c' ? key_cpu : key_blas;
            while (*p == ' ' || *p == '\t') p++;
            size_t vlen = strcspn(p, "\r\n");
            while (vlen > 0 && (p[vlen - 1] == ' ' || p[vlen - 1] == '\t')) vlen--;
            if (vlen == 0 || vlen >= sizeof key_cpu) {
                st = canopy_err_set(err, CANOPY_ERR_FORMAT, "%s:%d: %s needs a value of 1 to %d characters", path,
                                    lineno, key, (int)sizeof key_cpu - 1);
                break;
            }
            memcpy(dst, p, vlen);
            dst[vlen] = '\0';
            continue;
        }
        int slot = cost_key(key);
        char *end;
        errno = 0;
        double v = strtod(p, &end);
        int ok = slot >= 0 && end != p && isfinite(v);
        while (ok && (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')) end++;
        if (!ok || *end != '\0') {
            st = canopy_err_set(err, CANOPY_ERR_FORMAT, "%s:%d: not a \"key value\" line of the cost model",
                                path, lineno);
            break;
        }
        val[slot] = v;
        seen[slot] = 1;
    }
    if (st == CANOPY_SUCCESS && ferror(f)) st = canopy_err_set(err, CANOPY_ERR_IO, "error reading %s", path);
    fclose(f);
    if (st != CANOPY_SUCCESS) return st;
    /* an older format first: its keys are not all there */
    if (seen[0] && val[0] != COST_FORMAT)
        return canopy_err_set(err, CANOPY_ERR_FORMAT, "%s: cost model format %g, expected %d", path, val[0],
                              COST_FORMAT);
    for (int s = 0; s < NSLOTS; s++)
        if (!seen[s]) return canopy_err_set(err, CANOPY_ERR_FORMAT, "%s: cost model is incomplete", path);
    if (!key_cpu[0] || !key_blas[0]) return canopy_err_set(err, CANOPY_ERR_FORMAT, "%s: cost model is incomplete", path);
    sched_cost_model r;
    memset(&r, 0, sizeof r);
    r.calibrated = val[1] != 0;
    r.latency = val[2];
    int sane = r.latency >= 0;
    for (int k = 0; k < COST_NKERNELS; k++) {
        r.peak[k] = val[3 + 2 * k];
        r.d_half[k] = val[4 + 2 * k];
        sane &= r.peak[k] > 0 && r.d_half[k] >= 0 && isfinite(1 / r.peak[k]);
    }
    double lt = val[3 + 2 * COST_NKERNELS];
    r.load_gemm = val[4 + 2 * COST_NKERNELS];
    r.load_scatter = val[5 + 2 * COST_NKERNELS];
    sane &= lt >= 1 && lt <= COST_LOAD_MAX && lt == floor(lt) && r.load_gemm >= 1 && r.load_gemm <= 16 &&
            r.load_scatter >= 1 && r.load_scatter <= 16;
    r.load_threads = sane ? (int)lt : 1;
    double kt = val[6 + 2 * COST_NKERNELS];
    r.gemm_gflops = val[7 + 2 * COST_NKERNELS];
    sane &= kt >= 0 && kt <= 1 << 20 && kt == floor(kt) && r.gemm_gflops >= 0;
    if (!sane) return canopy_err_set(err, CANOPY_ERR_FORMAT, "%s: cost model values out of range", path);
    r.key_threads = (int)kt;
    memcpy(r.key_cpu, key_cpu, sizeof key_cpu);
    memcpy(r.key_blas, key_blas, sizeof key_blas);
    size_t plen = strlen(path);
    if (plen >= sizeof r.source) plen = sizeof r.source - 1;
    memcpy(r.source, path, plen);
    r.source[plen] = '\0';
    *m = r;
    return CANOPY_SUCCESS;
}

int cost_model_default_path(char *buf, size_t len)
{
    if (buf == NULL || len == 0) return -1;
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char base[CANOPY_PATH_MAX];
    int n;
    /* XDG: a relative XDG_CACHE_HOME is invalid and must be ignored */
    if (xdg && xdg[0] == '/') n = snprintf(base, sizeof base, "%s", xdg);
    else if (home && *home) n = snprintf(base, sizeof base, "%s/.cache", home);
    else return -1;
    if (n < 0 || (size_t)n >= sizeof base) return -1;
    char host[256];
    if (gethostname(host, sizeof host) != 0) host[0] = '\0';
    host[sizeof host - 1] = '\0';
    /* the host name becomes part of a file name: keep it to portable characters */
    for (char *p = host; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
              *p == '.' || *p == '_'))
            *p = '_';
    if (host[0] == '\0' || host[0] == '.') snprintf(host, sizeof host, "unknown");
    n = snprintf(buf, len, "%s/canopy/cost-model-%s.txt", base, host);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

void cost_model_stamp(sched_cost_model *m)
{
    blascheck_machine mc;
    blascheck_identify(&mc);
    blascheck_cpu_key(&mc, m->key_cpu, sizeof m->key_cpu);
    blascheck_blas_key(&mc, m->key_blas, sizeof m->key_blas);
    m->key_threads = cost_usable_cores();
}

double cost_model_check_rate(const sched_cost_model *m)
{
    double rows = cost_rows(COST_CHECK_D), d = COST_CHECK_D;
    double t = cost_gemm(m, rows, d, d);
    return t > 0 ? 2 * rows * d * d / t * 1e-9 : 0;
}

/* The quick check: GFlop/s of the check's GEMM on one core now (0 when it cannot run). Best of
 * the cost_time batches; when that is off the cache's prediction, up to twice more (another
 * process may have held the core), so that only a lasting difference remakes the cache. */
static double cost_check_measure(double predicted, const cost_kernels *kern)
{
    double injected = cost_injected_gflops();
    if (injected > 0) return injected;
    if (kern == NULL) return 0;
    canopy_err local = {0};
    cost_bench b = {0};
    size_t rows = (size_t)cost_rows(COST_CHECK_D);
    b.A = canopy_alloc(rows * COST_CHECK_D, sizeof(double), "cost check operand", &local);
    b.B = canopy_alloc((size_t)COST_GEMM_DMAX * COST_CHECK_D, sizeof(double), "cost check operand", &local);
    b.C = canopy_alloc(rows * COST_CHECK_D, sizeof(double), "cost check operand", &local);
    double rate = 0;
    if (b.A && b.B && b.C) {
        for (size_t i = 0; i < rows * COST_CHECK_D; i++) b.A[i] = b.C[i] = 1e-3 * (double)(i % 13 + 1);
        for (size_t i = 0; i < (size_t)COST_GEMM_DMAX * COST_CHECK_D; i++) b.B[i] = 1e-3 * (double)(i % 7 + 1);
        int old = kern->blas_single();
        double f = cost_flops(COST_GEMM, COST_CHECK_D);
        for (int round = 0; round < 3; round++) {
            double t = cost_time(&b, COST_GEMM, COST_CHECK_D, 0);
            if (t > 0 && f / t * 1e-9 > rate) rate = f / t * 1e-9;
            if (rate * COST_CHECK_TOLERANCE >= predicted && rate <= predicted * COST_CHECK_TOLERANCE) break;
        }
        kern->blas_restore(old);
    }
    canopy_free(b.A);
    canopy_free(b.B);
    canopy_free(b.C);
    return rate;
}

/* The verdict on the BLAS (and its one warning per process). */
static void cost_judge(sched_cost_model *m)
{
    blascheck_machine mc;
    blascheck_identify(&mc);
    m->gemm_expected = blascheck_expected_gflops(&mc);
    blascheck_verdict(&mc, m->gemm_gflops, m->blas_warning, sizeof m->blas_warning);
    (void)blascheck_warn_once(m->blas_warning);
}

void cost_model_report(const sched_cost_model *m, canopy_stats *st)
{
    if (m == NULL || st == NULL) return;
    st->blas_gflops = m->gemm_gflops;
    st->blas_gflops_expected = m->gemm_expected;
    st->blas_warning = m->blas_warning[0] != '\0';
    snprintf(st->blas_name, sizeof st->blas_name, "%s", m->key_blas);
    snprintf(st->blas_message, sizeof st->blas_message, "%s", m->blas_warning);
}

int cost_cache_is_file(const char *where)
{
    return where != NULL && where[0] != '\0' && strcmp(where, "fixed") != 0 && strcmp(where, "none") != 0;
}

canopy_status cost_model_load(sched_cost_model *m, const char *where, const cost_kernels *kern, canopy_err *err)
{
    if (m == NULL) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "cost_model_load: NULL model");
    if (where == NULL) where = "";
    if (!strcmp(where, "fixed")) {
        cost_model_fixed(m);
        cost_model_stamp(m);
        cost_judge(m); /* by the kernels' instruction set alone: nothing was measured */
        return CANOPY_SUCCESS;
    }
    char path[CANOPY_PATH_MAX];
    int use_file = 0;
    if (*where == '\0') {
        use_file = cost_model_default_path(path, sizeof path) == 0;
    } else if (cost_cache_is_file(where)) {
        size_t l = strlen(where);
        if (l >= sizeof path)
            return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "cost model path longer than %d bytes", CANOPY_PATH_MAX - 1);
        memcpy(path, where, l + 1);
        use_file = 1;
    }
    /* a missing, unreadable or garbled cache is not an error: it is remade; so is one made on
     * another machine (CPU, BLAS or its kernels, cores) or one this machine no longer matches */
    canopy_err local = {0};
    char note[sizeof m->note] = "";
    sched_cost_model c;
    if (use_file && cost_model_read(&c, path, &local) == CANOPY_SUCCESS) {
        sched_cost_model here;
        memset(&here, 0, sizeof here);
        cost_model_stamp(&here);
        if (strcmp(c.key_cpu, here.key_cpu) || strcmp(c.key_blas, here.key_blas) || c.key_threads != here.key_threads) {
            snprintf(note, sizeof note, "cache made for %s, %s, %d cores; this is %s, %s, %d cores: recalibrated",
                     strcmp(c.key_cpu, here.key_cpu) ? c.key_cpu : "this CPU",
                     strcmp(c.key_blas, here.key_blas) ? c.key_blas : "this BLAS", c.key_threads,
                     strcmp(c.key_cpu, here.key_cpu) ? here.key_cpu : "the same CPU",
                     strcmp(c.key_blas, here.key_blas) ? here.key_blas : "the same BLAS", here.key_threads);
        } else {
            double predicted = cost_model_check_rate(&c), rate = cost_check_measure(predicted, kern);
            if (rate > 0 && rate * COST_CHECK_TOLERANCE >= predicted && rate <= predicted * COST_CHECK_TOLERANCE) {
                *m = c;
                m->gemm_gflops = rate;
                m->note[0] = '\0';
                cost_judge(m);
                return CANOPY_SUCCESS;
            }
            snprintf(note, sizeof note, "cache predicts DGEMM at %.1f GFlop/s, measured %.1f: recalibrated", predicted,
                     rate);
        }
    }
    canopy_err_clear(&local);
    if (cost_model_calibrate(m, kern, &local) != CANOPY_SUCCESS) {
        cost_model_fixed(m);
        cost_model_stamp(m);
    } else {
        canopy_err_clear(&local);
        if (use_file) (void)cost_model_write(m, path, &local); /* unwritable: keep it in memory */
    }
    snprintf(m->note, sizeof m->note, "%s", note);
    cost_judge(m);
    return CANOPY_SUCCESS;
}
