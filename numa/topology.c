/*
 * Topology, worker placement and binding through hwloc (see topology.h). Owns which cores this
 * process may use, where each worker goes and how far apart workers are; it does not allocate the
 * solver's memory (placement.c) nor decide what runs where (sched/).
 */
#include "topology.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <hwloc.h>

struct numa_topo {
    hwloc_topology_t topo;
    int dry_run;                /* not this machine: binding only recorded */
    int machine_cores;          /* every core, the disallowed ones included */
    int allowed_cores;          /* cores the OS allows (cgroups), before the process binding */
    int ncores;                 /* usable cores */
    int nnodes;                 /* usable NUMA nodes (>= 1) */
    hwloc_obj_type_t core_type; /* HWLOC_OBJ_CORE, or PU on a topology without cores */
    hwloc_obj_t *cores;         /* [ncores] usable cores, depth-first (logical) order */
    int *core_node;             /* [ncores] usable node of each core */
    hwloc_obj_t *nodes;         /* [nnodes] usable NUMA nodes; nodes[0] NULL when hwloc has none */
};

/* Hard limits that keep list parsing and the T x T distance matrix reasonable. */
#define NUMA_LIST_MAX_VALUE (1 << 20)
#define NUMA_LIST_MAX_ENTRIES (1 << 16)
#define NUMA_MAX_THREADS (1 << 15)

/* ---- parsing "0,2,4-7" ------------------------------------------------------------------- */

/*
 * Strict parse of a list of non-negative integers and ranges lo-hi (lo <= hi) separated by commas,
 * into a canopy_alloc'd array. @p what names the list in messages ("bind list", "PU list").
 */
static canopy_status parse_list(const char *s, const char *what, int **out, int *count, canopy_err *err)
{
    *out = NULL;
    *count = 0;
    if (*s == '\0') return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "%s is empty (expected e.g. 0,2,4-7)", what);
    int *v = NULL, n = 0, cap = 0;
    const char *p = s;
    while (1) {
        long lo = -1, hi = -1;
        for (int side = 0; side < 2; side++) {
            const char *start = p;
            long x = 0;
            while (*p >= '0' && *p <= '9') {
                x = x * 10 + (*p - '0');
                if (x > NUMA_LIST_MAX_VALUE) {
                    canopy_free(v);
                    return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "%s '%s': number at position %d is too large (at most %d)",
                                          what, s, (int)(start - s) + 1, NUMA_LIST_MAX_VALUE);
                }
                p++;
            }
            if (p == start) {
                canopy_free(v);
                if (*p == '\0' || *p == ',' || *p == '-')
                    return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "%s '%s': number missing at position %d (expected e.g. 0,2,4-7)",
                                          what, s, (int)(p - s) + 1);
                return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "%s '%s': unexpected character '%c' at position %d (expected e.g. 0,2,4-7)",
                                      what, s, *p, (int)(p - s) + 1);
            }
            if (side == 0) {
                lo = x;
                if (*p != '-') { hi = x; break; }
                p++;
            } else {
                hi = x;
                if (hi < lo) {
                    canopy_free(v);
                    return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "%s '%s': range %ld-%ld ends before it starts", what, s, lo, hi);
                }
            }
        }
        if (hi - lo + 1 > NUMA_LIST_MAX_ENTRIES - n) {
            canopy_free(v);
            return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "%s '%s' has more than %d entries", what, s, NUMA_LIST_MAX_ENTRIES);
        }
        if (n + (int)(hi - lo + 1) > cap) {
            int ncap = CANOPY_MAX(2 * cap, n + (int)(hi - lo + 1));
            int *nv = canopy_realloc(v, (size_t)ncap, sizeof *nv, what, err);
            if (nv == NULL) {
                canopy_free(v);
                return err ? err->status : CANOPY_ERR_NOMEM;
            }
            v = nv;
            cap = ncap;
        }
        for (long x = lo; x <= hi; x++) v[n++] = (int)x;
        if (*p == '\0') break;
        if (*p != ',') {
            canopy_free(v);
            return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "%s '%s': unexpected character '%c' at position %d (expected e.g. 0,2,4-7)",
                                  what, s, *p, (int)(p - s) + 1);
        }
        p++;
    }
    *out = v;
    *count = n;
    return CANOPY_SUCCESS;
}

