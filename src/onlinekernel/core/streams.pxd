# cython: language_level=3
"""Counter-based block generator and stable transforms (declarations).

Feature-map plugins ``cimport`` these to generate the parameters of block
``j`` from ``(seed, j)`` alone.  See ``src/okcore.h`` for the algorithms.
"""
from libc.stdint cimport uint32_t, uint64_t, int64_t
from onlinekernel.core.linalg cimport real

cdef extern from "src/okcore.h" nogil:
    void ok_philox4x32_10(const uint32_t* ctr, const uint32_t* key, uint32_t* out)
    void ok_stream_words(uint64_t seed, uint64_t block, uint32_t stream,
                         uint64_t first_word, int64_t n, uint32_t* out)
    void ok_fill_normal(uint64_t seed, uint64_t block, uint32_t stream,
                        int64_t n, double* out)
    void ok_fill_uniform(uint64_t seed, uint64_t block, uint32_t stream,
                         int64_t n, double lo, double hi, double* out)
    void ok_fill_cauchy(uint64_t seed, uint64_t block, uint32_t stream,
                        int64_t n, double* out)
    void ok_fill_hash(uint64_t seed, uint64_t block, uint32_t stream,
                      int64_t n, uint32_t m, int64_t* out)
    void ok_fill_sign(uint64_t seed, uint64_t block, uint32_t stream,
                      int64_t n, double* out)
    void ok_fill_permutation(uint64_t seed, uint64_t block, uint32_t stream,
                             int64_t n, int64_t m, double* out)
    void ok_fill_chi(uint64_t seed, uint64_t block, uint32_t stream, int64_t n,
                     double k, double* out)
    double ok_log(double x)
    void ok_exp_neg(double* v, int64_t n)
    double ok_cos(double x)
    double ok_sin(double x)
    void ok_cos_tile(double* z, int64_t n, int64_t m, int64_t ld, const double* bias,
                     double scale, int shift)
    void ok_cos_tile_f32(float* z, int64_t n, int64_t m, int64_t ld, const float* bias,
                         float scale, int shift)


cdef inline void cos_tile_real(real* z, int64_t n, int64_t m, int64_t ld, const real* bias,
                               real scale, int shift) noexcept nogil:
    """``ok_cos_tile`` in either precision (``ok_cos_tile_f32`` for float)."""
    if real is float:
        ok_cos_tile_f32(z, n, m, ld, bias, scale, shift)
    else:
        ok_cos_tile(z, n, m, ld, bias, scale, shift)
