#!/bin/sh
# The Fortran module: install into a scratch DESTDIR, build fortran/example.f90 against the
# INSTALLED module and library with the README's line (MPIFC app.f90 $(pkg-config --cflags --libs
# canopy-fortran)), run it on 1 and 2 ranks: it checks its own solution; then
# tests/test_fortran_api.f90 (complex LU, 2-D right-hand sides, errors and messages) likewise, and
# tests/test_fortran_init.f90 (a plain `call MPI_Init`: MPI_THREAD_SINGLE) on 1, 2 and 3 ranks, and
# tests/test_fortran_trans.f90 (A^T x = b and A^H x = b, trans=) on 1 and 2 ranks. Skipped (77) in a build
# without Fortran (configure --without-fortran, or no MPI Fortran compiler with mpi_f08).
[ "$HAVE_FORTRAN" = yes ] || { echo "built without the Fortran module: skipped"; exit 77; }
set -e
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "${top_srcdir:-.}/tests/scratch_install.sh"
scratch_install "$tmp" "$tmp/install.log" || { cat "$tmp/install.log"; exit 1; }
prefix=$(sed -n 's/^prefix=//p' "${top_builddir:-.}/canopy.pc")
root="$tmp$prefix"
pcdir=$(dirname "$(find "$root" -name canopy-fortran.pc | head -n 1)")
[ -n "$pcdir" ] || { echo "canopy-fortran.pc was not installed"; exit 1; }
flags=$(PKG_CONFIG_PATH="$pcdir" pkg-config --define-variable=prefix="$root" --cflags --libs canopy-fortran)
echo "pkg-config canopy-fortran: $flags"
libdir=$(PKG_CONFIG_PATH="$pcdir" pkg-config --define-variable=prefix="$root" --variable=libdir canopy-fortran)
OMPI_ALLOW_RUN_AS_ROOT=1; OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM OMPI_MCA_rmaps_base_oversubscribe
# a hang fails (status 124) instead of blocking
tmo=""
command -v timeout >/dev/null 2>&1 && tmo="timeout ${CANOPY_TEST_TIMEOUT:-300}"
# shellcheck disable=SC2086
$MPIFC -o "$tmp/example" "${top_srcdir:-.}/fortran/example.f90" $flags -Wl,-rpath,"$libdir"
$tmo "$tmp/example"
$tmo ${MPIEXEC:-mpiexec} -n 2 "$tmp/example"
# shellcheck disable=SC2086
$MPIFC -o "$tmp/api" "${top_srcdir:-.}/tests/test_fortran_api.f90" $flags -Wl,-rpath,"$libdir"
$tmo "$tmp/api"
$tmo ${MPIEXEC:-mpiexec} -n 2 "$tmp/api"
# shellcheck disable=SC2086
$MPIFC -o "$tmp/init" "${top_srcdir:-.}/tests/test_fortran_init.f90" $flags -Wl,-rpath,"$libdir"
for n in 1 2 3; do
    $tmo ${MPIEXEC:-mpiexec} -n $n "$tmp/init"
done
# shellcheck disable=SC2086
$MPIFC -o "$tmp/trans" "${top_srcdir:-.}/tests/test_fortran_trans.f90" $flags -Wl,-rpath,"$libdir"
$tmo "$tmp/trans"
$tmo ${MPIEXEC:-mpiexec} -n 2 "$tmp/trans"
echo "the installed Fortran module, library and pkg-config file work"
