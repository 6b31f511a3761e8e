# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The compiled loops of the Shrinking Gradient algorithm (Livni et al., 2017).

The model is ``f = c * sum_i beta_i Phi(x_i)`` over the stored points
``x_i``: a global scale ``c`` (a power of 4, so shrinking is one exact
multiplication) times per-point coefficients ``beta`` that never change
once written.  Because ``beta`` is append-only, so is its cumulative sum of
absolute values ``cum``, which is all that sampling an index with
probability ``|alpha_i| / ||alpha||_1`` needs (a binary search).  Since the
last shrink, the sum over rounds of the iterates (for the averaged
predictor) gains ``beta_i * (C - C_i)`` for point ``i``, with ``C`` the
running sum of the scales and ``C_i`` its value when the point was stored
(0 for older points): every round of the stretch has the same scale, so
these are exact.  The caller folds them into its running sums at each
shrink, where the loop returns.  A round therefore costs its ``m`` sampled
(point, feature) pairs and ``O(m log n)``, whatever the history.

Random numbers are counter-based, from the model's seed: the index draws of
round ``t`` are block ``SAMPLE_BLOCK + t`` of the uniform stream, and the
feature of its ``k``-th pair is block ``ESTIMATE_BLOCK + t * 2**24 + k`` of
the feature map, so a fit is reproduced exactly from the seed.
"""
import numpy as np
cimport numpy as cnp
from libc.math cimport fabs
from libc.stdlib cimport malloc, free
from libc.stdint cimport uint64_t, int64_t
from onlinekernel.featuremaps.base cimport CyFeatureMap
from onlinekernel.core.streams cimport ok_fill_uniform
from onlinekernel.core.linalg cimport gemm_rm
from onlinekernel.core.threads import one_blas_thread

cnp.import_array()

# Blocks of the seed's stream space: far above the readout's feature blocks
# (0, 1, ...) and the shuffles (2**62 + epoch) of the estimators.
cdef uint64_t SAMPLE_BLOCK = (<uint64_t>3) << 61
cdef uint64_t ESTIMATE_BLOCK = (<uint64_t>1) << 63
# Pairs per round are indexed by the low 24 bits of the block.
MAX_ESTIMATES = 1 << 24
# Rows per tile of the readout accumulation.
cdef Py_ssize_t TILE = 128


cdef inline Py_ssize_t _draw(const double* cum, Py_ssize_t n, double target) noexcept nogil:
    """The first index i with cum[i] > target (n - 1 if rounding leaves none)."""
    cdef Py_ssize_t lo = 0, hi = n - 1, mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if cum[mid] > target:
            hi = mid
        else:
            lo = mid + 1
    return lo


cdef struct Scratch:
    double* u        # m uniforms
    double* params   # one block of the estimate map
    double* rows     # 2 x d: the sampled point and the new point
    double* out      # 2 x F
    double* work     # 2 x work_per_row


cdef int _scratch_alloc(Scratch* s, CyFeatureMap emap, Py_ssize_t m) noexcept:
    cdef Py_ssize_t d = emap.n_features_in, F = emap.n_components
    s.u = <double*>malloc(max(1, m) * sizeof(double))
    s.params = <double*>malloc(max(1, emap.param_size) * sizeof(double))
    s.rows = <double*>malloc(2 * d * sizeof(double))
    s.out = <double*>malloc(2 * F * sizeof(double))
    s.work = <double*>malloc(max(1, 2 * emap.work_per_row) * sizeof(double))
    return not (s.u == NULL or s.params == NULL or s.rows == NULL or s.out == NULL
                or s.work == NULL)


cdef void _scratch_free(Scratch* s) noexcept:
    free(s.u)
    free(s.params)
    free(s.rows)
    free(s.out)
    free(s.work)


cdef double _estimate(CyFeatureMap emap, uint64_t seed, uint64_t t, Py_ssize_t m,
                      const double* S, const double* beta, const double* cum, Py_ssize_t n,
                      const double* x, Scratch* s) noexcept nogil:
    """EST_SCALAR_PROD (Algorithm 2) of round t for the unscaled beta.

    Returns ``||beta||_1 / m * sum_k sgn(beta_i) psi(x_i; w_k) psi(x; w_k)``
    with ``i ~ |beta_i|`` and a fresh ``w_k`` per pair (with a map whose
    smallest block has F > 1 features, the mean of their F products: an
    unbiased estimate of k(x_i, x) as well).
    """
    cdef Py_ssize_t d = emap.n_features_in, F = emap.n_components
    cdef Py_ssize_t k, i, j
    cdef double total, acc = 0.0, prod
    if n == 0 or m == 0:
        return 0.0
    total = cum[n - 1]
    if total == 0.0:
        return 0.0
    ok_fill_uniform(seed, SAMPLE_BLOCK + t, 0, m, 0.0, 1.0, s.u)
    for j in range(d):
        s.rows[d + j] = x[j]
    for k in range(m):
        i = _draw(cum, n, s.u[k] * total)
        emap.generate(seed, ESTIMATE_BLOCK + (t << 24) + <uint64_t>k, s.params)
        for j in range(d):
            s.rows[j] = S[i * d + j]
        emap.transform(s.params, s.rows, 2, d, s.out, s.work)
        if emap.failed:
            return 0.0
        prod = 0.0
        for j in range(F):
            prod += s.out[j] * s.out[F + j]
        if F > 1:
            prod /= F
        if beta[i] > 0.0:
            acc += prod
        elif beta[i] < 0.0:
            acc -= prod
    return total * acc / m


def _check_emap(CyFeatureMap emap, Py_ssize_t d):
    if emap.n_features_in != d:
        raise ValueError(f"the estimate map is bound to {emap.n_features_in} features, "
                         f"the points have {d}")


def est_scalar_prod(CyFeatureMap emap, uint64_t seed, uint64_t t, const double[:, ::1] support,
                    const double[::1] beta, double scale, const double[::1] x, Py_ssize_t m):
    r"""One EST_SCALAR_PROD estimate of :math:`\langle f, \Phi(x)\rangle`.

    ``f = scale * sum_i beta_i Phi(support_i)``; the random numbers are
    those of round ``t`` for ``seed``, as in a training pass.

    Parameters
    ----------
    emap : CyFeatureMap
        The bound feature map the pairs are drawn from (one feature per
        block for Algorithm 2 exactly).
    seed, t : int
        The model's seed and the round.
    support : ndarray of shape (n, d)
    beta : ndarray of shape (n,)
    scale : float
    x : ndarray of shape (d,)
    m : int
        Sampled (point, feature) pairs.

    Returns
    -------
    float

    Examples
    --------
    >>> from onlinekernel import get_feature_map
    >>> units = get_feature_map("iln", n_components=1).bind(2)   # one unit per pair
    >>> support, beta = np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([2.0, -1.0])
    >>> x = np.array([1.0, 1.0])
    >>> exact = beta @ get_feature_map("iln").kernel(support, x[None])[:, 0]
    >>> E = [est_scalar_prod(units, 0, t, support, beta, 1.0, x, 64) for t in range(400)]
    >>> bool(abs(np.mean(E) - exact) < 4 * np.std(E) / np.sqrt(len(E)))   # unbiased
    True
    """
    cdef Py_ssize_t n = support.shape[0], d = support.shape[1]
    cdef Scratch s
    cdef double e
    if beta.shape[0] != n or x.shape[0] != d:
        raise ValueError("support, beta and x disagree in shape")
    if not 0 <= m <= MAX_ESTIMATES:
        raise ValueError(f"m must be in [0, {MAX_ESTIMATES}], got {m}")
    _check_emap(emap, d)
    cum = np.cumsum(np.abs(np.asarray(beta)))
    cdef const double[::1] c_ = cum
    if not _scratch_alloc(&s, emap, m):
        _scratch_free(&s)
        raise MemoryError()
    try:
        with one_blas_thread:
            with nogil:
                e = _estimate(emap, seed, t, m, &support[0, 0] if n else NULL,
                              &beta[0] if n else NULL, &c_[0] if n else NULL, n, &x[0], &s)
    finally:
        _scratch_free(&s)
    emap.raise_pending()
    return scale * e


def sg_rounds(CyFeatureMap emap, uint64_t seed, const double[:, ::1] X, const double[::1] y,
              const double[::1] sample_weight, const int64_t[::1] order,
              const double[::1] etas, Py_ssize_t m, double threshold, bint fit_intercept,
              double[:, ::1] support, double[::1] beta, double[::1] cum, double[::1] csum_at,
              double[::1] scalars, int64_t[::1] counters, double[::1] estimates=None):
    """Rounds of Algorithm 1 over ``X[order]``, in place; returns the rounds run.

    ``support``, ``beta``, ``cum`` and ``csum_at`` hold ``counters[2]`` stored
    points and have room for one more per round.  ``scalars`` is
    ``[c, C, b, b_sum]`` (the scale, the sum of the scales over the rounds
    since the last shrink, the intercept and its sum over all rounds);
    ``counters`` is ``[t, n_shrinks, n_points]``.  Round ``r`` uses the step
    ``etas[r]``.  A round whose estimate has ``|E| >= threshold`` divides
    ``c`` by 4 and ends the call (for the caller to fold the stretch of
    rounds into its sums and continue with the remaining rows); any other
    stores ``x`` with ``beta = -eta w (E + b - y) / c`` (unless it is 0)
    and, with ``fit_intercept``, moves ``b`` by ``-min(eta, 1) w (E + b - y)``
    (``w`` the row's weight).  ``estimates[r]``, when given, receives the
    round's ``E``.
    """
    cdef Py_ssize_t n_rows = order.shape[0], d = X.shape[1]
    cdef Py_ssize_t cap = support.shape[0]
    cdef Py_ssize_t r, row, n = counters[2], j
    cdef uint64_t t = <uint64_t>counters[0]
    cdef int64_t shrinks = counters[1]
    cdef double c = scalars[0], C = scalars[1], b = scalars[2], b_sum = scalars[3]
    cdef double E, g, a, eta
    cdef double* est = NULL
    cdef Scratch s
    cdef bint stop = False
    if etas.shape[0] < n_rows:
        raise ValueError("one step size per row is needed")
    if support.shape[1] != d or beta.shape[0] < cap or cum.shape[0] < cap \
            or csum_at.shape[0] < cap:
        raise ValueError("the point arrays disagree in shape")
    if cap < n + n_rows:
        raise ValueError(f"room for {cap} points; {n} are stored and {n_rows} rounds may add "
                         f"one each")
    if y.shape[0] != X.shape[0] or sample_weight.shape[0] != X.shape[0]:
        raise ValueError("X, y and sample_weight disagree in length")
    if not 0 <= m <= MAX_ESTIMATES:
        raise ValueError(f"m must be in [0, {MAX_ESTIMATES}], got {m}")
    for r in range(n_rows):
        if not 0 <= order[r] < X.shape[0]:
            raise ValueError(f"order holds row {order[r]} of {X.shape[0]}")
    _check_emap(emap, d)
    if estimates is not None:
        if estimates.shape[0] < n_rows:
            raise ValueError("estimates must have one value per row")
        est = &estimates[0]
    if not _scratch_alloc(&s, emap, m):
        _scratch_free(&s)
        raise MemoryError()
    r = 0
    try:
        with one_blas_thread:
            with nogil:
                while r < n_rows and not stop:
                    row = order[r]
                    eta = etas[r]
                    E = c * _estimate(emap, seed, t, m, &support[0, 0], &beta[0], &cum[0], n,
                                      &X[row, 0], &s)
                    if emap.failed:
                        break
                    if est != NULL:
                        est[r] = E
                    # f_t enters the average with its scale and intercept
                    C += c
                    b_sum += b
                    if fabs(E) >= threshold:
                        c *= 0.25
                        shrinks += 1
                        stop = True
                    else:
                        g = sample_weight[row] * (E + b - y[row])
                        a = -eta * g
                        if a != 0.0:
                            for j in range(d):
                                support[n, j] = X[row, j]
                            beta[n] = a / c
                            cum[n] = (cum[n - 1] if n else 0.0) + fabs(beta[n])
                            csum_at[n] = C
                            n += 1
                        if fit_intercept:
                            # a step of 1 sets b to the row's residual; a larger
                            # one would overshoot and diverge (b is not shrunk)
                            b -= (eta if eta < 1.0 else 1.0) * g
                    t += 1
                    r += 1
    finally:
        _scratch_free(&s)
    emap.raise_pending()
    scalars[0] = c
    scalars[1] = C
    scalars[2] = b
    scalars[3] = b_sum
    counters[0] = <int64_t>t
    counters[1] = shrinks
    counters[2] = n
    return r


def readout_accumulate(CyFeatureMap fmap, uint64_t seed, Py_ssize_t n_blocks,
                       const double[:, ::1] X, const double[:, ::1] G, double[:, ::1] acc):
    """``acc += Phi(X)^T G`` over blocks ``0 .. n_blocks-1`` of ``(fmap, seed)``.

    ``X`` is ``(n, d)``, ``G`` is ``(n, K)`` and ``acc`` is
    ``(n_blocks * F, K)``; row ``j * F + k`` of ``acc`` belongs to feature
    ``k`` of block ``j``, as the coefficients of the DSG estimators.

    Examples
    --------
    >>> from onlinekernel import get_feature_map
    >>> fmap = get_feature_map("iln", n_components=8).bind(3)
    >>> X, G = np.ones((5, 3)), np.ones((5, 1))
    >>> acc = np.zeros((16, 1))
    >>> readout_accumulate(fmap, 7, 2, X, G, acc)
    >>> Z = np.hstack([fmap.transform_block(7, j, X) for j in range(2)])
    >>> bool(np.allclose(acc[:, 0], Z.sum(axis=0)))
    True
    """
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], K = G.shape[1]
    cdef Py_ssize_t F = fmap.n_components, j, r0, rows
    cdef double* params
    cdef double* phi
    cdef double* work
    if fmap.n_features_in != d:
        raise ValueError(f"X has {d} features, the feature map expects {fmap.n_features_in}")
    if G.shape[0] != n or acc.shape[0] != n_blocks * F or acc.shape[1] != K:
        raise ValueError("X, G and acc disagree in shape")
    if n == 0 or n_blocks == 0 or K == 0:
        return
    params = <double*>malloc(max(1, fmap.param_size) * sizeof(double))
    phi = <double*>malloc(TILE * F * sizeof(double))
    work = <double*>malloc(max(1, TILE * fmap.work_per_row) * sizeof(double))
    try:
        if params == NULL or phi == NULL or work == NULL:
            raise MemoryError()
        with one_blas_thread:
            with nogil:
                for j in range(n_blocks):
                    fmap.generate(seed, j, params)
                    r0 = 0
                    while r0 < n and not fmap.failed:
                        rows = min(TILE, n - r0)
                        fmap.transform(params, &X[r0, 0], rows, d, phi, work)
                        gemm_rm(True, False, <int>F, <int>K, <int>rows, 1.0, phi, <int>F,
                                &G[r0, 0], <int>K, 1.0, &acc[j * F, 0], <int>K)
                        r0 += rows
                    if fmap.failed:
                        break
    finally:
        free(params)
        free(phi)
        free(work)
    fmap.raise_pending()
