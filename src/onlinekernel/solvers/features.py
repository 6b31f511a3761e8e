"""The random features of a model as a linear operator, for the batch solvers.

A batch solver needs products with the ``n x M`` feature matrix ``Phi`` of
the training rows (``M = n_blocks * F`` features regenerated from
``(seed, j)``), never ``Phi`` itself.  :class:`FeatureOperator` computes them
row batch by row batch from the regenerated blocks, so the memory it needs is
one batch of rows; when the whole matrix fits in ``max_bytes`` it is
computed once and kept, and every later product is a single BLAS call.

A map whose features are a fixed linear transform of simpler ones, ``Phi =
B T`` (Nystrom features: ``B`` the kernel's values at the landmarks, ``T``
the whitening factor), says so through ``linear_factor`` (see
:class:`FeatureOperator`); the operator then keeps or regenerates ``B`` and
applies ``T`` to the ``M x K`` side of each product.  This is FALKON's
arrangement (Rudi, Carratino & Rosasco 2017): a product costs ``O(n M)``
plus ``O(M^2 K)``, where forming ``Phi`` costs ``O(n M^2)``.
"""
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp

from onlinekernel.core import blas
from onlinekernel.core.threads import one_blas_thread

__all__ = ["FLOAT32_TOL", "FeatureOperator", "as_rows", "factored_gram",
           "factored_gram_may_reach", "float32_reaches", "gram_spread", "rounding_gain"]

#: The smallest ``tol`` an iterative solver reaches on float32 features: their
#: rounding (relative 1e-7 per product) limits the gradient's accuracy.
FLOAT32_TOL = 1e-6
#: How many times its estimated rounding the factored Gram matrix's must be
#: within ``tol``: 3 for the intercept's centring (``s s^T / h`` carries the
#: same amplified rounding twice), 2 to share ``tol`` with the right-hand side.
FACTORED_GRAM_SAFETY = 6.0

# Rows per batch when the matrix is regenerated on every product: large
# enough for BLAS level-3 efficiency, small enough to stay in cache-sized
# memory (2048 rows x 4096 features x 8 bytes = 64 MiB).
_ROWS = 2048
# Bytes of the rows :meth:`FeatureOperator.sandwich` reads twice in a row, so
# that the second read finds them in cache.  On one thread the products' own
# working set (BLAS packs the M x K side) shares the cache, so with several
# outputs a tile of 2 MiB was already too large: measured on 2 MiB of L2 a
# core, 0.8 GB of float64 rows, 4,096 features, time of a product at 512 KiB /
# 2 MiB tiles: K = 1 0.108 / 0.118 s, K = 5 0.182 / 0.347 s, K = 10 0.242 /
# 0.423 s.  Threaded BLAS splits each tile between its threads and wants
# taller ones: two threads, MNIST's 60,000 float32 rows x 8,192 Nystrom
# features, 10 outputs: 2 MiB tiles 0.092 s a product (the fit 41 s), 640 KiB
# 0.142 s (52 s).  Tiles keep at least 16 rows (fewer make the per-call
# overhead count) and 2 K rows (with many outputs the products are bound by
# arithmetic, which wants taller tiles: K = 26, 8,192 features, 52 rows 0.49 s,
# 32 rows 0.52 s).
_SANDWICH_BYTES = 2 ** 19
_SANDWICH_BYTES_THREADED = 2 ** 21


