import gzip
import os

import pytest
import scipy.io

HERE = os.path.dirname(os.path.abspath(__file__))
MATRICES = os.environ.get("CANOPY_TEST_MATRICES") or os.path.join(HERE, "..", "..", "..", "shared", "matrices")


def shared(name):
    """A matrix of the shared collection (scipy.sparse, CSC), or skip when the folder is absent."""
    path = os.path.join(MATRICES, name)
    if not os.path.exists(path):
        pytest.skip("shared matrix %s not found" % name)
    with (gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")) as f:
        return scipy.io.mmread(f).tocsc()
