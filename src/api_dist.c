/*
 * Distributed input and right-hand sides (canopy_set_matrix_distributed and friends).
 * Placeholder: not implemented yet.
 */
#include "solver.h"

void api_dist_free(canopy_solver *s)
{
    (void)s;
}

CANOPY_EXPORT canopy_status canopy_set_matrix_distributed(canopy_solver *s, const canopy_dist_csc *A)
{
    (void)A;
    return s ? CANOPY_ERR_UNSUPPORTED : CANOPY_ERR_ARGUMENT;
}

CANOPY_EXPORT canopy_status canopy_update_values_distributed(canopy_solver *s, const void *values)
{
    (void)values;
    return s ? CANOPY_ERR_UNSUPPORTED : CANOPY_ERR_ARGUMENT;
}

CANOPY_EXPORT canopy_status canopy_solve_distributed(canopy_solver *s, canopy_int nrhs, canopy_int nloc,
                                                     const canopy_int *rows, void *b, canopy_int ldb)
{
    (void)nrhs, (void)nloc, (void)rows, (void)b, (void)ldb;
    return s ? CANOPY_ERR_UNSUPPORTED : CANOPY_ERR_ARGUMENT;
}

CANOPY_EXPORT canopy_status canopy_refine_distributed(canopy_solver *s, canopy_int nrhs, canopy_int nloc,
                                                      const canopy_int *rows, const void *b, canopy_int ldb,
                                                      void *x, canopy_int ldx)
{
    (void)nrhs, (void)nloc, (void)rows, (void)b, (void)ldb, (void)x, (void)ldx;
    return s ? CANOPY_ERR_UNSUPPORTED : CANOPY_ERR_ARGUMENT;
}
