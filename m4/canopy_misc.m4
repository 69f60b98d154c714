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