def _sandwich_rows(width, K, itemsize, threads):
    """Rows per tile of :meth:`FeatureOperator.sandwich` for ``threads`` BLAS threads."""
    tile = _SANDWICH_BYTES if threads <= 1 else _SANDWICH_BYTES_THREADED
    return max(16, 2 * K, tile // max(1, width * itemsize))


def float32_reaches(tol, gain=1.0):
    """Whether float32 features whose rounding is amplified ``gain`` times still reach ``tol``.

    Plain features round to float32's relative precision, which bounds the
    gradient's accuracy near :data:`FLOAT32_TOL`; a factored map's features
    ``B T`` carry ``B``'s rounding amplified by ``T`` (the factor's
    ``rounding_gain``, see :class:`FeatureOperator`).  ``tol=None`` (every
    iteration, no tolerance) asks for the model's own precision.

    Examples
    --------
    >>> float32_reaches(1e-4), float32_reaches(1e-4, gain=300.0), float32_reaches(None)
    (True, False, False)
    """
    return tol is not None and tol >= FLOAT32_TOL * gain


def rounding_gain(fmap, seed, n_blocks, tol):
    """How many times ``fmap``'s linear factor amplifies its ``B``'s rounding, for ``tol``.

    The factor's ``rounding_gain`` (see :class:`FeatureOperator`), whose
    estimate stops early once float32 rounding amplified that much can no
    longer reach ``tol``; 1.0 for a map without one (its features round as
    they are), and where ``tol`` rules float32 out whatever the gain.  What
    :func:`onlinekernel.solvers.feature_dtype` weighs, so that the memory a
    solver is allowed and the precision its operator keeps agree.

    Examples
    --------
    >>> from onlinekernel import get_feature_map
    >>> X = np.random.default_rng(0).normal(size=(300, 2))
    >>> rff = get_feature_map("gaussian", n_components=32, gamma=0.5).bind(2)
    >>> rounding_gain(rff, 0, 2, 1e-4)
    1.0
    >>> nys = get_feature_map("nystrom", n_components=64, gamma=0.5).bind(2).fit(X, 0, 2)
    >>> bool(rounding_gain(nys, 0, 2, 1e-4) > 1e-4 / FLOAT32_TOL)  # 128 landmarks in 2-d
    True
    """
    factor = getattr(fmap, "linear_factor", None)
    return _factor_gain(factor(seed, n_blocks) if factor is not None else None, tol)


def _factor_gain(factor, tol):
    """:func:`rounding_gain` of a map's ``linear_factor`` (``None``: no factor)."""
    gain = getattr(factor, "rounding_gain", None)
    if gain is None or not float32_reaches(tol):
        return 1.0
    return float(gain(limit=tol / FLOAT32_TOL))


def _unit_roundoff(dtype):
    # float32 B: its products' batch sums are float32 before they reach float64
    return float(np.finfo(dtype).eps) / 2


def factored_gram_may_reach(factor, dtype, weight, ridge, tol):
    """Whether ``T^T (B^T D B) T`` is predicted to reach ``tol`` with the penalty ``ridge``.

    Before the pass (:meth:`FeatureOperator.gram`): ``tr(B^T D B)`` is
    predicted as ``weight`` (the row weights' sum) times the factor's
    ``typical_row_norm2``, and its rounding ``u |T|^2`` times that must be
    within ``tol * ridge`` after :data:`FACTORED_GRAM_SAFETY`.  False for
    a factor (or ``None``) without ``transposed_gram``, ``norm`` and
    ``typical_row_norm2``, and without a penalty or a ``tol``.
    """
    needs = ("transposed_gram", "norm", "typical_row_norm2")
    if factor is None or not (ridge > 0 and tol > 0) or not all(hasattr(factor, a)
                                                                for a in needs):
        return False
    budget = tol * ridge / FACTORED_GRAM_SAFETY
    trace = weight * factor.typical_row_norm2()  # tr(B^T D B), predicted
    if not trace > 0:
        return False
    u = _unit_roundoff(dtype)
    norm = factor.norm(limit=np.sqrt(budget / (u * trace)))
    return u * norm ** 2 * trace <= budget


def gram_spread(d, G):
    """``sum_i |G_i|^2 / d_i`` over the rows of positive weight ``d``.

    With ``tr(B^T D B)``, it bounds ``|B^T G|`` by Cauchy-Schwarz: what
    :func:`factored_gram` checks the right-hand side's rounding against.
    """
    live = d > 0
    return float(np.sum(np.asarray(G, np.float64)[live] ** 2 / d[live, None]))


def factored_gram(factor, dtype, A, s, PtG, spread, ridge, tol):
    """``Phi``'s ``(A, s, PtG)`` from ``B``'s, or ``None`` where their rounding misses ``tol``.

    ``A = B^T D B``, ``s = B^T d``, ``PtG = B^T G`` (or ``None``) summed
    in ``dtype`` (:meth:`FeatureOperator.gram_terms`), ``spread`` the rows'
    :func:`gram_spread`.  The matrix's error ``u |T|^2 tr(A)`` over the
    penalty, and the right-hand side's ``u |T| sqrt(tr(A) spread)`` over
    ``|T^T B^T G|``, must each be within ``tol`` after
    :data:`FACTORED_GRAM_SAFETY`; then ``(T^T A T, T^T s, T^T PtG)``.
    """
    trace = float(np.trace(A))
    norm = factor.norm()
    u = _unit_roundoff(dtype)
    if u * norm ** 2 * trace * FACTORED_GRAM_SAFETY > tol * ridge:
        return None
    if PtG is not None:
        PtG = factor.apply_transposed(PtG)
        rhs = float(np.linalg.norm(PtG))
        if u * norm * np.sqrt(trace * spread) * FACTORED_GRAM_SAFETY \
                > tol * max(rhs, np.finfo(float).tiny):
            return None
    return (factor.transposed_gram(A), factor.apply_transposed(s[:, None]).ravel(), PtG)


def as_rows(X, dtype):
    """``X`` as the compiled loops take it: a C-contiguous array or a CSR matrix of ``dtype``.

    Sparse input stays sparse (the maps multiply CSR rows by their
    projections); anything else becomes a dense array.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> as_rows([[1, 2]], np.float32).dtype
    dtype('float32')
    >>> as_rows(sp.coo_matrix(np.eye(2)), np.float64).format
    'csr'
    """
    if type(X) is not np.ndarray and sp.issparse(X):  # (issparse: an ABC check, 1-2 us)
        X = X.tocsr()
        return X if X.dtype == dtype else X.astype(dtype)
    return np.ascontiguousarray(X, dtype=dtype)


class FeatureOperator:
    """``Phi`` (``n x M``, the model's features on ``X``) by row batches.

    Parameters
    ----------
    fmap : CyFeatureMap
        The model's feature map, bound to ``X.shape[1]`` inputs.
    seed : int
        The model's seed: block ``j`` is regenerated from ``(seed, j)``.
    n_blocks : int
        Number of blocks, so ``M = n_blocks * fmap.n_components``.
    X : ndarray of shape (n, d)
        The rows, in the model's precision (float32 or float64).
    max_bytes : int
        The largest feature matrix kept in memory; larger ones are
        regenerated on every product.
    n_jobs : int
        Threads that evaluate blocks side by side (the compiled transforms
        release the GIL).
    dtype : {None, float32, float64}
        The features' precision; ``None``: that of ``X``.  float32 features
        of a float64 model halve the memory the iterative solvers read on
        every product (see :func:`onlinekernel.solvers.feature_dtype`).
    tol : float, optional
        The tolerance the solver runs to, which decides whether a factored
        map's ``B`` may be float32 when ``dtype`` is (see Notes); ``None``:
        a float64 model's ``B`` stays float64.

    Notes
    -----
    A map may define ``linear_factor(seed, n_blocks)``, returning ``None`` or an
    object with ``width`` (``m``), ``base(X, dtype)`` (an ``n x m`` array
    ``B``), ``apply(C)`` (``T C``, ``m x K`` from ``M x K``) and
    ``apply_transposed(G)`` (``T^T G``, ``M x K`` from ``m x K``; both
    float64) such that its first ``n_blocks`` blocks are ``Phi = B T``, and
    optionally ``rounding_gain(limit)``, how many times ``T`` amplifies
    ``B``'s relative rounding in ``Phi`` (an estimate, which may stop early
    at any value above ``limit``): a float64 model whose features may be
    float32 (``dtype``) keeps ``B`` in float32 only when float32 rounding
    amplified that much still reaches ``tol`` (:func:`float32_reaches`;
    without ``rounding_gain``, whenever the features may be float32).  A
    float32 model keeps ``B`` in float32, as it asked.  The
    products then go through ``B`` and ``T`` (:meth:`matvec`,
    :meth:`rmatvec`, :meth:`gram`), ``B`` kept within ``max_bytes`` like
    ``Phi``; :meth:`rows` and :meth:`dense` form rows of ``Phi`` itself.  It
    may also define ``sample_rows(dtype)``, rows of ``Phi`` at points of the
    data that cost nothing to form (:meth:`sample_rows`), and, all three
    together, ``transposed_gram(A)`` (``T^T A T``, ``M x M`` from a
    symmetric ``m x m``), ``norm(limit)`` (``|T|_2``, an estimate that may
    stop early above ``limit``) and ``typical_row_norm2()`` (a typical row's
    ``|B_x|^2``): :meth:`gram` then forms ``B^T D B`` instead of whitening
    every row where that reaches its ``tol``.

    Examples
    --------
    >>> from onlinekernel import get_feature_map
    >>> fmap = get_feature_map("gaussian", n_components=8, gamma=0.5).bind(2)
    >>> X = np.random.default_rng(0).normal(size=(5, 2))
    >>> op = FeatureOperator(fmap, seed=7, n_blocks=2, X=X, max_bytes=0)
    >>> op.shape, op.cached
    ((5, 16), False)
    >>> Phi = np.hstack([fmap.transform_block(7, j, X) for j in range(2)])
    >>> bool(np.allclose(op.matvec(np.ones((16, 1))), Phi.sum(1, keepdims=True)))
    True
    """

    def __init__(self, fmap, seed, n_blocks, X, max_bytes, n_jobs=1, dtype=None, tol=None):
        self.fmap = fmap
        self.seed = int(seed)
        self.n_blocks = int(n_blocks)
        self.X = X
        self.dtype = np.dtype(X.dtype if dtype is None else dtype)
        self.F = fmap.n_components
        self.shape = (X.shape[0], self.n_blocks * self.F)
        self.n_jobs = max(1, int(n_jobs))
        self._pool = None
        factor = getattr(fmap, "linear_factor", None)
        self._factor = factor(self.seed, self.n_blocks) if factor is not None else None
        # columns of what the products read: M, or those of B (Phi = B T, T width x M)
        self._width = self.shape[1] if self._factor is None else int(self._factor.width)
        if X.dtype == np.float64 and self.dtype == np.float32 \
                and not float32_reaches(tol, _factor_gain(self._factor, tol)):
            # a factor that amplifies B's rounding (an ill-conditioned T) asks more of
            # a float64 model's B than float32 features (kin40k, 8,192 landmarks, gain
            # 1e5: test RMSE 0.1063 against 0.1050); a well-conditioned one does not
            # (fashion_mnist, 2,048 landmarks, gain 600: the same test error at tol
            # 1e-3, B formed in 2.0 s instead of 3.6); a float32 model asked for
            # float32 (MNIST, 60,000 rows x 8,192 landmarks: B is 1.8 GiB, not 3.7)
            self.dtype = np.dtype(np.float64)
        nbytes = self.shape[0] * max(self.shape[1], self._width) * self.dtype.itemsize
        self.cached = nbytes <= max_bytes
        # what is kept: Phi itself, or B of a factored map (Phi = B T)
        self._Phi = self._stored(0, self.shape[0]) if self.cached else None

    @staticmethod
    def nbytes(n, M, dtype):
        """Bytes of an ``n x M`` feature matrix in ``dtype``."""
        return int(n) * int(M) * np.dtype(dtype).itemsize

    @property
    def factored(self):
        """Whether products go through a map's linear factor (``Phi = B T``)."""
        return self._factor is not None

    def _stored(self, r0, r1):
        """What the products read for rows ``r0:r1``: ``Phi``, or ``B`` when factored."""
        if self._factor is None:
            return self._rows(r0, r1)
        return np.asarray(self._factor.base(self.X[r0:r1], self.dtype), dtype=self.dtype)

    def _whiten(self, B):
        """``B T``: rows of ``Phi`` from rows of ``B``."""
        return self._factor.apply_transposed(np.asarray(B, np.float64).T).T.astype(
            self.dtype, copy=False)

    def _rows(self, r0, r1):
        """``Phi[r0:r1]``, evaluated block by block."""
        X = self.X[r0:r1]
        out = np.empty((r1 - r0, self.shape[1]), dtype=self.dtype)

        def fill(j):
            out[:, j * self.F:(j + 1) * self.F] = self.fmap.transform_block(
                self.seed, j, X, dtype=self.dtype)

        if self.n_jobs > 1 and self.n_blocks > 1 and self.fmap.parallel_safe:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.n_jobs)
            list(self._pool.map(fill, range(self.n_blocks)))
        else:
            for j in range(self.n_blocks):
                fill(j)
        return out

    def rows(self, index):
        """``Phi[index]`` for an array of row indices (a copy)."""
        if self.cached:
            kept = self._Phi[index]
            return kept if self._factor is None else self._whiten(kept)
        sub = FeatureOperator.__new__(FeatureOperator)
        sub.__dict__.update(self.__dict__)
        sub.X = self.X[index]
        return sub._rows(0, len(index))

    def sample_rows(self, dtype=np.float64):
        """Rows of ``Phi`` at points of the data that a factored map forms for free, or None.

        A map's linear factor may offer ``sample_rows(dtype)`` (a new ``s x
        M`` array in ``dtype``, which the caller may overwrite): Nystrom's
        are its landmarks' features, ``sqrt(M) L``.  A preconditioner built
        on them skips the whitening of sampled rows (``O(s m^2)``), FALKON's
        arrangement; in float32 they take half the memory (8,192
        landmarks: 256 MiB).
        """
        rows = getattr(self._factor, "sample_rows", None)
        return None if rows is None else np.asarray(rows(dtype), dtype=dtype)

    def dense(self):
        """The whole ``Phi`` (kept: the operator must be ``cached``), for solvers that index it."""
        if not self.cached:
            raise ValueError("the feature matrix is not kept in memory (above max_bytes)")
        if self._factor is not None:  # formed once: from now on Phi is what is kept
            self._Phi, self._factor = self._whiten(self._Phi), None
            self._width = self.shape[1]
        return self._Phi

    def _kept(self, whole=True):
        """``(r0, r1, P)`` over all rows, ``P`` what the products read (``Phi`` or ``B``)."""
        n = self.shape[0]
        if self.cached and whole:
            yield 0, n, self._Phi
            return
        for r0 in range(0, n, _ROWS):
            r1 = min(n, r0 + _ROWS)
            yield r0, r1, (self._Phi[r0:r1] if self.cached else self._stored(r0, r1))

    def batches(self, whole=True):
        """Yield ``(r0, r1, Phi[r0:r1])`` over all rows.

        A kept matrix comes as one batch unless ``whole=False`` (for products
        that need a temporary of the batch's size).
        """
        for r0, r1, P in self._kept(whole and self._factor is None):
            yield r0, r1, (P if self._factor is None else self._whiten(P))

    def matvec(self, C):
        """``Phi @ C`` for ``C`` of shape ``(M, K)``, float64 ``(n, K)``."""
        if self._factor is not None:
            C = self._factor.apply(np.asarray(C, dtype=np.float64))
        C = np.asarray(C, dtype=self.dtype)
        out = np.empty((self.shape[0], C.shape[1]), dtype=np.float64)
        for r0, r1, P in self._kept():
            blas.matmul(P, C, out=out[r0:r1])
        return out

    def rmatvec(self, G):
        """``Phi.T @ G`` for ``G`` of shape ``(n, K)``, float64 ``(M, K)``."""
        G = np.asarray(G, dtype=self.dtype)
        out = np.zeros((self._width, G.shape[1]), dtype=np.float64)
        for r0, r1, P in self._kept():
            blas.matmul(P.T, G[r0:r1], out=out, accumulate=True)
        return out if self._factor is None else self._factor.apply_transposed(out)

    def sandwich(self, C, weigh):
        """``(Phi.T @ G, Phi @ C)`` where ``G`` is ``weigh`` of ``Phi @ C``, row batch by row batch.

        The product of a Hessian (or any ``Phi^T D Phi C``) in one pass over
        the features: each batch of rows is read for ``V = Phi C`` and again,
        still in cache, for ``Phi^T G``, where the two products
        :meth:`matvec` and :meth:`rmatvec` read the whole matrix twice (and
        regenerate it twice when it is not kept).

        Parameters
        ----------
        C : ndarray of shape (M, K)
        weigh : callable
            ``weigh(r0, r1, V)`` gets the rows' outputs ``V = (Phi @
            C)[r0:r1]`` (float64, ``(r1 - r0, K)``; it may change them in
            place, and what ``V`` holds afterwards is what is returned) and
            returns those rows of ``G``, shape ``(r1 - r0, K)``.

        Returns
        -------
        PtG : ndarray of shape (M, K), float64
        V : ndarray of shape (n, K), float64
            The outputs, as ``weigh`` left them.

        Examples
        --------
        >>> from onlinekernel import get_feature_map
        >>> fmap = get_feature_map("gaussian", n_components=8, gamma=0.5).bind(2)
        >>> X = np.random.default_rng(0).normal(size=(5, 2))
        >>> op = FeatureOperator(fmap, seed=7, n_blocks=2, X=X, max_bytes=1 << 20)
        >>> C = np.ones((16, 1))
        >>> PtG, V = op.sandwich(C, lambda r0, r1, V: 2.0 * V)
        >>> bool(np.allclose(PtG, op.rmatvec(2.0 * op.matvec(C))))
        True
        """
        if self._factor is not None:
            C = self._factor.apply(np.asarray(C, dtype=np.float64))
        C = np.asarray(C, dtype=self.dtype)
        n, K = self.shape[0], C.shape[1]
        V = np.empty((n, K), dtype=np.float64)
        out = np.zeros((self._width, K), dtype=np.float64)
        step = _sandwich_rows(self._width, K, self.dtype.itemsize,
                              one_blas_thread.blas_threads())
        scipy = blas.use_scipy()  # asked once for all the tiles
        for b0, b1, P in self._kept():
            if self.dtype == np.float64 and P.flags.c_contiguous:
                # float64 tiles: scipy's dgemm in place, without matmul's per-call
                # checks and copies (a Nystrom model's B: 8 % a product, tile_products)
                blas.tile_products(P, np.ascontiguousarray(C), step,
                                   lambda r0, r1, Vt, b0=b0: weigh(b0 + r0, b0 + r1, Vt),
                                   V[b0:b1], out)
                continue
            for r0 in range(b0, b1, step):
                r1 = min(b1, r0 + step)
                Pr = P[r0 - b0:r1 - b0]
                Vr = V[r0:r1]
                blas.matmul(Pr, C, out=Vr, scipy=scipy)
                blas.matmul(Pr.T, np.asarray(weigh(r0, r1, Vr), dtype=self.dtype), out=out,
                            accumulate=True, scipy=scipy)
        return (out if self._factor is None else self._factor.apply_transposed(out)), V

    def gram(self, d, G=None, ridge=0.0, tol=0.0):
        """``(Phi.T diag(d) Phi, Phi.T d)`` in float64, for row weights ``d`` of shape ``(n,)``.

        One pass over the rows; each batch is one BLAS level-3 product,
        accumulated in place.  With ``G`` (``n x K``), ``Phi.T G`` from the
        same pass is returned third: the normal equations' right-hand side
        without a second pass (which regenerates the features when they are
        not kept).

        A factored map's rows are whitened first (``B T``, ``O(n m^2)``),
        unless its factor offers ``transposed_gram``, ``norm`` and
        ``typical_row_norm2`` (see Notes of the class): then, where the rounding
        that ``T`` amplifies still lets a solve with the penalty ``ridge``
        reach ``tol``, the pass forms ``B^T D B`` alone and ``T^T (B^T D B)
        T`` after it (no whitening; covtype_binary_sub20k, 128 landmarks: the
        pass 61 -> 28 ms).  Its error is about ``u |T|^2 tr(B^T D B)`` (``u``
        the unit roundoff; measured against long-double sums on five data
        sets, 128-1,024 landmarks, the true error was 1/7-1/17 of that),
        and a solve's relative gradient error is at most that error over
        the penalty: the route is taken where :data:`FACTORED_GRAM_SAFETY`
        times that (the intercept's centring included) is within ``tol``,
        predicted from the factor's ``typical_row_norm2`` before the pass
        and checked on the measured trace after it (the whitened pass
        follows where the check fails).  An ill-conditioned ``T`` makes
        the whitened pass the only one (Nystrom features of 2-d inputs,
        1,024 landmarks: the factored Gram matrix was 7e-5 off, with
        negative eigenvalues of -6e-4 after centring).  ``ridge=0`` (the
        default) always whitens.

        Examples
        --------
        >>> from onlinekernel import get_feature_map
        >>> fmap = get_feature_map("gaussian", n_components=8, gamma=0.5).bind(2)
        >>> X = np.random.default_rng(0).normal(size=(5, 2))
        >>> op = FeatureOperator(fmap, seed=7, n_blocks=2, X=X, max_bytes=0)
        >>> d, G = np.full(5, 0.2), np.ones((5, 1))
        >>> A, s, PtG = op.gram(d, G)
        >>> Phi = op.matvec(np.eye(16))
        >>> bool(np.allclose(A, Phi.T @ (0.2 * Phi)) and np.allclose(PtG, Phi.T @ G))
        True
        """
        d = np.asarray(d, dtype=np.float64)
        if np.any(d < 0):
            raise ValueError("gram needs non-negative row weights (a convex loss)")
        if G is not None:
            G = np.asarray(G, dtype=self.dtype)
        if self._factored_gram_may_reach(d, ridge, tol):
            A, s, PtG = self.gram_terms(d, G, factored=True)
            done = factored_gram(self._factor, self.dtype, A, s, PtG,
                                 None if G is None else gram_spread(d, G), ridge, tol)
            if done is not None:
                return done[:2] if G is None else done
        A, s, PtG = self.gram_terms(d, G, factored=False)
        return (A, s) if G is None else (A, s, PtG)

    def gram_terms(self, d, G, factored):
        """:meth:`gram`'s pass: ``(A, s, PtG)`` over ``Phi``, or over ``B`` of a factored map.

        ``factored``: ``B^T D B``, ``B^T d`` and ``B^T G`` (``PtG`` None
        without ``G``), which :func:`factored_gram` turns into ``Phi``'s
        terms where their rounding allows: sums over rows, so partitions of
        the rows may add theirs up first (the Dask integration does).
        """
        width = self._width if factored else self.shape[1]
        A = np.zeros((width, width), dtype=np.float64, order="F")  # upper triangle, then mirrored
        s = np.zeros(width, dtype=np.float64)
        PtG = None if G is None else np.zeros((width, G.shape[1]), dtype=np.float64)
        # equal weights (a quadratic loss without sample weights) scale the plain
        # Gram matrix: no weighted copy of the rows, and a kept float64 matrix in
        # one syrk (float32 products stay batch-sized: their sums go to float64)
        equal = d.size == 0 or bool(np.all(d == d[0]))
        root = None if equal else np.sqrt(d).astype(self.dtype)
        whole = equal and self.dtype == np.float64
        rows = self._kept(whole) if factored else self.batches(whole)
        for r0, r1, P in rows:
            if G is not None:
                blas.matmul(P.T, G[r0:r1], out=PtG, accumulate=True)
            if equal:
                blas.gram(P, out=A)
                s += P.sum(axis=0, dtype=np.float64)
            else:
                Q = P * root[r0:r1, None]
                blas.gram(Q, out=A)
                s += blas.matmul(Q.T, root[r0:r1, None]).ravel()
        A = blas.mirror_upper(A).T  # C-ordered, as the solvers take it
        if equal and d.size:
            A *= d[0]
            s *= d[0]
        return A, s, PtG

    def _factored_gram_may_reach(self, d, ridge, tol):
        """Whether :meth:`gram`'s factored route is predicted to reach ``tol`` (before its pass)."""
        return factored_gram_may_reach(self._factor, self.dtype, float(d.sum()), ridge, tol)

    def close(self):
        """Release the worker threads and the kept matrix."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
        self._Phi = None
