/*
 * Model problems for tests and benchmarks: Laplacians on regular 2D/3D grids (5, 7 and 27-point
 * stencils, Dirichlet boundaries) and the Helmholtz-type problem of papers/mpi-ellpack-itpack.txt
 * section 3.1 with the "encapsulated 5-point star" discretization. Both build the internal form
 * directly (base 0, sorted, full storage) in one pass over the grid: no sorting is needed because
 * neighbours are visited in increasing index order.
 */
#include "base/common.h"

#include <math.h>
#include <string.h>

/* Allocate A for n unknowns and at most nnz entries; sizes were range-checked by the caller. */
static canopy_status gen_alloc(canopy_csc *A, int64_t n, int64_t nnz)
{
    canopy_err err;
    canopy_err_clear(&err);
    memset(A, 0, sizeof *A);
    A->colptr = canopy_alloc((size_t)n + 1, sizeof(cint), "column pointers", &err);
    A->rowind = canopy_alloc((size_t)nnz + 1, sizeof(cint), "row indices", &err);
    A->values = canopy_alloc((size_t)nnz + 1, sizeof(double), "values", &err);
    if (!A->colptr || !A->rowind || !A->values) {
        canopy_free(A->colptr);
        canopy_free(A->rowind);
        canopy_free(A->values);
        memset(A, 0, sizeof *A);
        return err.status != CANOPY_SUCCESS ? err.status : CANOPY_ERR_NOMEM;
    }
    A->n = (cint)n;
    A->base = 0;
    A->arith = CANOPY_REAL;
    A->kind = CANOPY_KIND_SPD;
    A->triangle = CANOPY_TRIANGLE_BOTH;
    return CANOPY_SUCCESS;
}

CANOPY_EXPORT canopy_status canopy_generate_laplacian(canopy_int nx, canopy_int ny, canopy_int nz, int stencil, canopy_csc *A)
{
    if (A == NULL) return CANOPY_ERR_ARGUMENT;
    memset(A, 0, sizeof *A);
    if (nx < 1 || ny < 1 || nz < 1) return CANOPY_ERR_ARGUMENT;
    if (stencil != 5 && stencil != 7 && stencil != 27) return CANOPY_ERR_ARGUMENT;
    if (stencil == 5 && nz != 1) return CANOPY_ERR_ARGUMENT;
    /* (3m - 2) couples i with i' where |i - i'| <= 1 along one axis of m points */
    double n = (double)nx * ny * nz;
    double nnz = stencil == 27 ? (3.0 * nx - 2) * (3.0 * ny - 2) * (3.0 * nz - 2)
                               : n + 2.0 * ((nx - 1.0) * ny * nz + nx * (ny - 1.0) * nz + (double)nx * ny * (nz - 1.0));
    if (n > (double)(CINT_MAX - 1) || nnz > (double)(CINT_MAX - 1)) return CANOPY_ERR_TOO_LARGE;
    canopy_status st = gen_alloc(A, (int64_t)n, (int64_t)nnz);
    if (st != CANOPY_SUCCESS) return st;

    const double diag = stencil == 5 ? 4.0 : stencil == 7 ? 6.0 : 26.0;
    const int span = stencil == 5 ? 0 : 1; /* z offsets visited */
    cint *cp = A->colptr, *ri = A->rowind;
    double *v = A->values;
    cint p = 0, col = 0;
    for (cint k = 0; k < nz; k++) {
        for (cint j = 0; j < ny; j++) {
            for (cint i = 0; i < nx; i++, col++) {
                cp[col] = p;
                /* offsets in increasing (dz, dy, dx) order give increasing row indices */
                for (int dz = -span; dz <= span; dz++) {
                    if (k + dz < 0 || k + dz >= nz) continue;
                    for (int dy = -1; dy <= 1; dy++) {
                        if (j + dy < 0 || j + dy >= ny) continue;
                        for (int dx = -1; dx <= 1; dx++) {
                            if (i + dx < 0 || i + dx >= nx) continue;
                            int far = (dx != 0) + (dy != 0) + (dz != 0);
                            if (stencil != 27 && far > 1) continue;
                            ri[p] = col + dx + (cint)dy * nx + (cint)dz * nx * ny;
                            v[p] = far == 0 ? diag : -1.0;
                            p++;
                        }
                    }
                }
            }
        }
    }
    cp[col] = p;
    return CANOPY_SUCCESS;
}

