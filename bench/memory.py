#!/usr/bin/env python3
"""Memory per rank: is rank 0 heavier than the others?

For each matrix and rank count, Canopy (canopy-solve --json, centralized and --distributed input)
and MUMPS (mumps_driver, centralized assembled input) run under mpiexec; each rank measures the
process's peak resident set (getrusage) at the end, and the table gives rank 0's, the mean of the
others and their ratio (issue 14's target for Canopy with distributed input: <= 1.2), with
Canopy's own count (its allocator, rank 0 / mean of the others) beside. Medians of --repeat runs.
"""
import argparse
import os
import shlex
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402  (canopy-solve lookup, JSON parsing)
import mpi  # noqa: E402  (the MPI flavour and its launcher)

TARGET = 1.2


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--ranks", default="2,4")
    p.add_argument("--no-mumps", action="store_true", help="Canopy only")
    p.add_argument("--no-ptscotch", action="store_true", help="no ordering=scotch row (builds without PT-SCOTCH, where distributed input orders with SCOTCH anyway)")
    p.add_argument("matrices", nargs="*")
    return p.parse_args(argv)


def run(cmd, env):
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    r = compare.last_json(p.stdout)
    if p.returncode != 0 or r is None:
        return {"status": "error: exit %d: %s" % (p.returncode, (p.stderr.strip().splitlines() or ["?"])[-1][:120])}
    return r


def med(vals):
    vals = [v for v in vals if isinstance(v, (int, float))]
    return statistics.median(vals) if vals else None


def main(argv):
    args = parse_args(argv)
    flavor, version, _ = mpi.mpi_library()
    launch = mpi.launcher(flavor)
    g3 = os.path.join(os.environ.get("BENCH_MATRIX_DIR", compare.DEFAULT_MATRIX_DIR), "G3_circuit.mtx.gz")
    mats = args.matrices or [g3]
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    fwd = []
    if flavor == "openmpi":
        fwd = ["-x", "OPENBLAS_NUM_THREADS", "-x", "OMP_NUM_THREADS"]
    solve = compare.find_canopy_solve()
    print("**Peak resident memory per rank** (MB; getrusage at the end of each run; %s; medians of %d; "
          "ratio = rank 0 / mean of the other ranks, target <= %.1f with distributed input)\n"
          % (version, args.repeat, TARGET))
    print("| matrix | ranks | solver | input | rank 0 | others (mean) | ratio | Canopy's count: rank 0 / others | "
          "factorize (s) | status |")
    print("|---|---:|---|---|---:|---:|---:|---|---:|---|")
    for m in mats:
        spd = "G3" in os.path.basename(m)
        for R in [int(x) for x in args.ranks.split(",")]:
            # distributed input orders with PT-SCOTCH by default (ordering=auto) in PT-SCOTCH builds;
            # ordering=scotch gathers the pattern on rank 0 for the sequential ordering
            confs = [("canopy", "centralized", []), ("canopy", "distributed", ["--distributed"])]
            if not args.no_ptscotch:
                confs.append(("canopy", "distributed, scotch", ["--distributed", "--ordering", "scotch"]))
            if not args.no_mumps:
                confs.append(("mumps", "centralized", []))
            rows = {c[:2]: [] for c in confs}
            for _ in range(args.repeat):
                for solver, inp, extra in confs:  # alternating
                    if solver == "canopy":
                        cmd = [solve, "--json", "--threads", "1"] + (["--kind", "spd"] if spd else []) + extra + [m]
                    else:
                        cmd = [os.path.join(HERE, "mumps_driver"), "--label", os.path.basename(m)] + \
                              (["--spd"] if spd else []) + ["--ordering", "scotch", m]
                    rows[(solver, inp)].append(run(launch + fwd + ["-n", str(R)] + cmd, env))
            for solver, inp, _ in confs:
                rs = rows[(solver, inp)]
                ok = [r for r in rs if r.get("rss_peak_rank0")]
                r0 = med([r.get("rss_peak_rank0") for r in ok])
                rm = med([r.get("rss_peak_rank_mean") for r in ok])
                c0 = med([r.get("peak_memory_rank0") for r in ok])
                cm = med([r.get("peak_memory_rank_mean") for r in ok])
                tf = med([r.get("time_factorize") for r in ok])
                st = "ok (%d/%d)" % (len(ok), len(rs)) if ok else rs[0].get("status", "error")
                print("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                    os.path.basename(m), R, solver, inp,
                    "%.0f" % (r0 / 1e6) if r0 else "", "%.0f" % (rm / 1e6) if rm else "",
                    "%.2f" % (r0 / rm) if r0 and rm else "",
                    "%.0f / %.0f" % (c0 / 1e6, cm / 1e6) if c0 and cm else "-",
                    "%.2f" % tf if tf else "", st))
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
