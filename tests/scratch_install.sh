# Sourced by the tests that install this build into a scratch DESTDIR (test_install, test_fortran,
# test_python, test_petsc). `make check -jN` runs them side by side, and libtool relinks
# libcanopy_petsc.so in the build tree while installing it (moving it aside meanwhile), so two
# installs at once can break each other and leave the tree without the library: they take turns.
# usage: scratch_install DESTDIR LOGFILE
scratch_install() {
    _lock="${top_builddir:-.}/tests/.install.lock"
    if command -v flock >/dev/null 2>&1; then
        flock "$_lock" ${MAKE:-make} -s -C "${top_builddir:-.}" install DESTDIR="$1" >"$2" 2>&1
    else
        # no flock(1): a directory is the lock (mkdir is atomic)
        while ! mkdir "$_lock.d" 2>/dev/null; do sleep 1; done
        trap 'rmdir "$_lock.d" 2>/dev/null' INT TERM
        _rc=0
        ${MAKE:-make} -s -C "${top_builddir:-.}" install DESTDIR="$1" >"$2" 2>&1 || _rc=$?
        rmdir "$_lock.d"
        trap - INT TERM
        return $_rc
    fi
}
