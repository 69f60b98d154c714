/* Placeholder: to be written (owner noted in the commit). */
#include "common.h"
CANOPY_EXPORT canopy_status canopy_generate_laplacian(canopy_int nx, canopy_int ny, canopy_int nz, int stencil, canopy_csc *A)
{ (void)nx; (void)ny; (void)nz; (void)stencil; (void)A; return CANOPY_ERR_UNSUPPORTED; }
CANOPY_EXPORT canopy_status canopy_generate_helmholtz(canopy_int nx, canopy_int ny, canopy_csc *A)
{ (void)nx; (void)ny; (void)A; return CANOPY_ERR_UNSUPPORTED; }
