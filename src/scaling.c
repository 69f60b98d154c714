/* Placeholder: to be written (owner noted in the commit). */
#include "common.h"
#include "scaling.h"
canopy_status scaling_compute(const canopy_csc *A, canopy_scaling mode, canopy_matrix_kind kind, scaling *sc, canopy_err *err)
{ (void)A; (void)mode; (void)kind; (void)sc; (void)err; return CANOPY_SUCCESS; }
canopy_status scaling_apply(const canopy_csc *A, const scaling *sc, canopy_csc *As, canopy_err *err) { (void)A; (void)sc; (void)As; return canopy_err_set(err, CANOPY_ERR_UNSUPPORTED, "nyi"); }
void scaling_rhs(const scaling *sc, canopy_arith arith, cint nrhs, void *b, cint ldb, void *tmp) { (void)sc; (void)arith; (void)nrhs; (void)b; (void)ldb; (void)tmp; }
void scaling_solution(const scaling *sc, canopy_arith arith, cint nrhs, void *x, cint ldx) { (void)sc; (void)arith; (void)nrhs; (void)x; (void)ldx; }
void scaling_free(scaling *sc) { (void)sc; }
