/* Topology queries through hwloc (see topology.h). */
#include "topology.h"

#include <hwloc.h>

canopy_status numa_count_cores(int *machine_cores, int *allowed_cores, canopy_err *err)
{
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0)
        return canopy_err_set(err, CANOPY_ERR_INTERNAL, "hwloc: cannot initialise the topology");
    if (hwloc_topology_load(topo) != 0) {
        hwloc_topology_destroy(topo);
        return canopy_err_set(err, CANOPY_ERR_INTERNAL, "hwloc: cannot load the topology");
    }
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    int total = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE), allowed = 0;
    /* a synthetic topology describes another machine: the real process binding does not apply */
    int have_binding = set && !hwloc_topology_is_thissystem(topo) ? 0 :
                       set && hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) == 0;
    for (int i = 0; i < total; i++) {
        hwloc_obj_t core = hwloc_get_obj_by_type(topo, HWLOC_OBJ_CORE, i);
        if (!have_binding || hwloc_bitmap_intersects(core->cpuset, set)) allowed++;
    }
    if (set) hwloc_bitmap_free(set);
    hwloc_topology_destroy(topo);
    if (total <= 0) total = allowed = 1;
    *machine_cores = total;
    *allowed_cores = allowed > 0 ? allowed : 1;
    return CANOPY_SUCCESS;
}
