/*
 * NUMA probe (see probe.h; the experiments of papers/numa-scheduler-pastix.txt §3.1-3.2). Owns the
 * measurement threads, their operand pools and the reports; it only reads the topology. Operand
 * pools are bigger than the last-level cache so that each BLAS call fetches its operands from
 * wherever their pages were first touched.
 */
#include "probe.h"
#include "placement.h"

#include <math.h>
#include <pthread.h>
#include <string.h>
#include <cblas.h>
#include <hwloc.h>
#include <zlib.h>

#if defined(HAVE_OPENBLAS_GET_NUM_THREADS) && defined(HAVE_OPENBLAS_SET_NUM_THREADS)
#define PROBE_BLAS_THREADS 1
/* declared here as well: not every cblas.h that provides them declares them */
void openblas_set_num_threads(int num_threads);
int openblas_get_num_threads(void);
#endif

#define MIB ((size_t)1 << 20)
#define PROBE_MAX_REPS 1000000
static const char *const kernel_name[NUMA_PROBE_KERNELS] = {"daxpy", "dgemm"};
static const char *const placement_name[NUMA_PROBE_PLACEMENTS] = {"first core", "local", "worst"};

/* ---- operand pools and kernels ----------------------------------------------------------- */

/* Doubles in one pool: daxpy pairs (x, y) then dgemm triples (A, B, C). */
static size_t pool_doubles(const numa_probe *r, int busy, size_t *gemm_offset)
{
    const int *cnt = busy ? r->count_busy : r->count;
    size_t na = (size_t)r->n[NUMA_PROBE_AXPY], ng = (size_t)r->n[NUMA_PROBE_GEMM];
    *gemm_offset = 2 * na * (size_t)cnt[NUMA_PROBE_AXPY];
    return *gemm_offset + 3 * ng * ng * (size_t)cnt[NUMA_PROBE_GEMM];
}

/* First touch: the pages land on the node of the calling (bound) thread. */
static void pool_touch(const numa_probe *r, int busy, double *pool)
{
    size_t off, n = pool_doubles(r, busy, &off);
    for (size_t i = 0; i < n; i++) pool[i] = 1.0 / (double)(1 + i % 7);
}

/* One untimed sweep, then r->reps timed ones; seconds per call. */
static double pool_time(const numa_probe *r, int busy, int kernel, double *pool)
{
    const int *cnt = busy ? r->count_busy : r->count;
    size_t off;
    pool_doubles(r, busy, &off);
    int n = r->n[kernel], c = cnt[kernel];
    double t0 = 0.0;
    for (int s = 0; s <= r->reps; s++) {
        if (s == 1) t0 = canopy_wtime();
        if (kernel == NUMA_PROBE_AXPY) {
            for (int i = 0; i < c; i++) {
                double *x = pool + 2 * (size_t)i * (size_t)n;
                cblas_daxpy(n, 1e-6, x, 1, x + n, 1);
            }
        } else {
            size_t nn = (size_t)n * (size_t)n;
            for (int i = 0; i < c; i++) {
                double *a = pool + off + 3 * (size_t)i * nn;
                cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0 / n, a, n, a + nn, n, 0.5,
                            a + 2 * nn, n);
            }
        }
    }
    double sec = (canopy_wtime() - t0) / ((double)r->reps * (double)c);
    return sec > 1e-12 ? sec : 1e-12; /* keeps the ratios finite on a coarse clock */
}

/* ---- one thread alone (§3.1) ------------------------------------------------------------- */

typedef struct probe_job {
    const numa_topo *t;
    const numa_probe *r;
    int core;
    int touch;     /* 1: first-touch the pool, 0: time the kernels on it */
    double *pool;
    double sec[NUMA_PROBE_KERNELS];
    canopy_err err;
} probe_job;

static void *job_main(void *arg)
{
    probe_job *j = arg;
    if (numa_bind_core(j->t, j->core, &j->err) != CANOPY_SUCCESS) return NULL;
    if (j->touch) pool_touch(j->r, 0, j->pool);
    else
        for (int k = 0; k < NUMA_PROBE_KERNELS; k++) j->sec[k] = pool_time(j->r, 0, k, j->pool);
    return NULL;
}

