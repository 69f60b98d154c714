/*
 * NUMA probe: the measurements of papers/numa-scheduler-pastix.txt §3.1-3.2 on the machine it runs
 * on. (1) One thread alone, bound to each usable core, runs many daxpy and dgemm calls on data
 * first-touched on each usable NUMA node; times are normalized to the node-local case. (2) Every
 * usable core busy at once, with the data all on the first core's node, local to each thread, or
 * taken from the opposite thread; average time per core normalized to the local case.
 * Results go to tables and to heat maps (SVG, and PNG written with zlib). Used by
 * canopy-numaprobe; nothing in the solver depends on it.
 */
#ifndef CANOPY_PROBE_H
#define CANOPY_PROBE_H

#include "base/common.h" /* first: config.h feature macros */
#include <stdio.h>
#include "topology.h"

typedef struct numa_probe_opts {
    int quick;  /**< tiny operands and one sweep: checks the machinery (tests), numbers meaningless */
    int reps;   /**< timed sweeps over the operand pool per measurement; 0: 3 (quick: 1) */
} numa_probe_opts;

enum { NUMA_PROBE_AXPY = 0, NUMA_PROBE_GEMM = 1, NUMA_PROBE_KERNELS = 2 };
enum { NUMA_PROBE_FIRST_CORE = 0, NUMA_PROBE_LOCAL = 1, NUMA_PROBE_WORST = 2, NUMA_PROBE_PLACEMENTS = 3 };

/** What the probe measured. Arrays are owned by the struct (numa_probe_free). */
typedef struct numa_probe {
    int ncores, nnodes;                  /**< usable cores and NUMA nodes measured */
    int *core_os;                        /**< [ncores] OS index of each core's first PU */
    int *core_node;                      /**< [ncores] usable node of each core */
    int *node_os;                        /**< [nnodes] OS index of each node */
    int n[NUMA_PROBE_KERNELS];           /**< vector length (daxpy), matrix order (dgemm) */
    int count[NUMA_PROBE_KERNELS];       /**< operand sets in one thread's pool, alone */
    int count_busy[NUMA_PROBE_KERNELS];  /**< the same, every core busy (the cache is shared) */
    int reps;                            /**< timed sweeps over the pool */
    double *pair[NUMA_PROBE_KERNELS];    /**< [node * ncores + core]: time with data on node / time
                                              with data on the core's node (1.0 there) */
    double *local_call[NUMA_PROBE_KERNELS]; /**< [core] seconds per call, data local, thread alone */
    double *busy[NUMA_PROBE_KERNELS];    /**< [placement * ncores + core]: time / local time of the core */
    double busy_avg[NUMA_PROBE_KERNELS][NUMA_PROBE_PLACEMENTS]; /**< mean time over cores / mean local time */
    double alone[NUMA_PROBE_KERNELS];    /**< mean local time alone / mean local time all busy */
} numa_probe;

/**
 * Measure. Refuses (CANOPY_ERR_UNSUPPORTED) a topology that is not this machine (synthetic or
 * XML): its cores and nodes cannot be bound to. BLAS runs on one thread meanwhile.
 * @param[out] r results, zeroed on failure
 */
canopy_status numa_probe_run(const numa_topo *t, const numa_probe_opts *o, numa_probe *r, canopy_err *err);
void numa_probe_free(numa_probe *r);

/** Both experiments as text tables. */
canopy_status numa_probe_print(const numa_probe *r, FILE *f, canopy_err *err);
/** Heat maps of the pair matrices (daxpy and dgemm side by side) with values and a legend. */
canopy_status numa_probe_write_svg(const numa_probe *r, const char *path, canopy_err *err);
/** The same heat maps as an 8-bit RGB PNG (no text: rows are nodes, columns cores). */
canopy_status numa_probe_write_png(const numa_probe *r, const char *path, canopy_err *err);

/**
 * Write an 8-bit RGB image (@p rgb: h rows of 3 * w bytes) as a PNG file: signature, IHDR, one
 * zlib-compressed IDAT (filter 0 on every row), IEND.
 */
canopy_status numa_png_write(const char *path, int w, int h, const unsigned char *rgb, canopy_err *err);

#endif