/* ---- loading and restricting ------------------------------------------------------------- */

/* The cached views of a (restricted) topology; built aside and swapped in, so that a failure
 * leaves the numa_topo as it was. */
typedef struct topo_cache {
    int ncores, nnodes;
    hwloc_obj_t *cores;
    int *core_node;
    hwloc_obj_t *nodes;
} topo_cache;

static void cache_free(topo_cache *c)
{
    canopy_free(c->cores);
    canopy_free(c->core_node);
    canopy_free(c->nodes);
    memset(c, 0, sizeof *c);
}

static canopy_status cache_build(hwloc_topology_t topo, hwloc_obj_type_t core_type, topo_cache *c, canopy_err *err)
{
    memset(c, 0, sizeof *c);
    int nc = hwloc_get_nbobjs_by_type(topo, core_type);
    int nn = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
    if (nc <= 0) return canopy_err_set(err, CANOPY_ERR_INTERNAL, "hwloc: the topology has no usable core");
    if (nn < 0) nn = 0;
    c->cores = canopy_alloc((size_t)nc, sizeof *c->cores, "topology cores", err);
    c->core_node = canopy_alloc((size_t)nc, sizeof *c->core_node, "topology core nodes", err);
    c->nodes = canopy_alloc((size_t)nn + 1, sizeof *c->nodes, "topology nodes", err);
    if (!c->cores || !c->core_node || !c->nodes) {
        cache_free(c);
        return err ? err->status : CANOPY_ERR_NOMEM;
    }
    hwloc_const_cpuset_t all = hwloc_topology_get_topology_cpuset(topo);
    for (int i = 0; i < nc; i++) {
        hwloc_obj_t o = hwloc_get_obj_by_type(topo, core_type, (unsigned)i);
        if (o && o->cpuset && hwloc_bitmap_intersects(o->cpuset, all)) c->cores[c->ncores++] = o;
    }
    /* a node counts when it holds usable cores: CPU-less memory (or another rank's node left by
     * the restriction) is not where our first touches land */
    for (int i = 0; i < nn; i++) {
        hwloc_obj_t o = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, (unsigned)i);
        if (o && o->cpuset && hwloc_bitmap_intersects(o->cpuset, all)) c->nodes[c->nnodes++] = o;
    }
    if (c->ncores == 0) {
        cache_free(c);
        return canopy_err_set(err, CANOPY_ERR_INTERNAL, "hwloc: the topology has no usable core");
    }
    if (c->nnodes == 0) c->nodes[c->nnodes++] = NULL; /* no NUMA information: one node */
    /* the local node of a core is the smallest usable node covering it */
    for (int i = 0; i < c->ncores; i++) {
        int best = 0, bestw = INT_MAX;
        for (int n = 0; n < c->nnodes; n++) {
            if (c->nodes[n] == NULL || !hwloc_bitmap_intersects(c->cores[i]->cpuset, c->nodes[n]->cpuset)) continue;
            int w = hwloc_bitmap_weight(c->nodes[n]->cpuset);
            if (w >= 0 && w < bestw) { best = n; bestw = w; }
        }
        c->core_node[i] = best;
    }
    return CANOPY_SUCCESS;
}

