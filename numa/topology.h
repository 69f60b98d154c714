/*
 * Machine topology through hwloc: how many cores this rank may use. Binding, placement and the
 * NUMA probe build on this (see DESIGN.md).
 */
#ifndef CANOPY_TOPOLOGY_H
#define CANOPY_TOPOLOGY_H

#include "common.h"

/**
 * Cores of the machine (all of them) and cores this process is allowed to run on (a core counts
 * if any of its PUs is in the process's cpuset). Honours HWLOC_SYNTHETIC / HWLOC_XMLFILE.
 */
canopy_status numa_count_cores(int *machine_cores, int *allowed_cores, canopy_err *err);

#endif
