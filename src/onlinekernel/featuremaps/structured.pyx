# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Structured random features of the Gaussian kernel: SORF and Fastfood.

Both replace the dense ``F x d`` Gaussian frequency matrix of the
``gaussian`` map by products of diagonal matrices, permutations and
Walsh-Hadamard transforms.  A block's parameters are then ``O(F)`` numbers
(signs, a permutation, diagonals) instead of ``F d``, and a row's projection
costs ``O(F log d)`` instead of ``O(F d)`` through the compiled fast
Walsh-Hadamard transform of ``src/okfwht.h``.  The input is padded with
zeros to ``p``, the next power of two of ``d``; ``F`` frequencies are
``ceil(F / p)`` independent ``p``-row chunks, the last one truncated.  The
``sqrt(2) cos(. + b)`` features (or the cos/sin pairs) are those of
:class:`onlinekernel.featuremaps.base.FourierFeatureMap`.
"""
import numpy as np

from onlinekernel.featuremaps.gaussian import gaussian_kernel
from libc.math cimport sqrt, INFINITY
from libc.stdint cimport int32_t, int64_t, uint64_t
from onlinekernel.featuremaps.base cimport FourierFeatureMap
from onlinekernel.core.linalg cimport (ok_fastfood_rows, ok_fastfood_rows_f32, ok_fwht,
                                   ok_fwht_f32, ok_sorf_rows, ok_sorf_rows_f32)
from onlinekernel.core.streams cimport (ok_fill_chi, ok_fill_normal, ok_fill_permutation,
                                   ok_fill_sign, ok_fill_uniform)

cdef double TWO_PI = 6.283185307179586
# Parameter values per block must stay below 2^25: the chi draws' counters
# (ok_fill_chi) and permutation indices exact in float32 (2^24) both need it.
cdef Py_ssize_t MAX_PADDED = 2 ** 24
cdef Py_ssize_t MAX_DRAWS = 2 ** 25


def padded_dimension(Py_ssize_t d):
    """The smallest power of two ``p >= d``: the length of the Hadamard transforms.

    Examples
    --------
    >>> from onlinekernel.featuremaps.structured import padded_dimension
    >>> padded_dimension(784), padded_dimension(1024), padded_dimension(1)
    (1024, 1024, 1)
    """
    cdef Py_ssize_t p = 1
    while p < d:
        p *= 2
    return p


def fwht(x):
    """The unnormalised Walsh-Hadamard transform of each row of ``x``, by the compiled kernel.

    ``x @ H`` for the ``n x n`` Sylvester-Hadamard matrix ``H`` (entries
    +-1, symmetric, ``H H = n I``), in ``n log2 n`` additions a row
    (``ok_fwht`` in ``src/okfwht.h``); the maps ``sorf`` and ``fastfood``
    are built on it.

    Parameters
    ----------
    x : array_like, shape (m, n) or (n,)
        Rows of length ``n``, a power of two.  float32 input is transformed
        in single precision, anything else in float64.

    Returns
    -------
    numpy.ndarray
        A new array of ``x``'s shape and precision.

    Examples
    --------
    >>> from onlinekernel.featuremaps.structured import fwht
    >>> fwht([1.0, 0.0, 0.0, 0.0])
    array([1., 1., 1., 1.])
    >>> fwht([[1.0, 2.0], [3.0, 5.0]])
    array([[ 3., -1.],
           [ 8., -2.]])
    """
    a = np.asarray(x)
    a = np.array(a, dtype=np.float32 if a.dtype == np.float32 else np.float64, order="C")
    shape = a.shape
    if a.ndim == 1:
        a = a.reshape(1, -1)
    if a.ndim != 2:
        raise ValueError(f"fwht needs a 1-d or 2-d array, got {a.ndim} dimensions")
    cdef Py_ssize_t n = a.shape[1], i
    if n < 1 or n & (n - 1):
        raise ValueError(f"fwht needs rows whose length is a power of two, got {n}")
    cdef double[:, ::1] v64
    cdef float[:, ::1] v32
    if a.dtype == np.float32:
        v32 = a
        for i in range(a.shape[0]):
            ok_fwht_f32(&v32[i, 0], n)
    else:
        v64 = a
        for i in range(a.shape[0]):
            ok_fwht(&v64[i, 0], n)
    return a.reshape(shape)


cdef class HadamardFeatureMap(FourierFeatureMap):
    """Base class of the structured Gaussian maps (``sorf``, ``fastfood``).

    Holds what they share: ``gamma`` and its check, the padded dimension
    ``p`` and the number of ``p``-row chunks, the exact kernel and the
    parameters.  A subclass sets ``name`` and ``diagonals`` (``p``-vectors
    per chunk), draws them in ``generate`` and projects in ``project``.
    """
    cdef readonly double gamma
    cdef readonly Py_ssize_t padded      # p, set by bind
    cdef readonly Py_ssize_t n_chunks    # ceil(frequencies / p), set by bind
    diagonals = 0
    scratch = 1                          # p-vectors of work per row

    def __init__(self, Py_ssize_t n_components=256, double gamma=1.0, bint pairs=False):
        super().__init__(n_components, pairs)
        if not (gamma > 0.0 and gamma < INFINITY):
            raise ValueError(f"{self.name}: gamma must be a finite number > 0, got {gamma}")
        self.gamma = gamma
        self.padded = 0
        self.n_chunks = 0

    def _sizes(self, Py_ssize_t d):
        cdef Py_ssize_t p = padded_dimension(d)
        cdef Py_ssize_t nw = self.n_components // 2 if self.pairs else self.n_components
        cdef Py_ssize_t chunks = (nw + p - 1) // p
        if p > MAX_PADDED or chunks * p > MAX_DRAWS:
            raise ValueError(f"{self.name}: {chunks} chunks of {p} (n_features_in={d} padded "
                             f"to a power of two) exceed {MAX_DRAWS} parameters per block; "
                             f"use fewer n_components or fewer input features")
        self.padded = p
        self.n_chunks = chunks
        return self.diagonals * p * chunks + (0 if self.pairs else self.n_components), \
            self.scratch * p

    def _frequency_rows(self):
        # no stored frequencies (diagonals and fast transforms): FourierFeatureMap's
        # sparse transform then densifies the rows
        return 0

    cdef void _phases(self, uint64_t seed, uint64_t block, double* params) noexcept nogil:
        """The phases b ~ U[0, 2 pi) from stream 1, the block's last F values."""
        if not self.pairs:
            ok_fill_uniform(seed, block, 1, self.n_components, 0.0, TWO_PI,
                            params + self.param_size - self.n_components)

    def kernel(self, X, Y):
        """The exact kernel matrix, :math:`\\exp(-\\gamma \\|x - y\\|^2)`, of the rows of X and Y."""
        return gaussian_kernel(X, Y, self.gamma)

    def get_params(self, deep=True):
        return {"n_components": self.n_components, "gamma": self.gamma, "pairs": self.pairs}


