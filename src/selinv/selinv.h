/*
 * canopy_selinv's pieces shared by one rank (src/selinv/selinv.c) and several (src/selinv/selinv_dist.c).
 * Z is the inverse in the new numbering (selinv_template.c); selinv.c's header says how its
 * entries become those of A^-1 in the user's numbering.
 */
#ifndef CANOPY_SELINV_H
#define CANOPY_SELINV_H

#include "solver/solver.h"
#include "numeric/numeric.h"

/** Z(r, c) from @p F's inverse (its factors' places or the separate copy) into v (one or two
 * doubles); false outside the block structure or when this rank does not hold it. */
bool selinv_z_entry(const numeric *F, cint r, cint c, double *v);
/** Whether Z(r, c) lies in the factors' block structure (where the inversion leaves it). */
bool selinv_in_structure(const symbolic *S, cint r, cint c);
/** v (one or two doubles) times the scaling factors of A^-1(i, j), m = selinv_matched(j). */
void selinv_unscale(const canopy_solver *s, cint i, cint m, double *v, int vsz);
/** The row of the scaled, matched matrix that row j of A became. */
cint selinv_matched(const canopy_solver *s, cint j);
/** Every entry of the inverse held by @p F (all cblks) as a general CSC matrix, user numbering. */
canopy_status selinv_pattern(canopy_solver *s, const numeric *F, canopy_csc *out);
/** The request's arguments (rank 0's); false with the error set. */
bool selinv_request_ok(canopy_solver *s, canopy_selinv_what what, const canopy_selinv_request *req);
/** canopy_selinv over several ranks, collective: every rank calls it, rank 0's request counts. */
canopy_status selinv_dist(canopy_solver *s, canopy_selinv_what what, canopy_selinv_request *req);

/** canopy_selinv on one rank (src/selinv/selinv.c): the status, also in s->err. */
canopy_status selinv_run(canopy_solver *s, canopy_selinv_what what, canopy_selinv_request *req);

#endif
