/* Runtime options: defaults, parsing by name (shared by the environment overlay and canopy-solve). */
#ifndef CANOPY_OPTIONS_H
#define CANOPY_OPTIONS_H
#include "common.h"
#endif
