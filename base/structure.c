/* The block structure's own memory (base/structure.h). */
#include "base/structure.h"

#include <string.h>

void symbolic_free(symbolic *S)
{
    if (S == NULL) return;
    canopy_free(S->cblk_fcol);
    canopy_free(S->cblk_fblok);
    canopy_free(S->cblk_stride);
    canopy_free(S->cblk_parent);
    canopy_free(S->cblk_coef);
    canopy_free(S->blok_frow);
    canopy_free(S->blok_lrow);
    canopy_free(S->blok_fcblk);
    canopy_free(S->blok_coefrow);
    canopy_free(S->col2cblk);
    canopy_free(S->perm);
    canopy_free(S->iperm);
    memset(S, 0, sizeof *S);
}
