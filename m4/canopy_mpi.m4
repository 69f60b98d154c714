# CANOPY_PROG_MPICC: use the MPI compiler wrapper (Open MPI or MPICH) as CC.
# Must run before AC_PROG_CC. MPICC=... or --with-mpi=PREFIX choose another one.
AC_DEFUN([CANOPY_PROG_MPICC], [
  AC_ARG_VAR([MPICC], [MPI C compiler wrapper (default: mpicc in PATH)])
  AC_ARG_WITH([mpi], [AS_HELP_STRING([--with-mpi=PREFIX], [MPI installation whose bin/mpicc is used])])
  AS_IF([test -z "$MPICC"], [
    AS_CASE(["$with_mpi"],
      [""|yes], [AC_PATH_PROGS([MPICC], [mpicc mpicc.openmpi mpicc.mpich])],
      [no], [AC_MSG_ERROR([MPI is required by Canopy; --without-mpi is not supported])],
      [MPICC="$with_mpi/bin/mpicc"])])
  AS_IF([test -z "$MPICC" || ! $MPICC --version >/dev/null 2>&1],
    [AC_MSG_ERROR([no working MPI C compiler (mpicc): install the Debian package libopenmpi-dev (or libmpich-dev), or pass --with-mpi=PREFIX or MPICC=...])])
  CC="$MPICC"
])

# CANOPY_CHECK_MPI: MPI must link and know MPI_THREAD_MULTIPLE (workers + communication thread).
AC_DEFUN([CANOPY_CHECK_MPI], [
  AC_MSG_CHECKING([whether $CC compiles and links an MPI_Init_thread program])
  AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]],
      [[int provided; MPI_Init_thread(0, 0, MPI_THREAD_MULTIPLE, &provided); MPI_Finalize();]])],
    [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no])
     AC_MSG_ERROR([$CC cannot build MPI programs: install the Debian package libopenmpi-dev (or libmpich-dev)])])
  # The tests' launcher must belong to the same MPI as the compiler (Debian installs Open MPI and
  # MPICH side by side as mpicc.openmpi / mpicc.mpich behind one "mpicc" alternative).
  AC_ARG_VAR([MPIEXEC], [MPI launcher for the tests (default: the one matching MPICC)])
  # Follow the alternatives links one at a time until a name tells the flavour (Open MPI's
  # mpicc.openmpi is itself a link to opal_wrapper, so readlink -f would go too far).
  canopy_mpicc_real=`command -v "$MPICC" 2>/dev/null`
  for canopy_i in 1 2 3 4 5; do
    AS_CASE(["$canopy_mpicc_real"], [*.mpich|*.openmpi], [break])
    canopy_next=`readlink "$canopy_mpicc_real" 2>/dev/null` || break
    AS_CASE(["$canopy_next"], [/*], [canopy_mpicc_real=$canopy_next],
            [canopy_mpicc_real=`dirname "$canopy_mpicc_real"`/$canopy_next])
  done
  canopy_mpi_bindir=`dirname "$canopy_mpicc_real"`
  AS_CASE(["$canopy_mpicc_real"],
    [*.mpich], [canopy_mpi_sfx=.mpich],
    [*.openmpi], [canopy_mpi_sfx=.openmpi],
    [canopy_mpi_sfx=])
  AC_PATH_PROGS([MPIEXEC], [mpiexec$canopy_mpi_sfx mpirun$canopy_mpi_sfx mpiexec mpirun], [mpiexec],
                [$canopy_mpi_bindir$PATH_SEPARATOR$PATH])
  AC_SUBST([MPIEXEC])
])
