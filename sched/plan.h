#ifndef CANOPY_PLAN_H
#define CANOPY_PLAN_H
#endif
