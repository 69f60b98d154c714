"""A finite element problem assembled with scikit-fem (pip install scikit-fem) and solved by
Canopy: -Laplace(u) = 1 on the unit square with u = 0 on the boundary, P1 elements on a refined
triangulation; the same system solved by SciPy for comparison."""
import numpy as np
import scipy.sparse.linalg as sla
import skfem
from skfem.helpers import dot, grad

import canopy


@skfem.BilinearForm
def laplace(u, v, _):
    return dot(grad(u), grad(v))


@skfem.LinearForm
def load(v, _):
    return 1.0 * v


mesh = skfem.MeshTri().refined(7)                       # 16,641 nodes
basis = skfem.Basis(mesh, skfem.ElementTriP1())
K = laplace.assemble(basis)
f = load.assemble(basis)
A, b, x, interior = skfem.condense(K, f, D=basis.get_dofs())   # Dirichlet rows and columns removed
u = canopy.spsolve(A, b, kind="spd", threads=2)
ref = sla.spsolve(A, b)
err = np.abs(u - ref).max() / np.abs(ref).max()
print("scikit-fem Poisson, %d unknowns: max u = %.6f (the exact maximum is about 0.07367), "
      "canopy vs scipy %.1e" % (A.shape[0], u.max(), err))
assert err < 1e-10 and abs(u.max() - 0.07367) < 1e-3
