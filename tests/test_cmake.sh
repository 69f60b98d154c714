#!/bin/sh
# find_package(Canopy): install into a scratch DESTDIR, configure the CMake project tests/cmake
# against the INSTALLED tree (CMAKE_PREFIX_PATH only; the DESTDIR root is not the configured
# prefix, so the package must find itself from its own place), build it with the plain compilers
# (MPI through FindMPI), and run its programs on 1 and 2 ranks: the C program (Canopy::canopy),
# the same against libcanopy.a (Canopy::canopy_static), and with the Fortran module the Fortran
# program (Canopy::canopy_fortran). Then the version file: 0.1 is accepted, 1.0 and 0.2 are
# refused. Skipped (77) without cmake.
command -v cmake >/dev/null 2>&1 || { echo "cmake is not installed: skipped"; exit 77; }
set -e
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "${top_srcdir:-.}/tests/scratch_install.sh"
scratch_install "$tmp" "$tmp/install.log" || { cat "$tmp/install.log"; exit 1; }
prefix=$(sed -n 's/^prefix=//p' "${top_builddir:-.}/canopy.pc")
root="$tmp$prefix"
[ -f "$(find "$root" -name CanopyConfig.cmake | head -n 1)" ] || { echo "CanopyConfig.cmake was not installed"; exit 1; }
[ -f "$(find "$root" -name CanopyConfigVersion.cmake | head -n 1)" ] || { echo "CanopyConfigVersion.cmake was not installed"; exit 1; }
src=$(cd "${top_srcdir:-.}/tests/cmake" && pwd)
fortran=OFF
[ "$HAVE_FORTRAN" = yes ] && fortran=ON
tmo=""
command -v timeout >/dev/null 2>&1 && tmo="timeout ${CANOPY_TEST_TIMEOUT:-300}"

# configure: prints the log and fails when cmake does
configure() {
    dir=$1
    shift
    # the plain compilers, not the build's MPI wrappers (CC is exported by make check): MPI
    # comes through FindMPI
    if ! env -u CC -u FC -u CXX cmake -S "$src" -B "$tmp/$dir" -DCMAKE_PREFIX_PATH="$root" "$@" >"$tmp/$dir.log" 2>&1; then
        cat "$tmp/$dir.log"
        return 1
    fi
}

configure build -DWITH_FORTRAN=$fortran -DCANOPY_VERSION_REQUEST=0.1 -DEXPECT_PREFIX="$root"
grep 'Canopy .* from ' "$tmp/build.log"
cmake --build "$tmp/build" >"$tmp/build-make.log" 2>&1 || { cat "$tmp/build-make.log"; exit 1; }
progs="consumer"
[ -x "$tmp/build/consumer_static" ] && progs="$progs consumer_static"
if [ -f "$root/lib/libcanopy.a" ] || [ -n "$(find "$root" -name libcanopy.a)" ]; then
    [ -x "$tmp/build/consumer_static" ] || { echo "libcanopy.a is installed but Canopy::canopy_static was not built"; exit 1; }
fi
if [ "$fortran" = ON ]; then
    [ -x "$tmp/build/consumer_fortran" ] || { echo "the Fortran program was not built"; exit 1; }
    progs="$progs consumer_fortran"
fi
for p in $progs; do
    for n in 1 2; do
        echo "== $p on $n rank(s)"
        $tmo ${MPIEXEC:-mpiexec} -n $n "$tmp/build/$p"
    done
done

# the version file: another minor version (before 1.0) or major version is refused
for v in 1.0 0.2; do
    if configure "v$v" -DCANOPY_VERSION_REQUEST=$v >/dev/null; then
        echo "find_package(Canopy $v) accepted version $(sed -n 's/^set(PACKAGE_VERSION "\(.*\)")/\1/p' \
            "$(find "$root" -name CanopyConfigVersion.cmake | head -n 1)")"
        exit 1
    fi
    grep -q 'considered but not accepted' "$tmp/v$v.log" || { cat "$tmp/v$v.log"; exit 1; }
done
echo "find_package(Canopy) works from the installed tree: $progs"
