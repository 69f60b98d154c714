# CANOPY_ENABLE_INT64: --enable-int64 builds with 64-bit indices (canopy_int).
AC_DEFUN([CANOPY_ENABLE_INT64], [
  AC_ARG_ENABLE([int64], [AS_HELP_STRING([--enable-int64], [use 64-bit integers for indices (SCOTCH must match)])],
    [], [enable_int64=no])
  AS_IF([test "$enable_int64" = yes],
    [CANOPY_INT_TYPE=int64_t; CANOPY_INT64=1; canopy_int_size=8],
    [CANOPY_INT_TYPE=int32_t; CANOPY_INT64=0; canopy_int_size=4])
  AC_SUBST([CANOPY_INT_TYPE])
  AC_SUBST([CANOPY_INT64])
])

# CANOPY_CHECK_CHECK: the Check unit-test framework (tests only). --without-check skips the tests.
AC_DEFUN([CANOPY_CHECK_CHECK], [
  AC_ARG_WITH([check], [AS_HELP_STRING([--without-check], [do not build the unit tests (Check)])])
  canopy_have_check=no
  AS_IF([test "$with_check" != no], [
    PKG_CHECK_MODULES([CHECK], [check >= 0.9.6], [canopy_have_check=yes],
      [AC_MSG_ERROR([the Check unit-test framework was not found: install the Debian package check (and pkg-config), or configure --without-check])])])
  AM_CONDITIONAL([HAVE_CHECK], [test "$canopy_have_check" = yes])
])

# CANOPY_WARNINGS: warnings on by default; --enable-werror turns them into errors.
AC_DEFUN([CANOPY_WARNINGS], [
  AC_ARG_ENABLE([werror], [AS_HELP_STRING([--enable-werror], [treat compiler warnings as errors])])
  CANOPY_WFLAGS="-Wall -Wextra -Wmissing-prototypes -Wstrict-prototypes -Wshadow -Wpointer-arith -Wvla -Wformat=2"
  AS_IF([test "$enable_werror" = yes], [CANOPY_WFLAGS="$CANOPY_WFLAGS -Werror"])
  AC_SUBST([CANOPY_WFLAGS])
])

# AX_PTHREAD_SIMPLE: POSIX threads (the MPI wrappers usually bring them already).
AC_DEFUN([AX_PTHREAD_SIMPLE], [
  AC_SEARCH_LIBS([pthread_create], [pthread], [],
    [AC_MSG_ERROR([POSIX threads not found (libc6-dev)])])
  PTHREAD_CFLAGS="-pthread"
  AC_SUBST([PTHREAD_CFLAGS])
])