/* Restrict a copy of t's topology to @p set, then swap it in. */
static canopy_status restrict_to(numa_topo *t, hwloc_const_cpuset_t set, canopy_err *err)
{
    hwloc_topology_t dup;
    if (hwloc_topology_dup(&dup, t->topo) != 0)
        return canopy_err_set(err, CANOPY_ERR_NOMEM, "hwloc: out of memory copying the topology");
    if (hwloc_topology_restrict(dup, set, 0) != 0) {
        int e = errno;
        hwloc_topology_destroy(dup);
        return canopy_err_set(err, e == ENOMEM ? CANOPY_ERR_NOMEM : CANOPY_ERR_INTERNAL,
                              "hwloc: cannot restrict the topology to the usable PUs: %s", strerror(e));
    }
    topo_cache c;
    canopy_status st = cache_build(dup, t->core_type, &c, err);
    if (st != CANOPY_SUCCESS) {
        hwloc_topology_destroy(dup);
        return st;
    }
    topo_cache old = {t->ncores, t->nnodes, t->cores, t->core_node, t->nodes};
    cache_free(&old);
    hwloc_topology_destroy(t->topo);
    t->topo = dup;
    t->ncores = c.ncores;
    t->nnodes = c.nnodes;
    t->cores = c.cores;
    t->core_node = c.core_node;
    t->nodes = c.nodes;
    return CANOPY_SUCCESS;
}

static int cores_in(hwloc_topology_t topo, hwloc_obj_type_t type, hwloc_const_cpuset_t set)
{
    int n = hwloc_get_nbobjs_by_type(topo, type), k = 0;
    for (int i = 0; i < n; i++) {
        hwloc_obj_t o = hwloc_get_obj_by_type(topo, type, (unsigned)i);
        if (o && o->cpuset && hwloc_bitmap_intersects(o->cpuset, set)) k++;
    }
    return k;
}

canopy_status numa_topo_load(numa_topo **out, canopy_err *err)
{
    if (out == NULL) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "numa_topo_load: NULL output");
    *out = NULL;
    numa_topo *t = canopy_calloc(1, sizeof *t, "topology", err);
    if (t == NULL) return err ? err->status : CANOPY_ERR_NOMEM;
    if (hwloc_topology_init(&t->topo) != 0) {
        canopy_free(t);
        return canopy_err_set(err, CANOPY_ERR_INTERNAL, "hwloc: cannot initialise the topology");
    }
    /* see the disallowed PUs too, so that machine_cores is the whole machine; the restriction
     * below drops them */
    hwloc_topology_set_flags(t->topo, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
    if (hwloc_topology_load(t->topo) != 0) {
        hwloc_topology_destroy(t->topo);
        canopy_free(t);
        return canopy_err_set(err, CANOPY_ERR_INTERNAL,
                              "hwloc: cannot load the topology (check HWLOC_SYNTHETIC / HWLOC_XMLFILE if set)");
    }
    t->dry_run = !hwloc_topology_is_thissystem(t->topo);
    t->core_type = hwloc_get_nbobjs_by_type(t->topo, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
    t->machine_cores = hwloc_get_nbobjs_by_type(t->topo, t->core_type);
    canopy_status st = CANOPY_SUCCESS;
    hwloc_bitmap_t set = hwloc_bitmap_dup(hwloc_topology_get_allowed_cpuset(t->topo));
    hwloc_bitmap_t bind = hwloc_bitmap_alloc();
    if (set == NULL || bind == NULL) {
        st = canopy_err_set(err, CANOPY_ERR_NOMEM, "hwloc: out of memory for a cpuset");
    } else {
        hwloc_bitmap_and(set, set, hwloc_topology_get_topology_cpuset(t->topo));
        t->allowed_cores = cores_in(t->topo, t->core_type, set);
        /* hwloc drops the cgroup-disallowed PUs only; the affinity mpirun gave this process
         * (sched_setaffinity) limits it as much. Another machine's topology has no such binding. */
        if (!t->dry_run && hwloc_get_cpubind(t->topo, bind, HWLOC_CPUBIND_PROCESS) == 0 &&
            hwloc_bitmap_intersects(bind, set))
            hwloc_bitmap_and(set, set, bind);
        if (hwloc_bitmap_iszero(set))
            st = canopy_err_set(err, CANOPY_ERR_INTERNAL, "hwloc: this process may run on no PU of the topology");
        else
            st = restrict_to(t, set, err);
    }
    hwloc_bitmap_free(set);
    hwloc_bitmap_free(bind);
    if (st != CANOPY_SUCCESS) {
        numa_topo_free(t);
        return st;
    }
    if (t->allowed_cores < t->ncores) t->allowed_cores = t->ncores;
    *out = t;
    return CANOPY_SUCCESS;
}

void numa_topo_free(numa_topo *t)
{
    if (t == NULL) return;
    topo_cache c = {t->ncores, t->nnodes, t->cores, t->core_node, t->nodes};
    cache_free(&c);
    if (t->topo) hwloc_topology_destroy(t->topo);
    canopy_free(t);
}

canopy_status numa_topo_restrict(numa_topo *t, const char *pu_list, canopy_err *err)
{
    if (t == NULL || pu_list == NULL) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "numa_topo_restrict: NULL argument");
    int *pu, n;
    canopy_status st = parse_list(pu_list, "PU list", &pu, &n, err);
    if (st != CANOPY_SUCCESS) return st;
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (set == NULL) {
        canopy_free(pu);
        return canopy_err_set(err, CANOPY_ERR_NOMEM, "hwloc: out of memory for a cpuset");
    }
    hwloc_const_cpuset_t all = hwloc_topology_get_topology_cpuset(t->topo);
    for (int i = 0; i < n && st == CANOPY_SUCCESS; i++) {
        if (!hwloc_bitmap_isset(all, (unsigned)pu[i])) {
            char have[128];
            hwloc_bitmap_list_snprintf(have, sizeof have, all);
            st = canopy_err_set(err, CANOPY_ERR_ARGUMENT, "PU list '%s': PU %d is not usable (usable PUs: %s)", pu_list, pu[i], have);
        }
        hwloc_bitmap_set(set, (unsigned)pu[i]);
    }
    canopy_free(pu);
    if (st == CANOPY_SUCCESS) st = restrict_to(t, set, err);
    hwloc_bitmap_free(set);
    return st;
}

