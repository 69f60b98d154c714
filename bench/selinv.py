#!/usr/bin/env python3
"""Selected inversion against the factorization and against MUMPS's ICNTL(30), and over ranks.

For each matrix and thread count, canopy-solve --selinv diag --json gives the first factorization
time and the selected inversion's (the inversion over the factors and the diagonal's extraction);
mumps_driver --inverse-diag (one rank, one thread) gives MUMPS's factorization and its ICNTL(30)
diagonal of A^-1. Runs alternate between the solvers; medians of --repeat. Targets (issue 11):
selinv <= 1.5 x the factorization, and faster than MUMPS's diagonal.

--ranks 2,4 adds rows for those rank counts (x --ranks-threads threads each, under mpiexec).
--volume prints instead the per-rank volume of the inversion's panel broadcasts for the tree
shapes flat, binary and shifted: measured at --volume-ranks (default 2,3,4; one thread each) and
predicted by canopy-simulate at --simulate-ranks (default 16,64,256 virtual nodes x 4 threads),
the figures of PSelInv's Table 1 (min, median, max, standard deviation of the bytes each rank sends).
"""
import argparse
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402  (canopy-solve lookup, JSON parsing)
import mpi  # noqa: E402  (the MPI flavour and its launcher)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--threads", default="1,2")
    p.add_argument("--no-mumps", action="store_true")
    p.add_argument("--ranks", default="", help="also these rank counts (comma-separated)")
    p.add_argument("--ranks-threads", type=int, default=1)
    p.add_argument("--volume", action="store_true", help="the per-rank broadcast volume table instead")
    p.add_argument("--volume-ranks", default="2,3,4")
    p.add_argument("--simulate-ranks", default="16,64,256")
    p.add_argument("matrices", nargs="*")
    return p.parse_args(argv)


def input_args(m):
    if m.startswith("laplacian:"):
        return ["--laplacian", m.split(":", 1)[1]], m.split(":", 1)[1]
    return [m], os.path.basename(m)


def run(cmd, env):
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    r = compare.last_json(p.stdout)
    if p.returncode != 0 or r is None:
        return {"status": "error: exit %d: %s" % (p.returncode, (p.stderr.strip().splitlines() or ["?"])[-1][:120])}
    return r


def med(vals):
    vals = [v for v in vals if isinstance(v, (int, float))]
    return statistics.median(vals) if vals else None


def fmt(v, f="%.3f"):
    return "-" if v is None else f % v


TREES = ("flat", "binary", "shifted")


def volume(args, mats, solve, launch, version, env):
    """Table 1 of the PSelInv report for Canopy's panel broadcasts: measured and predicted."""
    sim = os.path.join(os.path.dirname(solve), "canopy-simulate")
    print("**Selected inversion: bytes each rank sends in the panel broadcasts, per tree shape** "
          "(measured: canopy-solve --selinv diag --json under mpiexec, one thread per rank, %s; predicted: "
          "canopy-simulate, the same plan and trees for virtual nodes x 4 threads; MB)\n" % version)
    print("| matrix | ranks | how | tree | min | median | max | std-dev | total | messages |")
    print("|---|---:|---|---|---:|---:|---:|---:|---:|---:|")
    for m in mats:
        inp, name = input_args(m)
        kind = ["--kind", "spd"] if name.startswith("G3_circuit") else []
        for p in [int(x) for x in args.volume_ranks.split(",") if x]:
            for t in TREES:
                r = run(launch + ["-n", str(p), solve, "--json", "--threads", "1", "--bind", "none", "--refine", "0",
                                  "--tree", t, "--selinv", "diag"] + kind + inp, env)
                row = [r.get("selinv_bytes_rank_" + k) for k in ("min", "median", "max", "stddev")]
                tot, msgs = r.get("selinv_comm_bytes"), r.get("selinv_comm_msgs")
                print("| %s | %d | measured | %s | %s | %s | %s |" % (
                    name, p, t, " | ".join(fmt(v * 1e-6 if v is not None else None, "%.2f") for v in row),
                    fmt(tot * 1e-6 if tot is not None else None, "%.1f"), msgs if msgs is not None else "-"))
        for p in [int(x) for x in args.simulate_ranks.split(",") if x]:
            for t in TREES:
                r = run([sim, "--json", "--ranks", str(p), "--threads", "4", "--tree", t] + kind + inp, env)
                b, q = r.get("selinv_bytes") or {}, r.get("selinv_msgs") or {}
                row = [b.get(k) for k in ("min", "median", "max", "stddev", "total")]
                print("| %s | %d | predicted | %s | %s | %s |" % (
                    name, p, t, " | ".join(fmt(v * 1e-6 if v is not None else None, "%.2f") for v in row),
                    fmt(q.get("total"), "%.0f")))
    return 0