/* A fresh thread per job: binding then stays exact, and the main thread is never moved. */
static canopy_status run_job(probe_job *j, canopy_err *err)
{
    pthread_t th;
    canopy_err_clear(&j->err);
    if (pthread_create(&th, NULL, job_main, j) != 0)
        return canopy_err_set(err, CANOPY_ERR_NOMEM, "NUMA probe: cannot start a measurement thread");
    pthread_join(th, NULL);
    if (j->err.status != CANOPY_SUCCESS) return canopy_err_set(err, j->err.status, "NUMA probe: %s", j->err.msg);
    return CANOPY_SUCCESS;
}

static canopy_status probe_pairs(const numa_topo *t, numa_probe *r, canopy_err *err)
{
    size_t off, bytes = pool_doubles(r, 0, &off) * sizeof(double);
    double *sec = canopy_alloc((size_t)r->nnodes * (size_t)r->ncores * NUMA_PROBE_KERNELS, sizeof *sec, "probe times", err);
    if (sec == NULL) return err ? err->status : CANOPY_ERR_NOMEM;
    canopy_status st = CANOPY_SUCCESS;
    for (int d = 0; d < r->nnodes && st == CANOPY_SUCCESS; d++) {
        int helper = 0;
        while (helper < r->ncores && r->core_node[helper] != d) helper++;
        if (helper == r->ncores) {
            st = canopy_err_set(err, CANOPY_ERR_INTERNAL, "NUMA probe: node %d has no usable core", d);
            break;
        }
        double *pool = numa_alloc_pages(bytes, "probe operands", err);
        if (pool == NULL) {
            st = err ? err->status : CANOPY_ERR_NOMEM;
            break;
        }
        probe_job j = {t, r, helper, 1, pool, {0}, {0}};
        st = run_job(&j, err);
        for (int c = 0; c < r->ncores && st == CANOPY_SUCCESS; c++) {
            probe_job m = {t, r, c, 0, pool, {0}, {0}};
            st = run_job(&m, err);
            for (int k = 0; k < NUMA_PROBE_KERNELS; k++)
                sec[((size_t)k * (size_t)r->nnodes + (size_t)d) * (size_t)r->ncores + (size_t)c] = m.sec[k];
        }
        numa_free_pages(pool, bytes);
    }
    if (st == CANOPY_SUCCESS)
        for (int k = 0; k < NUMA_PROBE_KERNELS; k++) {
            const double *s = sec + (size_t)k * (size_t)r->nnodes * (size_t)r->ncores;
            for (int c = 0; c < r->ncores; c++) {
                double local = s[(size_t)r->core_node[c] * (size_t)r->ncores + (size_t)c];
                r->local_call[k][c] = local;
                for (int d = 0; d < r->nnodes; d++) {
                    size_t at = (size_t)d * (size_t)r->ncores + (size_t)c;
                    r->pair[k][at] = s[at] / local;
                }
            }
        }
    canopy_free(sec);
    return st;
}

/* ---- every core busy (§3.2) -------------------------------------------------------------- */

typedef struct busy_shared {
    const numa_topo *t;
    const numa_probe *r;
    int placement;
    double **pool;              /* [ncores] the pool thread t computes on */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int go;                     /* 0 wait, 1 start, -1 abort (a thread could not be created) */
    pthread_barrier_t barrier;
} busy_shared;

typedef struct busy_job {
    busy_shared *s;
    int me;
    double sec[NUMA_PROBE_KERNELS];
    canopy_err err;
} busy_job;

static void *busy_main(void *arg)
{
    busy_job *j = arg;
    busy_shared *s = j->s;
    int n = s->r->ncores;
    /* a thread that cannot bind still walks through the barriers, or the others would wait forever */
    numa_bind_core(s->t, j->me, &j->err);
    pthread_mutex_lock(&s->lock);
    while (s->go == 0) pthread_cond_wait(&s->cond, &s->lock);
    int go = s->go;
    pthread_mutex_unlock(&s->lock);
    if (go < 0) return NULL;
    if (s->placement == NUMA_PROBE_FIRST_CORE) {
        if (j->me == 0)
            for (int i = 0; i < n; i++) pool_touch(s->r, 1, s->pool[i]);
    } else if (s->placement == NUMA_PROBE_LOCAL) {
        pool_touch(s->r, 1, s->pool[j->me]);
    } else {
        pool_touch(s->r, 1, s->pool[n - 1 - j->me]); /* thread n-1-t computes on what t touched */
    }
    for (int k = 0; k < NUMA_PROBE_KERNELS; k++) {
        pthread_barrier_wait(&s->barrier); /* everyone starts kernel k together */
        j->sec[k] = pool_time(s->r, 1, k, s->pool[j->me]);
    }
    pthread_barrier_wait(&s->barrier);
    return NULL;
}

