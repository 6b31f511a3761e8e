/*
 * oklinalg.h -- the linear algebra of the compiled loops (matrix products and
 * small Cholesky solves), with one summation order on every machine.
 *
 * C (m x n, row-major) = alpha * op(A) op(B) + beta * C, as BLAS's gemm, but
 * every C[i][j] is the sum over p = 0, 1, ..., k-1 of op(A)[i][p] op(B)[p][j],
 * added in that order, one multiply and one add per term (no fused
 * multiply-add: the package builds with -ffp-contract=off), and then
 * alpha * sum + beta * C[i][j] (beta = 0: C is not read).  The vector lanes
 * run across j, never across p, so the order does not depend on the
 * instruction set, on the tile sizes, on m or on the other rows of the batch.
 *
 * Why not BLAS: OpenBLAS picks its kernels by CPU and by matrix size, and
 * they sum in different orders, so a saved model predicted different bits on
 * an AVX-512 machine than on the AVX2 machine that wrote it, and a row's
 * prediction depended on the rows predicted with it (measured with
 * OpenBLAS 0.3.30: OPENBLAS_CORETYPE=Haswell vs SkylakeX).  These products
 * feed the features, the predictions and the stochastic steps; the batch
 * solvers' large products (numpy and scipy) still use BLAS.
 *
 * Speed: a 4 x 8 register tile of accumulators over a
 * packed panel of op(B); the clones for AVX-512 and AVX2 give the same bits as the baseline.
 */
#ifndef ONLINEKERNEL_OKLINALG_H
#define ONLINEKERNEL_OKLINALG_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define OK_GEMM_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define OK_GEMM_CLONES
#endif

/* rows of the register tile; its columns are JB (8 for both types: 16 floats
 * measured 3-6x slower, the tile spilling out of the registers) */
#define OK_GEMM_IB 4

/*
 * One definition for both precisions.  panel holds op(B)[:, j0:j0+JB] as
 * k rows of JB values (zero beyond n), so the inner loop reads it with unit
 * stride whatever B's layout; a failed allocation reads B in place instead
 * (the same sums, slower).
 */
#define OK_DEFINE_GEMM(NAME, T, JB)                                                        \
OK_GEMM_CLONES __attribute__((unused))                                                   \
static void NAME(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, T alpha,     \
                 const T *A, int64_t lda, const T *B, int64_t ldb, T beta, T *C,          \
                 int64_t ldc)                                                            \
{                                                                                        \
    int64_t i0, j0, p, r, l;                                                             \
    T *panel;                                                                            \
    if (m <= 0 || n <= 0)                                                                \
        return;                                                                          \
    panel = (T *)malloc(sizeof(T) * (size_t)(k > 0 ? k : 1) * JB);                \
    for (j0 = 0; j0 < n; j0 += JB) {                                             \
        const int64_t jb = n - j0 < JB ? n - j0 : JB;                    \
        if (panel) {                                                                     \
            for (p = 0; p < k; p++)                                                      \
                for (l = 0; l < JB; l++)                                         \
                    panel[p * JB + l] = l < jb                                   \
                        ? (trans_b ? B[(j0 + l) * ldb + p] : B[p * ldb + j0 + l])        \
                        : (T)0;                                                          \
        }                                                                                \
        for (i0 = 0; i0 < m; i0 += OK_GEMM_IB) {                                         \
            const int64_t ib = m - i0 < OK_GEMM_IB ? m - i0 : OK_GEMM_IB;                \
            T acc[OK_GEMM_IB][JB];                                               \
            for (r = 0; r < OK_GEMM_IB; r++)                                             \
                for (l = 0; l < JB; l++)                                         \
                    acc[r][l] = (T)0;                                                    \
            for (p = 0; p < k; p++) {                                                    \
                T a[OK_GEMM_IB], b[JB];                                          \
                for (r = 0; r < OK_GEMM_IB; r++)                                         \
                    a[r] = r < ib ? (trans_a ? A[p * lda + i0 + r] : A[(i0 + r) * lda + p]) \
                                  : (T)0;                                                \
                if (panel) {                                                             \
                    for (l = 0; l < JB; l++)                                     \
                        b[l] = panel[p * JB + l];                                \
                } else {                                                                 \
                    for (l = 0; l < JB; l++)                                     \
                        b[l] = l < jb ? (trans_b ? B[(j0 + l) * ldb + p]                 \
                                                 : B[p * ldb + j0 + l]) : (T)0;          \
                }                                                                        \
                for (r = 0; r < OK_GEMM_IB; r++)                                         \
                    for (l = 0; l < JB; l++)                                     \
                        acc[r][l] += a[r] * b[l];                                        \
            }                                                                            \
            for (r = 0; r < ib; r++) {                                                   \
                T *c = C + (i0 + r) * ldc + j0;                                          \
                if (beta == (T)0) {                                                      \
                    for (l = 0; l < jb; l++)                                             \
                        c[l] = alpha * acc[r][l];                                        \
                } else {                                                                 \
                    for (l = 0; l < jb; l++)                                             \
                        c[l] = alpha * acc[r][l] + beta * c[l];                          \
                }                                                                        \
            }                                                                            \
        }                                                                                \
    }                                                                                    \
    free(panel);                                                                         \
}

OK_DEFINE_GEMM(ok_gemm, double, 8)
OK_DEFINE_GEMM(ok_gemm_f32, float, 8)

/*
 * The Cholesky factor L (lower) of the symmetric n x n matrix A, in place
 * (column-major, leading dimension n; only the lower triangle is read and
 * written), as LAPACK's dpotrf with uplo 'L', with every sum taken in
 * increasing index order.  Returns 0, or j + 1 when the leading (j + 1) x
 * (j + 1) minor is not positive definite.  For the small systems of the
 * preconditioned steps (a mini-batch's rows, or a block's features).
 */
__attribute__((unused))
static int ok_cholesky(int64_t n, double *A)
{
    int64_t i, j, p;
    for (j = 0; j < n; j++) {
        double d = A[j + j * n];
        for (p = 0; p < j; p++)
            d -= A[j + p * n] * A[j + p * n];
        if (!(d > 0.0))
            return (int)(j + 1);
        d = sqrt(d);
        A[j + j * n] = d;
        for (i = j + 1; i < n; i++) {
            double s = A[i + j * n];
            for (p = 0; p < j; p++)
                s -= A[i + p * n] * A[j + p * n];
            A[i + j * n] = s / d;
        }
    }
    return 0;
}

/*
 * B <- A^{-1} B for A = L L^T from ok_cholesky (LAPACK's dpotrs, uplo 'L'):
 * B is n x k, column-major with leading dimension n.
 */
__attribute__((unused))
static void ok_cholesky_solve(int64_t n, int64_t k, const double *L, double *B)
{
    int64_t i, p, c;
    for (c = 0; c < k; c++) {
        double *b = B + c * n;
        for (i = 0; i < n; i++) {          /* L y = b */
            double s = b[i];
            for (p = 0; p < i; p++)
                s -= L[i + p * n] * b[p];
            b[i] = s / L[i + i * n];
        }
        for (i = n - 1; i >= 0; i--) {     /* L^T x = y */
            double s = b[i];
            for (p = i + 1; p < n; p++)
                s -= L[p + i * n] * b[p];
            b[i] = s / L[i + i * n];
        }
    }
}

#endif
