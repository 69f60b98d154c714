/* Placeholder: to be written (owner noted in the commit). */
#include "common.h"
#include "io_util.h"
canopy_status io_read_hb(const char *path, canopy_csc *A, canopy_err *err)
{ (void)path; (void)A; return canopy_err_set(err, CANOPY_ERR_UNSUPPORTED, "not written yet"); }