canopy_status numa_count_cores(int *machine_cores, int *allowed_cores, canopy_err *err)
{
    if (machine_cores == NULL || allowed_cores == NULL)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "numa_count_cores: NULL output");
    numa_topo *t;
    canopy_status st = numa_topo_load(&t, err);
    if (st != CANOPY_SUCCESS) return st;
    *machine_cores = CANOPY_MAX(t->machine_cores, 1);
    *allowed_cores = t->ncores;
    numa_topo_free(t);
    return CANOPY_SUCCESS;
}

int numa_topo_cores(const numa_topo *t) { return t ? t->ncores : 1; }
int numa_topo_machine_cores(const numa_topo *t) { return t ? CANOPY_MAX(t->machine_cores, 1) : 1; }
int numa_topo_allowed_cores(const numa_topo *t) { return t ? t->allowed_cores : 1; }
int numa_topo_nodes(const numa_topo *t) { return t ? t->nnodes : 1; }
int numa_topo_dry_run(const numa_topo *t) { return t ? t->dry_run : 1; }
int numa_default_threads(const numa_topo *t) { return t ? t->ncores : 1; }
struct hwloc_topology *numa_topo_hwloc(const numa_topo *t) { return t ? t->topo : NULL; }

int numa_topo_core_node(const numa_topo *t, int core)
{
    return t && core >= 0 && core < t->ncores ? t->core_node[core] : -1;
}

int numa_topo_core_os(const numa_topo *t, int core)
{
    if (t == NULL || core < 0 || core >= t->ncores) return -1;
    int pu = hwloc_bitmap_first(t->cores[core]->cpuset);
    return pu >= 0 ? pu : -1;
}

int numa_topo_node_os(const numa_topo *t, int node)
{
    if (t == NULL || node < 0 || node >= t->nnodes) return -1;
    return t->nodes[node] ? (int)t->nodes[node]->os_index : 0;
}

int numa_topo_node_index(const numa_topo *t, int os_node)
{
    if (t == NULL || os_node < 0) return -1;
    for (int n = 0; n < t->nnodes; n++)
        if (t->nodes[n] == NULL || (int)t->nodes[n]->os_index == os_node) return n;
    return -1;
}

