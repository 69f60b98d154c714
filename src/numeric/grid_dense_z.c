/*
 * Complex double instantiation of grid_dense.h (the same template as grid_dense.c with complex macros):
 * LL^T is Hermitian (L L^H), LDL^T complex symmetric (L D L^T), LU plain, as the sparse code.
 */
#include <complex.h>
#include <cblas.h>
#include <lapacke.h>

#define SCALAR double _Complex
#define KSFX(name) name##_z
#define K_ONE 1.0
#define K_MONE (-1.0)
#define K_BS(x) (&(SCALAR){x})
#define K_GEMM cblas_zgemm
#define K_TRSM cblas_ztrsm
#define K_POTRF LAPACKE_zpotrf_work
#define K_LAPACK_PTR(p) ((lapack_complex_double *)(p))
#define K_TRANS_H CblasConjTrans
#define K_REAL(x) creal(x)
#define K_MPI_MULT 2

#include "numeric/grid_dense_template.c"
