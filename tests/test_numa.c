/*
 * numa/: topology loading and restriction, worker placement (breadth-first spread, depth-first
 * numbering), distances, bind lists, dry-run binding and warnings on synthetic machines
 * (HWLOC_SYNTHETIC "pack:2 numa:2 core:4 pu:1" and "... pu:2"); on the real machine: binding,
 * page allocation, location and interleaving, the NUMA probe in quick mode and canopy-numaprobe.
 * No timing is asserted.
 */
#include "testutil.h"
#include "numa/topology.h"
#include "numa/placement.h"
#include "numa/probe.h"

#include <pthread.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <hwloc.h>
#include <zlib.h>

#define SYN1 "pack:2 numa:2 core:4 pu:1"
#define SYN2 "pack:2 numa:2 core:4 pu:2"

static char *saved_synthetic, *saved_xml; /* what the environment had (tests/wrapper.sh may set it) */
static char builddir[4096];

static void env_restore(void)
{
    if (saved_synthetic) setenv("HWLOC_SYNTHETIC", saved_synthetic, 1);
    else unsetenv("HWLOC_SYNTHETIC");
    if (saved_xml) setenv("HWLOC_XMLFILE", saved_xml, 1);
    else unsetenv("HWLOC_XMLFILE");
}

/* Load a synthetic machine (desc) or, with desc NULL, this machine whatever the environment says. */
static numa_topo *load(const char *desc)
{
    unsetenv("HWLOC_XMLFILE");
    if (desc) setenv("HWLOC_SYNTHETIC", desc, 1);
    else unsetenv("HWLOC_SYNTHETIC");
    numa_topo *t = NULL;
    canopy_err err = {0};
    canopy_status st = numa_topo_load(&t, &err);
    env_restore();
    ck_assert_msg(st == CANOPY_SUCCESS, "load %s: %s", desc ? desc : "this machine", err.msg);
    ck_assert_ptr_nonnull(t);
    return t;
}

static void restrict_ok(numa_topo *t, const char *pus)
{
    canopy_err err = {0};
    ck_assert_msg(numa_topo_restrict(t, pus, &err) == CANOPY_SUCCESS, "restrict %s: %s", pus, err.msg);
}

static void plan_ok(const numa_topo *t, int n, canopy_bind bind, const char *list, numa_workers *w)
{
    canopy_err err = {0};
    ck_assert_msg(numa_workers_plan(t, n, bind, list, w, &err) == CANOPY_SUCCESS, "plan %d threads: %s", n, err.msg);
    ck_assert_int_eq(w->nthreads, n);
}