cdef class StructuredOrthogonalRandomFeatures(HadamardFeatureMap):
    r"""Structured orthogonal random features of :math:`\exp(-\gamma \|x - x'\|^2)`.

    Yu et al. (2016): each ``p``-row chunk of the frequencies is
    :math:`W = \sqrt{2\gamma}\,\sqrt{p}\; \bar H D_1 \bar H D_2 \bar H D_3`,
    with :math:`\bar H` the normalised ``p x p`` Walsh-Hadamard matrix,
    :math:`D_i` diagonal matrices of random signs and ``p`` the input
    dimension padded with zeros to a power of two.  The rows of a chunk are
    exactly orthogonal; a block's parameters are ``3 p`` signs a chunk
    (instead of ``F d`` Gaussian draws), and a row's projection is three fast
    transforms a chunk, :math:`O(F \log p)` instead of :math:`O(F d)`.
    Features are those of the ``gaussian`` map: :math:`\sqrt2 \cos(w^\top
    x + b)`, or the cos/sin pairs with ``pairs=True``.

    Row norms.  In Yu et al.'s SORF (``row_norms="fixed"``) every row has the
    norm :math:`\sqrt{2\gamma p}`, where a Gaussian frequency's norm is
    :math:`\sqrt{2\gamma}` times a chi(p) draw; the estimate is then biased
    (Yu et al., Theorem 5): the error of a 16-block average over 30 points
    in the unit ball, ``gamma = 1``, stops falling near 0.09 at ``d = 8``,
    0.044 at 16 and 0.014 at 64.  The default ``row_norms="chi"`` scales row
    ``i`` by :math:`s_i / \sqrt p`, :math:`s_i \sim \chi(p)`, as ``orf`` and
    ``fastfood`` do -- ``p`` more numbers a chunk and one multiply per
    feature -- which takes those errors to 0.011 at ``d = 16`` and 0.008 at
    64.  Both forms are meant for inputs of tens of dimensions and more; at
    a few dimensions use ``orf`` or ``fastfood``.

    Block parameters (nothing stored, all from ``(seed, block)``): the signs
    ``[D1 | D2 | D3]`` of chunk ``c`` are values ``3 p c .. 3 p c + 3 p - 1``
    of stream 0 (``_random.signs``); with ``row_norms="chi"`` the ``F``
    rounded up to chunks row scales :math:`s_i / \sqrt p` follow, the chi
    draws from stream 4 (``_random.chi``); then the phases ``b`` from stream
    1 as the ``gaussian`` map's (not with ``pairs``).  Sparse rows are
    densified (there is no sparse fast transform).

    Parameters
    ----------
    n_components : int, default=256
        Features per block (even when ``pairs=True``); need not be a
        multiple of ``p``.
    gamma : float, default=1.0
        Kernel bandwidth parameter, finite and > 0.
    pairs : bool, default=False
        Use the sin/cos pair variant.
    row_norms : {"chi", "fixed"}, default="chi"
        Chi-distributed row norms, or Yu et al.'s equal norms.

    References
    ----------
    F. X. Yu, A. T. Suresh, K. Choromanski, D. Holtmann-Rice, S. Kumar.
    Orthogonal Random Features. NIPS 2016.

    Examples
    --------
    >>> from onlinekernel import get_feature_map
    >>> fmap = get_feature_map("sorf", n_components=4096, gamma=0.02).bind(100)
    >>> fmap.padded, fmap.param_size
    (128, 20480)
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(2, 100))
    >>> Z = fmap.transform_block(seed=0, block=0, X=X)
    >>> approx = Z[0] @ Z[1] / Z.shape[1]
    >>> bool(abs(approx - fmap.kernel(X[:1], X[1:])[0, 0]) < 0.05)
    True

    Yu et al.'s form stores the signs alone:

    >>> get_feature_map("sorf", n_components=4096, row_norms="fixed").bind(100).param_size
    16384
    """
    name = "sorf"
    cdef bint chi

    def __init__(self, Py_ssize_t n_components=256, double gamma=1.0, bint pairs=False,
                 row_norms="chi"):
        super().__init__(n_components, gamma, pairs)
        if not isinstance(row_norms, str) or row_norms not in ("chi", "fixed"):
            raise ValueError(f"sorf: row_norms must be 'chi' or 'fixed', got {row_norms!r}")
        self.chi = row_norms == "chi"

    @property
    def row_norms(self):
        return "chi" if self.chi else "fixed"

    @property
    def diagonals(self):
        return 4 if self.chi else 3

    cdef void generate(self, uint64_t seed, uint64_t block, double* params) noexcept nogil:
        cdef Py_ssize_t p = self.padded, size = p * self.n_chunks, k
        cdef double* S = params + 3 * size
        cdef double f = 1.0 / sqrt(<double>p)
        ok_fill_sign(seed, block, 0, 3 * size, params)
        if self.chi:
            ok_fill_chi(seed, block, 4, size, <double>p, S)
            for k in range(size):
                S[k] *= f
        self._phases(seed, block, params)

    cdef double _scale(self) noexcept nogil:
        # sqrt(2 gamma) sqrt(p) for the three normalised transforms, 1/sqrt(p)
        # each, applied unnormalised: sqrt(2 gamma) / p
        return sqrt(2.0 * self.gamma) / self.padded

    cdef void project(self, const double* params, const double* X, Py_ssize_t n,
                      Py_ssize_t ldx, Py_ssize_t m, double* out, Py_ssize_t ldo,
                      double* work) noexcept nogil:
        cdef const double* S = params + 3 * self.padded * self.n_chunks if self.chi else NULL
        ok_sorf_rows(params, S, self._scale(), self.padded, m, X, n, ldx, self.n_features_in,
                     out, ldo, work)

    cdef void project_f32(self, const float* params, const float* X, Py_ssize_t n,
                          Py_ssize_t ldx, Py_ssize_t m, float* out, Py_ssize_t ldo,
                          float* work) noexcept nogil:
        cdef const float* S = params + 3 * self.padded * self.n_chunks if self.chi else NULL
        ok_sorf_rows_f32(params, S, <float>self._scale(), self.padded, m, X, n, ldx,
                         self.n_features_in, out, ldo, work)

    def get_params(self, deep=True):
        return {"n_components": self.n_components, "gamma": self.gamma, "pairs": self.pairs,
                "row_norms": self.row_norms}


