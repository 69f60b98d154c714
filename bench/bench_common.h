/*
 * bench_common.h: what the peer drivers (cholmod_driver, mumps_driver) share: the command line
 * (the matrix syntax of canopy-solve), loading the matrix through Canopy's public API, the
 * right-hand side b = A*ones, the error measures and the one-line JSON report.
 * It owns no solver logic: each driver converts the matrix to its peer's format itself.
 */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <canopy.h>

/** What a driver was asked to do. */
typedef struct bench_args {
    const char *input;        /**< file path or "NXxNY[xNZ]" (with laplacian = 1) */
    int laplacian;            /**< 1: input is a grid size */
    int spd;                  /**< 1: the caller asserts the matrix is SPD */
    const char *label;        /**< matrix name printed in the report */
    const char *ordering;     /**< driver-specific ordering name, NULL = the driver's default */
} bench_args;

/** The report: the keys of canopy-solve --json plus a few of the drivers' own. */
typedef struct bench_report {
    const char *solver;
    char matrix[256];
    char ordering[64];
    char factorization[16];
    char status[600];         /**< "ok", "n/a: <reason>" or "error: <reason>" */
    char note[160];           /**< driver-specific details (parameters changed, counts) */
    char extra[1024];         /**< more keys, already JSON ("\"k\": v, ..."), printed as is; "" = none */
    int64_t n, nnz, nnz_factor;
    double flops;
    double time_analyze, time_factorize, time_solve;
    double backward_error, forward_error;
    int64_t perturbed_pivots;
    double peak_memory_bytes;
    int ranks, threads_per_rank;
} bench_report;

/**
 * Parse the command line shared by both drivers:
 * [--spd] [--label NAME] [--ordering NAME] (--laplacian NXxNY[xNZ] | FILE).
 * @return 0 on success, -1 after printing the usage to stderr.
 */
int bench_parse_args(int argc, char **argv, bench_args *args, const char *usage_extra);

/**
 * Load the matrix: canopy_read_matrix() for files, canopy_generate_laplacian() for grids
 * (free it with canopy_csc_free()). The result is 0-based on success.
 * @return 0, or -1 with a reason in @p msg.
 */
int bench_load(const bench_args *args, canopy_csc *A, char *msg, size_t msglen);


/** Entries of the full matrix (both triangles counted for one-triangle storage). */
int64_t bench_nnz_full(const canopy_csc *A);

/** y = A x for any storage of a real canopy_csc (one triangle is expanded on the fly). */
void bench_matvec(const canopy_csc *A, const double *x, double *y);

/** ||A||_inf (max absolute row sum of the full matrix). */
double bench_norm_inf(const canopy_csc *A);

/** Backward error ||b - A x||_inf / (||A||_inf ||x||_inf + ||b||_inf) and forward error vs ones. */
void bench_errors(const canopy_csc *A, const double *b, const double *x, double *berr, double *ferr);

/** Seconds from a monotonic clock. */
double bench_now(void);

/** Initialize a report with NaNs/zeros, the solver name and the matrix label. */
void bench_report_init(bench_report *r, const char *solver, const bench_args *args);

/** Add a numeric key to the report's extra keys (null when @p v is not finite). */
void bench_report_extra(bench_report *r, const char *key, double v);

/** Print the report as one JSON object on one line to stdout. */
void bench_report_print(const bench_report *r);

#endif /* BENCH_COMMON_H */