static canopy_status busy_placement(const numa_topo *t, numa_probe *r, int placement, double *sec, canopy_err *err)
{
    int n = r->ncores;
    size_t off, bytes = pool_doubles(r, 1, &off) * sizeof(double);
    busy_shared s = {.t = t, .r = r, .placement = placement};
    busy_job *job = canopy_calloc((size_t)n, sizeof *job, "probe threads", err);
    pthread_t *th = canopy_alloc((size_t)n, sizeof *th, "probe threads", err);
    s.pool = canopy_calloc((size_t)n, sizeof *s.pool, "probe pools", err);
    canopy_status st = CANOPY_SUCCESS;
    if (!job || !th || !s.pool) st = err ? err->status : CANOPY_ERR_NOMEM;
    for (int i = 0; i < n && st == CANOPY_SUCCESS; i++) {
        s.pool[i] = numa_alloc_pages(bytes, "probe operands", err);
        if (s.pool[i] == NULL) st = err ? err->status : CANOPY_ERR_NOMEM;
    }
    int sync = 0, started = 0;
    if (st == CANOPY_SUCCESS) {
        if (pthread_mutex_init(&s.lock, NULL) == 0) sync |= 1;
        if (pthread_cond_init(&s.cond, NULL) == 0) sync |= 2;
        if (pthread_barrier_init(&s.barrier, NULL, (unsigned)n) == 0) sync |= 4;
        if (sync != 7) st = canopy_err_set(err, CANOPY_ERR_NOMEM, "NUMA probe: cannot create thread synchronisation");
    }
    for (int i = 0; i < n && st == CANOPY_SUCCESS; i++) {
        job[i].s = &s;
        job[i].me = i;
        if (pthread_create(&th[i], NULL, busy_main, &job[i]) != 0)
            st = canopy_err_set(err, CANOPY_ERR_NOMEM, "NUMA probe: cannot start thread %d of %d", i, n);
        else started++;
    }
    if (started > 0) {
        /* the barriers count every core: start them only once all threads exist */
        pthread_mutex_lock(&s.lock);
        s.go = st == CANOPY_SUCCESS ? 1 : -1;
        pthread_cond_broadcast(&s.cond);
        pthread_mutex_unlock(&s.lock);
        for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    }
    for (int i = 0; i < n && st == CANOPY_SUCCESS; i++) {
        if (job[i].err.status != CANOPY_SUCCESS) st = canopy_err_set(err, job[i].err.status, "NUMA probe: %s", job[i].err.msg);
        for (int k = 0; k < NUMA_PROBE_KERNELS; k++) sec[(size_t)k * (size_t)n + (size_t)i] = job[i].sec[k];
    }
    if (sync & 1) pthread_mutex_destroy(&s.lock);
    if (sync & 2) pthread_cond_destroy(&s.cond);
    if (sync & 4) pthread_barrier_destroy(&s.barrier);
    for (int i = 0; s.pool && i < n; i++) numa_free_pages(s.pool[i], bytes);
    canopy_free(s.pool);
    canopy_free(th);
    canopy_free(job);
    return st;
}

static canopy_status probe_busy(const numa_topo *t, numa_probe *r, canopy_err *err)
{
    size_t n = (size_t)r->ncores;
    double *sec = canopy_alloc(NUMA_PROBE_PLACEMENTS * NUMA_PROBE_KERNELS * n, sizeof *sec, "probe times", err);
    if (sec == NULL) return err ? err->status : CANOPY_ERR_NOMEM;
    canopy_status st = CANOPY_SUCCESS;
    for (int p = 0; p < NUMA_PROBE_PLACEMENTS && st == CANOPY_SUCCESS; p++)
        st = busy_placement(t, r, p, sec + (size_t)p * NUMA_PROBE_KERNELS * n, err);
    for (int k = 0; k < NUMA_PROBE_KERNELS && st == CANOPY_SUCCESS; k++) {
        const double *local = sec + ((size_t)NUMA_PROBE_LOCAL * NUMA_PROBE_KERNELS + (size_t)k) * n;
        double mean_local = 0.0, mean_alone = 0.0;
        for (size_t c = 0; c < n; c++) {
            mean_local += local[c];
            mean_alone += r->local_call[k][c];
        }
        for (int p = 0; p < NUMA_PROBE_PLACEMENTS; p++) {
            const double *s = sec + ((size_t)p * NUMA_PROBE_KERNELS + (size_t)k) * n;
            double mean = 0.0;
            for (size_t c = 0; c < n; c++) {
                r->busy[k][(size_t)p * n + c] = s[c] / local[c];
                mean += s[c];
            }
            r->busy_avg[k][p] = mean / mean_local;
        }
        r->alone[k] = mean_alone / mean_local;
    }
    canopy_free(sec);
    return st;
}

