/*
 * Which CPU and which BLAS this process runs on, and whether that BLAS wastes the CPU: the key of
 * the cost model's cache (sched/cost.c) and the warning a user gets when, say, an OpenBLAS too old
 * for the CPU falls back on its generic Prescott kernels (5x slower DGEMM on an AVX-512 core, and
 * every factorization with it). Owns no timing: the measured rate comes from the cost model.
 */
#ifndef CANOPY_SCHED_BLASCHECK_H
#define CANOPY_SCHED_BLASCHECK_H

#include <stddef.h>

/** Widest vector instructions of a CPU (that the OS enables) or of a BLAS's kernels. */
enum blascheck_isa { BLASCHECK_ISA_UNKNOWN = 0, BLASCHECK_ISA_SSE2, BLASCHECK_ISA_AVX, BLASCHECK_ISA_AVX2, BLASCHECK_ISA_AVX512 };

typedef struct blascheck_machine {
    /* the CPU (/proc/cpuinfo, first processor) */
    char vendor[32];          /**< "GenuineIntel", "AuthenticAMD", "" unknown */
    int family, model;        /**< -1 unknown */
    char cpu_name[96];        /**< "model name" */
    int isa;                  /**< enum blascheck_isa from the flags */
    double ghz;               /**< nominal clock: base_frequency, else "@ x.xxGHz" of the name, else "cpu MHz"; 0 unknown */
    /* the BLAS that provides cblas_dgemm */
    char library[32];         /**< "OpenBLAS", "BLIS", "MKL", or "" (unknown) */
    char version[32];
    char core[32];            /**< the kernels it runs (OpenBLAS: openblas_get_corename(); BLIS: the arch) */
    int dynamic_arch;         /**< OpenBLAS built with DYNAMIC_ARCH: OPENBLAS_CORETYPE chooses the kernels */
    char file[160];           /**< the shared object holding cblas_dgemm ("" unknown) */
    char coretype_env[32];    /**< OPENBLAS_CORETYPE as set ("" unset) */
} blascheck_machine;

/** Fill @p mc for this process (the CPU from /proc/cpuinfo and sysfs, the BLAS by its own calls). */
void blascheck_identify(blascheck_machine *mc);

/**
 * The CPU fields of @p mc from a cpuinfo file (tests pass a made-up one); the BLAS fields are
 * left alone. @return 0, or -1 when the file cannot be read (the CPU fields are then unknown).
 */
int blascheck_read_cpuinfo(const char *path, blascheck_machine *mc);

/** The cache keys: "vendor family model name" and "library version core" (or the BLAS's file). */
void blascheck_cpu_key(const blascheck_machine *mc, char *buf, size_t len);
void blascheck_blas_key(const blascheck_machine *mc, char *buf, size_t len);

/** ISA of an OpenBLAS core name ("Prescott" SSE2 ... "SkylakeX" AVX-512; unknown names 0). */
int blascheck_core_isa(const char *core);

/** DGEMM GFlop/s one core's vector units give at the nominal clock (a low estimate; 0 unknown). */
double blascheck_expected_gflops(const blascheck_machine *mc);

/**
 * The verdict: 1 with the warning and its fix in @p msg when the BLAS runs far below the CPU: its
 * kernels target an older instruction set (SSE or AVX kernels on an AVX2 or AVX-512 CPU; AVX2 ones
 * on AVX-512 only when also slow), or @p measured_gflops (DGEMM on one core, 0 = not measured) is
 * under 30% of blascheck_expected_gflops (the fix then depends on the library: another BLAS, or,
 * with kernels that suit the CPU, fewer threads than cores). 0 and "" otherwise.
 */
int blascheck_verdict(const blascheck_machine *mc, double measured_gflops, char *msg, size_t len);

/**
 * Print "canopy: warning: <msg>" on stderr, once per process whatever the message (an application
 * creating many solvers, or a tool that loads the model twice, says it once). @return 1 if printed.
 */
int blascheck_warn_once(const char *msg);

#endif
