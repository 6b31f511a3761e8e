# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Nystrom features: the kernel's own functions at landmarks chosen from the data."""
import math
import threading
import warnings

import numpy as np
import scipy.linalg
import scipy.linalg.blas
import scipy.sparse as sp

from libc.stdint cimport uint64_t
from onlinekernel.featuremaps.base cimport CyFeatureMap
from onlinekernel.core.linalg cimport real
from onlinekernel.core import streams as _random
from onlinekernel.core.cholesky import jittered_cholesky
from onlinekernel.core.params import params_eq

# Landmark rules (the ``sampling`` parameter).
SAMPLINGS = ("uniform", "kmeans++", "leverage")
# k-means++ seeding and leverage scores look at a uniform pool of at most
# POOL landmarks' worth of rows: enough to find spread-out or informative
# rows, and the cost stays O(POOL M^2 d) however many rows the fit has.
POOL = 4
# Rows whose kernel values are evaluated at once while choosing landmarks.
TILE = 2048
# The relative jitter grows by this factor (up to MAX_JITTER) until K_CC
# factors: duplicated landmarks or a kernel that is only numerically PSD.
JITTER_GROWTH = 100.0
MAX_JITTER = 1e-2
# rows of X per call of the base kernel in Nystrom.kernel
KERNEL_TILE = 1024
# L^{-1} G for the whitening's apply_transposed (L float64, Fortran-ordered)
_TRSM = scipy.linalg.blas.dtrsm
# Power iterations and their vectors for the estimate of ||L^{-1}||_2 in the
# whitening's rounding gain: a lower bound that climbs to it (measured against
# eigvalsh on the landmarks of fashion_mnist, pendigits, covtype_binary_sub20k,
# kin40k and usps: 0.98-1.00 of it after these, in 1-100 ms).
GAIN_ITERATIONS = 8
GAIN_VECTORS = 4
# Landmarks whose kernel values at all landmarks estimate a data row's |B_x|^2
ROW_NORM_LANDMARKS = 256


def _dense(X, rows=None, dtype=np.float64):
    """Rows ``rows`` (all when None) of dense or CSR ``X`` as a C array of ``dtype``."""
    if rows is not None:
        X = X[rows]
    if sp.issparse(X):
        X = X.toarray()
    return np.ascontiguousarray(X, dtype=dtype)