/* ---- driver ------------------------------------------------------------------------------ */

void numa_probe_free(numa_probe *r)
{
    if (r == NULL) return;
    canopy_free(r->core_os);
    canopy_free(r->core_node);
    canopy_free(r->node_os);
    for (int k = 0; k < NUMA_PROBE_KERNELS; k++) {
        canopy_free(r->pair[k]);
        canopy_free(r->local_call[k]);
        canopy_free(r->busy[k]);
    }
    memset(r, 0, sizeof *r);
}

/* The largest data cache above the first core and how many usable cores share it. */
static void last_level_cache(const numa_topo *t, size_t *bytes, int *sharing)
{
    hwloc_topology_t topo = numa_topo_hwloc(t);
    *bytes = 0;
    *sharing = 1;
    hwloc_obj_t o = hwloc_get_pu_obj_by_os_index(topo, (unsigned)numa_topo_core_os(t, 0));
    for (; o; o = o->parent)
        if (hwloc_obj_type_is_dcache(o->type) && o->attr && o->attr->cache.size > *bytes) {
            *bytes = (size_t)o->attr->cache.size;
            int c = hwloc_get_nbobjs_inside_cpuset_by_type(topo, o->cpuset, HWLOC_OBJ_CORE);
            *sharing = c > 0 ? c : 1;
        }
}

static int pool_count(size_t bytes, size_t per_set)
{
    size_t c = bytes / per_set;
    return c < 1 ? 1 : c > 1000000 ? 1000000 : (int)c;
}

canopy_status numa_probe_run(const numa_topo *t, const numa_probe_opts *o, numa_probe *r, canopy_err *err)
{
    if (r == NULL) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "numa_probe_run: NULL result");
    memset(r, 0, sizeof *r);
    if (t == NULL || o == NULL) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "numa_probe_run: NULL argument");
    if (o->reps < 0 || o->reps > PROBE_MAX_REPS)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "NUMA probe: %d sweeps asked (expected 1..%d)", o->reps, PROBE_MAX_REPS);
    if (numa_topo_dry_run(t))
        return canopy_err_set(err, CANOPY_ERR_UNSUPPORTED,
                              "NUMA probe: the topology comes from HWLOC_SYNTHETIC or HWLOC_XMLFILE and is not this "
                              "machine; cannot measure a machine that is not this one (unset them)");
    r->ncores = numa_topo_cores(t);
    r->nnodes = numa_topo_nodes(t);
    size_t nc = (size_t)r->ncores, nn = (size_t)r->nnodes;
    r->core_os = canopy_alloc(nc, sizeof *r->core_os, "probe cores", err);
    r->core_node = canopy_alloc(nc, sizeof *r->core_node, "probe cores", err);
    r->node_os = canopy_alloc(nn, sizeof *r->node_os, "probe nodes", err);
    int ok = r->core_os && r->core_node && r->node_os;
    for (int k = 0; k < NUMA_PROBE_KERNELS; k++) {
        r->pair[k] = canopy_alloc(nn * nc, sizeof *r->pair[k], "probe pair table", err);
        r->local_call[k] = canopy_alloc(nc, sizeof *r->local_call[k], "probe local times", err);
        r->busy[k] = canopy_alloc(NUMA_PROBE_PLACEMENTS * nc, sizeof *r->busy[k], "probe busy table", err);
        ok = ok && r->pair[k] && r->local_call[k] && r->busy[k];
    }
    if (!ok) {
        numa_probe_free(r);
        return err ? err->status : CANOPY_ERR_NOMEM;
    }
    for (int c = 0; c < r->ncores; c++) {
        r->core_os[c] = numa_topo_core_os(t, c);
        r->core_node[c] = numa_topo_core_node(t, c);
    }
    for (int d = 0; d < r->nnodes; d++) r->node_os[d] = numa_topo_node_os(t, d);
    /* operands as in the paper (vectors of 128, 128x128 matrices); pools past the last-level
     * cache, shared by `sharing` cores when they are all busy */
    size_t llc;
    int sharing;
    last_level_cache(t, &llc, &sharing);
    r->n[NUMA_PROBE_AXPY] = 128;
    r->n[NUMA_PROBE_GEMM] = o->quick ? 32 : 128;
    size_t axpy_set = 2 * 128 * sizeof(double), gemm_set = 3 * sizeof(double) * (size_t)r->n[NUMA_PROBE_GEMM] * (size_t)r->n[NUMA_PROBE_GEMM];
    if (o->quick) {
        r->count[NUMA_PROBE_AXPY] = r->count_busy[NUMA_PROBE_AXPY] = 64;
        r->count[NUMA_PROBE_GEMM] = r->count_busy[NUMA_PROBE_GEMM] = 4;
    } else {
        r->count[NUMA_PROBE_AXPY] = pool_count(CANOPY_MAX(32 * MIB, 2 * llc), axpy_set);
        r->count_busy[NUMA_PROBE_AXPY] = pool_count(CANOPY_MAX(4 * MIB, 2 * llc / (size_t)sharing), axpy_set);
        r->count[NUMA_PROBE_GEMM] = pool_count(16 * MIB, gemm_set);
        r->count_busy[NUMA_PROBE_GEMM] = pool_count(4 * MIB, gemm_set);
    }
    r->reps = o->reps > 0 ? o->reps : o->quick ? 1 : 3;
