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

#include "common.h"

typedef struct numa_topo numa_topo;

/**
 * Cores of the machine (all of them) and cores this process is allowed to run on (a core counts
 * if any of its PUs is in the process's cpuset). Honours HWLOC_SYNTHETIC / HWLOC_XMLFILE.
 */
canopy_status numa_count_cores(int *machine_cores, int *allowed_cores, canopy_err *err);

/** Load the topology (restricted to the allowed cpuset). */
canopy_status numa_topo_load(numa_topo **out, canopy_err *err);
void numa_topo_free(numa_topo *t);

int numa_topo_cores(const numa_topo *t);          /**< usable cores (>= 1) */
int numa_topo_machine_cores(const numa_topo *t);  /**< cores of the whole machine */
int numa_topo_nodes(const numa_topo *t);          /**< NUMA nodes holding usable cores (>= 1) */
int numa_topo_dry_run(const numa_topo *t);        /**< 1 when the topology is not this machine */

/** Where the workers go. Arrays have nthreads entries. */
typedef struct numa_workers {
    int nthreads;
    int bound;            /**< 1 if the workers are bound (bind=core or list) */
    int dry_run;          /**< binding only recorded */
    int *core;            /**< logical index of the core of each worker among usable cores (-1 unbound) */
    int *core_os;         /**< OS index of the first PU of that core (-1 unbound) */
    int *node;            /**< logical index of its NUMA node among usable nodes (0 unbound or 1 node) */
    int *distance;        /**< [nthreads * nthreads]: 0 same core, then 1 + depth difference to the
                               lowest common ancestor (same cache < same node < same package < machine) */
    int *applied;         /**< 1 once worker t bound itself (or recorded it in a dry run) */
    char warning[512];    /**< not empty: something the user should know (cpuset smaller than the
                               threads asked, with the fix) */
} numa_workers;

/**
 * Place @p nthreads workers. Cores are chosen by distributing the threads over the topology tree
 * from the root down, each child getting a share proportional to its usable cores, and numbered
 * depth-first: threads that share a cache or a NUMA node get consecutive numbers (and therefore
 * neighbouring subtrees in the proportional mapping). More threads than cores wrap around.
 * @param bind CANOPY_BIND_NONE (placement computed, nothing bound), CORE or LIST (@p list: OS core
 *        indices "0,2,4-7" restricted to usable ones; an unusable or malformed list is an error).
 */
canopy_status numa_workers_plan(const numa_topo *t, int nthreads, canopy_bind bind, const char *list,
                                numa_workers *w, canopy_err *err);
void numa_workers_free(numa_workers *w);

/** Called by worker @p thread itself: bind to its core (or record it in a dry run). Thread-safe. */
canopy_status numa_bind_self(const numa_topo *t, numa_workers *w, int thread, canopy_err *err);

/** Default thread count: the usable cores of this process. */
int numa_default_threads(const numa_topo *t);

#endif