/*
 * Inside the domain of papers/mpi-ellpack-itpack.txt Figure 1: the polygon (1,0), (0,0), (0,0.5),
 * (0.5,1), (1,1) closed on the right by the half disc of centre (1, 0.5) and radius 0.5. Points
 * on the boundary (to rounding) are outside: they carry Dirichlet values.
 */
static bool helmholtz_inside(double x, double y)
{
    const double eps = 1e-12;
    if (y <= eps || y >= 1 - eps || x <= eps) return false;
    if (y - x >= 0.5 - eps) return false;        /* above the cut from (0,0.5) to (0.5,1) */
    if (x <= 1) return true;
    double dx = x - 1, dy = y - 0.5;
    return dx * dx + dy * dy < 0.25 - eps;
}

CANOPY_EXPORT canopy_status canopy_generate_helmholtz(canopy_int nx, canopy_int ny, canopy_csc *A)
{
    if (A == NULL) return CANOPY_ERR_ARGUMENT;
    memset(A, 0, sizeof *A);
    if (nx < 1 || ny < 1) return CANOPY_ERR_ARGUMENT;
    double n = (double)nx * ny;
    if (5 * n > (double)(CINT_MAX - 1)) return CANOPY_ERR_TOO_LARGE;

    /*
     * The nx x ny grid spans the bounding box [0,1.5] x [0,1] edges included, as in the paper:
     * this reproduces its counts of active equations (18631 for 150 x 150, 33290 for 200 x 200).
     * Points on the box edges are never inside the domain, so a 1-point-wide grid is all identity.
     */
    const double hx = nx > 1 ? 1.5 / ((double)nx - 1) : 1.5, hy = ny > 1 ? 1.0 / ((double)ny - 1) : 1.0;
    bool *in = canopy_alloc((size_t)n, sizeof(bool), "domain mask", NULL);
    if (in == NULL) return CANOPY_ERR_NOMEM;
    for (cint j = 0; j < ny; j++)
        for (cint i = 0; i < nx; i++) in[(size_t)j * nx + i] = helmholtz_inside(i * hx, j * hy);

    int64_t nnz = 0;
    for (cint j = 0; j < ny; j++) {
        for (cint i = 0; i < nx; i++) {
            size_t c = (size_t)j * nx + i;
            nnz++;
            if (!in[c]) continue;
            nnz += (j > 0 && in[c - nx]) + (i > 0 && in[c - 1]) + (i + 1 < nx && in[c + 1]) + (j + 1 < ny && in[c + nx]);
        }
    }
    canopy_status st = gen_alloc(A, (int64_t)n, nnz);
    if (st != CANOPY_SUCCESS) {
        canopy_free(in);
        return st;
    }

    /*
     * -u_xx - u_yy + c(x,y) u with the 5-point star, multiplied by hx*hy (= h^2 on a square grid) so
     * the matrix stays symmetric when hx != hy. Neighbours outside the domain are boundary values
     * and leave the matrix; exterior grid points get the identity equation.
     */
    const double ax = hy / hx, ay = hx / hy, pi = 3.14159265358979323846;
    cint *cp = A->colptr, *ri = A->rowind;
    double *v = A->values;
    cint p = 0;
    for (cint j = 0; j < ny; j++) {
        for (cint i = 0; i < nx; i++) {
            cint c = (cint)((size_t)j * nx + i);
            cp[c] = p;
            if (!in[c]) {
                ri[p] = c;
                v[p++] = 1.0;
                continue;
            }
            double x = i * hx, y = j * hy;
            double coef = 100.0 + cos(2 * pi * x) + sin(3 * pi * y);
            if (j > 0 && in[c - nx]) { ri[p] = c - nx; v[p++] = -ay; }
            if (i > 0 && in[c - 1]) { ri[p] = c - 1; v[p++] = -ax; }
            ri[p] = c;
            v[p++] = 2 * ax + 2 * ay + hx * hy * coef;
            if (i + 1 < nx && in[c + 1]) { ri[p] = c + 1; v[p++] = -ax; }
            if (j + 1 < ny && in[c + nx]) { ri[p] = c + nx; v[p++] = -ay; }
        }
    }
    cp[(size_t)n] = p;
    canopy_free(in);
    return CANOPY_SUCCESS;
}
