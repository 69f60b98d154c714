# CANOPY_CHECK_BLAS: CBLAS + LAPACKE. Default is OpenBLAS (libopenblas-dev, liblapacke-dev);
# --with-blas="LIBS" names other libraries. openblas_set_num_threads is used when present so that
# BLAS runs single-threaded inside Canopy's own worker threads; dladdr (libc or -ldl) to identify
# the BLAS at run time.
AC_DEFUN([CANOPY_CHECK_BLAS], [
  AC_ARG_WITH([blas], [AS_HELP_STRING([--with-blas=LIBS], [BLAS/LAPACK link flags (default: -lopenblas)])])
  AS_CASE(["$with_blas"], [""|yes], [canopy_blas="-lopenblas"], [canopy_blas="$with_blas"])
  canopy_save_LIBS=$LIBS
  AC_CHECK_HEADER([cblas.h], [], [AC_MSG_ERROR([cblas.h not found: install the Debian package libopenblas-dev])])
  AC_CHECK_HEADER([lapacke.h], [], [AC_MSG_ERROR([lapacke.h not found: install the Debian package liblapacke-dev])])
  LIBS="$canopy_blas -lm $LIBS"
  AC_MSG_CHECKING([for cblas_dgemm in $canopy_blas])
  AC_LINK_IFELSE([AC_LANG_CALL([], [cblas_dgemm])], [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no]); AC_MSG_ERROR([cannot link cblas_dgemm: install the Debian package libopenblas-dev, or pass --with-blas=LIBS])])
  AC_MSG_CHECKING([for LAPACKE_dpotrf])
  AC_LINK_IFELSE([AC_LANG_CALL([], [LAPACKE_dpotrf])], [AC_MSG_RESULT([yes])],
    [LIBS="-llapacke $LIBS"
     AC_LINK_IFELSE([AC_LANG_CALL([], [LAPACKE_dpotrf])], [AC_MSG_RESULT([with -llapacke]); canopy_blas="-llapacke $canopy_blas"],
       [AC_MSG_RESULT([no]); AC_MSG_ERROR([cannot link LAPACKE_dpotrf: install the Debian package liblapacke-dev])])])
  AC_CHECK_FUNCS([openblas_set_num_threads openblas_get_num_threads])
  # dladdr + dlsym find the BLAS's own introspection calls (openblas_get_corename, ...) in the
  # library that holds cblas_dgemm, for the cost model's cache key and the slow-BLAS warning
  AC_SEARCH_LIBS([dladdr], [dl], [AC_DEFINE([HAVE_DLADDR], [1], [Define to 1 if dladdr is available.])
    AS_CASE(["$ac_cv_search_dladdr"], ["none required"], [], [canopy_blas="$canopy_blas $ac_cv_search_dladdr"])])
  LIBS=$canopy_save_LIBS
  CANOPY_BLAS_LIBS="$canopy_blas"
  AC_SUBST([CANOPY_BLAS_LIBS])
])
