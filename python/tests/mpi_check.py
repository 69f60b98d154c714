"""canopy on an mpi4py communicator of several ranks (run under mpiexec by tests/test_python.sh):
rank 0 gives the matrix and the right-hand sides, every rank takes part, rank 0 gets x; the
result against SciPy, and the selected inversion's diagonal over the ranks."""
import sys

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as sla
from mpi4py import MPI

import canopy

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
n1 = 14
d = sp.diags([-np.ones(n1 - 1), 2 * np.ones(n1), -np.ones(n1 - 1)], [-1, 0, 1])
I = sp.identity(n1)
A = (sp.kron(sp.kron(d, I), I) + sp.kron(sp.kron(I, d), I) + sp.kron(sp.kron(I, I), d)).tocsc()
n = A.shape[0]
b = np.random.default_rng(0).standard_normal((n, 3))
fails = 0
with canopy.Solver(A if rank == 0 else None, kind="spd" if rank == 0 else None, comm=comm, threads=1) as s:
    x = s.refine(b if rank == 0 else None)
    st = s.stats
    diag = s.selinv("diag")
    if rank == 0:
        ref = sla.spsolve(A, b)
        err = np.abs(x - ref).max() / np.abs(ref).max()
        if not err <= 1e-10 or st["ranks"] != comm.Get_size() or not st["backward_error"] <= 1e-12:
            print("FAIL: x off by %.2e, ranks %d, backward error %.2e" % (err, st["ranks"], st["backward_error"]))
            fails += 1
        e = np.zeros(n)
        e[77] = 1
        col = sla.spsolve(A, e)
        if not abs(diag[77] - col[77]) <= 1e-10 * abs(col[77]):
            print("FAIL: the diagonal of A^-1 over the ranks: %r vs %r" % (diag[77], col[77]))
            fails += 1
    elif x is not None or diag is not None:
        print("FAIL: rank %d got a result" % rank)
        fails += 1
# a solver made before its matrix, the matrix given afterwards (every rank calls set_matrix)
with canopy.Solver(comm=comm, threads=1) as s2:
    s2.set_matrix(A if rank == 0 else None, kind="spd" if rank == 0 else None)
    x2 = s2.solve(b[:, 0] if rank == 0 else None)
    if rank == 0 and not np.abs(x2 - sla.spsolve(A, b[:, 0])).max() <= 1e-10 * np.abs(x2).max():
        print("FAIL: the solver made before its matrix")
        fails += 1
# every rank its own block of columns (distributed=True) and its own rows of b and x
size = comm.Get_size()
c0, c1 = n * rank // size, n * (rank + 1) // size
part = sp.lil_matrix((n, n))
part[:, c0:c1] = A[:, c0:c1]
part = part.tocsc()
mine = np.arange(c0, c1)
with canopy.Solver(part, kind="spd", comm=comm, distributed=True, threads=1) as s3:
    x3 = s3.refine_distributed(mine, b[c0:c1, :])
    ref = sla.spsolve(A, b)
    if not np.abs(x3 - ref[c0:c1, :]).max() <= 1e-10 * np.abs(ref).max():
        print("FAIL: rank %d's rows of the distributed solve" % rank)
        fails += 1
    s3.factorize(2 * part)   # the same pattern, new values: the analysis reused
    x4 = s3.solve_distributed(mine, b[c0:c1, 0])
    if not np.abs(2 * x4 - ref[c0:c1, 0]).max() <= 1e-10 * np.abs(ref).max():
        print("FAIL: rank %d's rows after the refactorization" % rank)
        fails += 1
    d3 = s3.selinv("diag")
    if rank == 0 and not abs(2 * d3[77] - diag[77]) <= 1e-10 * abs(diag[77]):   # (2A)^-1
        print("FAIL: the diagonal of A^-1 of a distributed matrix")
        fails += 1
# one rank's bad part: every rank raises, none hangs in the collective call
bad = sp.csc_matrix((n, n + 1)) if rank == comm.Get_size() - 1 else part
try:
    canopy.Solver(bad, kind="spd", comm=comm, distributed=True)
    print("FAIL: rank %d: a bad part on one rank was accepted" % rank)
    fails += 1
except (TypeError, ValueError):
    pass
# a corrupt matrix on rank 0 (a row index past n, in a CSC built without SciPy's index check):
# refused on every rank, before any collective call
C = A.copy()
C.indices = C.indices.astype(np.int64)
C.indices[5] = 2 ** 40
for kind in (None, "general"):
    try:
        canopy.Solver(C if rank == 0 else None, kind=kind, comm=comm, threads=1)
        print("FAIL: rank %d: a corrupt matrix on rank 0 was accepted" % rank)
        fails += 1
    except ValueError:
        pass
with canopy.Solver(A if rank == 0 else None, kind="spd" if rank == 0 else None, comm=comm, threads=1) as s5:
    s5.factorize()
    try:
        s5.factorize(C if rank == 0 else None)
        print("FAIL: rank %d: factorize(A_new) took a corrupt matrix on rank 0" % rank)
        fails += 1
    except ValueError:
        pass
    s5.factorize(2 * A if rank == 0 else None)   # still usable: every rank left the refused call together
    x5 = s5.solve(b[:, 0] if rank == 0 else None)
    if rank == 0 and not np.abs(2 * x5 - sla.spsolve(A, b[:, 0])).max() <= 1e-10 * np.abs(x5).max():
        print("FAIL: factorize(A_new) after a refused matrix")
        fails += 1
fails = comm.allreduce(fails)
if rank == 0:
    print("canopy with mpi4py on %d ranks: %s" % (comm.Get_size(), "FAILED" if fails else "passed"))
sys.exit(1 if fails else 0)
