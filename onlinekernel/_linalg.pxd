# cython: language_level=3
"""Row-major wrappers over scipy's BLAS, shared by the solver and the maps."""
from scipy.linalg.cython_blas cimport dgemm, sgemm, dgemv, sgemv

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
    cdef char no = b'N', tr = b'T'
    cdef int inc, one = 1
    if m == 0 or n == 0:
        return
    # A single row or column is a matrix-vector product: GEMM would pack the
    # whole other operand for it (measured 10x slower for one row here).
    if m == 1 and k > 0:
        inc = lda if trans_a else 1
        if trans_b:
            dgemv(&tr, &k, &n, &alpha, <double*>B, &ldb, <double*>A, &inc, &beta, C, &one)
        else:
            dgemv(&no, &n, &k, &alpha, <double*>B, &ldb, <double*>A, &inc, &beta, C, &one)
        return
    if n == 1 and k > 0:
        inc = 1 if trans_b else ldb
        if trans_a:
            dgemv(&no, &m, &k, &alpha, <double*>A, &lda, <double*>B, &inc, &beta, C, &ldc)
        else:
            dgemv(&tr, &k, &m, &alpha, <double*>A, &lda, <double*>B, &inc, &beta, C, &ldc)
        return
    dgemm(&tb, &ta, &n, &m, &k, &alpha, <double*>B, &ldb, <double*>A, &lda, &beta, C, &ldc)


cdef inline void gemm_rm_f32(bint trans_a, bint trans_b, int m, int n, int k, float alpha,
                             const float* A, int lda, const float* B, int ldb,
                             float beta, float* C, int ldc) noexcept nogil:
    """Single-precision :func:`gemm_rm`."""
    cdef char ta = b'T' if trans_a else b'N'
    cdef char tb = b'T' if trans_b else b'N'
    cdef char no = b'N', tr = b'T'
    cdef int inc, one = 1
    if m == 0 or n == 0:
        return
    if m == 1 and k > 0:
        inc = lda if trans_a else 1
        if trans_b:
            sgemv(&tr, &k, &n, &alpha, <float*>B, &ldb, <float*>A, &inc, &beta, C, &one)
        else:
            sgemv(&no, &n, &k, &alpha, <float*>B, &ldb, <float*>A, &inc, &beta, C, &one)
        return
    if n == 1 and k > 0:
        inc = 1 if trans_b else ldb
        if trans_a:
            sgemv(&no, &m, &k, &alpha, <float*>A, &lda, <float*>B, &inc, &beta, C, &ldc)
        else:
            sgemv(&tr, &k, &m, &alpha, <float*>A, &lda, <float*>B, &inc, &beta, C, &ldc)
        return
    sgemm(&tb, &ta, &n, &m, &k, &alpha, <float*>B, &ldb, <float*>A, &lda, &beta, C, &ldc)
