/*
 * Complex double instantiation of the numerical kernels: the same template as kernels_d.c with
 * complex macros. LL^T is Hermitian (L L^H); LDL^T and LU use the plain transpose (complex
 * symmetric LDL^T, U^T storage), so a Hermitian indefinite matrix is factorized by LU.
 */
#include <complex.h>
#include <math.h>
#include <cblas.h>
#include <lapacke.h>

#define SCALAR double _Complex
#define KSFX(name) name##_z
#define K_ABS(x) cabs(x)
#define K_ONE 1.0
#define K_MONE (-1.0)
#define K_ZERO 0.0
#define K_BS(x) (&(SCALAR){x})
#define K_GEMM cblas_zgemm
#define K_TRSM cblas_ztrsm
#define K_POTRF LAPACKE_zpotrf_work
#define K_POTRI LAPACKE_zpotri_work
#define K_TRTRI LAPACKE_ztrtri_work
#define K_TRMM cblas_ztrmm
#define K_LAPACK_PTR(p) ((lapack_complex_double *)(p))
#define K_TRANS_H CblasConjTrans
#define K_CONJ(x) conj(x)
#define K_REAL(x) creal(x)

#include "numeric/factor_template.c"