class _Whitening:
    """``Phi = B T`` for :meth:`Nystrom.linear_factor`: ``B = k(X, C)``, ``T = scale [L^{-T} | 0]``."""

    def __init__(self, fmap, C, L, scale, M, gains):
        # the map keeps L in Fortran order (see set_fitted_arrays); only the
        # leading part of a factor for fewer blocks is copied into that order
        self.fmap, self.C, self.scale, self.M = fmap, C, scale, M
        self.L = np.asfortranarray(L)
        self.width = C.shape[0]
        self._landmarks_as = {C.dtype: C}
        self._gains = gains  # the map's: |L^-1|_2 by width, kept until it is refitted
        self._row_norm2 = None

    def rounding_gain(self, limit=math.inf):
        """How many times ``T`` amplifies ``B``'s relative rounding in ``Phi = B T``: an estimate.

        A row's error ``dB T`` is at most ``|dB| |T|_2``; with ``|k(x, c)|
        <= sqrt(k(x, x) k(c, c))``, ``|B_x| <= sqrt(m level k(x, x))``
        (``level`` the landmarks' mean ``k(c, c)``, the diagonal of ``L
        L^T``), while a row the landmarks represent has ``|Phi_x| ~ scale
        sqrt(k(x, x))``: the gain is ``sqrt(m level) |L^{-1}|_2``.  The
        norm comes from :data:`GAIN_ITERATIONS` power iterations on ``(L
        L^T)^{-1}`` (two triangular solves of :data:`GAIN_VECTORS` columns
        each, from a fixed start: the same bits on every call), which
        approach it from below, after the bound ``1 / min L_ii`` that stops
        them when it already exceeds ``limit``.  Measured: fashion_mnist's
        2,048 landmarks 600, kin40k's 8,192 above 1e5.

        Examples
        --------
        >>> from onlinekernel import get_feature_map
        >>> X = np.random.default_rng(0).normal(size=(300, 20))
        >>> f = get_feature_map("nystrom", n_components=32, gamma=0.02).bind(20).fit(X, 0, 1)
        >>> float(f.linear_factor(0, 1).rounding_gain()) < 100
        True
        """
        m = self.width
        level = float(np.einsum("ij,ij->", self.L, self.L)) / m  # mean diagonal of L L^T
        root = math.sqrt(m * level)
        return root * self._inverse_norm(limit, root)

    def _inverse_norm(self, limit, factor):
        """``|L^{-1}|_2`` from below (:meth:`rounding_gain`'s iterations), kept once complete.

        Stops early, at a value whose multiple ``factor`` exceeds ``limit``.
        """
        m, L = self.width, self.L
        known = self._gains.get(m)
        if known is not None:
            return known
        norm = 1.0 / float(np.min(np.diag(L)))  # a lower bound of |L^{-1}|_2
        if factor * norm > limit:
            return norm
        V = np.asfortranarray(np.random.default_rng(0).standard_normal((m, GAIN_VECTORS)))
        for _ in range(GAIN_ITERATIONS):
            V /= np.linalg.norm(V, axis=0)
            V = _TRSM(1.0, L, V, lower=1, overwrite_b=1)  # L^{-1} V, |.| <= |L^{-1}|_2
            norm = max(norm, float(np.linalg.norm(V, axis=0).max()))
            if factor * norm > limit:
                return norm
            V = _TRSM(1.0, L, V, lower=1, trans_a=1, overwrite_b=1)  # L^{-T} L^{-1} V
        self._gains[m] = norm
        return norm

    def base(self, X, dtype):
        # the landmarks converted once, not at every row tile of a prediction or a
        # fit (MNIST, 8,192 float32 landmarks, 10,000 rows: predict 1.55 -> 1.39 s)
        dtype = np.dtype(dtype)
        C = self._landmarks_as.get(dtype)
        if C is None:
            C = self._landmarks_as[dtype] = np.ascontiguousarray(self.C, dtype=dtype)
        return self.fmap.kernel(X, C, dtype)

    def apply(self, coef):
        """``T coef``: ``(m, K)`` from ``(M, K)``."""
        coef = np.asarray(coef, dtype=np.float64)
        return self.scale * scipy.linalg.solve_triangular(
            self.L, coef[:self.width], lower=True, trans="T", check_finite=False)

    def apply_transposed(self, G):
        """``T^T G``: ``(M, K)`` from ``(m, K)``, a new Fortran-ordered array.

        ``scale L^{-1} G`` by one ``trsm`` in the result's own memory, after
        one copy of ``G``: the whitening of every row batch of a fit's
        features (``G = B^T``, ``K`` its rows) made three copies before
        (pendigits, 7,494 rows, 256 landmarks: 19 of its 51 ms).
        """
        rows = _TRSM(self.scale, self.L, np.array(G, dtype=np.float64, order="F"), lower=1,
                     overwrite_b=1)
        if self.M == self.width:
            return rows
        out = np.zeros((self.M, G.shape[1]), order="F")  # zero rows: features past the landmarks
        out[:self.width] = rows
        return out

    def sample_rows(self, dtype=np.float64):
        """``Phi`` at the landmarks, ``scale L`` (``m x M``, a new Fortran-ordered array in ``dtype``).

        ``k(C, C) = L L^T`` up to the jitter, so ``k(C, C) T = scale L``: no
        kernel values and no triangular solves (FALKON builds its
        preconditioner from these rows).  Scaled straight into the result,
        so a float32 copy needs no float64 temporary of its size.
        """
        out = np.zeros((self.width, self.M), dtype=dtype, order="F")
        np.multiply(self.L, self.scale, out=out[:, :self.width], casting="same_kind")
        return out

    def norm(self, limit=math.inf):
        """``|T|_2 = scale |L^{-1}|_2``, by :meth:`rounding_gain`'s power iterations (kept alike).

        Above ``limit``, possibly only the lower bound ``scale / min L_ii``.

        Examples
        --------
        >>> from onlinekernel import get_feature_map
        >>> X = np.random.default_rng(0).normal(size=(300, 20))
        >>> f = get_feature_map("nystrom", n_components=32, gamma=0.02).bind(20).fit(X, 0, 1)
        >>> f = f.linear_factor(0, 1)
        >>> T = f.apply(np.eye(32))
        >>> bool(0.98 * np.linalg.norm(T, 2) <= f.norm() <= np.linalg.norm(T, 2) * (1 + 1e-12))
        True
        """
        return self.scale * self._inverse_norm(limit, self.scale)

    def transposed_gram(self, A):
        """``T^T A T`` (``M x M``, C-ordered) for a symmetric ``m x m`` ``A``: two ``trsm``.

        The Gram matrix of ``Phi = B T`` from ``A = B^T D B``; zero rows and
        columns for features past the landmarks.

        Examples
        --------
        >>> from onlinekernel import get_feature_map
        >>> X = np.random.default_rng(0).normal(size=(300, 3))
        >>> f = get_feature_map("nystrom", n_components=16, gamma=0.5).bind(3).fit(X, 0, 1)
        >>> f = f.linear_factor(0, 1)
        >>> B = f.base(X, np.float64); Phi = B @ f.apply(np.eye(16))
        >>> bool(np.allclose(f.transposed_gram(B.T @ B), Phi.T @ Phi))
        True
        """
        m = self.width
        # T^T A T = scale^2 L^{-1} (L^{-1} A)^T: A is symmetric
        half = _TRSM(self.scale, self.L, np.array(A, dtype=np.float64, order="F"), lower=1,
                     overwrite_b=1)
        inner = _TRSM(self.scale, self.L, np.asfortranarray(half.T), lower=1, overwrite_b=1)
        out = np.zeros((self.M, self.M))
        out[:m, :m] = inner
        out[:m, :m] += inner.T  # symmetric to rounding: its two triangles averaged
        out[:m, :m] *= 0.5
        return out

    def typical_row_norm2(self):
        """``|B_x|^2`` of a typical row: the mean ``sum_c k(c', c)^2`` over (at most 256) landmarks ``c'``.

        The landmarks are rows of the data, so theirs estimate the rows'
        (what :class:`~onlinekernel.solvers.FeatureOperator` predicts the
        rounding of ``B^T D B`` from before it forms it).

        Examples
        --------
        >>> from onlinekernel import get_feature_map
        >>> X = np.random.default_rng(0).normal(size=(300, 3))
        >>> f = get_feature_map("nystrom", n_components=16, gamma=0.5).bind(3).fit(X, 0, 1)
        >>> f = f.linear_factor(0, 1)
        >>> K = f.base(f.C, np.float64)
        >>> bool(np.isclose(f.typical_row_norm2(), np.mean(np.sum(K ** 2, axis=1))))
        True
        """
        if self._row_norm2 is None:
            C = self.C[::-(-self.width // ROW_NORM_LANDMARKS)]  # at most that many
            K = self.base(C, np.float64)
            self._row_norm2 = float(np.einsum("ij,ij->", K, K)) / C.shape[0]
        return self._row_norm2


cdef class Nystrom(CyFeatureMap):
    r"""Nystrom features of any registered kernel, with landmarks chosen from data.

    The only built-in map whose parameters are not a function of
    ``(seed, block)`` alone: :meth:`fit` chooses ``M = n_blocks * F``
    landmark rows :math:`c_1 .. c_M` of the training data (by the model's
    seed) and factors :math:`K_{CC} + \lambda I = L L^\top` (Cholesky, with
    a relative jitter :math:`\lambda`).  The features are

    .. math:: \phi(x) = \sqrt{M}\, L^{-1} k(C, x),

    so that :math:`\frac1M \sum_k \phi_k(x)\phi_k(x') = k(x, C)
    (K_{CC} + \lambda I)^{-1} k(C, x')`, the Nystrom approximation of
    :math:`k(x, x')` -- exact at the landmarks, and the same kernel as
    scikit-learn's ``Nystroem`` (which whitens by :math:`K_{CC}^{-1/2}`, a
    rotation of these features: ridge fits with an identity penalty are the
    same).  Because :math:`L^{-1}` is lower triangular, feature ``k``
    depends on the first ``k + 1`` landmarks only: block ``j`` (features
    ``jF .. jF + F - 1``) is the part of :math:`k(c, \cdot)` for the block's
    landmarks orthogonal, in the kernel's feature space, to the landmarks of
    the blocks before it.  The blocks are thus those of one Nystrom
    approximation of all ``M`` landmarks (not an ensemble of small ones),
    and the estimators' block structure -- the solvers' tiles, the SGD
    solver adding a block per step -- works unchanged.  The first blocks
    carry most of the kernel; later ones refine it.

    A fitted map holds input rows (the landmarks): it is stored with the
    model, in pickles and in model files, the one case where a model holds
    rows of the training data.

    Parameters
    ----------
    n_components : int, default=256
        Features (and landmarks) per block.
    gamma : float, default=1.0
        Bandwidth passed to the base kernel when it takes a ``gamma`` (the
        estimators resolve ``gamma="scale"`` before); ignored otherwise, as
        the estimators ignore it for maps without one.
    base_kernel : str, default="gaussian"
        The registered feature map whose exact kernel (its ``kernel(X, Y)``
        method) is approximated: ``gaussian``, ``laplacian``, ``matern``,
        ``arccos``, ``poly_sketch`` or any plugin's map that has one.
        (Not called ``kernel``: maps expose their exact kernel as the method
        ``kernel(X, Y)``, which this map does too.)
    base_params : dict or None, default=None
        Further parameters of the base kernel (``{"nu": 1.5}`` for
        ``matern``, ``{"degree": 2}`` for ``poly_sketch``).
    sampling : {"uniform", "kmeans++", "leverage"}, default="uniform"
        How landmarks are chosen: uniformly without replacement;
        k-means++ seeding in the kernel's feature space (each next landmark
        drawn with probability proportional to its squared kernel distance
        :math:`k(x,x) + k(c,c) - 2k(x,c)` to the nearest landmark so far);
        or with probability proportional to approximate ridge leverage
        scores :math:`(k(x,x) - k(x,S)(K_{SS} + \lambda' I)^{-1} k(S,x))`
        from a uniform sample ``S`` of ``M`` rows (Alaoui & Mahoney 2015),
        with :math:`\lambda'` a thousandth of the mean :math:`k(x, x)`.
        The last two look at a uniform pool of ``4 M`` rows.
    jitter : float, default=1e-8
        Added to the diagonal of :math:`K_{CC}` relative to its mean; grown
        by factors of 100 (up to 1e-2) when the matrix does not factor.

    Attributes
    ----------
    landmarks_ : ndarray of shape (M, n_features_in)
        The chosen rows (after :meth:`fit`), in the order the features use
        them.
    n_blocks_ : int
        Blocks fitted (0 before :meth:`fit`).

    References
    ----------
    C. Williams, M. Seeger. Using the Nystrom method to speed up kernel
    machines. NIPS 2001.  A. El Alaoui, M. Mahoney. Fast randomized kernel
    ridge regression with statistical guarantees. NIPS 2015.

    Examples
    --------
    >>> from onlinekernel import get_feature_map
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(500, 3))
    >>> fmap = get_feature_map("nystrom", n_components=100, gamma=0.5).bind(3)
    >>> fmap = fmap.fit(X, seed=0, n_blocks=2)
    >>> fmap.landmarks_.shape
    (200, 3)
    >>> Z = np.hstack([fmap.transform_block(0, j, X[:5]) for j in range(2)])
    >>> K = fmap.kernel(X[:5], X[:5])
    >>> bool(np.abs(Z @ Z.T / Z.shape[1] - K).max() < 0.01)
    True

    Through an estimator (``kernel_params`` reach the map):

    >>> from onlinekernel import DSGRegressor
    >>> y = np.sin(X[:, 0]) + X[:, 1] ** 2
    >>> reg = DSGRegressor(kernel="nystrom", n_components=200, block_size=100,
    ...                    kernel_params={"sampling": "kmeans++"}, random_state=0)
    >>> reg = reg.fit(X, y)
    >>> bool(reg.score(X, y) > 0.95)
    True
    """
    name = "nystrom"
    # chooses its landmarks from the training rows: the estimators call fit()
    needs_fit = True
    cdef readonly double gamma
    cdef readonly str base_kernel
    cdef readonly object base_params
    cdef readonly str sampling
    cdef readonly double jitter
    cdef readonly Py_ssize_t n_blocks_
    cdef object _base          # the bound base map (its kernel method)
    cdef object _landmarks     # M x d float64
    cdef object _factor        # L, lower triangular M x M float64 (stored)
    # per block j: sqrt(M) L^{-T}[:e, jF:e], e = (j+1)F; None until a block's
    # features are asked for (the batch solvers and prediction go through
    # linear_factor's triangular solves and never need the M x M inverse)
    cdef object _whiten
    cdef object _whiten_lock
    cdef object _gains         # linear_factor's |L^-1|_2 by width (a dict)

    def __init__(self, Py_ssize_t n_components=256, double gamma=1.0,
                 str base_kernel="gaussian", base_params=None, str sampling="uniform",
                 double jitter=1e-8):
        super().__init__(n_components)
        if not (gamma > 0.0 and math.isfinite(gamma)):
            raise ValueError(f"nystrom: gamma must be a finite number > 0, got {gamma}")
        if sampling not in SAMPLINGS:
            raise ValueError(f"nystrom: sampling must be one of {SAMPLINGS}, got {sampling!r}")
        if not (jitter >= 0.0 and jitter <= MAX_JITTER):
            raise ValueError(f"nystrom: jitter must lie in [0, {MAX_JITTER}], got {jitter}")
        if base_params is not None and not isinstance(base_params, dict):
            raise ValueError(f"nystrom: base_params must be a dict or None, got "
                             f"{type(base_params).__name__}")
        if base_kernel == self.name:
            raise ValueError("nystrom: base_kernel cannot be 'nystrom' itself")
        self.gamma = gamma
        self.base_kernel = base_kernel
        self.base_params = None if base_params is None else dict(base_params)
        self.sampling = sampling
        self.jitter = jitter
        self.parallel_safe = False  # every call takes the GIL (numpy, the base kernel)
        self._whiten_lock = threading.Lock()
        self._base = self._make_base()
        self._unfit()

    def _make_base(self):
        """The base map, built through the registry, with gamma when it takes one."""
        # not through available_feature_maps(): listing the registry builds a
        # default map of every name, this one included (endless recursion)
        from onlinekernel import registry
        params = dict(self.base_params or {})
        try:
            base = registry.get_feature_map(self.base_kernel, **params)
            if "gamma" in base.get_params() and "gamma" not in params:
                base = registry.get_feature_map(self.base_kernel, gamma=self.gamma, **params)
        except ValueError as exc:
            raise ValueError(f"nystrom: base kernel {self.base_kernel!r}: {exc}") from None
        if not hasattr(base, "kernel"):
            raise ValueError(f"nystrom: base kernel {self.base_kernel!r} has no exact kernel "
                             f"function (no kernel(X, Y) method) to build landmarks from")
        return base

    def _unfit(self):
        self.n_blocks_ = 0
        self._landmarks = None
        self._factor = None
        self._forget()

    def _forget(self):
        """Drop what was derived from the factor (a new one replaces it)."""
        self._whiten = None
        self._gains = {}

    def _sizes(self, Py_ssize_t d):
        # a block's "parameters" are its index: the features come from the
        # fitted landmarks and factor the map holds (param_size 1, no scratch)
        return 1, 0

    def bind(self, Py_ssize_t n_features_in):
        """Fix the input dimension; returns self (landmarks of another width are dropped)."""
        if self._landmarks is not None and self._landmarks.shape[1] != n_features_in:
            self._unfit()
        self._base.bind(n_features_in)
        return super().bind(n_features_in)

    @property
    def landmarks_(self):
        if self._landmarks is None:
            raise AttributeError("nystrom: landmarks_ exists after fit()")
        return self._landmarks

    def kernel(self, X, Y, dtype=np.float64):
        """The exact base kernel matrix between the rows of ``X`` and ``Y``, in ``dtype``.

        With ``dtype=float32`` the base kernel is given float32 rows, and a
        base kernel that keeps float32 (the Gaussian family's) computes in
        float32: a float32 model's features and predictions, at half the
        time of float64 where the inner products dominate (d = 784: 10,000
        rows against 8,192 landmarks in 1.0-1.2 s instead of 1.8-2.2 s,
        MNIST's predicted labels unchanged).
        """
        X, Y = (X if sp.issparse(X) else np.asarray(X)), _dense(Y, dtype=dtype)
        out = np.empty((X.shape[0], Y.shape[0]), dtype=dtype)
        # by row tiles, each made dense on its own: a base kernel's temporaries of a
        # tile stay small (the whole 32,000 x 8,192 matrix at once took 3.8x as long:
        # fresh pages for each temporary), and a float32 result or input has no
        # float64 copy of its size
        for s in range(0, X.shape[0], KERNEL_TILE):
            out[s:s + KERNEL_TILE] = self._base.kernel(_dense(X[s:s + KERNEL_TILE],
                                                              dtype=dtype), Y)
        return out

    # ------------------------------------------------------------------ #
    # fitting
    # ------------------------------------------------------------------ #
    def fit(self, X, uint64_t seed, Py_ssize_t n_blocks):
        """Choose ``n_blocks * n_components`` landmarks among the rows of ``X``.

        The choice is a function of ``X``, ``seed`` and the parameters,
        drawn from the package's counter-based streams of ``(seed, 0)``:
        uniform landmarks are the same rows on every machine; k-means++ and
        leverage scores also weigh the rows by kernel values computed with
        BLAS, so they reproduce bit for bit on one machine and, but for
        near-ties, across machines.  The factor :math:`L` is computed by
        LAPACK.  With
        fewer rows than landmarks every row is a landmark (in a random
        order), the features past them are zero and a warning says so.

        Parameters
        ----------
        X : ndarray or scipy CSR matrix of shape (n, n_features_in)
            Training rows, finite.
        seed : int
            The model's seed.
        n_blocks : int
            Blocks of ``n_components`` features to fit.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            If the map is not bound, ``X`` has another width, no rows or
            non-finite values, or ``K_CC`` does not factor even with the
            largest jitter (a base kernel that is not positive definite).
            The map is left as it was.
        """
        self._require_bound()
        if n_blocks < 1:
            raise ValueError(f"nystrom: n_blocks must be >= 1, got {n_blocks}")
        if sp.issparse(X):
            X = X.tocsr()
        else:
            X = np.asarray(X)
        d = self.n_features_in
        if X.ndim != 2 or X.shape[1] != d:
            raise ValueError(f"nystrom: X must have shape (n, {d}), got {X.shape}")
        n = X.shape[0]
        if n < 1:
            raise ValueError("nystrom: fit needs at least one row to choose landmarks from")
        values = X.data if sp.issparse(X) else X
        if not np.isfinite(values).all():
            raise ValueError("nystrom: X holds NaN or infinite values; landmarks must be "
                             "finite rows")
        M = n_blocks * self.n_components
        m = min(M, n)
        if m < M:
            warnings.warn(f"nystrom: {n} rows for {M} landmarks: every row is a landmark, "
                          f"features {m} to {M - 1} are zero; fit (or partial_fit first) on "
                          f"at least {M} rows, or use fewer features", UserWarning,
                          stacklevel=2)
        order = np.argsort(_random.uniform(seed, 0, 0, n), kind="stable")
        if self.sampling == "uniform" or m == n:
            rows = order[:m]
        else:
            pool = order[:min(n, POOL * M)]  # in a random order: P[:m] is a uniform sample
            P = _dense(X, pool)
            pick = (self._kmeanspp(P, m, seed) if self.sampling == "kmeans++"
                    else self._leverage(P, m, seed))
            rows = pool[pick]
        C = _dense(X, rows)
        L = self._factorize(C)
        self._landmarks, self._factor, self.n_blocks_ = C, L, n_blocks
        self._forget()
        return self

    def _diag(self, P):
        """k(x, x) for the rows of P, tile by tile."""
        out = np.empty(P.shape[0])
        for s in range(0, P.shape[0], 256):
            t = P[s:s + 256]
            out[s:s + t.shape[0]] = np.diag(self._base.kernel(t, t))
        return out

    def _kmeanspp(self, P, m, seed):
        """Indices of ``m`` rows of ``P`` by k-means++ seeding in the kernel's feature space."""
        u = _random.uniform(seed, 0, 1, m)
        kxx = self._diag(P)
        chosen = np.empty(m, dtype=np.int64)
        chosen[0] = 0  # the pool is in a random order already: its first row
        D = np.full(P.shape[0], np.inf)
        kc = np.empty(P.shape[0])
        for i in range(1, m):
            c = chosen[i - 1]
            # by row tiles: a base kernel's temporaries of the whole pool are fresh
            # pages at every step (MNIST, 32,768 pool rows: 87 ms a step, 39 ms tiled)
            for s in range(0, P.shape[0], TILE):
                kc[s:s + TILE] = np.asarray(self._base.kernel(P[s:s + TILE], P[c:c + 1]))[:, 0]
            D = np.minimum(D, np.maximum(kxx + kxx[c] - 2.0 * kc, 0.0))
            D[chosen[:i]] = 0.0
            cum = np.cumsum(D)
            total = float(cum[cum.shape[0] - 1])
            if not total > 0.0:  # every pool row coincides with a landmark
                rest = np.setdiff1d(np.arange(P.shape[0]), chosen[:i])
                chosen[i:] = rest[:m - i]
                break
            chosen[i] = min(int(np.searchsorted(cum, u[i] * total, side="right")),
                            P.shape[0] - 1)
        return chosen

    def _leverage(self, P, m, seed):
        """Indices of ``m`` rows of ``P`` drawn without replacement by approximate ridge leverage."""
        S = P[:m]  # the pool is in a random order: a uniform sample
        kxx = self._diag(P)
        lam = 1e-3 * max(float(kxx.mean()), np.finfo(float).tiny)
        Kss = np.asarray(self._base.kernel(S, S)) + lam * np.eye(m)
        L = scipy.linalg.cholesky(Kss, lower=True, check_finite=False)
        score = np.empty(P.shape[0])
        for s in range(0, P.shape[0], TILE):
            B = scipy.linalg.solve_triangular(
                L, np.asarray(self._base.kernel(S, P[s:s + TILE])), lower=True,
                check_finite=False)
            score[s:s + B.shape[1]] = kxx[s:s + B.shape[1]] - (B * B).sum(0)
        score = np.maximum(score, 1e-12 * lam)  # lam * leverage, up to the factor 1/lam
        # Efraimidis-Spirakis: the m largest u^(1/w) are a weighted draw without
        # replacement; ordered by key, the most likely first
        key = np.log(_random.uniform(seed, 0, 2, P.shape[0]) + 1e-300) / score
        return np.argsort(-key, kind="stable")[:m]

    def _factorize(self, C):
        """Cholesky factor of K_CC + jitter * mean(diag) I, the jitter grown until it factors.

        Factored in place (:func:`~onlinekernel.core.cholesky.jittered_cholesky`):
        the kernel's values are symmetric, so its upper triangle is the matrix.
        """
        K = np.ascontiguousarray(self._base.kernel(C, C), dtype=np.float64)
        if K.shape != (C.shape[0], C.shape[0]) or not np.isfinite(K).all():
            raise ValueError(f"nystrom: the base kernel {self.base_kernel!r} gave a "
                             f"non-finite or misshapen matrix on the landmarks")
        level = float(np.mean(np.diag(K)))
        if not level > 0.0:
            raise ValueError(f"nystrom: the base kernel {self.base_kernel!r} has k(x, x) <= 0 "
                             f"on average at the landmarks: not a positive definite kernel")

        def jitters():
            jitter = self.jitter
            while True:
                yield jitter * level
                if jitter >= MAX_JITTER:
                    return
                jitter = min(MAX_JITTER, max(jitter, 1e-12) * JITTER_GROWTH)

        try:
            return jittered_cholesky(K, jitters())[0]
        except np.linalg.LinAlgError:
            raise ValueError(
                f"nystrom: the landmarks' kernel matrix does not factor even with a "
                f"jitter of {MAX_JITTER} of its mean diagonal: the base kernel "
                f"{self.base_kernel!r} is not positive definite") from None

    def _blocks(self):
        """Per block j, the rows ``:e`` and columns ``jF:e`` of ``sqrt(M) L^{-T}``.

        Formed at the first need: ``L^{-T}`` costs ``M^3`` flops (8,192
        landmarks: 12.6 s, more than the rest of the map's fit on kin40k,
        9.6 s), which the batch solvers and the factored prediction never
        pay; the lock makes concurrent first calls compute it once.
        """
        blocks = self._whiten
        if blocks is not None:
            return blocks
        cdef Py_ssize_t F = self.n_components, m, j, e
        with self._whiten_lock:
            if self._whiten is None:
                L = self._factor
                m = L.shape[0]
                T = scipy.linalg.solve_triangular(L, np.eye(m), lower=True,
                                                  check_finite=False).T
                T *= math.sqrt(self.n_blocks_ * F)
                blocks = []
                for j in range((m + F - 1) // F):  # C division (cdivision): no -(-m // F)
                    e = min(m, (j + 1) * F)
                    blocks.append(np.ascontiguousarray(T[:e, j * F:e]))
                self._whiten = blocks
            return self._whiten

    def linear_factor(self, uint64_t seed, Py_ssize_t n_blocks):
        """The first ``n_blocks`` blocks as ``Phi = B T``: FALKON's arrangement for the batch solvers.

        ``B = k(X, C)`` at the landmarks of those blocks and ``T = sqrt(M)
        L^{-T}`` (upper triangular; zero columns for features past the
        landmarks), so :class:`onlinekernel.solvers.FeatureOperator`
        multiplies by ``B`` and applies ``T`` by triangular solves on the
        coefficient side: ``O(n m + m^2 K)`` a product instead of forming
        the whitened features at ``O(n m^2)``.  A float64 model keeps ``B``
        in float32 only where float32 rounding amplified by ``T``'s
        ``rounding_gain`` still reaches the solver's ``tol`` (``L^{-1}``
        amplifies the rounding of kernel values: kin40k, 8,192 landmarks,
        test RMSE 0.1050 against 0.1063 with a float32 ``B``); a float32
        model keeps it in float32.  ``None`` before :meth:`fit` (the seed
        was used there).

        Examples
        --------
        >>> from onlinekernel import get_feature_map
        >>> X = np.random.default_rng(0).normal(size=(50, 2))
        >>> fmap = get_feature_map("nystrom", n_components=8, gamma=0.5).bind(2).fit(X, 0, 2)
        >>> f = fmap.linear_factor(0, 2)
        >>> Phi = np.hstack([fmap.transform_block(0, j, X) for j in range(2)])
        >>> bool(np.allclose(f.base(X, np.float64) @ f.apply(np.eye(16)), Phi))
        True
        """
        if self._landmarks is None or n_blocks > self.n_blocks_:
            return None
        cdef Py_ssize_t M = n_blocks * self.n_components
        cdef Py_ssize_t e = min(M, self._landmarks.shape[0])
        return _Whitening(self, self._landmarks[:e], self._factor[:e, :e],
                          math.sqrt(self.n_blocks_ * self.n_components), M, self._gains)

    # ------------------------------------------------------------------ #
    # the fitted state, for pickles and model files
    # ------------------------------------------------------------------ #
    def fitted_arrays(self):
        """The fitted state as arrays: ``{"landmarks", "factor"}`` (empty before fit)."""
        if self._landmarks is None:
            return {}
        return {"landmarks": self._landmarks, "factor": self._factor,
                "n_blocks": np.array([self.n_blocks_], dtype=np.int64)}

    def set_fitted_arrays(self, arrays):
        """Restore the state :meth:`fitted_arrays` returned; checked first, then set.

        Raises
        ------
        ValueError
            If an array is missing, unknown, of the wrong shape or not finite,
            or the factor is not lower triangular with a positive diagonal.
        """
        if not arrays:
            self._unfit()
            return self
        self._require_bound()
        if set(arrays) != {"landmarks", "factor", "n_blocks"}:
            raise ValueError(f"nystrom: fitted arrays must be landmarks, factor and n_blocks, "
                             f"got {sorted(arrays)}")
        C = np.ascontiguousarray(arrays["landmarks"], dtype=np.float64)
        # Fortran order, as the fit's Cholesky factor is: LAPACK's triangular solves
        # round differently by order, so a loaded or unpickled map whitens (and its
        # linear factor solves) bit for bit as the fitted one, without a copy a call
        L = np.asfortranarray(arrays["factor"], dtype=np.float64)
        nb = np.asarray(arrays["n_blocks"])
        d, F = self.n_features_in, self.n_components
        if nb.shape != (1,) or nb.dtype.kind not in "iu" or not 1 <= int(nb[0]) <= 2 ** 31:
            raise ValueError("nystrom: n_blocks must be one integer >= 1")
        nb0 = int(nb[0])
        m = C.shape[0] if C.ndim == 2 else -1
        if C.ndim != 2 or C.shape[1] != d or not 1 <= m <= nb0 * F:
            raise ValueError(f"nystrom: landmarks must have shape (m, {d}) with 1 <= m <= "
                             f"{nb0 * F}, got {C.shape}")
        if L.shape != (m, m):
            raise ValueError(f"nystrom: the factor must have shape {(m, m)}, got {L.shape}")
        if not (np.isfinite(C).all() and np.isfinite(L).all()):
            raise ValueError("nystrom: landmarks and factor must be finite")
        if np.any(np.triu(L, 1)) or not (np.diag(L) > 0).all():
            raise ValueError("nystrom: the factor must be lower triangular with a positive "
                             "diagonal")
        self._landmarks, self._factor, self.n_blocks_ = C, L, nb0
        self._forget()
        return self

    # ------------------------------------------------------------------ #
    # the protocol
    # ------------------------------------------------------------------ #
    cdef void generate(self, uint64_t seed, uint64_t block, double* params) noexcept nogil:
        # the parameters of a block are its index (the features come from the
        # fitted state); a block past the fitted ones fails in transform
        params[0] = <double>block if block < (<uint64_t>1 << 53) else -1.0

    def _features(self, double block, x):
        """The block's features on the float64 rows ``x`` (n x d), shape (n, F)."""
        cdef Py_ssize_t F = self.n_components
        if self._landmarks is None:
            raise ValueError("nystrom: the map is not fitted: fit(X, seed, n_blocks) chooses "
                             "the landmarks (the estimators do it at the first fit or "
                             "partial_fit)")
        if not (block >= 0 and block < self.n_blocks_):
            raise ValueError(f"nystrom: block {block:.0f} is past the {self.n_blocks_} blocks "
                             f"the landmarks were fitted for")
        j = int(block)
        out = np.zeros((x.shape[0], F))
        blocks = self._blocks()
        if j < len(blocks):
            W = blocks[j]
            Kx = np.asarray(self._base.kernel(x, self._landmarks[:W.shape[0]]),
                            dtype=np.float64)
            out[:, :W.shape[1]] = Kx @ W
        if not np.isfinite(out).all():
            raise FloatingPointError("nystrom: non-finite features (NaN or infinite inputs, "
                                     "or a kernel overflow)")
        return out

    def _into(self, double block, x, out):
        """Write the block's features of rows ``x`` into ``out`` (any float dtype).

        An exception is kept as the pending error (raised when the solver
        call returns) and ``out`` is NaN.
        """
        try:
            out[:, :] = self._features(block, np.asarray(x, dtype=np.float64))
        except BaseException as exc:
            if self.pending is None:
                self.pending = exc
            self.failed = 1
            out[:, :] = np.nan

    cdef void transform(self, const double* params, const double* X, Py_ssize_t n,
                        Py_ssize_t ldx, double* out, double* work) noexcept nogil:
        _rows(self, params[0], X, n, ldx, out)

    cdef void transform_f32(self, const float* params, const float* X, Py_ssize_t n,
                            Py_ssize_t ldx, float* out, float* work) noexcept nogil:
        # the kernel values and the whitening in double precision (_into
        # widens the rows): L^{-1} of a kernel matrix amplifies the rounding
        # of its inputs, which single-precision kernel values would make
        # visible; only the features are rounded
        _rows(self, params[0], X, n, ldx, out)

    def get_params(self, deep=True):
        return {"n_components": self.n_components, "gamma": self.gamma,
                "base_kernel": self.base_kernel, "base_params": self.base_params,
                "sampling": self.sampling, "jitter": self.jitter}

    def __eq__(self, other):
        # the parameters and the width, as for every map (the fitted state is
        # data, not configuration: model files rebuild the map from its name
        # and parameters, then give it the stored landmarks)
        return params_eq(self, other) and self.n_features_in == other.n_features_in

    def __hash__(self):
        params = self.get_params()
        params["base_params"] = tuple(sorted((params["base_params"] or {}).items()))
        return hash((type(self), tuple(sorted(params.items()))))

    def __reduce__(self):
        return (type(self), (), (self.get_params(), self.n_features_in, self.fitted_arrays()))

    def __setstate__(self, state):
        params, d, fitted = state
        self.__init__(**params)
        if d:
            self.bind(d)
            self.set_fitted_arrays(fitted)


cdef void _rows(Nystrom fmap, double block, const real* X, Py_ssize_t n, Py_ssize_t ldx,
                real* out) noexcept nogil:
    """The map's features of n rows (either precision), through ``_into`` under the GIL."""
    cdef Py_ssize_t F = fmap.n_components, d = fmap.n_features_in
    if n == 0:
        return
    with gil:
        fmap._into(block, np.asarray(<const real[:n, :ldx]> X)[:, :d],
                   np.asarray(<real[:n, :F]> out))
