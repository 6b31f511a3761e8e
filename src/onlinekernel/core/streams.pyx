# cython: language_level=3, boundscheck=False, wraparound=False
"""Counter-based random streams for seeded feature blocks.

Every random quantity of block ``j`` of a model with seed ``s`` is read from
the Philox4x32-10 stream keyed by ``s`` with counter ``(i, stream, j)``.  The
transforms from raw words to uniform, normal, Cauchy, hash and sign values
are the package's own and use only IEEE-754 arithmetic, so the values are
the same on every machine and under every numpy version.

Examples
--------
>>> from onlinekernel.core.streams import philox4x32, normal
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
           "permutations", "chi", "stable_log", "stable_cos", "stable_sin", "cos_tile"]


ctypedef void (*_fill_f64)(uint64_t, uint64_t, uint32_t, int64_t, double*) noexcept nogil


cdef object _draws(_fill_f64 fill, uint64_t seed, uint64_t block, uint32_t stream, int64_t n):
    """``n`` float64 values of stream ``(seed, block, stream)`` written by ``fill``."""
    out = np.empty(n, dtype=np.float64)
    cdef double[::1] v = out
    if n:
        fill(seed, block, stream, n, &v[0])
    return out


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
    return _draws(ok_fill_normal, seed, block, stream, n)


def cauchy(uint64_t seed, uint64_t block, uint32_t stream, int64_t n):
    """``n`` standard Cauchy draws."""
    return _draws(ok_fill_cauchy, seed, block, stream, n)


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
    return _draws(ok_fill_sign, seed, block, stream, n)


def permutations(uint64_t seed, uint64_t block, uint32_t stream, int64_t n, int64_t m):
    """``n`` random permutations of ``0 .. m-1``, shape ``(n, m)`` (Fisher-Yates).

    Permutation ``p`` reads words ``p m .. p m + m - 1`` of the stream; see
    ``ok_fill_permutation`` in ``src/okcore.h``.

    Examples
    --------
    >>> from onlinekernel.core.streams import permutations
    >>> p = permutations(seed=1, block=0, stream=2, n=2, m=8)
    >>> sorted(p[0].tolist()) == list(range(8)) and p.shape
    (2, 8)
    """
    if n < 0 or m < 1:
        raise ValueError(f"permutations needs n >= 0 and m >= 1, got n={n}, m={m}")
    out = np.empty(n * m, dtype=np.float64)
    cdef double[::1] v = out
    if n:
        ok_fill_permutation(seed, block, stream, n, m, &v[0])
    return out.astype(np.int64).reshape(n, m)


def chi(uint64_t seed, uint64_t block, uint32_t stream, int64_t n, double k):
    """``n`` draws from the chi distribution with ``k`` degrees of freedom.

    The norm of a ``k``-dimensional standard normal vector, drawn in O(1)
    expected work (Marsaglia-Tsang rejection for the Gamma(k/2) variable,
    see ``ok_fill_chi`` in ``src/okcore.h``); ``k`` is 1 or at least 2.

    Examples
    --------
    >>> from onlinekernel.core.streams import chi
    >>> r = chi(seed=3, block=0, stream=4, n=20000, k=64)
    >>> bool(abs(np.mean(r ** 2) - 64) < 0.5)
    True
    """
    if not (k == 1.0 or k >= 2.0) or k != k or k == float("inf"):
        raise ValueError(f"chi needs k = 1 or a finite k >= 2 degrees of freedom, got {k}")
    if n < 0:
        raise ValueError(f"chi needs n >= 0, got {n}")
    out = np.empty(n, dtype=np.float64)
    cdef double[::1] v = out
    if n:
        ok_fill_chi(seed, block, stream, n, k, &v[0])
    return out


ctypedef double (*_scalar_fn)(double) noexcept nogil


cdef object _elementwise(x, _scalar_fn f):
    """``f`` of every element of ``x`` (as float64), in ``x``'s shape."""
    a = np.ascontiguousarray(x, dtype=np.float64).ravel()
    out = np.empty_like(a)
    cdef double[::1] src = a
    cdef double[::1] dst = out
    cdef Py_ssize_t i
    for i in range(a.shape[0]):
        dst[i] = f(src[i])
    return out.reshape(np.shape(x))


def stable_log(x):
    """The package's deterministic natural log (finite positive inputs)."""
    return _elementwise(x, ok_log)


def stable_cos(x):
    """The package's deterministic cosine."""
    return _elementwise(x, ok_cos)


def stable_sin(x):
    """The package's deterministic sine."""
    return _elementwise(x, ok_sin)


def cos_tile(z, bias=None, double scale=1.0, bint sine=False):
    """``scale * cos(z + bias)`` (or sin) through the vectorised hot-path kernel.

    Parameters
    ----------
    z : array_like, 2-d
        The arguments.  A float32 array runs the single-precision kernel
        (``ok_cos_tile_f32``: float32 result, bias and scale, the argument
        being the float32 sum ``z + bias``); anything else is converted to
        float64 and runs the double kernel (``ok_cos_tile``).
    bias : array_like, optional
        One value per column, added to every row.
    scale : float
        Factor applied to the result.
    sine : bool
        Compute ``scale * sin(z + bias)`` instead.

    Returns
    -------
    numpy.ndarray
        A new C-contiguous array of ``z``'s shape; ``z`` is left unchanged.
        Absolute error at most ``2e-16 * |scale|`` (float64) or 3 float32
        ulps of ``|scale|`` (float32); huge, infinite and nan arguments get
        libm's value.

    Examples
    --------
    >>> from onlinekernel.core.streams import cos_tile
    >>> cos_tile([[0.0, np.pi]])
    array([[ 1., -1.]])
    >>> cos_tile(np.zeros((1, 2), dtype=np.float32), bias=[0.0, np.pi / 2], sine=True)
    array([[0., 1.]], dtype=float32)
    """
    dt = np.float32 if np.asarray(z).dtype == np.float32 else np.float64
    out = np.array(z, dtype=dt, order="C", copy=True)
    if out.ndim != 2:
        raise ValueError("z must be 2-d")
    b = None
    if bias is not None:
        b = np.ascontiguousarray(bias, dtype=dt)
        if b.shape[0] != out.shape[1]:
            raise ValueError("bias needs one value per column")
    if out.size:
        if dt is np.float32:
            _cos_tile_of[float](out, b, scale, 3 if sine else 0)
        else:
            _cos_tile_of[double](out, b, scale, 3 if sine else 0)
    return out


cdef void _cos_tile_of(real[:, ::1] v, real[::1] b, double scale, int shift):
    cos_tile_real(&v[0, 0], v.shape[0], v.shape[1], v.shape[1],
                  NULL if b is None else &b[0], <real>scale, shift)
