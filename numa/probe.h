#ifndef CANOPY_PROBE_H
#define CANOPY_PROBE_H
#endif