cdef class Fastfood(HadamardFeatureMap):
    r"""Fastfood random features of :math:`\exp(-\gamma \|x - x'\|^2)`.

    Le, Sarlos and Smola (2013): each ``p``-row chunk of the frequencies is
    :math:`V = \frac{\sqrt{2\gamma}}{\sqrt p}\, S H G \Pi H B`, with ``H``
    the unnormalised ``p x p`` Walsh-Hadamard matrix (``p``: the input
    dimension padded with zeros to a power of two), ``B`` random signs,
    :math:`\Pi` a random permutation, ``G`` a diagonal of standard normals
    and ``S`` the diagonal :math:`s_i / \|G\|` with :math:`s_i` chi
    distributed with ``p`` degrees of freedom, so that row ``i`` has the norm
    of a Gaussian frequency, :math:`\sqrt{2\gamma}\, s_i`.  A block's
    parameters are ``4 p`` numbers a chunk, and a row's projection is two
    fast transforms a chunk, :math:`O(F \log p)` instead of :math:`O(F d)`.
    Features are those of the ``gaussian`` map: :math:`\sqrt2 \cos(w^\top x
    + b)`, or the cos/sin pairs with ``pairs=True``.

    Block parameters (nothing stored, all from ``(seed, block)``), each part
    laid out chunk after chunk: ``B`` from stream 0 (signs), the
    permutations from stream 2 (``_random.permutations``), ``G`` from
    stream 3 (normals), the chi draws from stream 4 (``_random.chi``, O(1)
    each -- summing ``p`` squared normals would cost what the map saves),
    stored as the row scales :math:`\sqrt{2\gamma}\, s_i / (\|G\| \sqrt p)`;
    then the phases ``b`` from stream 1 as the ``gaussian`` map's (not with
    ``pairs``).  Sparse rows are densified (there is no sparse fast
    transform).

    Parameters
    ----------
    n_components : int, default=256
        Features per block (even when ``pairs=True``); need not be a
        multiple of ``p``.
    gamma : float, default=1.0
        Kernel bandwidth parameter, finite and > 0.
    pairs : bool, default=False
        Use the sin/cos pair variant.

    References
    ----------
    Q. Le, T. Sarlos, A. Smola. Fastfood -- Approximating Kernel Expansions
    in Loglinear Time. ICML 2013.

    Examples
    --------
    >>> from onlinekernel import get_feature_map
    >>> fmap = get_feature_map("fastfood", n_components=2048, gamma=0.5).bind(3)
    >>> fmap.padded, fmap.n_chunks, fmap.param_size
    (4, 512, 10240)

    The kernel matrix of three points, estimated by one block of 2048 features,
    and in float32 (the same parameters rounded to float):

    >>> X = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.5, 0.5]])
    >>> Z = fmap.transform_block(seed=0, block=0, X=X)
    >>> bool(np.abs(Z @ Z.T / 2048 - fmap.kernel(X, X)).max() < 0.1)
    True
    >>> Z32 = fmap.transform_block(seed=0, block=0, X=X, dtype=np.float32)
    >>> bool(np.abs(Z32 - Z).max() < 1e-5)
    True
    """
    name = "fastfood"
    diagonals = 4
    scratch = 2

    cdef void generate(self, uint64_t seed, uint64_t block, double* params) noexcept nogil:
        cdef Py_ssize_t p = self.padded, size = p * self.n_chunks, c, k
        cdef double* G = params + 2 * size
        cdef double* S = params + 3 * size
        cdef double norm2, f
        ok_fill_sign(seed, block, 0, size, params)
        ok_fill_permutation(seed, block, 2, self.n_chunks, p, params + size)
        ok_fill_normal(seed, block, 3, size, G)
        ok_fill_chi(seed, block, 4, size, <double>p, S)
        for c in range(self.n_chunks):
            norm2 = 0.0
            for k in range(c * p, c * p + p):
                norm2 += G[k] * G[k]
            # |row of H G Pi H B| = sqrt(p) |G|: rescale it to sqrt(2 gamma) chi(p)
            f = sqrt(2.0 * self.gamma) / sqrt(norm2 * p) if norm2 > 0.0 else 0.0
            for k in range(c * p, c * p + p):
                S[k] *= f
        self._phases(seed, block, params)

    cdef void project(self, const double* params, const double* X, Py_ssize_t n,
                      Py_ssize_t ldx, Py_ssize_t m, double* out, Py_ssize_t ldo,
                      double* work) noexcept nogil:
        cdef Py_ssize_t size = self.padded * self.n_chunks
        ok_fastfood_rows(params, params + size, params + 2 * size, params + 3 * size,
                         self.padded, m, X, n, ldx, self.n_features_in, out, ldo, work)

    cdef void project_f32(self, const float* params, const float* X, Py_ssize_t n,
                          Py_ssize_t ldx, Py_ssize_t m, float* out, Py_ssize_t ldo,
                          float* work) noexcept nogil:
        cdef Py_ssize_t size = self.padded * self.n_chunks
        ok_fastfood_rows_f32(params, params + size, params + 2 * size, params + 3 * size,
                             self.padded, m, X, n, ldx, self.n_features_in, out, ldo, work)
