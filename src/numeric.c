/* Placeholder: to be written (owner noted in the commit). */
#include "common.h"
#include "numeric.h"
canopy_status numeric_factorize(numeric *F, const symbolic *S, const canopy_csc *A, canopy_factorization kind, double threshold, canopy_err *err)
{ (void)F; (void)S; (void)A; (void)kind; (void)threshold; return canopy_err_set(err, CANOPY_ERR_UNSUPPORTED, "nyi"); }
canopy_status numeric_solve(const numeric *F, cint nrhs, void *b, cint ldb, canopy_err *err) { (void)F; (void)nrhs; (void)b; (void)ldb; return canopy_err_set(err, CANOPY_ERR_UNSUPPORTED, "nyi"); }
size_t numeric_bytes(const numeric *F) { (void)F; return 0; }
void numeric_free(numeric *F) { (void)F; }