#ifdef PROBE_BLAS_THREADS
    int blas_old = openblas_get_num_threads();
    if (blas_old != 1) openblas_set_num_threads(1); /* our threads are the parallelism measured */
#endif
    canopy_status st = probe_pairs(t, r, err);
    if (st == CANOPY_SUCCESS) st = probe_busy(t, r, err);
#ifdef PROBE_BLAS_THREADS
    if (blas_old != 1) openblas_set_num_threads(blas_old);
#endif
    if (st != CANOPY_SUCCESS) numa_probe_free(r);
    return st;
}

/* ---- reports ----------------------------------------------------------------------------- */

static int probe_valid(const numa_probe *r)
{
    return r && r->ncores > 0 && r->nnodes > 0 && r->core_os && r->core_node && r->node_os && r->pair[0] && r->pair[1] &&
           r->local_call[0] && r->local_call[1] && r->busy[0] && r->busy[1];
}

canopy_status numa_probe_print(const numa_probe *r, FILE *f, canopy_err *err)
{
    if (!probe_valid(r) || f == NULL) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "numa_probe_print: empty result or NULL file");
    int nc = r->ncores, nn = r->nnodes;
    fprintf(f, "NUMA probe: %d usable core%s on %d NUMA node%s, %d timed sweep%s per measurement\n", nc, nc == 1 ? "" : "s",
            nn, nn == 1 ? "" : "s", r->reps, r->reps == 1 ? "" : "s");
    fprintf(f, "  daxpy on vectors of %d: %d pairs per thread alone (%.1f MiB), %d with every core busy\n", r->n[0], r->count[0],
            (double)r->count[0] * 2 * r->n[0] * sizeof(double) / (double)MIB, r->count_busy[0]);
    fprintf(f, "  dgemm on %dx%d matrices: %d triples per thread alone (%.1f MiB), %d with every core busy\n", r->n[1], r->n[1],
            r->count[1], (double)r->count[1] * 3 * r->n[1] * r->n[1] * sizeof(double) / (double)MIB, r->count_busy[1]);
    for (int k = 0; k < NUMA_PROBE_KERNELS; k++) {
        fprintf(f, "\n%s, one thread alone: time with the data on a node (row) / time with it on the node of the\n"
                   "thread's core (column: OS index of the core's first PU)\n%-9s", kernel_name[k], "");
        for (int c = 0; c < nc; c++) {
            char label[16];
            snprintf(label, sizeof label, "cpu%d", r->core_os[c]);
            fprintf(f, " %7s", label);
        }
        for (int d = 0; d < nn; d++) {
            fprintf(f, "\nnode %-4d", r->node_os[d]);
            for (int c = 0; c < nc; c++) fprintf(f, " %7.2f", r->pair[k][(size_t)d * (size_t)nc + (size_t)c]);
        }
        fprintf(f, "\n%-9s", "us/call");
        for (int c = 0; c < nc; c++) fprintf(f, " %7.3f", 1e6 * r->local_call[k][c]);
        fprintf(f, "  (local data)\n");
    }
    fprintf(f, "\nAll %d cores busy at once: mean time per core / mean time with local data\n"
               "  first core: all data allocated by the thread on the first core (cpu%d)\n"
               "  local: each thread allocated its own data;  worst: thread t uses the data of thread %d-t\n"
               "  alone: one thread alone with local data (no contention)\n"
               "%-7s %10s %10s %10s %10s\n", nc, r->core_os[0], nc - 1, "", placement_name[0], placement_name[1], placement_name[2],
            "alone");
    for (int k = 0; k < NUMA_PROBE_KERNELS; k++)
        fprintf(f, "%-7s %10.2f %10.2f %10.2f %10.2f\n", kernel_name[k], r->busy_avg[k][0], r->busy_avg[k][1], r->busy_avg[k][2],
                r->alone[k]);
    fprintf(f, "\nper core, all busy (time / local time of the core):\n%-9s", "");
    for (int k = 0; k < NUMA_PROBE_KERNELS; k++) fprintf(f, " %s first  %s worst", kernel_name[k], kernel_name[k]);
    for (int c = 0; c < nc; c++) {
        fprintf(f, "\ncpu%-6d", r->core_os[c]);
        for (int k = 0; k < NUMA_PROBE_KERNELS; k++)
            fprintf(f, " %11.2f %11.2f", r->busy[k][(size_t)NUMA_PROBE_FIRST_CORE * (size_t)nc + (size_t)c],
                    r->busy[k][(size_t)NUMA_PROBE_WORST * (size_t)nc + (size_t)c]);
    }
    fprintf(f, "\n");
    if (ferror(f)) return canopy_err_set(err, CANOPY_ERR_IO, "NUMA probe: cannot write the tables");
    return CANOPY_SUCCESS;
}

