/*
 * Double-precision instantiation of the numerical kernels: defines the arithmetic macros and
 * includes factor_template.c. A complex build (kernels_z.c) only changes the macro values.
 */
#include <math.h>
#include <cblas.h>
#include <lapacke.h>

#define SCALAR double
#define KSFX(name) name##_d
#define K_ABS(x) fabs(x)
#define K_ONE 1.0
#define K_MONE (-1.0)
#define K_ZERO 0.0
#define K_BS(x) (x)
#define K_GEMM cblas_dgemm
#define K_TRSM cblas_dtrsm
#define K_POTRF LAPACKE_dpotrf_work
#define K_POTRI LAPACKE_dpotri_work
#define K_TRTRI LAPACKE_dtrtri_work
#define K_TRMM cblas_dtrmm
#define K_LAPACK_PTR(p) (p)
#define K_TRANS_H CblasTrans
#define K_CONJ(x) (x)
#define K_REAL(x) (x)

#include "numeric/factor_template.c"
