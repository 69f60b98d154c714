#ifndef CANOPY_TRACE_H
#define CANOPY_TRACE_H
#endif
