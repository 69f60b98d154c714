/*
 * Cost model of the dense kernels: predicted seconds of one call as a function of its sizes, for
 * the mapping and the simulation (the plan prices its tasks in sched/plan_costs.c). Calibrated on
 * the machine at first use (a few tenths of a second of timed calls, single-threaded BLAS) and
 * cached in a text file; a fixed fallback serves when calibration is not wanted (tests) or fails.
 *
 * Model: t(call) = latency + flops / rate(kind, d), rate = peak * d / (d + d_half) with d the
 * smallest dimension that limits blocking (k for GEMM, the triangle for TRSM/factorizations),
 * one (peak, d_half) pair per kernel kind, fitted by least squares on the timings.
 * Precisely, d = min(rows, cols, inner) for GEMM (the update GEMMs have rows >= cols, so this is
 * the inner size unless the facing block is thinner) and min(rows, tri) for TRSM. COST_SCATTER is
 * a flat rate (d_half = 0, no call latency: it is our own loop, not a library call).
 */
#ifndef CANOPY_SCHED_COST_H
#define CANOPY_SCHED_COST_H

#include "base/common.h"

enum sched_kernel { COST_GEMM = 0, COST_TRSM, COST_POTRF, COST_GETRF, COST_SYTRF, COST_SCATTER, COST_NKERNELS };

typedef struct sched_cost_model {
    double peak[COST_NKERNELS];   /**< asymptotic flop/s (COST_SCATTER: entries/s) */
    double d_half[COST_NKERNELS]; /**< size at which half the peak is reached */
    double latency;               /**< seconds per call */
    int load_threads;             /**< threads that computed at once to measure the two slowdowns below */
    double load_gemm;             /**< time of a dense kernel with load_threads threads computing, over alone */
    double load_scatter;          /**< the same for the memory-bound scatter */
    int calibrated;               /**< 1 measured here (or read from a cache made here), 0 fixed fallback */
    char source[CANOPY_PATH_MAX]; /**< "fixed", "calibrated" or the cache file read */
    /* the machine it was measured on, the cache's key: a cache whose key differs is remade */
    char key_cpu[128];            /**< blascheck_cpu_key: vendor, family, model, name */
    char key_blas[128];           /**< blascheck_blas_key: library, version, kernels ("OpenBLAS 0.3.21 Prescott") */
    int key_threads;              /**< usable cores (those of the loaded measurement) */
    double gemm_gflops;           /**< DGEMM of the check's shape on one core, measured when loaded (by the
                                       calibration or the cache's check), GFlop/s; 0: not measured */
    /* set by cost_model_load, not stored */
    double gemm_expected;         /**< GFlop/s the core's vector units give (blascheck_expected_gflops); 0 unknown */
    char blas_warning[400];       /**< "" or the slow-BLAS warning with its fix (blascheck_verdict) */
    char note[640];               /**< why a cache was not used as it was ("" when it was, or none existed) */
} sched_cost_model;

/*
 * The factorization's own dense kernels and BLAS thread control, which the calibration times: they
 * live above sched/ (src/numeric/, numeric_cost_kernels), which hands them down here.
 */
typedef struct cost_kernels {
    cint (*lu)(cint n, double *A, cint lda, cint *ipiv, double threshold);
    cint (*ldlt)(cint n, double *A, cint lda, cint *ipiv, double *dsub, double threshold, double *work);
    int (*blas_single)(void);       /**< one BLAS thread; returns what to restore */
    void (*blas_restore)(int old);
} cost_kernels;

/** The built-in fallback (a 2020s x86 core, ~50 GFlop/s DGEMM). */
void cost_model_fixed(sched_cost_model *m);

/**
 * Fill @p m from @p where: "fixed" = cost_model_fixed; "none" = calibrate now, no file; "" = the
 * default cache ($XDG_CACHE_HOME or $HOME/.cache, file canopy/cost-model-<host>.txt); any other
 * string = that cache file. A cache is used if it exists, parses, was made on this machine (the
 * same CPU, BLAS library, version and kernels, and usable cores: cost_model_stamp) and a quick
 * GEMM (a few milliseconds) runs within 30% of what it predicts; else the model is calibrated and
 * the cache rewritten (a write failure is not an error; m->note says why). Calibration failure
 * falls back to fixed. Then the BLAS is judged against the CPU (blascheck_verdict, with the
 * measured rate; by its kernels alone for "fixed"): m->blas_warning, printed once per process.
 * Test hook: CANOPY_TEST_GEMM_GFLOPS=<rate> stands for every DGEMM rate measured (the check's and
 * the calibration's gemm_gflops; the fitted peaks stay measured).
 */
canopy_status cost_model_load(sched_cost_model *m, const char *where, const cost_kernels *kern, canopy_err *err);

/** Does the cost-cache option @p where name a file (not "", "fixed" nor "none")? */
int cost_cache_is_file(const char *where);

/** Set m's key (key_cpu, key_blas, key_threads) to this process's machine. */
void cost_model_stamp(sched_cost_model *m);

/** GFlop/s @p m predicts for the quick check's GEMM (what a measured rate is compared with). */
double cost_model_check_rate(const sched_cost_model *m);

/** The BLAS fields at the end of canopy_stats (blas_gflops, blas_warning, ...) from @p m. */
void cost_model_report(const sched_cost_model *m, canopy_stats *st);

/**
 * Measure now (about 0.3 s): each kernel alone on one core, then a dense kernel and the scatter
 * on every usable core at once (the slowdown a kernel suffers when all workers compute: shared
 * caches, memory bandwidth, lower clocks; 1.8x on 16 Sapphire Rapids cores).
 */
canopy_status cost_model_calibrate(sched_cost_model *m, const cost_kernels *kern, canopy_err *err);

/**
 * @p m as it predicts kernels while @p busy threads of the node compute (the plan's view):
 * rates divided by the measured slowdown, interpolated from 1 (one thread) to load_gemm /
 * load_scatter (load_threads threads) and held beyond.
 */
void cost_model_under_load(sched_cost_model *m, int busy);

/** Read / write a cache file (text, one "key value" per line, values with %.17g). */
canopy_status cost_model_read(sched_cost_model *m, const char *path, canopy_err *err);
canopy_status cost_model_write(const sched_cost_model *m, const char *path, canopy_err *err);

/**
 * The default cache path ($XDG_CACHE_HOME if absolute, else $HOME/.cache, then
 * canopy/cost-model-<host>.txt, the host name reduced to [A-Za-z0-9._-]).
 * @return 0, or -1 when neither variable is set or @p len is too small.
 */
int cost_model_default_path(char *buf, size_t len);

/*
 * Predicted seconds of one call, real double arithmetic; complex arithmetic costs 4x the flops
 * (the caller multiplies). All sizes >= 0; a zero size costs nothing.
 */
double cost_gemm(const sched_cost_model *m, double rows, double cols, double inner);
double cost_trsm(const sched_cost_model *m, double rows, double tri);   /**< rows x tri right-side solve */
double cost_potrf(const sched_cost_model *m, double n);
double cost_getrf(const sched_cost_model *m, double n);
double cost_sytrf(const sched_cost_model *m, double n);
double cost_scatter(const sched_cost_model *m, double entries);

#endif
