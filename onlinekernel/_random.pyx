# cython: language_level=3, boundscheck=False, wraparound=False
"""Counter-based random streams for seeded feature blocks.

Every random quantity of block ``j`` of a model with seed ``s`` is read from
the Philox4x32-10 stream keyed by ``s`` with counter ``(i, stream, j)``.  The
transforms from raw words to uniform, normal, Cauchy, hash and sign values
are the package's own and use only IEEE-754 arithmetic, so the values are
the same on every machine and under every numpy version.

Examples
--------
>>> from onlinekernel._random import philox4x32, normal
>>> [hex(w) for w in philox4x32([0, 0, 0, 0], [0, 0])]
['0x6627e8d5', '0xe169c58d', '0xbc57ac4c', '0x9b00dbd8']
>>> z = normal(seed=7, block=3, stream=0, n=4)
>>> bool((z == normal(7, 3, 0, 4)).all())
True
"""
import numpy as np
cimport numpy as cnp
from libc.stdint cimport uint32_t, uint64_t, int64_t

cnp.import_array()

__all__ = ["philox4x32", "words", "uniform", "normal", "cauchy", "hashes", "signs",
           "stable_log", "stable_cos", "stable_sin", "cos_tile"]


def philox4x32(counter, key):
    """Return the four output words of Philox4x32-10 for one counter and key."""
    cdef uint32_t c[4]
    cdef uint32_t k[2]
    cdef uint32_t out[4]
    cdef int i
    if len(counter) != 4 or len(key) != 2:
        raise ValueError("counter needs 4 words and key 2 words")
    for i in range(4):
        c[i] = <uint32_t>int(counter[i])
    for i in range(2):
        k[i] = <uint32_t>int(key[i])
    ok_philox4x32_10(c, k, out)
    return [int(out[0]), int(out[1]), int(out[2]), int(out[3])]


def words(uint64_t seed, uint64_t block, uint32_t stream, int64_t n, uint64_t first=0):
    """Raw 32-bit words ``first .. first+n-1`` of stream ``(seed, block, stream)``."""
    out = np.empty(n, dtype=np.uint32)
    cdef uint32_t[::1] v = out
    if n:
        ok_stream_words(seed, block, stream, first, n, &v[0])
    return out


def uniform(uint64_t seed, uint64_t block, uint32_t stream, int64_t n,
            double low=0.0, double high=1.0):
    """``n`` uniform draws in ``[low, high)`` (53-bit resolution)."""
    out = np.empty(n, dtype=np.float64)
    cdef double[::1] v = out
    if n:
        ok_fill_uniform(seed, block, stream, n, low, high, &v[0])
    return out


def normal(uint64_t seed, uint64_t block, uint32_t stream, int64_t n):
    """``n`` standard normal draws (Box-Muller on the package's own log/sin/cos)."""
    out = np.empty(n, dtype=np.float64)
    cdef double[::1] v = out
    if n:
        ok_fill_normal(seed, block, stream, n, &v[0])
    return out


def cauchy(uint64_t seed, uint64_t block, uint32_t stream, int64_t n):
    """``n`` standard Cauchy draws."""
    out = np.empty(n, dtype=np.float64)
    cdef double[::1] v = out
    if n:
        ok_fill_cauchy(seed, block, stream, n, &v[0])
    return out


def hashes(uint64_t seed, uint64_t block, uint32_t stream, int64_t n, uint32_t m):
    """``n`` hash values in ``[0, m)``."""
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] v = out
    if m == 0:
        raise ValueError("m must be positive")
    if n:
        ok_fill_hash(seed, block, stream, n, m, &v[0])
    return out


def signs(uint64_t seed, uint64_t block, uint32_t stream, int64_t n):
    """``n`` random signs, each ``+1.0`` or ``-1.0``."""
    out = np.empty(n, dtype=np.float64)
    cdef double[::1] v = out
    if n:
        ok_fill_sign(seed, block, stream, n, &v[0])
    return out


def stable_log(x):
    """The package's deterministic natural log (finite positive inputs)."""
    a = np.ascontiguousarray(x, dtype=np.float64).ravel()
    out = np.empty_like(a)
    cdef double[::1] src = a
    cdef double[::1] dst = out
    cdef Py_ssize_t i
    for i in range(a.shape[0]):
        dst[i] = ok_log(src[i])
    return out.reshape(np.shape(x))


def stable_cos(x):
    """The package's deterministic cosine."""
    a = np.ascontiguousarray(x, dtype=np.float64).ravel()
    out = np.empty_like(a)
    cdef double[::1] src = a
    cdef double[::1] dst = out
    cdef Py_ssize_t i
    for i in range(a.shape[0]):
        dst[i] = ok_cos(src[i])
    return out.reshape(np.shape(x))


def stable_sin(x):
    """The package's deterministic sine."""
    a = np.ascontiguousarray(x, dtype=np.float64).ravel()
    out = np.empty_like(a)
    cdef double[::1] src = a
    cdef double[::1] dst = out
    cdef Py_ssize_t i
    for i in range(a.shape[0]):
        dst[i] = ok_sin(src[i])
    return out.reshape(np.shape(x))


def cos_tile(z, bias=None, double scale=1.0, bint sine=False):
    """``scale * cos(z + bias)`` (or sin) through the vectorised hot-path kernel."""
    out = np.array(z, dtype=np.float64, order="C", copy=True)
    if out.ndim != 2:
        raise ValueError("z must be 2-d")
    cdef double[:, ::1] v = out
    cdef double[::1] b
    cdef const double* bp = NULL
    if bias is not None:
        b = np.ascontiguousarray(bias, dtype=np.float64)
        if b.shape[0] != out.shape[1]:
            raise ValueError("bias needs one value per column")
        bp = &b[0]
    if out.size:
        ok_cos_tile(&v[0, 0], out.shape[0], out.shape[1], out.shape[1], bp, scale,
                    3 if sine else 0)
    return out
