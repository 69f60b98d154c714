#ifndef CANOPY_REFINE_H
#define CANOPY_REFINE_H
#include "common.h"
#endif
