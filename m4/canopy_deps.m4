# One macro per third-party dependency; each stops configure naming the Debian package.

AC_DEFUN([CANOPY_CHECK_ZLIB], [
  CANOPY_FIND_LIB([ZLIB], [zlib], [zlib.h], [gzopen], [-lz], [zlib1g-dev])
])

AC_DEFUN([CANOPY_CHECK_HWLOC], [
  CANOPY_FIND_LIB([HWLOC], [hwloc], [hwloc.h], [hwloc_topology_init], [-lhwloc], [libhwloc-dev])
])

AC_DEFUN([CANOPY_CHECK_NUMA], [
  CANOPY_FIND_LIB([NUMA], [numa], [numa.h], [numa_available], [-lnuma], [libnuma-dev])
])
