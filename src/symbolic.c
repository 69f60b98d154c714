/* Placeholder: to be written (owner noted in the commit). */
#include "common.h"
#include "symbolic.h"
canopy_status symbolic_etree(const canopy_csc *G, cint *parent, canopy_err *err) { (void)G; (void)parent; return canopy_err_set(err, CANOPY_ERR_UNSUPPORTED, "nyi"); }
canopy_status symbolic_postorder(cint n, const cint *parent, cint *post, canopy_err *err) { (void)n; (void)parent; (void)post; return canopy_err_set(err, CANOPY_ERR_UNSUPPORTED, "nyi"); }
canopy_status symbolic_colcounts(const canopy_csc *G, const cint *parent, const cint *post, cint *colcount, canopy_err *err) { (void)G; (void)parent; (void)post; (void)colcount; return canopy_err_set(err, CANOPY_ERR_UNSUPPORTED, "nyi"); }
canopy_status symbolic_supernodes(cint n, const cint *parent, const cint *colcount, cint *nsuper, cint *super_fcol, canopy_err *err) { (void)n; (void)parent; (void)colcount; (void)nsuper; (void)super_fcol; return canopy_err_set(err, CANOPY_ERR_UNSUPPORTED, "nyi"); }
