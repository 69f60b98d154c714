/*
 * canopy-solve's --selinv, --selinv-out and --selinv-entries (examples/cli_selinv.c).
 */
#ifndef CANOPY_CLI_SELINV_H
#define CANOPY_CLI_SELINV_H

#include "canopy.h"
#include <stdint.h>

typedef struct cli_selinv {
    int what;              /* 0: none, 1: diag, 2: pattern */
    const char *out;       /* --selinv-out FILE.mtx (NULL: none) */
    const char *entries;   /* --selinv-entries FILE (NULL: none) */
} cli_selinv;

/** What the runs measured, for the report (rank 0). */
typedef struct cli_selinv_result {
    double time, gflops, flops;
    int64_t entries;
    int64_t perturbed;
} cli_selinv_result;

/**
 * Run what @p c asks for on the factorized solver (collective): the listed entries first (they
 * need the factors for entries outside the pattern), then the diagonal or the pattern; on rank 0
 * write the entries to c->out as a Matrix Market coordinate file (1-based, general, the user's
 * numbering). Returns the status (errors on stderr of rank 0 with @p name).
 */
canopy_status cli_selinv_run(const cli_selinv *c, canopy_solver *s, canopy_int n, int complex_values, int rank,
                             const char *name, cli_selinv_result *res);

#endif
