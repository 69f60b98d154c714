/* Placeholder: to be written (owner noted in the commit). */
#include "common.h"
#include "symbolic.h"
canopy_status symbolic_analyze(const canopy_csc *G, const cint *perm, const symbolic_opts *opts, symbolic *S, canopy_err *err)
{ (void)G; (void)perm; (void)opts; (void)S; return canopy_err_set(err, CANOPY_ERR_UNSUPPORTED, "nyi"); }