/* Colour scale shared by both maps: 1.0 (pale) to hi (dark red); below 1.0 counts as 1.0. */
static double heat_high(const numa_probe *r)
{
    double hi = 1.25; /* a floor, so that noise around 1.0 does not look like a NUMA effect */
    for (int k = 0; k < NUMA_PROBE_KERNELS; k++)
        for (size_t i = 0; i < (size_t)r->nnodes * (size_t)r->ncores; i++)
            if (isfinite(r->pair[k][i]) && r->pair[k][i] > hi) hi = r->pair[k][i];
    return hi;
}

static void heat_rgb(double v, double hi, unsigned char rgb[3])
{
    static const double stop[3][3] = {{255, 255, 229}, {254, 153, 41}, {153, 0, 13}};
    double x = isfinite(v) ? (v - 1.0) / (hi - 1.0) : 1.0;
    x = x < 0.0 ? 0.0 : x > 1.0 ? 1.0 : x;
    int s = x < 0.5 ? 0 : 1;
    double u = x < 0.5 ? 2.0 * x : 2.0 * x - 1.0;
    for (int i = 0; i < 3; i++) rgb[i] = (unsigned char)lround(stop[s][i] + u * (stop[s + 1][i] - stop[s][i]));
}

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

canopy_status numa_probe_write_svg(const numa_probe *r, const char *path, canopy_err *err)
{
    if (!probe_valid(r) || path == NULL) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "numa_probe_write_svg: empty result or NULL path");
    FILE *f = fopen(path, "w");
    if (f == NULL) return canopy_err_set(err, CANOPY_ERR_IO, "cannot create %s", path);
    int nc = r->ncores, nn = r->nnodes;
    int cw = clampi(640 / nc, 8, 56), ch = clampi(320 / nn, 10, 32), left = 80, top = 40, gap = 64;
    int mapw = nc * cw, maph = nn * ch, width = left + CANOPY_MAX(mapw, 640) + 40;
    int height = top + 2 * (maph + gap) + 50, step = clampi((28 + cw - 1) / cw, 1, nc);
    double hi = heat_high(r);
    unsigned char c3[3];
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
               "font-family=\"sans-serif\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
               "<text x=\"%d\" y=\"20\" font-size=\"14\">NUMA probe: time with data on node (row) / time with local data, "
               "thread alone on core (column)</text>\n", width, height, width, height, 10);
    for (int k = 0; k < NUMA_PROBE_KERNELS; k++) {
        int y0 = top + k * (maph + gap) + 28;
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"13\" font-weight=\"bold\">%s</text>\n", left, y0 - 16, kernel_name[k]);
        for (int c = 0; c < nc; c += step)
            fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"9\" text-anchor=\"middle\">%d</text>\n", left + c * cw + cw / 2, y0 - 3, r->core_os[c]);
        for (int d = 0; d < nn; d++) {
            int y = y0 + d * ch;
            fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"end\">node %d</text>\n", left - 6, y + ch / 2 + 4, r->node_os[d]);
            for (int c = 0; c < nc; c++) {
                double v = r->pair[k][(size_t)d * (size_t)nc + (size_t)c];
                heat_rgb(v, hi, c3);
                fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#%02x%02x%02x\" stroke=\"#bbbbbb\" "
                           "stroke-width=\"0.5\"><title>node %d, cpu %d: %.3f</title></rect>\n",
                        left + c * cw, y, cw, ch, c3[0], c3[1], c3[2], r->node_os[d], r->core_os[c], v);
                if (cw >= 30 && ch >= 14)
                    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\" fill=\"%s\">%.2f</text>\n",
                            left + c * cw + cw / 2, y + ch / 2 + 4, (v - 1.0) / (hi - 1.0) > 0.6 ? "white" : "black", v);
            }
        }
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"10\">cores (OS index of the first PU)</text>\n", left, y0 + maph + 14);
    }
    int ly = top + 2 * (maph + gap) + 4;
    for (int i = 0; i < 100; i++) {
        heat_rgb(1.0 + (hi - 1.0) * i / 99.0, hi, c3);
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"3\" height=\"12\" fill=\"#%02x%02x%02x\"/>\n", left + 3 * i, ly, c3[0], c3[1], c3[2]);
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"end\">1.00</text>\n"
               "<text x=\"%d\" y=\"%d\" font-size=\"10\">%.2f (and above)</text>\n</svg>\n",
            left - 4, ly + 10, left + 304, ly + 10, hi);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) return canopy_err_set(err, CANOPY_ERR_IO, "cannot write %s", path);
    return CANOPY_SUCCESS;
}

