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
