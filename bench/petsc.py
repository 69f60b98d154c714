#!/usr/bin/env python3
"""Canopy vs MUMPS through PETSc: the same plain PETSc program (petsc/ex_ksp.c) with
-pc_factor_mat_solver_type mumps or canopy (-dll_append libcanopy_petsc.so), on a 2D Laplacian
(Cholesky, MAT_SPD set) and a convection-diffusion operator (LU). Runs alternate between the
solvers; medians of --repeat. time_setup is KSPSetUp: the analysis (ordering, symbolic) and the
first factorization; time_refactor a second numeric factorization of the same pattern; time_solve
one KSPSolve. With --percall M: the per-call cost instead, M refactorizations and solves of a
small matrix (ex_ksp -refactor M: new values, KSPSetUp, KSPSolve, per call), wall and CPU time (all
ranks and threads), and with --baseline DIR the same for the libcanopy.so of another build (DIR
holds it; LD_LIBRARY_PATH; and that build's libcanopy_petsc.so when DIR has one), alternated with
this one: before/after. Timings are reported, never asserted."""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import mpi  # noqa: E402  (the MPI flavour and its launcher)


def run(cmd, env):
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    for line in reversed(p.stdout.splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                break
    return {"status": "error %d: %s" % (p.returncode, (p.stderr.strip().splitlines() or ["?"])[-1][:100])}


def med(rs, key):
    v = [r[key] for r in rs if isinstance(r.get(key), (int, float)) and r[key] >= 0]
    return statistics.median(v) if v else None


def percall(a, launch, env, version):
    """Per-call cost of a refactorization and its solve, Canopy (and a baseline build) vs MUMPS."""
    problems = [("Laplacian, Cholesky", ["-spd", "-pc_type", "cholesky"]),
                ("convection-diffusion, LU", ["-convection", "40", "-pc_type", "lu"])]
    solvers = ["mumps", "canopy"] + (["baseline"] if a.baseline else [])
    g = int(a.grid.split(",")[0])
    print("**Per-call cost through PETSc** (petsc/ex_ksp.c -refactor %d: new values, KSPSetUp, KSPSolve; "
          "%d unknowns; %s; OPENBLAS_CORETYPE=%s for both; Canopy %d thread(s) per rank; medians of %d "
          "alternated runs; milliseconds per call, wall and CPU of all ranks)\n" % (
              a.percall, g * g, version, env.get("OPENBLAS_CORETYPE", "unset"), a.threads, a.repeat))
    print("| problem | ranks | MUMPS | Canopy | Canopy / MUMPS | MUMPS CPU | Canopy CPU |" +
          (" Canopy before | before CPU | before / after |" if a.baseline else ""))
    print("|---|---:|---:|---:|---:|---:|---:|" + ("---:|---:|---:|" if a.baseline else ""))
    base_plugin = os.path.join(a.baseline, "libcanopy_petsc.so") if a.baseline else ""
    for name, opts in problems:
        for p in [int(x) for x in a.ranks.split(",")]:
            res = {s: [] for s in solvers}
            for _ in range(a.repeat):
                for solver in solvers:
                    e = dict(env)
                    extra = []
                    if solver != "mumps":
                        plugin = base_plugin if solver == "baseline" and os.path.exists(base_plugin) else a.library
                        extra = ["-dll_append", plugin, "-mat_canopy_threads", str(a.threads)]
                        if solver == "baseline":
                            e["LD_LIBRARY_PATH"] = a.baseline + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
                    cmd = launch + ["-n", str(p), a.program, "-n", str(g), "-ksp_type", "preonly", "-refactor",
                                    str(a.percall), "-pc_factor_mat_solver_type",
                                    "mumps" if solver == "mumps" else "canopy"] + opts + extra
                    res[solver].append(run(cmd, e))
            m = {s: med(res[s], "time_per_refactor") for s in solvers}
            c = {s: med(res[s], "cpu_per_refactor") for s in solvers}
            fmt = lambda v: "-" if v is None else "%.3f" % (1e3 * v)  # noqa: E731
            ratio = lambda x, y: "%.2f" % (x / y) if x and y else "-"  # noqa: E731
            row = "| %s | %d | %s | %s | %s | %s | %s |" % (name, p, fmt(m["mumps"]), fmt(m["canopy"]),
                                                         ratio(m["canopy"], m["mumps"]), fmt(c["mumps"]), fmt(c["canopy"]))
            if a.baseline:
                row += " %s | %s | %s |" % (fmt(m["baseline"]), fmt(c["baseline"]), ratio(m["baseline"], m["canopy"]))
            print(row)
    return 0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--program", required=True)
    ap.add_argument("--library", required=True)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--ranks", default="1,2")
    ap.add_argument("--grid", default="300,500")
    ap.add_argument("--threads", type=int, default=1, help="Canopy's threads per rank (MUMPS: 1, its default)")
    ap.add_argument("--percall", type=int, default=0, metavar="M",
                    help="per-call cost of M refactorizations and solves (grid: the first of --grid, e.g. 14)")
    ap.add_argument("--baseline", default="", metavar="DIR",
                    help="with --percall: also Canopy with the libcanopy.so in DIR (another build), alternated")
    a = ap.parse_args(argv)
    flavor, version, _ = mpi.mpi_library()
    launch = mpi.launcher(flavor)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    if a.percall > 0:
        return percall(a, launch, env, version)
    problems = [("Laplacian, Cholesky", ["-spd", "-pc_type", "cholesky"]),
                ("convection-diffusion, LU", ["-convection", "40", "-pc_type", "lu"])]
    print("**Canopy vs MUMPS through PETSc** (petsc/ex_ksp.c, -ksp_type preonly; %s; Canopy %d thread(s) per "
          "rank; medians of %d; seconds)\n" % (version, a.threads, a.repeat))
    print("| problem | unknowns | ranks | solver | setup (analysis + factorization) | refactorization | solve | "
          "error | Canopy / MUMPS setup | refactorization |")
    print("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    for name, opts in problems:
        for g in [int(x) for x in a.grid.split(",")]:
            for p in [int(x) for x in a.ranks.split(",")]:
                res = {"mumps": [], "canopy": []}
                for _ in range(a.repeat):
                    for solver in ("mumps", "canopy"):
                        extra = ["-dll_append", a.library, "-mat_canopy_threads", str(a.threads)] if solver == "canopy" else []
                        cmd = launch + ["-n", str(p), a.program, "-n", str(g), "-ksp_type", "preonly", "-refactor", "1",
                                        "-pc_factor_mat_solver_type", solver] + opts + extra
                        res[solver].append(run(cmd, env))
                m = {s: (med(res[s], "time_setup"), med(res[s], "time_refactor"), med(res[s], "time_solve"),
                         med(res[s], "error")) for s in res}
                for s in ("mumps", "canopy"):
                    su, rf, so, er = m[s]
                    ratio = lambda i: "%.2f" % (m["canopy"][i] / m["mumps"][i]) if s == "canopy" and m["canopy"][i] and m["mumps"][i] else "-"  # noqa: E731
                    fmt = lambda v: "-" if v is None else "%.3f" % v  # noqa: E731
                    print("| %s | %d | %d | %s | %s | %s | %s | %s | %s | %s |" % (
                        name, g * g, p, s, fmt(su), fmt(rf), fmt(so), "-" if er is None else "%.1e" % er, ratio(0), ratio(1)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