def main(argv):
    args = parse_args(argv)
    flavor, version, _ = mpi.mpi_library()
    launch = mpi.launcher(flavor)
    g3 = os.path.join(os.environ.get("BENCH_MATRIX_DIR", compare.DEFAULT_MATRIX_DIR), "G3_circuit.mtx.gz")
    mats = args.matrices or ["laplacian:50x50x50", "laplacian:60x60x60", g3]
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    solve = compare.find_canopy_solve()
    mumps = os.path.join(HERE, "mumps_driver")
    threads = [int(t) for t in args.threads.split(",")]
    if args.volume:
        return volume(args, args.matrices or ["laplacian:40x40x40", g3], solve, launch, version, env)
    layouts = [(1, t) for t in threads] + [(int(p), args.ranks_threads) for p in args.ranks.split(",") if p]
    print("**Selected inversion: the diagonal of A^-1** (canopy-solve --selinv diag --json; "
          "mumps_driver --inverse-diag, ICNTL(30), one rank, one thread; %s; medians of %d; "
          "ratio = selinv / first factorization)\n" % (version, args.repeat))
    print("| matrix | solver | ranks x threads | factorize s | selinv s | ratio | GFlop/s | vs MUMPS ICNTL(30) | status |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    for m in mats:
        inp, name = input_args(m)
        kind = ["--kind", "spd"] if name.startswith("G3_circuit") else []
        res = {}
        for rep in range(args.repeat):
            for (p, t) in layouts:
                pre = launch + ["-n", str(p)] if p > 1 else []
                r = run(pre + [solve, "--json", "--threads", str(t), "--bind", "none", "--refine", "0", "--selinv",
                               "diag"] + kind + inp, env)
                res.setdefault(("canopy", p, t), []).append(r)
            if not args.no_mumps:
                minp = ["--laplacian", inp[1]] if inp[0] == "--laplacian" else inp
                r = run(launch + ["-n", "1", mumps, "--inverse-diag"] + (["--spd"] if kind else []) + minp, env)
                res.setdefault(("mumps", 1, 1), []).append(r)
        mumps_t = med([r.get("time_selinv") for r in res.get(("mumps", 1, 1), [])])
        for (solver, p, t), rs in res.items():
            tf = med([r.get("time_factorize") for r in rs])
            ts = med([r.get("time_selinv") for r in rs])
            gf = med([r.get("gflops_selinv") for r in rs]) if solver == "canopy" else None
            good = lambda r: r.get("status") in ("ok", "success", 0)  # noqa: E731 (mumps_driver; canopy-solve)
            ok = sum(1 for r in rs if good(r))
            st = "ok (%d/%d)" % (ok, len(rs)) if ok == len(rs) else [r.get("status") for r in rs if not good(r)][0]
            vs = "%.2fx" % (mumps_t / ts) if solver == "canopy" and mumps_t and ts else "-"
            print("| %s | %s | %d x %d | %s | %s | %s | %s | %s | %s |" % (
                name, solver, p, t, fmt(tf), fmt(ts), fmt(ts / tf if ts and tf else None, "%.2f"), fmt(gf, "%.1f"), vs, st))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