/* ---- PNG --------------------------------------------------------------------------------- */

static void be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* One chunk: length, type, data, CRC-32 of type and data. */
static int png_chunk(FILE *f, const char *type, const unsigned char *data, uint32_t len)
{
    unsigned char head[8], tail[4];
    be32(head, len);
    memcpy(head + 4, type, 4);
    uLong crc = crc32(0L, (const Bytef *)type, 4);
    if (len > 0) crc = crc32(crc, data, len);
    be32(tail, (uint32_t)crc);
    return fwrite(head, 1, 8, f) == 8 && (len == 0 || fwrite(data, 1, len, f) == len) && fwrite(tail, 1, 4, f) == 4;
}

canopy_status numa_png_write(const char *path, int w, int h, const unsigned char *rgb, canopy_err *err)
{
    if (path == NULL || rgb == NULL || w < 1 || h < 1)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "numa_png_write: NULL argument or empty %dx%d image", w, h);
    size_t row = 3 * (size_t)w, raw_len;
    if (!canopy_mul_ok(row + 1, (size_t)h, &raw_len) || raw_len > (size_t)INT32_MAX)
        return canopy_err_set(err, CANOPY_ERR_TOO_LARGE, "PNG image of %dx%d pixels is too large", w, h);
    uLongf zlen = compressBound((uLong)raw_len);
    unsigned char *raw = canopy_alloc(raw_len, 1, "PNG rows", err);
    unsigned char *z = canopy_alloc((size_t)zlen, 1, "PNG data", err);
    canopy_status st = CANOPY_SUCCESS;
    if (raw == NULL || z == NULL) st = err ? err->status : CANOPY_ERR_NOMEM;
    if (st == CANOPY_SUCCESS) {
        for (size_t y = 0; y < (size_t)h; y++) {
            raw[y * (row + 1)] = 0; /* filter type 0: the row as is */
            memcpy(raw + y * (row + 1) + 1, rgb + y * row, row);
        }
        if (compress2(z, &zlen, raw, (uLong)raw_len, 9) != Z_OK)
            st = canopy_err_set(err, CANOPY_ERR_INTERNAL, "zlib could not compress the PNG image");
    }
    if (st == CANOPY_SUCCESS) {
        static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
        unsigned char ihdr[13];
        be32(ihdr, (uint32_t)w);
        be32(ihdr + 4, (uint32_t)h);
        ihdr[8] = 8;   /* bits per sample */
        ihdr[9] = 2;   /* colour type: RGB */
        ihdr[10] = 0;  /* deflate */
        ihdr[11] = 0;  /* adaptive filtering */
        ihdr[12] = 0;  /* no interlace */
        FILE *f = fopen(path, "wb");
        if (f == NULL) st = canopy_err_set(err, CANOPY_ERR_IO, "cannot create %s", path);
        else {
            int ok = fwrite(sig, 1, 8, f) == 8 && png_chunk(f, "IHDR", ihdr, 13) && png_chunk(f, "IDAT", z, (uint32_t)zlen) &&
                     png_chunk(f, "IEND", NULL, 0);
            if (fclose(f) != 0 || !ok) st = canopy_err_set(err, CANOPY_ERR_IO, "cannot write %s", path);
        }
    }
    canopy_free(raw);
    canopy_free(z);
    return st;
}

