/* Placeholder: to be written (owner noted in the commit). */
#include "common.h"
#include "matrix.h"
canopy_status matrix_import(const canopy_csc *in, canopy_csc *out, canopy_err *err)
{ (void)in; (void)out; return canopy_err_set(err, CANOPY_ERR_UNSUPPORTED, "matrix_import not written yet"); }
canopy_status matrix_update_values(const canopy_csc *layout, const void *values, canopy_csc *A, canopy_err *err)
{ (void)layout; (void)values; (void)A; return canopy_err_set(err, CANOPY_ERR_UNSUPPORTED, "not written yet"); }