canopy_status numa_bind_core(const numa_topo *t, int core, canopy_err *err)
{
    if (t == NULL || core < 0 || core >= t->ncores)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "numa_bind_core: core %d out of range 0..%d", core, t ? t->ncores - 1 : -1);
    if (t->dry_run) return CANOPY_SUCCESS;
    if (hwloc_set_cpubind(t->topo, t->cores[core]->cpuset, HWLOC_CPUBIND_THREAD) != 0) {
        int e = errno;
        char pus[128];
        hwloc_bitmap_list_snprintf(pus, sizeof pus, t->cores[core]->cpuset);
        return canopy_err_set(err, CANOPY_ERR_UNSUPPORTED, "cannot bind a thread to core %d (PUs %s): %s", core, pus, strerror(e));
    }
    return CANOPY_SUCCESS;
}

/* ---- worker placement -------------------------------------------------------------------- */

static int core_index(const numa_topo *t, hwloc_obj_t o)
{
    /* after the restriction every core is usable, so the logical index is the position; the
     * search only guards against a topology that breaks that */
    if (o->logical_index < (unsigned)t->ncores && t->cores[o->logical_index] == o) return (int)o->logical_index;
    for (int i = 0; i < t->ncores; i++)
        if (t->cores[i] == o) return i;
    return -1;
}

/*
 * Give @p k threads to the subtree of @p o: each child a share proportional to its usable cores,
 * the leftover to the largest remainders (ties to the first child), children in order, so that
 * thread numbers follow the tree depth-first. A core takes every thread it is given.
 */
static void spread(const numa_topo *t, hwloc_obj_t o, int k, int *slot, int *next)
{
    if (k <= 0) return;
    if (o->type == t->core_type || o->arity == 0) {
        int c = core_index(t, o);
        for (int i = 0; i < k; i++) slot[(*next)++] = c < 0 ? 0 : c;
        return;
    }
    int64_t total = hwloc_get_nbobjs_inside_cpuset_by_type(t->topo, o->cpuset, t->core_type);
    if (total <= 0) total = 1;
    int given = 0;
    for (unsigned i = 0; i < o->arity; i++)
        given += (int)((int64_t)k * hwloc_get_nbobjs_inside_cpuset_by_type(t->topo, o->children[i]->cpuset, t->core_type) / total);
    int left = k - given;
    for (unsigned i = 0; i < o->arity; i++) {
        int64_t ci = hwloc_get_nbobjs_inside_cpuset_by_type(t->topo, o->children[i]->cpuset, t->core_type);
        if (ci <= 0) continue;
        int share = (int)((int64_t)k * ci / total);
        int64_t ri = (int64_t)k * ci % total;
        /* rank of this remainder among the children's: the first `left` get one more thread */
        int rank = 0;
        for (unsigned j = 0; j < o->arity && rank < left; j++) {
            int64_t cj = hwloc_get_nbobjs_inside_cpuset_by_type(t->topo, o->children[j]->cpuset, t->core_type);
            if (cj <= 0 || j == i) continue;
            int64_t rj = (int64_t)k * cj % total;
            if (rj > ri || (rj == ri && j < i)) rank++;
        }
        if (ri > 0 && rank < left) share++;
        spread(t, o->children[i], share, slot, next);
    }
}

