# cython: language_level=3
"""Matrix products and Cholesky solves of the compiled loops, shared by the solver and the maps.

They run :file:`src/oklinalg.h`'s kernels rather than BLAS and LAPACK: each sum is added in
one order on every machine and for every batch, so seeded features and
predictions are the same bits wherever a model is loaded (BLAS picks its
kernels, and with them the order of the sums, by CPU and by matrix size).
"""
from libc.stdint cimport int32_t, int64_t

cdef extern from "src/oklinalg.h" nogil:
    int ok_cholesky(int64_t n, double* A)
    void ok_cholesky_solve(int64_t n, int64_t k, const double* L, double* B)
    void ok_gemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, double alpha,
                 const double* A, int64_t lda, const double* B, int64_t ldb, double beta,
                 double* C, int64_t ldc)
    void ok_gemm_f32(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                     const float* A, int64_t lda, const float* B, int64_t ldb, float beta,
                     float* C, int64_t ldc)
    void ok_csr_gemm(int64_t n, int64_t F, int64_t d, const int64_t* indptr,
                     const int32_t* indices, const double* data, const double* W, double* out,
                     int64_t ldo)
    void ok_csr_gemm_f32(int64_t n, int64_t F, int64_t d, const int64_t* indptr,
                         const int32_t* indices, const float* data, const float* W,
                         float* out, int64_t ldo)
    void ok_csr_gemm_t(int64_t n, int64_t F, const int64_t* indptr, const int32_t* indices,
                       const double* data, const double* WT, double* out, int64_t ldo)
    void ok_csr_gemm_t_f32(int64_t n, int64_t F, const int64_t* indptr,
                           const int32_t* indices, const float* data, const float* WT,
                           float* out, int64_t ldo)
    void ok_transpose(int64_t F, int64_t d, const double* W, double* WT)
    void ok_transpose_f32(int64_t F, int64_t d, const float* W, float* WT)

cdef extern from "src/okfwht.h" nogil:
    void ok_fwht(double* x, int64_t n)
    void ok_fwht_f32(float* x, int64_t n)
    void ok_sorf_rows(const double* signs, const double* S, double scale, int64_t p,
                      int64_t m, const double* X, int64_t n, int64_t ldx, int64_t d,
                      double* out, int64_t ldo, double* work)
    void ok_sorf_rows_f32(const float* signs, const float* S, float scale, int64_t p,
                          int64_t m, const float* X, int64_t n, int64_t ldx, int64_t d,
                          float* out, int64_t ldo, float* work)
    void ok_fastfood_rows(const double* B, const double* P, const double* G, const double* S,
                          int64_t p, int64_t m, const double* X, int64_t n, int64_t ldx,
                          int64_t d, double* out, int64_t ldo, double* work)
    void ok_fastfood_rows_f32(const float* B, const float* P, const float* G, const float* S,
                              int64_t p, int64_t m, const float* X, int64_t n, int64_t ldx,
                              int64_t d, float* out, int64_t ldo, float* work)

# The precisions of the compiled loops (float32 and float64 models).
ctypedef fused real:
    float
    double


cdef inline void gemm_rm(bint trans_a, bint trans_b, int m, int n, int k, double alpha,
                         const double* A, int lda, const double* B, int ldb,
                         double beta, double* C, int ldc) noexcept nogil:
    """C (m x n, row-major) = alpha op(A) op(B) + beta C, all row-major (BLAS's gemm)."""
    ok_gemm(trans_a, trans_b, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc)


cdef inline void gemm_rm_f32(bint trans_a, bint trans_b, int m, int n, int k, float alpha,
                             const float* A, int lda, const float* B, int ldb,
                             float beta, float* C, int ldc) noexcept nogil:
    """Single-precision :func:`gemm_rm`."""
    ok_gemm_f32(trans_a, trans_b, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc)


cdef inline void gemm_real(bint trans_a, bint trans_b, int m, int n, int k, real alpha,
                           const real* A, int lda, const real* B, int ldb, real beta, real* C,
                           int ldc) noexcept nogil:
    """:func:`gemm_rm` in either precision (``gemm_rm_f32`` for float)."""
    if real is float:
        ok_gemm_f32(trans_a, trans_b, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc)
    else:
        ok_gemm(trans_a, trans_b, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc)


cdef inline void csr_project(const real* W, const real* WT, Py_ssize_t F, Py_ssize_t d,
                             const int64_t* indptr, const int32_t* indices, const real* data,
                             Py_ssize_t n, real* out, Py_ssize_t ldo) noexcept nogil:
    """out (n x F, leading dimension ldo) = X W^T for the n CSR rows of X and W (F x d).

    The sparse counterpart of the maps' projection ``gemm_rm(X, W^T)``, and
    the same bits on rows with sorted, distinct column indices
    (``src/oklinalg.h``): a row costs ``nnz * F`` products instead of
    ``d * F``.  ``indptr`` holds the n + 1 offsets of the rows into
    ``indices`` and ``data``.  ``WT`` (d x F), when not NULL, is W already
    transposed (a block source keeps it next to a cached block): the
    vectorised loop then runs on any number of rows without transposing.
    """
    if WT != NULL:
        if real is float:
            ok_csr_gemm_t_f32(n, F, indptr, indices, data, WT, out, ldo)
        else:
            ok_csr_gemm_t(n, F, indptr, indices, data, WT, out, ldo)
    elif real is float:
        ok_csr_gemm_f32(n, F, d, indptr, indices, data, W, out, ldo)
    else:
        ok_csr_gemm(n, F, d, indptr, indices, data, W, out, ldo)


cdef inline void transpose_real(const real* W, Py_ssize_t F, Py_ssize_t d,
                                real* WT) noexcept nogil:
    """WT (d x F, row-major) = W^T for W (F x d, row-major)."""
    if real is float:
        ok_transpose_f32(F, d, W, WT)
    else:
        ok_transpose(F, d, W, WT)
