# CANOPY_CHECK_SCOTCH: sequential SCOTCH for nested dissection; SCOTCH_Num must match canopy_int.
AC_DEFUN([CANOPY_CHECK_SCOTCH], [
  AC_REQUIRE([CANOPY_ENABLE_INT64])
  CANOPY_FIND_LIB([SCOTCH], [scotch], [scotch.h], [SCOTCH_graphOrder], [-lscotch -lscotcherr],
                  [libscotch-dev], [/usr/include/scotch], [-lz -lm -lpthread])
  canopy_save_CPPFLAGS=$CPPFLAGS
  CPPFLAGS="$CPPFLAGS $SCOTCH_CPPFLAGS"
  AC_COMPUTE_INT([canopy_scotch_num_size], [(long) sizeof(SCOTCH_Num)],
    [[#include <stdio.h>
#include <stdint.h>
#include <scotch.h>]], [canopy_scotch_num_size=0])
  CPPFLAGS=$canopy_save_CPPFLAGS
  AS_IF([test "$canopy_scotch_num_size" != "$canopy_int_size"],
    [AC_MSG_ERROR([SCOTCH_Num has $canopy_scotch_num_size bytes but Canopy indices have $canopy_int_size: use a SCOTCH built with the matching integer size (--with-scotch=PREFIX), or change --enable-int64])])
])

# CANOPY_CHECK_PTSCOTCH: PT-SCOTCH (parallel nested dissection, ordering=ptscotch) when it is
# built for the MPI that $CC links: Debian builds libptscotch for Open MPI only, and an MPICH
# program linking it would load both MPI libraries. PT-SCOTCH carries the sequential SCOTCH
# routines as well, so with it the library links -lptscotch instead of -lscotch (as MUMPS does).
AC_DEFUN([CANOPY_CHECK_PTSCOTCH], [
  AC_REQUIRE([CANOPY_CHECK_SCOTCH])
  AC_ARG_WITH([ptscotch], [AS_HELP_STRING([--with-ptscotch@<:@=auto|yes|no@:>@],
    [parallel ordering with PT-SCOTCH (Debian libptscotch-dev; default: auto, when it is built for this MPI)])],
    [], [with_ptscotch=auto])
  canopy_have_ptscotch=no
  canopy_ptscotch_why="--without-ptscotch"
  AS_IF([test "x$with_ptscotch" != xno], [
    canopy_save_CPPFLAGS=$CPPFLAGS
    canopy_save_LDFLAGS=$LDFLAGS
    canopy_save_LIBS=$LIBS
    CPPFLAGS="$CPPFLAGS $SCOTCH_CPPFLAGS"
    LDFLAGS="$LDFLAGS $SCOTCH_LDFLAGS"
    LIBS="-lptscotch -lptscotcherr -lz -lm -lpthread $LIBS"
    AC_MSG_CHECKING([for PT-SCOTCH (SCOTCH_dgraphOrderCompute)])
    canopy_ptscotch_why="ptscotch.h or -lptscotch not found (Debian: libptscotch-dev)"
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <stdio.h>
#include <stdint.h>
#include <mpi.h>
#include <scotch.h>
#include <ptscotch.h>]], [[SCOTCH_Dgraph g; SCOTCH_dgraphInit(&g, MPI_COMM_WORLD); SCOTCH_dgraphExit(&g);]])],
      [canopy_have_ptscotch=yes
       # the MPI library PT-SCOTCH was linked against must be the one our programs link
       canopy_ptlib=`$CC $LDFLAGS -print-file-name=libptscotch.so 2>/dev/null`
       canopy_ptmpi=`readelf -d "$canopy_ptlib" 2>/dev/null | awk '/NEEDED/ {n = $NF; print substr(n, 2, length(n) - 2)}' | grep '^libmpi'`
       canopy_ourmpi=`readelf -d conftest$EXEEXT 2>/dev/null | awk '/NEEDED/ {n = $NF; print substr(n, 2, length(n) - 2)}' | grep '^libmpi'`
       AS_IF([test -z "$canopy_ptmpi"],
         [canopy_have_ptscotch=no; canopy_ptscotch_why="cannot tell which MPI $canopy_ptlib was built for (readelf)"],
         [AS_CASE([" `echo $canopy_ourmpi` "], [*" $canopy_ptmpi "*], [],
           [canopy_have_ptscotch=no
            canopy_ptscotch_why="$canopy_ptlib is built for $canopy_ptmpi, $CC links `echo $canopy_ourmpi`"])])])
    AC_MSG_RESULT([$canopy_have_ptscotch])
    CPPFLAGS=$canopy_save_CPPFLAGS
    LDFLAGS=$canopy_save_LDFLAGS
    LIBS=$canopy_save_LIBS
  ])
  AS_IF([test "$canopy_have_ptscotch" = yes],
    [SCOTCH_LIBS="-lptscotch -lptscotcherr -lz -lm -lpthread"
     AC_DEFINE([CANOPY_HAVE_PTSCOTCH], [1], [PT-SCOTCH is linked (ordering=ptscotch)])
     canopy_ptscotch_why=""],
    [test "x$with_ptscotch" = xyes],
    [AC_MSG_ERROR([--with-ptscotch: $canopy_ptscotch_why])])
  AC_SUBST([PTSCOTCH_ENABLED], [$canopy_have_ptscotch])
])
