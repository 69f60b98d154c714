#!/bin/sh
# The Python package (python/): install this build of libcanopy into a scratch prefix, pip install
# ./python against it (pkg-config, as the README says), run its pytest suite, the finite element
# example, and with mpi4py (of the same MPI) the distributed check on 2 ranks. Skipped when Python
# lacks numpy, scipy, cffi, pytest, setuptools or wheel (.ci/run installs them).
py=${PYTHON:-python3}
command -v "$py" >/dev/null 2>&1 || { echo "no $py: skipped"; exit 77; }
"$py" -c "import numpy, scipy, cffi, pytest, setuptools, wheel" 2>/dev/null ||
    { echo "numpy, scipy, cffi, pytest, setuptools or wheel missing: skipped"; exit 77; }
set -e
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "${top_srcdir:-.}/tests/scratch_install.sh"
scratch_install "$tmp/root" "$tmp/install.log" || { cat "$tmp/install.log"; exit 1; }
pcdir=$(dirname "$(find "$tmp/root" -name canopy.pc | head -n 1)")
ls "$pcdir"/../libcanopy.so >/dev/null 2>&1 || { echo "no shared libcanopy (--disable-shared): skipped"; exit 77; }
"$py" -m venv --system-site-packages "$tmp/venv"
# from a copy: the build writes next to the sources, which make distcheck keeps read-only
cp -R "${top_srcdir:-.}/python" "$tmp/src"
chmod -R u+w "$tmp/src"
PKG_CONFIG_PATH="$pcdir" "$tmp/venv/bin/pip" install -q --no-deps --no-build-isolation --no-index \
    "$tmp/src" >"$tmp/pip.log" 2>&1 || { cat "$tmp/pip.log"; exit 1; }
vpy="$tmp/venv/bin/python"
"$vpy" -c "import canopy; print('canopy loads', canopy.LIBRARY)"
export OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
CANOPY_TEST_MATRICES=${CANOPY_TEST_MATRICES:-$(cd "${top_srcdir:-.}" && pwd)/../shared/matrices} \
    "$vpy" -m pytest -q -p no:cacheprovider "${top_srcdir:-.}/python/tests"
if "$vpy" -c "import skfem" 2>/dev/null; then
    "$vpy" "${top_srcdir:-.}/python/examples/fem_poisson.py"
else
    echo "scikit-fem not installed: the finite element example skipped"
fi
# mpi4py built against the same MPI as this libcanopy: the solver on a communicator of 2 ranks
if [ -n "$MPIEXEC" ] && "$vpy" -c "import mpi4py" 2>/dev/null; then
    mine=$($MPIEXEC --version 2>&1 | head -n 1)
    theirs=$("$vpy" -c "from mpi4py import MPI; print(MPI.Get_library_version().replace(chr(0), '').splitlines()[0])" 2>/dev/null || true)
    case "$mine/$theirs" in
    *"Open MPI"*/*"Open MPI"* | *OpenRTE*/*"Open MPI"* | *HYDRA*/*MPICH* | *hydra*/*MPICH*)
        ${CANOPY_TEST_TIMEOUT:+timeout $CANOPY_TEST_TIMEOUT} $MPIEXEC -n 2 "$vpy" "${top_srcdir:-.}/python/tests/mpi_check.py" ;;
    *) echo "mpi4py uses another MPI ($theirs): the 2-rank check skipped" ;;
    esac
else
    echo "mpi4py not installed: the 2-rank check skipped"
fi