/* Map the bind list to usable cores: worker i gets entry i (mod the list length). */
static canopy_status list_slots(const numa_topo *t, const char *list, int nthreads, int *slot, int *ncores_listed,
                                canopy_err *err)
{
    int *v, n;
    canopy_status st = parse_list(list, "bind list", &v, &n, err);
    if (st != CANOPY_SUCCESS) return st;
    int *core = canopy_alloc((size_t)n, sizeof *core, "bind list cores", err);
    if (core == NULL) {
        canopy_free(v);
        return err ? err->status : CANOPY_ERR_NOMEM;
    }
    for (int i = 0; i < n && st == CANOPY_SUCCESS; i++) {
        core[i] = -1;
        int matches = 0;
        for (int c = 0; c < t->ncores; c++)
            if (t->cores[c]->os_index == (unsigned)v[i]) {
                if (matches++ == 0) core[i] = c;
            }
        for (int j = 0; j < i && st == CANOPY_SUCCESS; j++)
            if (v[j] == v[i]) st = canopy_err_set(err, CANOPY_ERR_ARGUMENT, "bind list '%s': core %d is listed twice", list, v[i]);
        if (st != CANOPY_SUCCESS) break;
        if (matches > 1) {
            st = canopy_err_set(err, CANOPY_ERR_ARGUMENT,
                                "bind list '%s': OS core index %d names %d cores here (core numbers restart in each package); use bind=core",
                                list, v[i], matches);
        } else if (matches == 0) {
            /* say whether the core exists but is outside this process's cpuset */
            int exists = 0, nall = hwloc_get_nbobjs_by_type(t->topo, t->core_type);
            for (int c = 0; c < nall && !exists; c++) {
                hwloc_obj_t o = hwloc_get_obj_by_type(t->topo, t->core_type, (unsigned)c);
                exists = o && o->os_index == (unsigned)v[i];
            }
            char usable[160];
            int len = 0;
            for (int c = 0; c < t->ncores && len < (int)sizeof usable - 16; c++)
                len += snprintf(usable + len, sizeof usable - (size_t)len, "%s%u", c ? "," : "", t->cores[c]->os_index);
            st = canopy_err_set(err, CANOPY_ERR_ARGUMENT,
                                exists || t->ncores < t->machine_cores
                                    ? "bind list '%s': core %d is not usable by this process (usable OS core indices: %s)"
                                    : "bind list '%s': there is no core %d (OS core indices: %s)",
                                list, v[i], usable);
        }
    }
    if (st == CANOPY_SUCCESS) {
        for (int i = 0; i < nthreads; i++) slot[i] = core[i % n];
        *ncores_listed = n;
    }
    canopy_free(core);
    canopy_free(v);
    return st;
}

static void plural(char *buf, size_t len, int n, const char *what)
{
    snprintf(buf, len, "%d %s%s", n, what, n == 1 ? "" : "s");
}

/* The warning when the workers outnumber the cores they may use, naming why and the fix. */
static void oversubscription_warning(const numa_topo *t, int nthreads, canopy_bind bind, int listed, char *w, size_t len)
{
    char cores[48];
    if (bind == CANOPY_BIND_LIST) {
        if (nthreads <= listed) return;
        plural(cores, sizeof cores, listed, "core");
        snprintf(w, len, "%d threads asked but the bind list names %s: threads wrap around and share cores; "
                 "list %d cores or ask for %d threads", nthreads, cores, nthreads, listed);
        return;
    }
    if (nthreads <= t->ncores) return;
    plural(cores, sizeof cores, t->ncores, "core");
    if (t->ncores < t->allowed_cores) {
        snprintf(w, len, "%d threads asked but this process may only use %s (its CPU binding): Open MPI binds a lone "
                 "rank to one core by default; run mpirun --bind-to none, or --map-by slot:PE=%d "
                 "(MPICH: mpiexec -bind-to none); meanwhile threads share cores", nthreads, cores, nthreads);
    } else if (t->ncores < t->machine_cores) {
        snprintf(w, len, "%d threads asked but this process may only use %s of the machine's %d (cgroup or container "
                 "CPU limit): ask the batch system or container for %d CPUs, or run %d threads; meanwhile threads "
                 "share cores", nthreads, cores, t->machine_cores, nthreads, t->ncores);
    } else {
        snprintf(w, len, "%d threads asked but the machine has %s: threads wrap around and share cores, which slows "
                 "them down; run at most %d threads", nthreads, cores, t->ncores);
    }
}

void numa_workers_free(numa_workers *w)
{
    if (w == NULL) return;
    canopy_free(w->core);
    canopy_free(w->core_os);
    canopy_free(w->node);
    canopy_free(w->distance);
    canopy_free(w->applied);
    memset(w, 0, sizeof *w);
}