# CANOPY_CHECK_FORTRAN: the Fortran 2008 module (fortran/canopy.f90.in), built with the MPI
# Fortran wrapper of the same MPI as MPICC (mpifort, mpif90; mpifort.mpich beside mpicc.mpich)
# when it compiles a program that uses mpi_f08 and iso_c_binding. --with-fortran makes it
# required (--with-fortran=MPIFC names the wrapper), --without-fortran leaves it out.
AC_DEFUN([CANOPY_CHECK_FORTRAN], [
  AC_REQUIRE([CANOPY_ENABLE_INT64])
  AC_ARG_WITH([fortran], [AS_HELP_STRING([--with-fortran@<:@=MPIFC@:>@],
    [build the Fortran module (default: when an MPI Fortran compiler with mpi_f08 is found)])],
    [], [with_fortran=check])
  canopy_have_fortran=no
  AS_IF([test "$with_fortran" != no], [
    canopy_mpi_suffix=`expr "x$MPICC" : 'x.*mpicc\(\.@<:@a-z@:>@*\)$'`
    AS_CASE([$with_fortran],
      [yes|check], [AC_CHECK_PROGS([MPIFC], [mpifort$canopy_mpi_suffix mpif90$canopy_mpi_suffix])],
      [MPIFC=$with_fortran])
    AS_IF([test -n "$MPIFC"], [
      AC_MSG_CHECKING([whether $MPIFC builds a Fortran 2008 program with mpi_f08])
      cat > conftest.f90 <<_CANOPY_EOF
program conftest
    use, intrinsic :: iso_c_binding
    use mpi_f08, only: MPI_Comm
    type(MPI_Comm) :: c
    integer(c_int32_t) :: i
    i = 0
end program conftest
_CANOPY_EOF
      AS_IF([$MPIFC -c conftest.f90 -o conftest.$ac_objext >&AS_MESSAGE_LOG_FD 2>&1], [canopy_have_fortran=yes])
      rm -f conftest.f90 conftest.$ac_objext
      AC_MSG_RESULT([$canopy_have_fortran])
    ])
    AS_IF([test "$canopy_have_fortran" = no && test "$with_fortran" != check],
      [AC_MSG_ERROR([--with-fortran: no MPI Fortran compiler with mpi_f08 was found (install gfortran and the MPI's Fortran bindings, name it with --with-fortran=MPIFC, or configure --without-fortran)])])
  ])
  AS_IF([test "$canopy_int_size" = 8], [CANOPY_FORTRAN_IK=c_int64_t], [CANOPY_FORTRAN_IK=c_int32_t])
  AC_SUBST([MPIFC])
  AC_SUBST([CANOPY_FORTRAN_IK])
  AC_SUBST([CANOPY_HAVE_FORTRAN], [$canopy_have_fortran])
  AM_CONDITIONAL([HAVE_FORTRAN], [test "$canopy_have_fortran" = yes])
])

# CANOPY_CHECK_PETSC: the PETSc solver package libcanopy_petsc (petsc/canopy_petsc.c), built when
# PETSc is found: pkg-config's PETSc (Debian's libpetsc-real-dev), or --with-petsc=DIR (DIR holds
# include/petsc.h and lib/libpetsc*). PETSc must use the same MPI as Canopy (a PETSc built with
# Open MPI and Canopy with MPICH would load two MPIs in one process): checked on a linked program.
# --with-petsc makes it required, --without-petsc leaves it out.
AC_DEFUN([CANOPY_CHECK_PETSC], [
  AC_ARG_WITH([petsc], [AS_HELP_STRING([--with-petsc@<:@=DIR@:>@],
    [build the PETSc solver package libcanopy_petsc (default: when pkg-config finds PETSc)])],
    [], [with_petsc=check])
  canopy_have_petsc=no
  canopy_petsc_why=""
  PETSC_CFLAGS=""
  PETSC_LIBS=""
  AS_IF([test "$with_petsc" != no], [
    AS_CASE([$with_petsc],
      [yes|check], [
        AS_IF([pkg-config --exists PETSc 2>/dev/null], [
          PETSC_CFLAGS=`pkg-config --cflags PETSc | sed 's/-I/-isystem /g'`
          PETSC_LIBS=`pkg-config --libs PETSc`
          canopy_petsc_libdir=`pkg-config --variable=libdir PETSc`
          PETSC_LIBS="$PETSC_LIBS -Wl,-rpath,$canopy_petsc_libdir"],
          [canopy_petsc_why="(pkg-config does not know PETSc)"])],
      [canopy_petsc_lib=`ls $with_petsc/lib/libpetsc*.so 2>/dev/null | head -n 1`
       canopy_petsc_lib=`basename "$canopy_petsc_lib" .so | sed 's/^lib//'`
       PETSC_CFLAGS="-isystem $with_petsc/include"
       PETSC_LIBS="-L$with_petsc/lib -Wl,-rpath,$with_petsc/lib -l${canopy_petsc_lib:-petsc}"])
    AS_IF([test -n "$PETSC_LIBS"], [
      AC_MSG_CHECKING([whether PETSc links with $CC and uses the same MPI])
      canopy_save_CFLAGS=$CFLAGS
      canopy_save_LIBS=$LIBS
      CFLAGS="$CFLAGS $PETSC_CFLAGS"
      LIBS="$PETSC_LIBS $LIBS"
      AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <petsc/private/matimpl.h>]],
        [[return (int)MatSolverTypeRegister("x", MATSEQAIJ, MAT_FACTOR_LU, NULL);]])], [
          dnl two MPI libraries in one program: PETSc's and ours differ
          canopy_mpis=`ldd conftest$EXEEXT 2>/dev/null | grep -E 'lib(mpi|mpich)\.so' | sed 's/ *=>.*//' | sort -u | wc -l`
          AS_IF([test "$canopy_mpis" -le 1], [canopy_have_petsc=yes],
            [canopy_petsc_why="(PETSc was built with another MPI)"])],
        [canopy_petsc_why="(PETSc headers or library unusable)"])
      CFLAGS=$canopy_save_CFLAGS
      LIBS=$canopy_save_LIBS
      AC_MSG_RESULT([$canopy_have_petsc $canopy_petsc_why])])
    AS_IF([test "$canopy_have_petsc" = no && test "$with_petsc" != check],
      [AC_MSG_ERROR([--with-petsc: PETSc not usable $canopy_petsc_why (install libpetsc-real-dev, or name its prefix with --with-petsc=DIR, or configure --without-petsc)])])
  ])
  AC_SUBST([PETSC_CFLAGS])
  AC_SUBST([PETSC_LIBS])
  AC_SUBST([CANOPY_HAVE_PETSC], [$canopy_have_petsc])
  AM_CONDITIONAL([HAVE_PETSC], [test "$canopy_have_petsc" = yes])
])

# CANOPY_CMAKE_PACKAGE: what the CMake package files (cmake/*.cmake.in, written by make) need
# beyond the installation paths: the pointer size, which CanopyConfigVersion.cmake compares with
# the project's (a 32-bit project cannot link a 64-bit Canopy).
AC_DEFUN([CANOPY_CMAKE_PACKAGE], [
  AC_CHECK_SIZEOF([void *])
  AC_SUBST([CANOPY_SIZEOF_VOID_P], [$ac_cv_sizeof_void_p])
])
