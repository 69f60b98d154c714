/*
 * Machine topology through hwloc, loaded once per solver: the cores this process may use, how the
 * worker threads are placed on them, and binding.
 *
 * The topology is restricted to the process's allowed cpuset (a core counts if any of its PUs is
 * allowed), so several ranks on one node each see their own part. HWLOC_SYNTHETIC and
 * HWLOC_XMLFILE are honoured (tests fake a 2-socket, 4-node, 16-core machine); such a topology
 * does not describe this machine, so binding becomes a dry run that records what it would do.
 */
#ifndef CANOPY_TOPOLOGY_H
#define CANOPY_TOPOLOGY_H

#include "base/common.h"

typedef struct numa_topo numa_topo;
struct hwloc_topology; /* hwloc_topology_t, for the modules of numa/ only */

/**
 * Cores of the machine (all of them) and cores this process is allowed to run on (a core counts
 * if any of its PUs is in the process's cpuset). Honours HWLOC_SYNTHETIC / HWLOC_XMLFILE.
 */
canopy_status numa_count_cores(int *machine_cores, int *allowed_cores, canopy_err *err);

/**
 * Load the topology once: the PUs the OS allows (cgroups) and, on this machine, the process's CPU
 * binding (what mpirun set with sched_setaffinity). A synthetic or XML topology is loaded whole and
 * marked as a dry run.
 * @param[out] out the topology, to free with numa_topo_free()
 */
canopy_status numa_topo_load(numa_topo **out, canopy_err *err);
void numa_topo_free(numa_topo *t);

/**
 * Test hook: restrict @p t further to the OS PU indices of @p pu_list ("0-3,8"), as mpirun does
 * when it gives a rank part of a node. Every listed PU must be in @p t. The restriction counts as
 * a CPU binding in numa_workers_plan's warning. On failure @p t is left as it was.
 */
canopy_status numa_topo_restrict(numa_topo *t, const char *pu_list, canopy_err *err);

int numa_topo_cores(const numa_topo *t);          /**< usable cores (>= 1) */
int numa_topo_machine_cores(const numa_topo *t);  /**< cores of the whole machine */
int numa_topo_nodes(const numa_topo *t);          /**< NUMA nodes holding usable cores (>= 1) */
int numa_topo_dry_run(const numa_topo *t);        /**< 1 when the topology is not this machine */
int numa_topo_allowed_cores(const numa_topo *t);  /**< cores the OS allows (cgroups), before the CPU binding */
int numa_topo_core_node(const numa_topo *t, int core);  /**< usable node of usable core @p core (-1 if out of range) */
int numa_topo_core_os(const numa_topo *t, int core);    /**< OS index of the first PU of usable core @p core */
int numa_topo_node_os(const numa_topo *t, int node);    /**< OS index of usable node @p node (-1 if out of range) */
int numa_topo_node_index(const numa_topo *t, int os_node); /**< usable node of OS node @p os_node, -1 if none */
struct hwloc_topology *numa_topo_hwloc(const numa_topo *t); /**< the hwloc topology (read-only use) */

/**
 * Bind the calling thread to usable core @p core (all its allowed PUs). Nothing happens in a dry
 * run. Used by the probe, which places its own threads.
 */
canopy_status numa_bind_core(const numa_topo *t, int core, canopy_err *err);

/** Where the workers go. Arrays have nthreads entries. */
typedef struct numa_workers {
    int nthreads;
    int bound;            /**< 1 if the workers are bound (bind=core or list) */
    int dry_run;          /**< binding only recorded */
    int *core;            /**< logical index of the core of each worker among usable cores (-1 unbound) */
    int *core_os;         /**< OS index of the first PU of that core (-1 unbound) */
    int *node;            /**< logical index of its NUMA node among usable nodes (0 unbound or 1 node) */
    int *distance;        /**< [nthreads * nthreads]: 0 same core, else the number of tree levels from
                               the cores up to their lowest common ancestor (same cache < same node <
                               same package < machine); unbound workers: 1 between any two */
    int *applied;         /**< 1 once worker t bound itself (or recorded it in a dry run) */
    char warning[512];    /**< not empty: something the user should know (cpuset smaller than the
                               threads asked, with the fix) */
} numa_workers;

/**
 * Place @p nthreads workers. Cores are chosen by distributing the threads over the topology tree
 * from the root down, each child getting a share proportional to its usable cores (largest
 * remainder, ties to the first child), and numbered depth-first: threads that share a cache or a
 * NUMA node get consecutive numbers (and therefore neighbouring subtrees in the proportional
 * mapping). More threads than cores wrap around: the same split gives some cores several
 * (consecutive) threads, spread evenly over nodes, and @p w->warning says so.
 * @param bind CANOPY_BIND_NONE (nothing bound: core/core_os -1, node 0), CORE or LIST (@p list: OS
 *        core indices "0,2,4-7" of usable cores; worker i goes to the i-th listed core, wrapping
 *        around; an unusable, repeated, ambiguous or malformed entry is CANOPY_ERR_ARGUMENT).
 * @param[out] w filled (free with numa_workers_free); zeroed on failure
 */
canopy_status numa_workers_plan(const numa_topo *t, int nthreads, canopy_bind bind, const char *list,
                                numa_workers *w, canopy_err *err);
void numa_workers_free(numa_workers *w);

/**
 * Called by worker @p thread itself: bind to its core's PUs (hwloc, thread binding), or only record
 * it (applied[thread] = 1) in a dry run or with bind=none. Thread-safe: each worker writes its own
 * slot. A refusal of the OS is CANOPY_ERR_UNSUPPORTED (the worker then runs unbound).
 */
canopy_status numa_bind_self(const numa_topo *t, numa_workers *w, int thread, canopy_err *err);

/** Default thread count: the usable cores of this process. */
int numa_default_threads(const numa_topo *t);

#endif