START_TEST(synthetic_counts)
{
    numa_topo *t = load(SYN1);
    ck_assert_int_eq(numa_topo_cores(t), 16);
    ck_assert_int_eq(numa_topo_machine_cores(t), 16);
    ck_assert_int_eq(numa_topo_allowed_cores(t), 16);
    ck_assert_int_eq(numa_topo_nodes(t), 4);
    ck_assert_int_eq(numa_topo_dry_run(t), 1);
    ck_assert_int_eq(numa_default_threads(t), 16);
    for (int c = 0; c < 16; c++) {
        ck_assert_int_eq(numa_topo_core_os(t, c), c);
        ck_assert_int_eq(numa_topo_core_node(t, c), c / 4);
    }
    ck_assert_int_eq(numa_topo_core_node(t, 16), -1);
    ck_assert_int_eq(numa_topo_core_os(t, -1), -1);
    for (int n = 0; n < 4; n++) {
        ck_assert_int_eq(numa_topo_node_os(t, n), n);
        ck_assert_int_eq(numa_topo_node_index(t, n), n);
    }
    ck_assert_int_eq(numa_topo_node_index(t, 9), -1);
    ck_assert_int_eq(numa_topo_node_os(t, 4), -1);
    numa_topo_free(t);

    t = load(SYN2);
    ck_assert_int_eq(numa_topo_cores(t), 16);
    ck_assert_int_eq(numa_topo_nodes(t), 4);
    ck_assert_int_eq(numa_topo_dry_run(t), 1);
    for (int c = 0; c < 16; c++) ck_assert_int_eq(numa_topo_core_os(t, c), 2 * c);
    numa_topo_free(t);

    /* the old entry point, same counts */
    int machine = 0, allowed = 0;
    canopy_err err = {0};
    setenv("HWLOC_SYNTHETIC", SYN2, 1);
    canopy_status st = numa_count_cores(&machine, &allowed, &err);
    env_restore();
    ck_assert_int_eq(st, CANOPY_SUCCESS);
    ck_assert_int_eq(machine, 16);
    ck_assert_int_eq(allowed, 16);
    ck_assert_int_eq(numa_count_cores(NULL, &allowed, NULL), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(numa_topo_load(NULL, NULL), CANOPY_ERR_ARGUMENT);
    numa_topo_free(NULL);
}
END_TEST

START_TEST(restrict_to_pu_subsets)
{
    numa_topo *t = load(SYN2);
    /* PU 0 alone of core 0, both PUs of core 1, all of node 1 (cores 4-7) */
    restrict_ok(t, "0,2,3,8-15");
    ck_assert_int_eq(numa_topo_cores(t), 6);
    ck_assert_int_eq(numa_topo_nodes(t), 2);
    ck_assert_int_eq(numa_topo_machine_cores(t), 16);
    ck_assert_int_eq(numa_topo_allowed_cores(t), 16);
    static const int os[6] = {0, 2, 8, 10, 12, 14}, node[6] = {0, 0, 1, 1, 1, 1};
    for (int c = 0; c < 6; c++) {
        ck_assert_int_eq(numa_topo_core_os(t, c), os[c]);
        ck_assert_int_eq(numa_topo_core_node(t, c), node[c]);
    }
    ck_assert_int_eq(numa_topo_node_os(t, 1), 1);
    ck_assert_int_eq(numa_topo_node_index(t, 2), -1); /* package 1 is gone */

    /* failures leave the topology as it was */
    static const char *bad[] = {"", "0,99", "3-1", "a", "0,,2", "4", "2-", ",2", "2 "};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        canopy_err err = {0};
        ck_assert_int_eq(numa_topo_restrict(t, bad[i], &err), CANOPY_ERR_ARGUMENT);
        ck_assert_msg(err.msg[0] != '\0', "no message for '%s'", bad[i]);
        ck_assert_int_eq(numa_topo_cores(t), 6);
    }
    ck_assert_int_eq(numa_topo_restrict(NULL, "0", NULL), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(numa_topo_restrict(t, NULL, NULL), CANOPY_ERR_ARGUMENT);

    /* a core with one allowed PU out of two still counts */
    restrict_ok(t, "3");
    ck_assert_int_eq(numa_topo_cores(t), 1);
    ck_assert_int_eq(numa_topo_nodes(t), 1);
    ck_assert_int_eq(numa_topo_core_os(t, 0), 3);
    numa_topo_free(t);

    /* one package, as mpirun --map-by package gives a rank */
    t = load(SYN1);
    restrict_ok(t, "8-15");
    ck_assert_int_eq(numa_topo_cores(t), 8);
    ck_assert_int_eq(numa_topo_nodes(t), 2);
    ck_assert_int_eq(numa_topo_node_os(t, 0), 2);
    ck_assert_int_eq(numa_topo_core_os(t, 0), 8);
    numa_topo_free(t);
}
END_TEST

static void expect_plan(const numa_topo *t, int n, const int *core, const int *node)
{
    numa_workers w;
    plan_ok(t, n, CANOPY_BIND_CORE, NULL, &w);
    ck_assert_int_eq(w.bound, 1);
    ck_assert_int_eq(w.dry_run, 1);
    for (int i = 0; i < n; i++) {
        ck_assert_msg(w.core[i] == core[i] && w.node[i] == node[i], "T=%d thread %d: core %d node %d, expected core %d node %d", n, i,
                      w.core[i], w.node[i], core[i], node[i]);
        ck_assert_int_eq(w.core_os[i], numa_topo_core_os(t, core[i]));
        ck_assert_int_eq(w.applied[i], 0);
    }
    if (n <= numa_topo_cores(t)) ck_assert_str_eq(w.warning, "");
    else ck_assert_msg(strstr(w.warning, "share cores") != NULL, "warning: %s", w.warning);
    numa_workers_free(&w);
}

START_TEST(spread_breadth_first_number_depth_first)
{
    for (int variant = 0; variant < 2; variant++) {
        numa_topo *t = load(variant ? SYN2 : SYN1);
        expect_plan(t, 1, (int[]){0}, (int[]){0});
        expect_plan(t, 2, (int[]){0, 8}, (int[]){0, 2});
        expect_plan(t, 4, (int[]){0, 4, 8, 12}, (int[]){0, 1, 2, 3});
        expect_plan(t, 8, (int[]){0, 1, 4, 5, 8, 9, 12, 13}, (int[]){0, 0, 1, 1, 2, 2, 3, 3});
        int core16[16], node16[16];
        for (int i = 0; i < 16; i++) core16[i] = i, node16[i] = i / 4;
        expect_plan(t, 16, core16, node16);
        /* 20 threads: 5 per node, the extra one on the node's first core, numbers consecutive */
        expect_plan(t, 20, (int[]){0, 0, 1, 2, 3, 4, 4, 5, 6, 7, 8, 8, 9, 10, 11, 12, 12, 13, 14, 15},
                    (int[]){0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3});
        numa_workers w;
        plan_ok(t, 4, CANOPY_BIND_CORE, NULL, &w);
        for (int i = 0; i < 4; i++) ck_assert_int_eq(w.core_os[i], (variant ? 2 : 1) * 4 * i);
        numa_workers_free(&w);
        plan_ok(t, 20, CANOPY_BIND_CORE, NULL, &w);
        ck_assert_msg(strstr(w.warning, "20 threads") && strstr(w.warning, "16 cores"), "warning: %s", w.warning);
        numa_workers_free(&w);
        numa_topo_free(t);
    }
    /* a rank given one package: its two nodes share the threads */
    numa_topo *t = load(SYN1);
    restrict_ok(t, "0-7");
    expect_plan(t, 4, (int[]){0, 1, 4, 5}, (int[]){0, 0, 1, 1});
    numa_topo_free(t);
}
END_TEST

START_TEST(distances_follow_the_tree)
{
    numa_topo *t = load(SYN1);
    numa_workers w;
    plan_ok(t, 20, CANOPY_BIND_CORE, NULL, &w);
    int n = w.nthreads;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            int d = w.distance[i * n + j];
            ck_assert_int_eq(d, w.distance[j * n + i]);
            ck_assert_int_ge(d, 0);
            if (i == j) ck_assert_int_eq(d, 0);
            else ck_assert_int_eq(d == 0, w.core[i] == w.core[j]);
        }
    /* threads 0 and 1 share core 0; 2 is on core 1 (same node), 5 on node 1 (same package),
     * 10 on package 1 */
    ck_assert_int_eq(w.distance[0 * n + 1], 0);
    int same_node = w.distance[0 * n + 2], other_node = w.distance[0 * n + 5], other_pack = w.distance[0 * n + 10];
    ck_assert_int_gt(same_node, 0);
    ck_assert_int_lt(same_node, other_node);
    ck_assert_int_lt(other_node, other_pack);
    ck_assert_int_eq(w.distance[2 * n + 5], other_node);
    ck_assert_int_eq(w.distance[5 * n + 19], other_pack);
    numa_workers_free(&w);

    /* unbound workers: no placement known, one unit apart */
    plan_ok(t, 3, CANOPY_BIND_NONE, NULL, &w);
    ck_assert_int_eq(w.bound, 0);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(w.core[i], -1);
        ck_assert_int_eq(w.core_os[i], -1);
        ck_assert_int_eq(w.node[i], 0);
        for (int j = 0; j < 3; j++) ck_assert_int_eq(w.distance[i * 3 + j], i != j);
    }
    numa_workers_free(&w);
    numa_topo_free(t);
}
END_TEST

