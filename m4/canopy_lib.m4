# CANOPY_FIND_LIB(VAR, NAME, HEADER, FUNCTION, LIBS, DEBIAN-PKG, [EXTRA-INCLUDE-DIRS], [OTHER-LIBS])
# Shared helper of the per-dependency macros: honours --with-NAME=PREFIX, looks for HEADER
# (also in EXTRA-INCLUDE-DIRS), links FUNCTION with LIBS, sets VAR_CPPFLAGS, VAR_LDFLAGS and
# VAR_LIBS, and stops configure naming the Debian package when something is missing.
AC_DEFUN([CANOPY_FIND_LIB], [
  AC_ARG_WITH([$2], [AS_HELP_STRING([--with-$2=PREFIX], [$2 installation prefix])])
  canopy_save_CPPFLAGS=$CPPFLAGS
  canopy_save_LDFLAGS=$LDFLAGS
  canopy_save_LIBS=$LIBS
  $1_CPPFLAGS=""
  $1_LDFLAGS=""
  AS_CASE(["$with_$2"],
    [no], [AC_MSG_ERROR([$2 is required by Canopy; --without-$2 is not supported])],
    [""|yes], [],
    [$1_CPPFLAGS="-I$with_$2/include"
     $1_LDFLAGS="-L$with_$2/lib -Wl,-rpath,$with_$2/lib"
     AS_IF([test -d "$with_$2/lib64"], [$1_LDFLAGS="$$1_LDFLAGS -L$with_$2/lib64 -Wl,-rpath,$with_$2/lib64"])])
  canopy_found_hdr=no
  for canopy_dir in "" $7; do
    AS_IF([test -n "$canopy_dir"], [canopy_try="$$1_CPPFLAGS -I$canopy_dir"], [canopy_try="$$1_CPPFLAGS"])
    CPPFLAGS="$canopy_save_CPPFLAGS $canopy_try"
    AS_UNSET([ac_cv_header_]AS_TR_SH([$3]))
    AC_CHECK_HEADER([$3], [canopy_found_hdr=yes; $1_CPPFLAGS="$canopy_try"], [], [AC_INCLUDES_DEFAULT])
    test "$canopy_found_hdr" = yes && break
  done
  AS_IF([test "$canopy_found_hdr" != yes],
    [AC_MSG_ERROR([$2 header $3 not found: install the Debian package $6, or pass --with-$2=PREFIX])])
  LDFLAGS="$canopy_save_LDFLAGS $$1_LDFLAGS"
  LIBS="$5 $8 $canopy_save_LIBS"
  AC_MSG_CHECKING([for $4 in $5])
  AC_LINK_IFELSE([AC_LANG_CALL([], [$4])], [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no])
     AC_MSG_ERROR([cannot link $4 with $5: install the Debian package $6, or pass --with-$2=PREFIX])])
  $1_LIBS="$5 $8"
  CPPFLAGS=$canopy_save_CPPFLAGS
  LDFLAGS=$canopy_save_LDFLAGS
  LIBS=$canopy_save_LIBS
  AC_SUBST([$1_CPPFLAGS])
  AC_SUBST([$1_LDFLAGS])
  AC_SUBST([$1_LIBS])
])
