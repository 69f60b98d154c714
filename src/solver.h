/* The solver handle (opaque to users): phase state, matrix copies, analysis, factors, stats. */
#ifndef CANOPY_SOLVER_H
#define CANOPY_SOLVER_H
#include "common.h"
#endif