static void fill_rect(unsigned char *img, int w, int x0, int y0, int rw, int rh, const unsigned char c[3])
{
    for (int y = y0; y < y0 + rh; y++)
        for (int x = x0; x < x0 + rw; x++) memcpy(img + 3 * ((size_t)y * (size_t)w + (size_t)x), c, 3);
}

canopy_status numa_probe_write_png(const numa_probe *r, const char *path, canopy_err *err)
{
    if (!probe_valid(r) || path == NULL) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "numa_probe_write_png: empty result or NULL path");
    int nc = r->ncores, nn = r->nnodes;
    if (nc > 65536 || nn > 65536) return canopy_err_set(err, CANOPY_ERR_TOO_LARGE, "PNG heat map of %d cores x %d nodes is too large", nc, nn);
    /* daxpy and dgemm side by side, a legend bar under them; a 1-pixel grid when cells allow */
    int cw = clampi(480 / nc, 2, 32), ch = clampi(240 / nn, 2, 32), m = 8, gap = 12, grid = cw >= 6 && ch >= 6;
    int mapw = nc * cw, maph = nn * ch;
    int w = 2 * m + 2 * mapw + gap, h = 2 * m + maph + 6 + 8;
    size_t bytes;
    if (!canopy_mul_ok((size_t)w * 3, (size_t)h, &bytes)) return canopy_err_set(err, CANOPY_ERR_TOO_LARGE, "PNG heat map too large");
    unsigned char *img = canopy_alloc(bytes, 1, "PNG image", err);
    if (img == NULL) return err ? err->status : CANOPY_ERR_NOMEM;
    memset(img, 255, bytes);
    static const unsigned char grey[3] = {187, 187, 187};
    double hi = heat_high(r);
    unsigned char c3[3];
    for (int k = 0; k < NUMA_PROBE_KERNELS; k++) {
        int x0 = m + k * (mapw + gap);
        if (grid) fill_rect(img, w, x0, m, mapw, maph, grey);
        for (int d = 0; d < nn; d++)
            for (int c = 0; c < nc; c++) {
                heat_rgb(r->pair[k][(size_t)d * (size_t)nc + (size_t)c], hi, c3);
                fill_rect(img, w, x0 + c * cw + grid, m + d * ch + grid, cw - grid, ch - grid, c3);
            }
    }
    int lw = w - 2 * m;
    for (int x = 0; x < lw; x++) {
        heat_rgb(1.0 + (hi - 1.0) * x / (lw > 1 ? lw - 1 : 1), hi, c3);
        fill_rect(img, w, m + x, m + maph + 6, 1, 8, c3);
    }
    canopy_status st = numa_png_write(path, w, h, img, err);
    canopy_free(img);
    return st;
}
