"""canopy on an mpi4py communicator of several ranks (run under mpiexec by tests/test_python.sh):
rank 0 gives the matrix and the right-hand sides, every rank takes part, rank 0 gets x; the
result against SciPy, and the selected inversion's diagonal over the ranks."""
import sys
import warnings

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as sla
from mpi4py import MPI
from scipy.sparse.linalg import MatrixRankWarning

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
        if st["mapping"] not in ("flops", "memory"):
            print("FAIL: stats['mapping'] = %r on %d ranks" % (st["mapping"], comm.Get_size()))
            fails += 1
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
# the root separator on a 2D grid of every rank (option root_grid), LU of an unsymmetric matrix
# whose diagonal blocks interchange rows: unrefined solves with A and A^T against SciPy
du = sp.diags([-1.3 * np.ones(n1 - 1), 0.1 * np.ones(n1), -0.7 * np.ones(n1 - 1)], [-1, 0, 1])
Au = (sp.kron(sp.kron(du, I), I) + sp.kron(sp.kron(I, du), I) + sp.kron(sp.kron(I, I), du)).tocsc()
with canopy.Solver(Au if rank == 0 else None, kind="general" if rank == 0 else None, comm=comm, threads=1,
                   root_grid="on", scaling="none") as sg:
    for trans, op in (("N", Au), ("T", Au.T.tocsc())):
        xg = sg.solve(b[:, 0] if rank == 0 else None, trans=trans)
        if rank == 0 and not np.abs(xg - sla.spsolve(op, b[:, 0])).max() <= 1e-10 * np.abs(xg).max():
            print("FAIL: x with the root on a grid, trans=%s" % trans)
            fails += 1
    stg = sg.stats
    if rank == 0:
        rg = stg["root_grid"]
        if rg is None or rg[0] * rg[1] > comm.Get_size() or rg[0] * rg[1] < 2:
            print("FAIL: stats['root_grid'] = %r on %d ranks" % (rg, comm.Get_size()))
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
# a singular matrix (row 57 a copy of row 23) on several ranks: the column whose b is outside the
# range is NaN with a MatrixRankWarning, the others solved; strict=True raises on every rank
d10, I10 = sp.diags([-np.ones(9), 2 * np.ones(10), -np.ones(9)], [-1, 0, 1]), sp.identity(10)
U = (sp.kron(d10, I10) + sp.kron(I10, d10) + sp.diags(0.3 * np.ones(99), 1)).tolil()
U[57, :] = U[23, :]
U = U.tocsc()
x0 = np.random.default_rng(5).standard_normal(100)
B = np.column_stack([U @ x0, np.arange(100.0), 2 * (U @ x0)])   # row 57 of b is not row 23's: no solution
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    X = canopy.spsolve(U if rank == 0 else None, B if rank == 0 else None, comm=comm, threads=1)
    X1 = canopy.factorized(U if rank == 0 else None, comm=comm, threads=1)(B[:, 1] if rank == 0 else None)
if not any(issubclass(q.category, MatrixRankWarning) for q in w):
    print("FAIL: rank %d: no MatrixRankWarning for a singular matrix" % rank)
    fails += 1
if rank == 0:
    r = [np.abs(U @ X[:, j] - B[:, j]).max() / np.abs(B[:, j]).max() for j in (0, 2)]
    if not (np.isnan(X[:, 1]).all() and np.isnan(X1).all() and max(r) <= 1e-6):
        print("FAIL: the singular matrix on several ranks: NaN %s, residuals %s" % (np.isnan(X).any(axis=0), r))
        fails += 1
try:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        canopy.spsolve(U if rank == 0 else None, B[:, 1] if rank == 0 else None, comm=comm, threads=1, strict=True)
    print("FAIL: rank %d: strict=True returned" % rank)
    fails += 1
except canopy.CanopyError as e:
    if e.status != -6:
        print("FAIL: rank %d: strict=True raised %d" % (rank, e.status))
        fails += 1
# transposed solves on several ranks, centralized and distributed: A^T x = b and A^H x = b of an
# unsymmetric complex matrix, with the factors of A
G = (A + sp.diags(0.5 * np.ones(n - 1), 1) + 0.3j * sp.diags(np.ones(n - 7), -7)).tocsc()
Bc = b[:, :2] + 1j * b[:, 1:]
parts = sp.lil_matrix((n, n), dtype=complex)
parts[:, c0:c1] = G[:, c0:c1]
s6 = canopy.Solver(G if rank == 0 else None, kind="general" if rank == 0 else None, comm=comm, threads=1)
f6 = canopy.factorized(G if rank == 0 else None, comm=comm, threads=1)
s7 = canopy.Solver(parts.tocsc(), kind="general", comm=comm, distributed=True, threads=1)
for t, M in (("T", G.T.tocsc()), ("H", G.conj().T.tocsc())):
    ref = sla.spsolve(M, Bc)
    y = s6.solve(Bc if rank == 0 else None, trans=t)
    z = s6.refine(Bc[:, 0] if rank == 0 else None, trans=t)
    w = f6(Bc if rank == 0 else None, t)
    if rank == 0 and not max(np.abs(y - ref).max(), np.abs(z - ref[:, 0]).max(), np.abs(w - ref).max()) <= \
            1e-10 * np.abs(ref).max():
        print("FAIL: trans=%s on several ranks, centralized" % t)
        fails += 1
    y = s7.solve_distributed(mine, Bc[c0:c1], trans=t)
    z = s7.refine_distributed(mine, Bc[c0:c1, 0], trans=t)
    if not max(np.abs(y - ref[c0:c1]).max(), np.abs(z - ref[c0:c1, 0]).max()) <= 1e-10 * np.abs(ref).max():
        print("FAIL: rank %d: trans=%s on several ranks, distributed" % (rank, t))
        fails += 1
for solver in (s6, f6, s7):
    solver.close()
fails = comm.allreduce(fails)
if rank == 0:
    print("canopy with mpi4py on %d ranks: %s" % (comm.Get_size(), "FAILED" if fails else "passed"))
sys.exit(1 if fails else 0)