START_TEST(bind_lists)
{
    numa_topo *t = load(SYN1);
    numa_workers w;
    plan_ok(t, 6, CANOPY_BIND_LIST, "0,2,4-7", &w);
    static const int core[6] = {0, 2, 4, 5, 6, 7}, node[6] = {0, 0, 1, 1, 1, 1};
    for (int i = 0; i < 6; i++) {
        ck_assert_int_eq(w.core[i], core[i]);
        ck_assert_int_eq(w.core_os[i], core[i]);
        ck_assert_int_eq(w.node[i], node[i]);
    }
    ck_assert_str_eq(w.warning, "");
    numa_workers_free(&w);
    /* more workers than listed cores wrap around the list, and say so */
    plan_ok(t, 8, CANOPY_BIND_LIST, "0,2,4-7", &w);
    ck_assert_int_eq(w.core[6], 0);
    ck_assert_int_eq(w.core[7], 2);
    ck_assert_int_eq(w.distance[0 * 8 + 6], 0);
    ck_assert_msg(strstr(w.warning, "bind list names 6 cores") != NULL, "warning: %s", w.warning);
    numa_workers_free(&w);
    /* fewer workers than listed cores take the first ones */
    plan_ok(t, 2, CANOPY_BIND_LIST, "15,3", &w);
    ck_assert_int_eq(w.core[0], 15);
    ck_assert_int_eq(w.core[1], 3);
    numa_workers_free(&w);

    static const char *bad[] = {"", "0,,1", "1-", "-1", "4-2", "x", "0,0", "1-3,2", "99", "1 ,2", "0,2,", "16", "99999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        canopy_err err = {0};
        ck_assert_msg(numa_workers_plan(t, 2, CANOPY_BIND_LIST, bad[i], &w, &err) == CANOPY_ERR_ARGUMENT, "'%s' accepted", bad[i]);
        ck_assert_msg(err.msg[0] != '\0', "no message for '%s'", bad[i]);
        ck_assert_ptr_null(w.core);
    }
    canopy_err err = {0};
    numa_workers_plan(t, 2, CANOPY_BIND_LIST, "0,0", &w, &err);
    ck_assert_msg(strstr(err.msg, "twice") != NULL, "%s", err.msg);
    canopy_err_clear(&err);
    numa_workers_plan(t, 2, CANOPY_BIND_LIST, "99", &w, &err);
    ck_assert_msg(strstr(err.msg, "no core 99") != NULL, "%s", err.msg);
    ck_assert_int_eq(numa_workers_plan(t, 2, CANOPY_BIND_LIST, NULL, &w, NULL), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(numa_workers_plan(t, 0, CANOPY_BIND_CORE, NULL, &w, NULL), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(numa_workers_plan(t, 2, (canopy_bind)7, NULL, &w, NULL), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(numa_workers_plan(NULL, 2, CANOPY_BIND_CORE, NULL, &w, NULL), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(numa_workers_plan(t, 2, CANOPY_BIND_CORE, NULL, NULL, NULL), CANOPY_ERR_ARGUMENT);

    /* a rank limited to package 0: cores of package 1 exist but are not usable */
    restrict_ok(t, "0-7");
    canopy_err_clear(&err);
    ck_assert_int_eq(numa_workers_plan(t, 2, CANOPY_BIND_LIST, "1,9", &w, &err), CANOPY_ERR_ARGUMENT);
    ck_assert_msg(strstr(err.msg, "core 9 is not usable") != NULL, "%s", err.msg);
    numa_topo_free(t);

    /* list entries are core numbers, not PU numbers */
    t = load(SYN2);
    plan_ok(t, 1, CANOPY_BIND_LIST, "3", &w);
    ck_assert_int_eq(w.core[0], 3);
    ck_assert_int_eq(w.core_os[0], 6);
    numa_workers_free(&w);
    numa_topo_free(t);
}
END_TEST

typedef struct bind_arg {
    const numa_topo *t;
    numa_workers *w;
    int thread;
    canopy_status st;
    int bound_ok; /* real machine: the thread now runs on its core's PUs only */
} bind_arg;

static void *bind_thread(void *p)
{
    bind_arg *a = p;
    canopy_err err = {0};
    a->st = numa_bind_self(a->t, a->w, a->thread, &err);
    a->bound_ok = -1;
    if (a->st == CANOPY_SUCCESS && a->w->bound && !a->w->dry_run) {
        hwloc_topology_t topo = numa_topo_hwloc(a->t);
        hwloc_bitmap_t now = hwloc_bitmap_alloc();
        hwloc_obj_t pu = hwloc_get_pu_obj_by_os_index(topo, (unsigned)a->w->core_os[a->thread]);
        hwloc_obj_t core = pu ? hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_CORE, pu) : NULL;
        a->bound_ok = now && core && hwloc_get_cpubind(topo, now, HWLOC_CPUBIND_THREAD) == 0 &&
                      hwloc_bitmap_isequal(now, core->cpuset);
        hwloc_bitmap_free(now);
    }
    return NULL;
}

/* Run numa_bind_self from one thread per worker, all at once. */
static void bind_all(const numa_topo *t, numa_workers *w, bind_arg *a)
{
    pthread_t th[64];
    ck_assert_int_le(w->nthreads, 64);
    for (int i = 0; i < w->nthreads; i++) {
        a[i] = (bind_arg){t, w, i, CANOPY_ERR_INTERNAL, 0};
        ck_assert_int_eq(pthread_create(&th[i], NULL, bind_thread, &a[i]), 0);
    }
    for (int i = 0; i < w->nthreads; i++) pthread_join(th[i], NULL);
}

START_TEST(bind_self_dry_run_records)
{
    cpu_set_t before, after;
    ck_assert_int_eq(sched_getaffinity(0, sizeof before, &before), 0);
    numa_topo *t = load(SYN1);
    numa_workers w;
    bind_arg a[64];
    for (int b = 0; b < 2; b++) {
        plan_ok(t, 16, b ? CANOPY_BIND_NONE : CANOPY_BIND_CORE, NULL, &w);
        bind_all(t, &w, a);
        for (int i = 0; i < 16; i++) {
            ck_assert_int_eq(a[i].st, CANOPY_SUCCESS);
            ck_assert_int_eq(a[i].bound_ok, -1); /* nothing asked of the OS */
            ck_assert_int_eq(w.applied[i], 1);
        }
        ck_assert_int_eq(numa_bind_self(t, &w, 16, NULL), CANOPY_ERR_ARGUMENT);
        ck_assert_int_eq(numa_bind_self(t, &w, -1, NULL), CANOPY_ERR_ARGUMENT);
        ck_assert_int_eq(numa_bind_self(NULL, &w, 0, NULL), CANOPY_ERR_ARGUMENT);
        numa_workers_free(&w);
    }
    ck_assert_int_eq(numa_bind_self(t, &w, 0, NULL), CANOPY_ERR_ARGUMENT); /* freed: empty */
    numa_topo_free(t);
    ck_assert_int_eq(sched_getaffinity(0, sizeof after, &after), 0);
    ck_assert(CPU_EQUAL(&before, &after));
}
END_TEST

START_TEST(warning_names_the_binding_and_the_fix)
{
    numa_topo *t = load(SYN1);
    restrict_ok(t, "0"); /* Open MPI's default for a lone rank: one core */
    numa_workers w;
    plan_ok(t, 8, CANOPY_BIND_CORE, NULL, &w);
    for (int i = 0; i < 8; i++) ck_assert_int_eq(w.core[i], 0);
    ck_assert_msg(strstr(w.warning, "8 threads asked") && strstr(w.warning, "may only use 1 core ") &&
                      strstr(w.warning, "CPU binding") && strstr(w.warning, "--bind-to none") &&
                      strstr(w.warning, "--map-by slot:PE=8") && strstr(w.warning, "mpiexec -bind-to none"),
                  "warning: %s", w.warning);
    numa_workers_free(&w);
    plan_ok(t, 8, CANOPY_BIND_NONE, NULL, &w);
    ck_assert_msg(strstr(w.warning, "--bind-to none") != NULL, "warning: %s", w.warning);
    numa_workers_free(&w);
    plan_ok(t, 1, CANOPY_BIND_CORE, NULL, &w);
    ck_assert_str_eq(w.warning, "");
    numa_workers_free(&w);
    numa_topo_free(t);
}
END_TEST

START_TEST(real_machine_load_and_bind)
{
    numa_topo *t = load(NULL);
    ck_assert_int_eq(numa_topo_dry_run(t), 0);
    int nc = numa_topo_cores(t);
    ck_assert_int_ge(nc, 1);
    ck_assert_int_le(nc, numa_topo_allowed_cores(t));
    ck_assert_int_le(numa_topo_allowed_cores(t), numa_topo_machine_cores(t));
    ck_assert_int_ge(numa_topo_nodes(t), 1);
    ck_assert_int_eq(numa_default_threads(t), nc);
    int machine = 0, allowed = 0;
    unsetenv("HWLOC_SYNTHETIC");
    unsetenv("HWLOC_XMLFILE");
    canopy_status st = numa_count_cores(&machine, &allowed, NULL);
    env_restore();
    ck_assert_int_eq(st, CANOPY_SUCCESS);
    ck_assert_int_eq(machine, numa_topo_machine_cores(t));
    ck_assert_int_eq(allowed, nc);
    int n = CANOPY_MIN(nc, 64);
    numa_workers w;
    plan_ok(t, n, CANOPY_BIND_CORE, NULL, &w);
    ck_assert_int_eq(w.dry_run, 0);
    ck_assert_str_eq(w.warning, "");
    bind_arg a[64];
    bind_all(t, &w, a);
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(a[i].st, CANOPY_SUCCESS);
        ck_assert_msg(a[i].bound_ok == 1, "worker %d is not bound to core %d", i, w.core_os[i]);
        ck_assert_int_eq(w.applied[i], 1);
    }
    numa_workers_free(&w);
    plan_ok(t, nc + 1, CANOPY_BIND_CORE, NULL, &w);
    ck_assert_msg(w.warning[0] != '\0', "no warning with %d threads on %d cores", nc + 1, nc);
    numa_workers_free(&w);
    numa_topo_free(t);
}
END_TEST

static void locate_ok(const numa_topo *t, const void *p, size_t bytes, size_t max_pages, int64_t *per_node, int64_t *unknown)
{
    canopy_err err = {0};
    ck_assert_msg(numa_locate(t, p, bytes, max_pages, per_node, unknown, &err) == CANOPY_SUCCESS, "%s", err.msg);
    int64_t sum = *unknown;
    for (int n = 0; n < numa_topo_nodes(t); n++) {
        ck_assert_int_ge(per_node[n], 0);
        sum += per_node[n];
    }
    ck_assert_int_ge(*unknown, 0);
    ck_assert_int_eq(sum, (int64_t)bytes);
}

START_TEST(pages_alloc_locate_interleave)
{
    numa_topo *t = load(NULL);
    int nn = numa_topo_nodes(t);
    int64_t *per = calloc((size_t)nn, sizeof *per), unknown;
    size_t page = (size_t)sysconf(_SC_PAGESIZE), bytes = 256 * page + 123;
    size_t mem0 = canopy_mem_current();
    canopy_err err = {0};
    unsigned char *p = numa_alloc_pages(bytes, "test pages", &err);
    ck_assert_msg(p != NULL, "%s", err.msg);
    ck_assert_int_eq((uintptr_t)p % page, 0);
    ck_assert_uint_eq(canopy_mem_current() - mem0, 257 * page);
    ck_assert_uint_ge(canopy_mem_peak(), canopy_mem_current());
    ck_assert_int_eq(numa_interleave(t, p, bytes, &err), CANOPY_SUCCESS);

    /* untouched pages are nowhere yet */
    locate_ok(t, p, bytes, 0, per, &unknown);
    ck_assert_int_eq(unknown, (int64_t)bytes);
    memset(p, 1, bytes);
    locate_ok(t, p, bytes, 0, per, &unknown);
    int located = unknown == 0;
    if (located) {
        /* only node 0 here when there is one node; else the pages are somewhere usable */
        if (nn == 1) ck_assert_int_eq(per[0], (int64_t)bytes);
    } else {
        ck_assert_int_eq(unknown, (int64_t)bytes); /* move_pages unsupported: all unknown */
        printf("move_pages cannot locate pages here: every page reported unknown\n");
    }
    /* sampled, and a range that is not page aligned */
    locate_ok(t, p, bytes, 7, per, &unknown);
    ck_assert_int_eq(unknown, located ? 0 : (int64_t)bytes);
    locate_ok(t, p + 3, 5 * page, 2, per, &unknown);
    ck_assert_int_eq(unknown, located ? 0 : (int64_t)(5 * page));
    locate_ok(t, p, 0, 0, per, &unknown);
    ck_assert_int_eq(numa_locate(t, NULL, 10, 0, per, &unknown, NULL), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(numa_locate(NULL, p, 10, 0, per, &unknown, NULL), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(numa_locate(t, p, 10, 0, NULL, &unknown, NULL), CANOPY_ERR_ARGUMENT);

    /* a synthetic machine is not this one: nothing is known */
    numa_topo *syn = load(SYN1);
    int64_t per4[4];
    locate_ok(syn, p, bytes, 0, per4, &unknown);
    ck_assert_int_eq(unknown, (int64_t)bytes);
    ck_assert_int_eq(numa_interleave(syn, p, bytes, NULL), CANOPY_SUCCESS); /* dry run */
    numa_topo_free(syn);

    ck_assert_int_eq(numa_interleave(t, p + 1, page, NULL), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(numa_interleave(t, NULL, page, NULL), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(numa_interleave(NULL, p, page, NULL), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(numa_interleave(t, NULL, 0, NULL), CANOPY_SUCCESS);
    numa_free_pages(p, bytes);
    ck_assert_uint_eq(canopy_mem_current(), mem0);
    numa_free_pages(NULL, 10);

    /* a large mapping starts on a huge-page boundary, is usable to its last byte, and its
     * trimmed neighbourhood is gone: a second one maps and frees cleanly beside it */
    size_t big = ((size_t)5 << 20) + 77;
    unsigned char *h = numa_alloc_pages(big, "huge-page test", &err), *h2 = numa_alloc_pages(big, "second", &err);
    ck_assert_ptr_nonnull(h);
    ck_assert_ptr_nonnull(h2);
    ck_assert_int_eq((uintptr_t)h % ((size_t)2 << 20), 0);
    ck_assert_int_eq(h[0] | h[big - 1], 0); /* fresh pages read as zero */
    memset(h, 7, big);
    memset(h2, 9, big);
    ck_assert_int_eq(h[big - 1], 7);
    numa_free_pages(h, big);
    numa_free_pages(h2, big);
    ck_assert_uint_eq(canopy_mem_current(), mem0);

    /* zero bytes is one page; impossible sizes and injected failures are refused cleanly */
    p = numa_alloc_pages(0, NULL, &err);
    ck_assert_ptr_nonnull(p);
    numa_free_pages(p, 0);
    ck_assert_uint_eq(canopy_mem_current(), mem0);
    canopy_err_clear(&err);
    ck_assert_ptr_null(numa_alloc_pages(SIZE_MAX - 2, "huge", &err));
    ck_assert_int_eq(err.status, CANOPY_ERR_TOO_LARGE);
    canopy_err_clear(&err);
    canopy_alloc_fail_after(0);
    ck_assert_ptr_null(numa_alloc_pages(page, "injected", &err));
    canopy_alloc_fail_after(-1);
    ck_assert_int_eq(err.status, CANOPY_ERR_NOMEM);
    ck_assert_uint_eq(canopy_mem_current(), mem0);
    ck_assert(canopy_mem_add(4096));
    ck_assert_uint_eq(canopy_mem_current(), mem0 + 4096);
    ck_assert(canopy_mem_add(-4096));
    ck_assert_uint_eq(canopy_mem_current(), mem0);
    free(per);
    numa_topo_free(t);
}
END_TEST

/* Full check of a PNG file: signature, chunk CRCs, IHDR, IDAT inflating to the right size. */
static void check_png(const char *path, int *w, int *h)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "no %s", path);
    static unsigned char buf[1 << 22];
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    ck_assert_uint_gt(len, 8);
    ck_assert_int_eq(memcmp(buf, sig, 8), 0);
    unsigned char *idat = malloc(len);
    size_t at = 8, nidat = 0;
    int seen_end = 0;
    *w = *h = 0;
    while (at + 12 <= len && !seen_end) {
        uint32_t clen = (uint32_t)buf[at] << 24 | (uint32_t)buf[at + 1] << 16 | (uint32_t)buf[at + 2] << 8 | buf[at + 3];
        ck_assert_uint_le(at + 12 + clen, len);
        const unsigned char *type = buf + at + 4, *data = type + 4, *crc = data + clen;
        uint32_t want = (uint32_t)crc[0] << 24 | (uint32_t)crc[1] << 16 | (uint32_t)crc[2] << 8 | crc[3];
        ck_assert_uint_eq((uint32_t)crc32(0L, type, 4 + clen), want);
        if (!memcmp(type, "IHDR", 4)) {
            ck_assert_uint_eq(clen, 13);
            *w = (int)((uint32_t)data[0] << 24 | (uint32_t)data[1] << 16 | (uint32_t)data[2] << 8 | data[3]);
            *h = (int)((uint32_t)data[4] << 24 | (uint32_t)data[5] << 16 | (uint32_t)data[6] << 8 | data[7]);
            ck_assert_int_eq(data[8], 8);
            ck_assert_int_eq(data[9], 2);
        } else if (!memcmp(type, "IDAT", 4)) {
            memcpy(idat + nidat, data, clen);
            nidat += clen;
        } else if (!memcmp(type, "IEND", 4)) {
            seen_end = 1;
        }
        at += 12 + clen;
    }
    ck_assert(seen_end);
    ck_assert_int_gt(*w, 0);
    ck_assert_int_gt(*h, 0);
    uLongf rawlen = (uLongf)(*h) * (1 + 3 * (uLongf)(*w)), got = rawlen;
    unsigned char *raw = malloc(rawlen);
    ck_assert_int_eq(uncompress(raw, &got, idat, nidat), Z_OK);
    ck_assert_uint_eq(got, rawlen);
    for (int y = 0; y < *h; y++) ck_assert_int_eq(raw[(size_t)y * (1 + 3 * (size_t)*w)], 0);
    free(raw);
    free(idat);
}

static void check_svg(const char *path)
{
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "no %s", path);
    static char buf[1 << 20];
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = '\0';
    ck_assert(strncmp(buf, "<?xml", 5) == 0);
    ck_assert(strstr(buf, "<svg") != NULL && strstr(buf, "</svg>") != NULL && strstr(buf, "<rect") != NULL);
}

static char tmpdir[64];

static void make_tmpdir(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/canopy_numa_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

START_TEST(probe_quick_on_this_machine)
{
    numa_topo *t = load(NULL);
    numa_probe_opts o = {1, 0};
    numa_probe r;
    canopy_err err = {0};
    ck_assert_msg(numa_probe_run(t, &o, &r, &err) == CANOPY_SUCCESS, "%s", err.msg);
    ck_assert_int_eq(r.ncores, numa_topo_cores(t));
    ck_assert_int_eq(r.nnodes, numa_topo_nodes(t));
    for (int k = 0; k < NUMA_PROBE_KERNELS; k++) {
        for (int c = 0; c < r.ncores; c++) {
            ck_assert(isfinite(r.local_call[k][c]) && r.local_call[k][c] > 0.0);
            for (int d = 0; d < r.nnodes; d++) {
                double v = r.pair[k][d * r.ncores + c];
                ck_assert_msg(isfinite(v) && v > 0.0, "pair %d,%d = %g", d, c, v);
                if (d == r.core_node[c]) ck_assert_msg(v == 1.0, "local entry %g", v);
            }
            for (int p = 0; p < NUMA_PROBE_PLACEMENTS; p++) ck_assert(isfinite(r.busy[k][p * r.ncores + c]));
            ck_assert(r.busy[k][NUMA_PROBE_LOCAL * r.ncores + c] == 1.0);
        }
        for (int p = 0; p < NUMA_PROBE_PLACEMENTS; p++) ck_assert(isfinite(r.busy_avg[k][p]) && r.busy_avg[k][p] > 0.0);
        ck_assert(r.busy_avg[k][NUMA_PROBE_LOCAL] == 1.0);
        ck_assert(isfinite(r.alone[k]) && r.alone[k] > 0.0);
    }
    FILE *f = tmpfile();
    ck_assert_int_eq(numa_probe_print(&r, f, &err), CANOPY_SUCCESS);
    fclose(f);
    make_tmpdir();
    char png[128], svg[128];
    snprintf(png, sizeof png, "%s/p.png", tmpdir);
    snprintf(svg, sizeof svg, "%s/p.svg", tmpdir);
    ck_assert_int_eq(numa_probe_write_png(&r, png, &err), CANOPY_SUCCESS);
    ck_assert_int_eq(numa_probe_write_svg(&r, svg, &err), CANOPY_SUCCESS);
    int w, h;
    check_png(png, &w, &h);
    check_svg(svg);
    remove(png);
    remove(svg);
    rmdir(tmpdir);
    numa_probe_free(&r);
    numa_probe_free(&r); /* idempotent */
    ck_assert_int_eq(numa_probe_print(&r, stdout, NULL), CANOPY_ERR_ARGUMENT);
    o.reps = -1;
    ck_assert_int_eq(numa_probe_run(t, &o, &r, NULL), CANOPY_ERR_ARGUMENT);
    numa_topo_free(t);

    /* a synthetic machine cannot be measured */
    t = load(SYN1);
    o.reps = 0;
    canopy_err_clear(&err);
    ck_assert_int_eq(numa_probe_run(t, &o, &r, &err), CANOPY_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(err.msg, "not this one") != NULL, "%s", err.msg);
    numa_topo_free(t);
}
END_TEST

/* The writers on a bigger, hand-made result: 16 cores on 4 nodes. */
START_TEST(heat_maps_of_a_made_up_machine)
{
    numa_probe r = {0};
    int core_os[16], core_node[16], node_os[4] = {0, 1, 2, 3};
    double pair[2][64], local[2][16], busy[2][48];
    r.ncores = 16;
    r.nnodes = 4;
    r.core_os = core_os;
    r.core_node = core_node;
    r.node_os = node_os;
    for (int c = 0; c < 16; c++) core_os[c] = c, core_node[c] = c / 4;
    for (int k = 0; k < 2; k++) {
        r.pair[k] = pair[k];
        r.local_call[k] = local[k];
        r.busy[k] = busy[k];
        for (int d = 0; d < 4; d++)
            for (int c = 0; c < 16; c++) pair[k][d * 16 + c] = d == c / 4 ? 1.0 : (d / 2 == c / 8 ? 1.3 : 1.6) - 0.25 * k;
        for (int i = 0; i < 16; i++) local[k][i] = 1e-6;
        for (int i = 0; i < 48; i++) busy[k][i] = 1.0;
    }
    make_tmpdir();
    char png[128], svg[128];
    snprintf(png, sizeof png, "%s/m.png", tmpdir);
    snprintf(svg, sizeof svg, "%s/m.svg", tmpdir);
    canopy_err err = {0};
    ck_assert_msg(numa_probe_write_png(&r, png, &err) == CANOPY_SUCCESS, "%s", err.msg);
    ck_assert_msg(numa_probe_write_svg(&r, svg, &err) == CANOPY_SUCCESS, "%s", err.msg);
    int w, h;
    check_png(png, &w, &h);
    ck_assert_int_gt(w, 2 * 16 * 2);
    ck_assert_int_gt(h, 4 * 2);
    check_svg(svg);
    if (getenv("CANOPY_TEST_KEEP")) printf("heat maps kept in %s\n", tmpdir);
    else {
        remove(png);
        remove(svg);
        rmdir(tmpdir);
    }
    ck_assert_int_eq(numa_png_write("/nonexistent-dir/x.png", 1, 1, (const unsigned char *)"abc", NULL), CANOPY_ERR_IO);
    ck_assert_int_eq(numa_png_write("x.png", 0, 1, (const unsigned char *)"abc", NULL), CANOPY_ERR_ARGUMENT);
    ck_assert_int_eq(numa_probe_write_svg(&r, "/nonexistent-dir/x.svg", NULL), CANOPY_ERR_IO);
}
END_TEST

/* Every allocation of load, restrict, plan and probe made to fail in turn: a clean error, and
 * the memory back to where it was. */
START_TEST(survives_allocation_failures)
{
    size_t mem0 = canopy_mem_current();
    int done = 0, k;
    for (k = 0; k < 500 && !done; k++) {
        numa_topo *t = NULL;
        numa_workers w = {0}, wl = {0};
        canopy_err err = {0};
        unsetenv("HWLOC_XMLFILE");
        setenv("HWLOC_SYNTHETIC", SYN1, 1);
        canopy_alloc_fail_after(k);
        canopy_status st = numa_topo_load(&t, &err);
        env_restore();
        if (st == CANOPY_SUCCESS) st = numa_topo_restrict(t, "0-11", &err);
        if (st == CANOPY_SUCCESS) st = numa_workers_plan(t, 20, CANOPY_BIND_CORE, NULL, &w, &err);
        if (st == CANOPY_SUCCESS) st = numa_workers_plan(t, 4, CANOPY_BIND_LIST, "0-2,9", &wl, &err);
        canopy_alloc_fail_after(-1);
        ck_assert_msg(st == CANOPY_SUCCESS || st == CANOPY_ERR_NOMEM, "failure %d: status %d (%s)", k, st, err.msg);
        if (st != CANOPY_SUCCESS) {
            ck_assert_msg(err.msg[0] != '\0', "failure %d: no message", k);
            ck_assert_ptr_null(wl.core); /* zeroed (or never filled) on failure */
        } else {
            ck_assert_int_eq(numa_topo_cores(t), 12);
            ck_assert_int_eq(wl.core[3], 9);
            done = 1;
        }
        numa_workers_free(&w);
        numa_workers_free(&wl);
        numa_topo_free(t);
        ck_assert_uint_eq(canopy_mem_current(), mem0);
    }
    ck_assert_msg(done, "still failing after %d injected failures", k);

    numa_topo *t = load(NULL);
    mem0 = canopy_mem_current();
    numa_probe_opts o = {1, 0};
    for (k = 0, done = 0; k < 500 && !done; k++) {
        numa_probe r;
        canopy_err err = {0};
        canopy_alloc_fail_after(k);
        canopy_status st = numa_probe_run(t, &o, &r, &err);
        canopy_alloc_fail_after(-1);
        ck_assert_msg(st == CANOPY_SUCCESS || st == CANOPY_ERR_NOMEM, "probe failure %d: status %d (%s)", k, st, err.msg);
        if (st == CANOPY_SUCCESS) done = 1;
        else ck_assert_ptr_null(r.pair[0]);
        numa_probe_free(&r);
        ck_assert_uint_eq(canopy_mem_current(), mem0);
    }
    ck_assert_msg(done, "probe still failing after %d injected failures", k);
    numa_topo_free(t);
}
END_TEST

static int run_cmd(const char *cmd)
{
    int rc = system(cmd);
    return rc == -1 || !WIFEXITED(rc) ? -1 : WEXITSTATUS(rc);
}

START_TEST(numaprobe_tool)
{
    char prog[4200], cmd[9000], png[128], svg[128];
    snprintf(prog, sizeof prog, "%s/canopy-numaprobe", builddir);
    if (access(prog, X_OK) != 0) {
        printf("canopy-numaprobe not found at %s: tool test skipped\n", prog);
        return;
    }
    make_tmpdir();
    snprintf(png, sizeof png, "%s/t.png", tmpdir);
    snprintf(svg, sizeof svg, "%s/t.svg", tmpdir);
    snprintf(cmd, sizeof cmd, "env -u HWLOC_SYNTHETIC -u HWLOC_XMLFILE '%s' --quick --svg '%s' --png '%s' > /dev/null", prog, svg, png);
    ck_assert_int_eq(run_cmd(cmd), 0);
    int w, h;
    check_png(png, &w, &h);
    check_svg(svg);
    remove(png);
    remove(svg);
    rmdir(tmpdir);
    snprintf(cmd, sizeof cmd, "env HWLOC_SYNTHETIC='" SYN1 "' '%s' --quick > /dev/null 2>&1", prog);
    ck_assert_int_ne(run_cmd(cmd), 0);
    snprintf(cmd, sizeof cmd, "'%s' --help > /dev/null", prog);
    ck_assert_int_eq(run_cmd(cmd), 0);
    snprintf(cmd, sizeof cmd, "'%s' --reps 0 > /dev/null 2>&1", prog);
    ck_assert_int_ne(run_cmd(cmd), 0);
    snprintf(cmd, sizeof cmd, "'%s' --bogus > /dev/null 2>&1", prog);
    ck_assert_int_ne(run_cmd(cmd), 0);
}
END_TEST

int main(int argc, char **argv)
{
    const char *s = getenv("HWLOC_SYNTHETIC"), *x = getenv("HWLOC_XMLFILE"), *top = getenv("top_builddir");
    saved_synthetic = s ? strdup(s) : NULL;
    saved_xml = x ? strdup(x) : NULL;
    /* the tool sits in the build directory: top_builddir under make check, else ../ of this binary */
    if (top && *top) snprintf(builddir, sizeof builddir, "%s", top);
    else {
        snprintf(builddir, sizeof builddir, "%s", argc > 0 ? argv[0] : ".");
        char *slash = strrchr(builddir, '/');
        if (slash) *slash = '\0';
        else snprintf(builddir, sizeof builddir, ".");
        strncat(builddir, "/..", sizeof builddir - strlen(builddir) - 1);
    }
    Suite *suite = suite_create("numa");
    TCase *tc = tcase_create("numa");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, synthetic_counts);
    tcase_add_test(tc, restrict_to_pu_subsets);
    tcase_add_test(tc, spread_breadth_first_number_depth_first);
    tcase_add_test(tc, distances_follow_the_tree);
    tcase_add_test(tc, bind_lists);
    tcase_add_test(tc, bind_self_dry_run_records);
    tcase_add_test(tc, warning_names_the_binding_and_the_fix);
    tcase_add_test(tc, real_machine_load_and_bind);
    tcase_add_test(tc, pages_alloc_locate_interleave);
    tcase_add_test(tc, probe_quick_on_this_machine);
    tcase_add_test(tc, heat_maps_of_a_made_up_machine);
    tcase_add_test(tc, survives_allocation_failures);
    tcase_add_test(tc, numaprobe_tool);
    suite_add_tcase(suite, tc);
    int rc = testutil_run(suite);
    free(saved_synthetic);
    free(saved_xml);
    return rc;
}