canopy_status numa_workers_plan(const numa_topo *t, int nthreads, canopy_bind bind, const char *list,
                                numa_workers *w, canopy_err *err)
{
    if (w == NULL) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "numa_workers_plan: NULL output");
    memset(w, 0, sizeof *w);
    if (t == NULL) return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "numa_workers_plan: NULL topology");
    if (nthreads < 1 || nthreads > NUMA_MAX_THREADS)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "%d worker threads asked (expected 1..%d)", nthreads, NUMA_MAX_THREADS);
    if (bind != CANOPY_BIND_NONE && bind != CANOPY_BIND_CORE && bind != CANOPY_BIND_LIST)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "numa_workers_plan: unknown binding %d", (int)bind);
    if (bind == CANOPY_BIND_LIST && list == NULL)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "bind=list without a core list");
    size_t T = (size_t)nthreads;
    w->core = canopy_alloc(T, sizeof *w->core, "worker cores", err);
    w->core_os = canopy_alloc(T, sizeof *w->core_os, "worker core OS indices", err);
    w->node = canopy_alloc(T, sizeof *w->node, "worker nodes", err);
    w->distance = canopy_alloc(T * T, sizeof *w->distance, "worker distances", err);
    w->applied = canopy_calloc(T, sizeof *w->applied, "worker binding flags", err);
    if (!w->core || !w->core_os || !w->node || !w->distance || !w->applied) {
        numa_workers_free(w);
        return err ? err->status : CANOPY_ERR_NOMEM;
    }
    int listed = 0;
    if (bind == CANOPY_BIND_LIST) {
        canopy_status st = list_slots(t, list, nthreads, w->core, &listed, err);
        if (st != CANOPY_SUCCESS) {
            numa_workers_free(w);
            return st;
        }
    } else {
        int next = 0;
        spread(t, hwloc_get_root_obj(t->topo), nthreads, w->core, &next);
        for (; next < nthreads; next++) w->core[next] = next % t->ncores; /* unreachable on a sane tree */
    }
    w->nthreads = nthreads;
    w->bound = bind != CANOPY_BIND_NONE;
    w->dry_run = t->dry_run;
    for (int i = 0; i < nthreads; i++) {
        if (!w->bound) {
            w->core[i] = w->core_os[i] = -1;
            w->node[i] = 0;
            continue;
        }
        w->core_os[i] = numa_topo_core_os(t, w->core[i]);
        w->node[i] = t->core_node[w->core[i]];
    }
    for (int i = 0; i < nthreads; i++)
        for (int j = 0; j < nthreads; j++) {
            int d;
            if (i == j) d = 0;
            else if (!w->bound) d = 1; /* floating threads: nothing known */
            else if (w->core[i] == w->core[j]) d = 0;
            else {
                hwloc_obj_t a = t->cores[w->core[i]], b = t->cores[w->core[j]];
                hwloc_obj_t lca = hwloc_get_common_ancestor_obj(t->topo, a, b);
                d = CANOPY_MAX(a->depth, b->depth) - (lca ? lca->depth : 0);
                if (d < 1) d = 1;
            }
            w->distance[(size_t)i * T + (size_t)j] = d;
        }
    oversubscription_warning(t, nthreads, bind, listed, w->warning, sizeof w->warning);
    return CANOPY_SUCCESS;
}

canopy_status numa_bind_self(const numa_topo *t, numa_workers *w, int thread, canopy_err *err)
{
    if (t == NULL || w == NULL || w->applied == NULL)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "numa_bind_self: NULL or empty argument");
    if (thread < 0 || thread >= w->nthreads)
        return canopy_err_set(err, CANOPY_ERR_ARGUMENT, "numa_bind_self: worker %d out of range 0..%d", thread, w->nthreads - 1);
    if (w->bound && !w->dry_run && !t->dry_run) {
        canopy_status st = numa_bind_core(t, w->core[thread], err);
        if (st != CANOPY_SUCCESS) return st;
    }
    w->applied[thread] = 1;
    return CANOPY_SUCCESS;
}
