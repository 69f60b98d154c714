# Sourced by the MPI test scripts (tests/test_mpi.sh, tests/test_layouts.sh): `run WHAT CMD...`
# runs CMD under `timeout` ($limit seconds, set by the caller) and ends the script with the
# reason when it fails or hangs.
tmo=""
if command -v timeout >/dev/null 2>&1; then
    # SIGINT: both launchers abort the whole job on it (under timeout's default SIGTERM, Open MPI
    # 4.1's mpiexec was seen to leave processes running)
    tmo="timeout -s INT -k 20 $limit"
else
    echo "note: no timeout(1): a hang would block"
fi

run() {
    what=$1
    shift
    echo "== $what"
    start=$(date +%s)
    # shellcheck disable=SC2086
    $tmo "$@"
    rc=$?
    echo "   ($(($(date +%s) - start)) s)"
    case $rc in
        0) ;;
        124 | 137) echo "FAIL: $what: no end after $limit s (hang?)"; exit 1 ;;
        *) echo "FAIL: $what: exit status $rc"; exit 1 ;;
    esac
}
