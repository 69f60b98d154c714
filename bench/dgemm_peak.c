/*
 * dgemm_peak.c: the machine's practical DGEMM rate, the yardstick for the factorization GFlop/s.
 * Times cblas_dgemm on N x N matrices (default 2000) and prints the best of a few runs as one
 * JSON line. The thread count is whatever the BLAS is told (run.sh sets OPENBLAS_NUM_THREADS=1).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <cblas.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 2000;
    int reps = argc > 2 ? atoi(argv[2]) : 5;
    if (n < 1 || reps < 1) {
        fprintf(stderr, "usage: %s [N [REPEATS]]\n", argv[0]);
        return 2;
    }
    size_t nn = (size_t)n * (size_t)n;
    double *a = malloc(nn * sizeof(*a)), *b = malloc(nn * sizeof(*b)), *c = malloc(nn * sizeof(*c));
    if (a == NULL || b == NULL || c == NULL) {
        fprintf(stderr, "dgemm_peak: out of memory\n");
        return 1;
    }
    for (size_t k = 0; k < nn; k++) {
        a[k] = 1.0 + (double)(k % 7) * 0.125;
        b[k] = 0.5 - (double)(k % 5) * 0.0625;
        c[k] = 0.0;
    }
    /* One untimed call first: page faults and BLAS thread start-up are not DGEMM speed. */
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a, n, b, n, 0.0, c, n);
    double best = 1e300;
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a, n, b, n, 1.0, c, n);
        double t = now() - t0;
        best = t < best ? t : best;
    }
    double gflops = 2.0 * (double)n * (double)n * (double)n / best * 1e-9;
    const char *thr = getenv("OPENBLAS_NUM_THREADS");
    printf("{\"solver\": \"dgemm\", \"n\": %d, \"seconds\": %.6g, \"gflops\": %.4g, "
           "\"openblas_num_threads\": \"%s\", \"check\": %.6g}\n",
           n, best, gflops, thr ? thr : "unset", c[nn / 2]);
    free(a);
    free(b);
    free(c);
    return 0;
}
