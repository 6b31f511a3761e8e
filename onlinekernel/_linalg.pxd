# cython: language_level=3
"""Row-major wrappers over scipy's BLAS, shared by the solver and the maps."""
from scipy.linalg.cython_blas cimport dgemm, sgemm

# The precisions of the compiled loops (float32 and float64 models).
ctypedef fused real:
    float
    double


cdef inline void gemm_rm(bint trans_a, bint trans_b, int m, int n, int k, double alpha,
                         const double* A, int lda, const double* B, int ldb,
                         double beta, double* C, int ldc) noexcept nogil:
    """C (m x n, row-major) = alpha op(A) op(B) + beta C, all row-major.

    A row-major matrix is its transpose in column-major order, so the
    row-major product C = op(A) op(B) is the column-major C^T = op(B)^T op(A)^T:
    swap the operands and keep each one's transpose flag.
    """
    cdef char ta = b'T' if trans_a else b'N'
    cdef char tb = b'T' if trans_b else b'N'
    if m == 0 or n == 0:
        return
    dgemm(&tb, &ta, &n, &m, &k, &alpha, <double*>B, &ldb, <double*>A, &lda, &beta, C, &ldc)


cdef inline void gemm_rm_f32(bint trans_a, bint trans_b, int m, int n, int k, float alpha,
                             const float* A, int lda, const float* B, int ldb,
                             float beta, float* C, int ldc) noexcept nogil:
    """Single-precision :func:`gemm_rm`."""
    cdef char ta = b'T' if trans_a else b'N'
    cdef char tb = b'T' if trans_b else b'N'
    if m == 0 or n == 0:
        return
    sgemm(&tb, &ta, &n, &m, &k, &alpha, <float*>B, &ldb, <float*>A, &lda, &beta, C, &ldc)
