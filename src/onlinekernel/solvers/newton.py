"""Second-order batch solvers: Cholesky for quadratic losses, Newton-CG for smooth ones.

Both minimise :class:`~onlinekernel.solvers.problem.Problem`'s objective and
stop on the relative gradient norm ``|grad J| <= tol * |grad J(0)|``, the
gradient at the zero model (:meth:`Problem.reference_gradient_norm`: a
warm start does not tighten the rule).

* :func:`solve_cholesky` is for losses of ``curvature = "constant"`` (the
  squared loss): their Hessian ``Phi^T D Phi + lam I`` does not depend on the
  model, so one Newton step from zero is the optimum.  ``Phi^T D Phi`` is
  accumulated in one streamed pass of BLAS level-3 products over row batches
  (memory ``M^2``, never the ``n x M`` features), then solved by Cholesky,
  with the unpenalised intercept eliminated (the weighted-centred Gram
  matrix).  This is kernel ridge regression on the random features.
* :func:`solve_newton_cg` is for ``curvature = "smooth"`` losses (logistic,
  multinomial, squared hinge, Huber): from the best constant model
  (:func:`best_constant`), inexact Newton steps, each solved by
  conjugate gradients on Hessian-vector products
  ``Phi^T (D (Phi v)) + lam v`` (two passes over the features), with an
  Armijo line search on the step (Nocedal & Wright, Algorithm 7.1); after a
  step the search shortened, the next is truncated at twice the accepted
  length (a trust radius, Steihaug's truncation of its CG).  The
  loss's ``hessian_product`` supplies ``D v``.  With enough rows (at least
  ``max(M, M^2 / 4096)``), the conjugate gradients are preconditioned by a Cholesky
  factor of the Hessian on sampled rows (:class:`_Preconditioner`), built
  once for a quadratic loss and, for a smooth one, when a step first needs
  many iterations and again whenever the curvature has moved.  A quadratic
  loss is solved in one Newton step, its conjugate gradients run to ``tol``;
  when they crawl, its factor is rebuilt on more drawn rows where that pays
  (:func:`_grown_size`).
"""
import warnings

import numpy as np
from scipy import linalg

from onlinekernel.core import blas
from onlinekernel.core.cholesky import jittered_cholesky
from onlinekernel.solvers.problem import Problem, Solution

__all__ = ["solve_cholesky", "solve_newton_cg", "best_constant"]

# Preconditioning pays for its ``s M^2 + M^3 / 3`` build (s = M) from about
# M rows at M = 4,096 (measured: ijcnn1 1.8x, covtype_binary_sub20k 1.6x,
# magic04 1.25x, letter 1.1x faster than plain CG); the build grows as M^3
# and a product as n M, so the rows needed grow as M^2: n >= M^2 / 4096.
_PRECONDITION_MIN_ROWS = 4096


def _preconditioning_pays(n, M):
    """Whether ``precondition="auto"`` builds the sampled factor (see above)."""
    return n >= max(M, M * M / _PRECONDITION_MIN_ROWS)
# Rows drawn for the preconditioner, per feature.
_SAMPLE_PER_FEATURE = 1
# ... for a quadratic loss, whose factor is built once: a larger sample, fewer CG steps.
_SAMPLE_PER_FEATURE_QUADRATIC = 2
# The smallest ridge, relative to the Hessian's mean diagonal, for which the
# preconditioner is built in float32.
_FLOAT32_RIDGE = 1e-4
# CG iterations beyond which the preconditioner is rebuilt at the next step.
_STALE_CG = 10
# A quadratic loss's conjugate gradients look every _GROW_CHECK iterations at
# their rate, and draw _GROWTH times as many rows for a new factor when the
# iterations it would save cost more than building it (:func:`_grown_size`).
# Not a smooth loss's: its steps' loose forcing terms leave too few iterations
# to judge a rate by, and a restart lost more than the factor saved (usps,
# 2,048 features, logistic: a step of 37 iterations took 51, the fit 1.3x
# slower).
# The Hessian of a tiny ridge needs many rows to be estimated in its small
# directions: skin_nonskin, 196,046 rows, 2,048 Nystrom features, C = 100
# (alpha 5e-8) took 263 iterations on the landmark rows, 133 on 4,096 drawn
# rows and 22 on 16,384.
_GROW_CHECK = 10
_GROWTH = 4
# What a Hessian product costs per entry of the kept matrix, in flops of the
# factor's build (BLAS level 3): the products read each entry from memory once
# and do 4 K flops on it (measured: about 1 ns an entry, against 30 Gflop/s in
# a Gram matrix on one core).
_PRODUCT_ENTRY_FLOPS = 30
# Added to the diagonal (relative to its mean) when alpha = 0 leaves the
# normal equations singular: the minimum-norm-like solution they then give.
_JITTER = 1e-10
# Retried in order when rounding leaves the normal equations indefinite: the
# Gram matrix of features spanning fewer dimensions than their number (Nystrom
# features beyond the kernel's numerical rank) with a penalty below its rounding.
_JITTERS = (_JITTER, 1e-8, 1e-6, 1e-4)
# The least forcing term of a Newton step, as a fraction of the reduction of the
# gradient norm that reaching tol asks of it (the linear model's residual bounds
# the next gradient only up to the loss's change of curvature: half leaves room).
_FORCING_MARGIN = 0.5
# After a step the line search shortened to t, the next step's length is at most
# this many times the length accepted (a trust radius; measured 1.5 / 2 / 3 on w8a,
# 1,024 features: 15 / 11 / 12 Newton steps).
_RADIUS_GROWTH = 2.0
# Relative differences of the objective within which the line search judges a
# step by the gradient norm instead (rounding of a sum of many terms).
_ROUNDING = 16 * np.finfo(np.float64).eps


def _start(problem, coef, intercept):
    """The solver's start: the given one, else zero coefficients and the best constant.

    A cold start's intercept is the minimiser of the intercept-only risk
    (:func:`best_constant`), as scikit-learn's GLM solvers start: from zero,
    the first Newton steps of an unbalanced logistic problem only move the
    intercept towards the class prior, and their models predict the majority
    class (magic04 and ijcnn1: steps 1 and 2 at 34 % and 9.5 % test error).
    """
    C = np.zeros((problem.M, problem.K)) if coef is None else np.array(coef, dtype=np.float64)
    if intercept is not None:
        b = np.array(intercept, dtype=np.float64)
    elif coef is None and problem.fit_intercept:
        b = best_constant(problem)
    else:
        b = np.zeros(problem.K)
    if not problem.fit_intercept:
        b[:] = 0.0
    return C, b


# Newton steps at most for the intercept-only start, and its relative gradient
# tolerance: to rounding, so that the start is the optimum itself, not where one
# path to it stopped (a weighted problem and its repeated rows, started 1e-10
# apart, took different CG counts and ended 5e-7 apart in a probability at
# tol=1e-10, beyond check_sample_weight_equivalence's rtol of 1e-7).
_CONSTANT_STEPS = 50
_CONSTANT_TOL = 1e-15
# Singular values of its Hessian below this (relative) are its null space: a
# multinomial's equal shift of every output, which the risk does not see and
# the steps from zero never take (rounding of a zero eigenvalue left in, the
# start's outputs drifted by 0.17 along it).
_CONSTANT_RCOND = 1e-10


def best_constant(problem):
    """The constant outputs ``b`` minimising the risk without features, by damped Newton.

    Each step solves ``H p = -g`` on the ``K x K`` Hessian of
    :meth:`Problem.constant_terms` (a least-squares solve: a multinomial's
    is singular along equal shifts of every output), halved until the risk
    decreases.  Costs ``O(n K^2)`` a step, a few steps: a fraction of one
    pass over the features.  A loss whose constant risk has no finite
    minimiser (one class only) stops where the decrease stops.

    Examples
    --------
    >>> from onlinekernel import get_feature_map, get_loss
    >>> from onlinekernel.solvers import FeatureOperator, Problem
    >>> X = np.zeros((4, 1)); y = np.array([[1.0], [1.0], [1.0], [-1.0]])
    >>> fmap = get_feature_map("gaussian", n_components=4, gamma=1.0).bind(1)
    >>> op = FeatureOperator(fmap, seed=0, n_blocks=1, X=X, max_bytes=0)
    >>> p = Problem(op, get_loss("logistic"), y, np.ones(4), 1e-3, True, 1)
    >>> round(float(best_constant(p)[0]), 6) == round(float(np.log(3.0)), 6)
    True
    """
    b = np.zeros(problem.K)
    f, g, H = problem.constant_terms(b)
    g_first = float(np.linalg.norm(g))
    for _ in range(_CONSTANT_STEPS):
        gn = float(np.linalg.norm(g))
        if not gn > _CONSTANT_TOL * g_first:
            break
        p = -np.linalg.lstsq(H, g, rcond=_CONSTANT_RCOND)[0]
        if not float(g @ p) < 0:  # no curvature to use: a gradient step
            p = -g
        t = 1.0
        for _ in range(40):
            ft, gt, Ht = problem.constant_terms(b + t * p)
            # near the optimum the decrease is below the rounding of the risk
            if ft <= f + 1e-4 * t * float(g @ p) or abs(ft - f) <= _ROUNDING * abs(f):
                break
            t *= 0.5
        else:
            break
        last = np.max(np.abs(t * p)) <= 4 * np.finfo(float).eps * (1.0 + np.max(np.abs(b)))
        b, f, g, H = b + t * p, ft, gt, Ht
        if last:  # a step within rounding of b: b is the optimum to doubles
            break
    return b


def solve_cholesky(problem, tol=1e-4, max_iter=1, coef=None, intercept=None, callback=None):
    """Exact minimiser for a quadratic loss: one Newton step solved by Cholesky.

    Parameters
    ----------
    problem : Problem
        Its loss must have ``curvature = "constant"``.
    tol : float, default=1e-4
        Reported, not iterated on: the step is exact up to rounding; the
        relative gradient norm at the solution is returned.
    max_iter : int, default=1
        Unused beyond validation (one step is exact).
    coef, intercept : ndarray, optional
        Ignored: the optimum does not depend on the start.
    callback : callable, optional
        Called once, after the solve, as ``callback(1, objective=...,
        gradient_norm=...)`` (the relative gradient norm at the solution);
        an estimator's ``verbose`` passes its progress printer here.

    Returns
    -------
    Solution

    Examples
    --------
    >>> from onlinekernel import get_feature_map, get_loss
    >>> from onlinekernel.solvers import FeatureOperator, Problem
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 2)); y = np.sin(X[:, :1])
    >>> fmap = get_feature_map("gaussian", n_components=64, gamma=0.5).bind(2)
    >>> op = FeatureOperator(fmap, seed=1, n_blocks=2, X=X, max_bytes=1 << 30)
    >>> p = Problem(op, get_loss("squared"), y, np.ones(200), 1e-6, True, 1)
    >>> sol = solve_cholesky(p)
    >>> sol.converged, sol.gradient_norm < 1e-8
    (True, True)
    """
    if problem.loss.curvature != "constant":
        raise ValueError(f"solver 'cholesky' needs a quadratic loss (curvature='constant'); "
                         f"{_name(problem.loss)} has curvature={problem.loss.curvature!r}")
    M = problem.M
    n = problem.features.shape[0]
    dual = problem.features.cached and n < M
    if dual:
        d, G0 = problem.curvature_weights()
        gb = G0.sum(axis=0) if problem.fit_intercept else np.zeros(problem.K)
        gC = problem.features.rmatvec(G0)  # the gradient at zero: -Phi^T D t
        C, b = _cholesky_dual(problem, d, G0)
        U = problem.raw(C, b)
        grad = problem.gradient(C, U)
        value = problem.value(C, U)
    else:
        A, s, h, gC, gb, risk0 = problem.normal_equations(tol=tol)
        C, b, grad = _cholesky_primal(problem, A, s, h, gC, gb)
        # a quadratic J(x) = J(0) + g0.x + x.H x / 2 has g(x) = g0 + H x, so
        # J(x) = J(0) + x.(g0 + g(x)) / 2: no pass over the features after the
        # solve (its two products with Phi were 16 % of pendigits' 512-feature fit)
        value = risk0 + 0.5 * (float(np.einsum("ij,ij->", C, gC + grad[0]))
                               + float(b @ (gb + grad[1])))
    g = Problem.norm(*grad)
    g0 = max(Problem.norm(gC, gb), np.finfo(float).tiny)
    if callback is not None:
        callback(1, objective=value, gradient_norm=g / g0)
    return Solution(C, b, 1, True, value, g / g0)


def _indefinite():
    return linalg.LinAlgError(
        f"solver 'cholesky': the normal equations are not positive definite even with "
        f"a jitter of {_JITTERS[-1]:g} x their mean diagonal (non-finite features, or "
        f"a negative penalty)")


def _cholesky_primal(problem, A, s, h, gC, gb):
    """``(Phi^T D Phi + lam I) C = -gC`` with the intercept eliminated (``M x M``).

    ``A, s, h, gC, gb`` are :meth:`Problem.normal_equations`'s (``A`` is
    overwritten by the factor); the first of :data:`_JITTERS` whose
    multiple of the mean diagonal, added to the diagonal, lets the
    factorisation through is kept (:func:`~onlinekernel.core.cholesky.jittered_cholesky`:
    in place, a retry restores the matrix from its other triangle, so the
    normal equations are neither copied nor formed again).  Returns ``C``,
    ``b`` and the gradient ``(dJ/dC, dJ/db)`` at them, from the factor:
    with ``L L^T = A_c + (lam + shift) I`` (``A_c`` the weighted-centred
    Gram matrix, ``shift`` the jitter), ``dJ/dC = L L^T C - shift C -
    rhs``, two triangular products (``O(M^2 K)``) where a pass over the
    features costs ``O(n M K)``; the intercept's ``gb + s^T C + h b`` is
    zero by the choice of ``b``, to rounding.  This certifies the solve of
    the normal equations, the way the features' pass did, up to the Gram
    matrix's own rounding.
    """
    M = problem.M
    if h > 0:  # eliminate the intercept: the weighted-centred Gram matrix
        A -= np.outer(s, s) / h
        rhs = -(gC - np.outer(s, gb) / h)
    else:
        rhs = -gC
    A = np.ascontiguousarray(A)  # (a Gram matrix is: no copy)
    mean = max(np.trace(A) / M, 1e-300)
    try:
        L, added = jittered_cholesky(A, (problem.lam + j * mean for j in _JITTERS), clean=False)
    except linalg.LinAlgError:
        raise _indefinite() from None
    shift = added - problem.lam
    C = linalg.cho_solve((L, True), rhs, check_finite=False)
    b = -(gb + s @ C) / h if h > 0 else np.zeros(problem.K)
    gradC = _factor_times(L, C) - shift * C - rhs
    gradb = gb + s @ C + h * b if h > 0 else np.zeros(problem.K)
    return C, b, (gradC, gradb)


def _factor_times(L, X):
    """``L L^T X`` for the Cholesky factor in ``L``'s lower triangle (the upper is not read)."""
    trmm = linalg.get_blas_funcs("trmm", (L, X))
    if L.flags.f_contiguous:
        Y = trmm(1.0, L, X, lower=1, trans_a=1)
        return trmm(1.0, L, Y, lower=1, trans_a=0, overwrite_b=1)
    # a C-ordered L is, read in Fortran order, L^T in the upper triangle
    Y = trmm(1.0, L.T, X, lower=0, trans_a=0)
    return trmm(1.0, L.T, Y, lower=0, trans_a=1, overwrite_b=1)


def _cholesky_dual(problem, d, G0):
    """The same optimum through the ``n x n`` system, for fewer rows than features.

    With ``C = Phi^T a`` (the representer theorem on the features) and
    ``a = D^{1/2} beta``: ``(lam I + D^{1/2} Phi Phi^T D^{1/2}) beta =
    D^{1/2} (t - b)``, where the targets are ``t = -G0 / D``; the unpenalised
    intercept adds the constraint ``sum a = 0``, which fixes ``b``.  The
    first of :data:`_JITTERS` whose multiple of the mean diagonal lets the
    factorisation through is kept (a retry forms the system again from the
    kept row Gram matrix: the common first try makes no extra copy).
    """
    Phi = problem.features.dense()
    n = Phi.shape[0]
    r = np.sqrt(d)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(d[:, None] > 0, -G0 / d[:, None], 0.0)
    for jitter in _JITTERS:
        S = (r[:, None] * problem.row_gram()) * r[None, :]
        S[np.diag_indices(n)] += problem.lam + jitter * max(np.trace(S) / n, 1e-300)
        try:
            factor = linalg.cho_factor(S, lower=True, overwrite_a=True, check_finite=False)
            break
        except linalg.LinAlgError:
            continue
    else:
        raise _indefinite()
    beta = linalg.cho_solve(factor, r[:, None] * t, check_finite=False)
    b = np.zeros(problem.K)
    if problem.fit_intercept and d.sum() > 0:
        v = linalg.cho_solve(factor, r, check_finite=False)
        b = (r @ beta) / (r @ v)
        beta = beta - np.outer(v, b)
    C = np.asarray(Phi.T @ (r[:, None] * beta).astype(Phi.dtype), dtype=np.float64)
    return C, b


def _name(loss):
    return getattr(loss, "name", None) or type(loss).__name__


class _Preconditioner:
    """A Cholesky factor of the Hessian estimated on a sample of rows.

    FALKON's preconditioner (Rudi, Carratino & Rosasco 2017) carried over to
    random features: ``P = Phi_S^T D_S Phi_S + lam I`` on ``s`` rows ``S``
    drawn with probabilities proportional to their curvature (each weighted
    to stand for its share, so ``P`` estimates the Hessian without bias),
    with the intercept as a constant column of ``Phi_S`` (given a small
    ridge so that ``P`` stays definite).  One shared ``P`` serves all ``K``
    outputs, with the mean of their diagonal curvatures: ``K`` factors would
    cost ``K`` times as much, and a preconditioner only has to be close.
    Building it costs ``s M^2 + M^3 / 3`` flops (BLAS level 3); applying it
    two triangular solves, ``2 M^2 K``.  Measured with ``s = M``: the last
    Newton step on ijcnn1 (50k rows, 4,096 features, logistic) needs 28
    conjugate-gradient iterations instead of 219; with ``s = 2 M`` a squared
    loss on kin40k needs 27 instead of hundreds.  A loss of constant
    curvature on a factored map that offers the features of its own sample
    of the data (:meth:`FeatureOperator.sample_rows`: Nystrom's landmarks)
    takes those rows instead, as FALKON does: no whitening of drawn rows
    (kin40k, 32,000 rows and 8,192 Nystrom features: building the
    preconditioner took 9 s instead of 31 s; the solve took 37 Hessian
    products instead of 32).
    """

    def __init__(self, problem, U, size, rng, landmarks=True):
        n = problem.features.shape[0]
        K = problem.K
        # every row's curvature: the mean of its outputs' diagonal curvatures
        diag = np.zeros(n)
        e = np.zeros_like(U)
        for k in range(K):
            e[:, k] = 1.0
            diag += problem.loss.hessian_product(problem.Y, U, e)[:, k]
            e[:, k] = 0.0
        h = np.maximum(diag / K, 0.0) * problem.w
        total = h.sum()
        free = rows = None  # rows: drawn ones, whose features come by chunks
        if landmarks and getattr(problem.loss, "curvature", None) == "constant" \
                and size < n and total > 0:
            # the same curvature on every row: the map's own sample of the data
            # (FALKON's landmarks) estimates the Hessian as well as drawn rows, and
            # its features cost no whitening (kin40k, 8,192 Nystrom features: 22 s of 31);
            # fetched in float32 first, and again in float64 only if the ridge needs it
            free = getattr(problem.features, "sample_rows", lambda dtype: None)(np.float32)
        if free is not None:
            Phi, d = free, np.full(free.shape[0], total / free.shape[0])
        elif size >= n or not total > 0:
            rows, d = np.arange(n), h
        else:
            # rows drawn in proportion to their curvature (importance sampling),
            # so the few rows that carry the Hessian near the optimum are in it;
            # each drawn row stands for total / size of it
            rows, counts = np.unique(rng.choice(n, size=size, p=h / total), return_counts=True)
            d = counts * (total / size)
        if rows is not None:
            Phi = problem.features.rows(rows[:_chunk(problem.M)])  # the rest below
        M = problem.M
        # float32 products, factor and solves are twice as fast (half the
        # memory to read) and a preconditioner need only be close, but
        # float32 rounding (relative 1e-7 of the largest entries) must stay
        # well below the ridge that sets the smallest eigenvalues
        scale = float(d.sum()) * float(np.mean(np.square(Phi[:64], dtype=np.float64)))
        dt = np.float32 if problem.lam >= _FLOAT32_RIDGE * scale else np.float64
        if free is not None and dt == np.float64:
            Phi = free = None  # the float32 rows go before the float64 ones come
            Phi = free = problem.features.sample_rows(np.float64)
        self.fit_intercept = problem.fit_intercept
        size = M + 1 if self.fit_intercept else M
        A = np.empty((size, size), dtype=dt)
        if free is not None and _lower_triangular(Phi):
            # the map's rows are a triangular factor with one weight (Nystrom's
            # sqrt(M) L): w L^T L by LAPACK's lauum, a third of the flops of a
            # product, in place on the rows themselves (8,192 landmarks: 256 MiB in
            # float32, 512 MiB in float64)
            colsum = Phi.sum(axis=0, dtype=np.float64) if self.fit_intercept else None
            G = np.asfortranarray(Phi, dtype=dt)  # the map's new array: lauum overwrites it
            free = Phi = None
            # the Gram matrix in G's lower triangle is A's upper one, all the
            # factorisation reads (A's lower triangle gets G's zeros)
            A[:M, :M] = _triangular_gram(G).T
            del G
            A[:M, :M] *= dt(d[0])
            if self.fit_intercept:
                A[:M, M] = A[M, :M] = colsum * d[0]
                A[M, M] = d.sum()
        else:
            # by chunks of rows: a grown sample's features never all at once
            root = np.sqrt(d).astype(dt)
            step = Phi.shape[0] if rows is None else _chunk(M)
            A[:M, :M + 1] = 0.0
            for r0 in range(0, root.size, step):
                if r0:
                    Phi = problem.features.rows(rows[r0:r0 + step])
                part = root[r0:r0 + step]
                Q = Phi.astype(dt, copy=False) * part[:, None]
                A[:M, :M] += blas.gram(Q)
                if self.fit_intercept:
                    A[:M, M] += blas.matmul(Q.T, part[:, None]).ravel()
            Phi = Q = None
            if self.fit_intercept:
                A[M, :M] = A[:M, M]
                A[M, M] = root @ root
        A[np.diag_indices(M)] += problem.lam
        if self.fit_intercept:
            A[M, M] += max(problem.lam, 1e-12 * max(A[M, M], 1.0))
        scale = max(float(np.trace(A, dtype=np.float64)) / size, 1e-300)
        # float32 rounding can leave A barely indefinite
        try:
            L, _ = jittered_cholesky(A, (j * scale for j in (1e-7, 1e-5, 1e-3)), clean=False)
        except np.linalg.LinAlgError:
            raise linalg.LinAlgError("the sampled Hessian is not positive definite") from None
        self.factor = (L, True)

    def solve(self, rC, rb):
        """``P^{-1} (rC, rb)``."""
        R = np.vstack([rC, rb[None, :]]) if self.fit_intercept else rC
        dt = self.factor[0].dtype
        Z = linalg.cho_solve(self.factor, R.astype(dt, copy=False),
                             check_finite=False).astype(np.float64, copy=False)
        if self.fit_intercept:
            return Z[:-1], Z[-1]
        return Z, np.zeros_like(rb)


def _chunk(M):
    """Drawn rows whose features a preconditioner forms at a time (a quadratic
    loss's first sample: one chunk, as before samples grew)."""
    return _SAMPLE_PER_FEATURE_QUADRATIC * M


def _grown_size(n, M, K, size, used, residual, first, target):
    """Rows of a new preconditioner for a quadratic loss's conjugate gradients, or None.

    After ``used`` iterations the squared residual went from ``first`` to
    ``residual``; at that rate, ``target`` is some iterations away.  A factor
    on ``_GROWTH`` times ``size`` drawn rows (at most ``n``) costs ``s M^2 +
    M^3 / 3`` flops, and restarting the recurrence on it may cost again the
    ``used`` iterations' progress; it is built when the iterations left cost
    more than both (each ``n M`` entries read, :data:`_PRODUCT_ENTRY_FLOPS`
    apiece, or ``4 K`` flops when the outputs make the products
    arithmetic-bound).  A pure
    function of the iteration's numbers, so a fit's bits do not depend on
    the machine's speed.

    Examples
    --------
    >>> # skin_nonskin, 2,048 features: 10 iterations took the residual 1e-3 down,
    >>> # 1e-8 is far: 16,384 rows
    >>> _grown_size(196_046, 2048, 1, 4096, 10, 1e-3, 1.0, 1e-8)
    16384
    >>> # kin40k, 8,192 features: all 32,000 rows would cost hundreds of iterations
    >>> _grown_size(32_000, 8192, 1, 16384, 10, 1e-3, 1.0, 1e-8) is None
    True
    """
    new = min(n, _GROWTH * size)
    if new <= size or residual <= target:
        return None
    rate = (residual / first) ** (1.0 / used) if first > 0 and used > 0 else 1.0
    left = np.inf if rate >= 1.0 or rate <= 0.0 else np.log(target / residual) / np.log(rate)
    build = new * float(M) * M + float(M) ** 3 / 3
    product = float(n) * M * max(_PRODUCT_ENTRY_FLOPS, 4 * K)
    return new if (left - used) * product > build else None


def _lower_triangular(P):
    """Whether ``P`` is square and lower triangular (its strict upper part zero)."""
    if P.ndim != 2 or P.shape[0] != P.shape[1]:
        return False
    # column by column: np.triu would allocate a copy of P (8,192 rows: 2 s)
    return not any(P[:j, j].any() for j in range(1, P.shape[1]))


def _triangular_gram(L):
    """``L^T L`` of a lower triangular ``L`` by LAPACK's ``lauum``, in its lower
    triangle; the strict upper one keeps ``L``'s zeros.  A Fortran-ordered ``L``
    is overwritten (no second ``M x M`` array)."""
    lauum, = linalg.get_lapack_funcs(("lauum",), (L,))
    G, info = lauum(np.asfortranarray(L), lower=1, overwrite_c=1)
    if info != 0:
        raise linalg.LinAlgError(f"lauum failed with info={info}")
    return G


def _cg(problem, U, gC, gb, rtol, max_cg, precond=None, regrow=None, radius=None):
    """Approximately solve ``H p = -g`` by (preconditioned) conjugate gradients from p = 0.

    Stops when the residual's norm is ``rtol`` times the gradient's.  A
    loss whose outputs are separable (``separable_outputs``: its Hessian is
    block diagonal, one block per output) gets one recurrence per output --
    its own step lengths, sharing the Hessian products -- which is ``K``
    independent solves, each as good as CG makes it; one recurrence over all
    outputs would take one step length for blocks of different spectra
    (usps, 4,096 features, squared hinge one-vs-rest on 10 classes: 216
    products instead of 300 over the fit's 10 Newton steps, the fit 1.29x
    faster; fashion_mnist, 2,048 Nystrom features, squared loss: 24 instead
    of 27; the same models).
    ``regrow(used, residual, first, target)``, when given, is asked every
    :data:`_GROW_CHECK` iterations (squared residual norms) for a better
    preconditioner; the recurrence restarts from the current step with the
    one it returns (restarted conjugate gradients converge from any start).
    ``radius``, when given, bounds the step's norm: an iterate beyond it is
    scaled back onto it and ends the recurrence (Steihaug's truncation of a
    trust-region step; CG's iterates grow in norm, so the earlier ones are
    the shorter, more gradient-like steps).
    Returns the step, its raw outputs ``Phi pC + pb`` (summed from the
    directions' outputs that the Hessian products compute anyway, which
    saves the line search a pass over the features; ``None`` when the step
    is the steepest descent) and the number of Hessian products spent.
    """
    per_output = gC.shape[1] > 1 and bool(getattr(problem.loss, "separable_outputs", False))

    def dot(aC, ab, bC, bb):
        if per_output:
            return np.einsum("ij,ij->j", aC, bC) + ab * bb
        return float(np.einsum("ij,ij->", aC, bC) + ab @ bb)

    pC, pb = np.zeros_like(gC), np.zeros_like(gb)
    pU = np.zeros_like(U)
    rC, rb = -gC, -gb
    zC, zb = precond.solve(rC, rb) if precond is not None else (rC, rb)
    dC, db = zC.copy(), zb.copy()
    rz = dot(rC, rb, zC, zb)
    first = float(np.einsum("ij,ij->", rC, rC) + rb @ rb)
    stop = rtol ** 2 * first
    used = 0
    for _ in range(max_cg):
        residual = float(np.einsum("ij,ij->", rC, rC) + rb @ rb)
        if residual <= stop:
            break
        better = (regrow(used, residual, first, stop)
                  if regrow is not None and used and used % _GROW_CHECK == 0 else None)
        if better is not None:
            precond = better
            zC, zb = precond.solve(rC, rb)
            dC, db = zC.copy(), zb.copy()
            rz = dot(rC, rb, zC, zb)
        hC, hb, V = problem.hessian_product(U, dC, db, outputs=True)
        used += 1
        dHd = dot(dC, db, hC, hb)
        if per_output:  # an output already solved has a zero direction
            a = np.divide(rz, dHd, out=np.zeros_like(rz), where=dHd > 0)
        elif dHd <= 0:  # no curvature along d (cannot happen with lam > 0)
            break
        else:
            a = rz / dHd
        pC += a * dC
        pb += a * db
        pU += a * V
        if radius is not None:
            length = Problem.norm(pC, pb)
            if length > radius:
                shrink = radius / length
                pC *= shrink
                pb *= shrink
                pU *= shrink
                break
        rC -= a * hC
        rb -= a * hb
        zC, zb = precond.solve(rC, rb) if precond is not None else (rC, rb)
        rz_new = dot(rC, rb, zC, zb)
        beta = (np.divide(rz_new, rz, out=np.zeros_like(rz), where=rz > 0) if per_output
                else rz_new / rz)
        dC = zC + beta * dC
        db = zb + beta * db
        rz = rz_new
    if not (np.any(pC) or np.any(pb)):
        return -gC, -gb, None, used  # steepest descent when CG made no progress
    return pC, pb, pU, used


def solve_newton_cg(problem, tol=1e-4, max_iter=100, coef=None, intercept=None, max_cg=None,
                    precondition="auto", callback=None):
    """Inexact Newton with conjugate-gradient steps and an Armijo line search.

    Parameters
    ----------
    problem : Problem
        Its loss needs a gradient and ``hessian_product`` (every loss of the
        protocol has one); it converges for ``curvature`` ``"smooth"`` or
        ``"constant"``.
    tol : float, default=1e-4
        Stop when ``|grad J| <= tol * |grad J(0)|`` (at the zero model).
    max_iter : int, default=100
        Newton steps at most.
    coef, intercept : ndarray, optional
        The start (warm start); by default zero coefficients and the
        intercept-only optimum (:func:`best_constant`).
    max_cg : int, optional
        Conjugate-gradient iterations per Newton step (default ``M + 1``, capped
        at 250).
    precondition : bool or "auto", default="auto"
        Precondition the conjugate gradients with the Hessian estimated on
        ``M`` sampled rows (:class:`_Preconditioner`), rebuilt when a step
        needs more than a few iterations.  ``"auto"``: with at least
        ``max(M, M^2 / 4096)`` rows (with fewer, plain CG products cost less
        than building the factor).
    callback : callable, optional
        Called after each Newton step as ``callback(n_iter, objective=...,
        gradient_norm=..., CG_iterations=..., step=...)``: the objective,
        the gradient norm relative to the zero model's, the conjugate-gradient
        iterations the step took and its line-search length; an
        estimator's ``verbose`` passes its progress printer here.

    Returns
    -------
    Solution

    Examples
    --------
    >>> from onlinekernel import get_feature_map, get_loss
    >>> from onlinekernel.solvers import FeatureOperator, Problem
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 2)); y = np.where(X[:, :1] * X[:, 1:] > 0, 1.0, -1.0)
    >>> fmap = get_feature_map("gaussian", n_components=64, gamma=0.5).bind(2)
    >>> op = FeatureOperator(fmap, seed=1, n_blocks=2, X=X, max_bytes=1 << 30)
    >>> p = Problem(op, get_loss("logistic"), y, np.ones(300), 1e-4, True, 1)
    >>> sol = solve_newton_cg(p, tol=1e-6)
    >>> sol.converged, sol.gradient_norm <= 1e-6
    (True, True)
    """
    C, b = _start(problem, coef, intercept)
    max_cg = min(problem.M + 1, 250) if max_cg is None else int(max_cg)
    n = problem.features.shape[0]
    if precondition == "auto":
        precondition = problem.samples_rows and _preconditioning_pays(n, problem.M)
    elif precondition and not problem.samples_rows:
        raise ValueError("precondition=True needs the features of sampled rows, which this "
                         "problem does not give (its rows stay where they are: a distributed "
                         "fit); use precondition='auto' or False")
    rng = np.random.default_rng(0)  # the preconditioner's rows: a fixed seed, reproducible fits
    quadratic = getattr(problem.loss, "curvature", None) == "constant"
    # Early Newton steps of a smooth loss are easy (a few CG iterations):
    # the factor is built once a step needs many, and rebuilt when it does again.
    precond, stale = None, quadratic
    # rows drawn for the factor (a quadratic's grows where the iterations pay for it)
    drawn = (_SAMPLE_PER_FEATURE_QUADRATIC if quadratic else _SAMPLE_PER_FEATURE) * problem.M

    def regrow(used, residual, first, target):
        # a quadratic's factor on more drawn rows, where the iterations it saves pay
        nonlocal drawn
        size = _grown_size(n, problem.M, problem.K, drawn, used, residual, first, target)
        if size is None:
            return None
        drawn = size
        return _Preconditioner(problem, U, size, rng, landmarks=False)
    U = problem.raw(C, b)
    f = problem.value(C, U)
    gC, gb = problem.gradient(C, U)
    gnorm = Problem.norm(gC, gb)
    g0 = problem.reference_gradient_norm(C, b, gnorm)
    converged = False
    radius = None  # no bound on the step until the line search shortens one
    it = 0
    while it < max_iter:
        if gnorm <= tol * g0:
            converged = True
            break
        it += 1
        if precondition and stale:
            precond = _Preconditioner(problem, U, drawn, rng)
        # forcing term: loose solves far from the optimum, tight ones near it;
        # a quadratic's Newton step is its optimum, so it is solved to tol at once.
        # No tighter than half of what reaching tol asks of this step: a last step
        # that starts just above tol needs a small reduction, not sqrt(tol)'s
        # (usps, 1,024 features, 10 classes: its last step took 37 CG iterations
        # to 1e-2 where 0.45 sufficed; the fit 1.2x faster, ijcnn1 and magic04 1.1x)
        rtol = tol * g0 / gnorm if quadratic else min(
            0.5, max(np.sqrt(gnorm / g0), _FORCING_MARGIN * tol * g0 / gnorm))
        pC, pb, dU, used = _cg(problem, U, gC, gb, rtol, max_cg if not quadratic else
                               max(max_cg, 10 * problem.M), precond,
                               regrow if quadratic and precond is not None else None,
                               radius)
        # the curvature moved away from the one P was built at: rebuild it
        stale = used > _STALE_CG and not quadratic
        slope = float(np.einsum("ij,ij->", gC, pC) + gb @ pb)
        if slope >= 0:  # not a descent direction (an inexact Hessian): steepest descent
            pC, pb, dU = -gC, -gb, None
            slope = -gnorm ** 2
        if dU is None:
            dU = problem.features.matvec(pC) + (pb if problem.fit_intercept else 0.0)
        t, g_t = 1.0, None
        for _ in range(60):
            Ct = C + t * pC
            Ut = U + t * dU
            ft = problem.value(Ct, Ut)
            if ft <= f + 1e-4 * t * slope:
                break
            # Near the optimum the decrease (about slope / 2) is below the
            # rounding of J, a sum over the rows whose value depends on the
            # order of the sums (a distributed fit's differs from one
            # machine's): the values cannot judge the step there, the
            # gradient can (as in scikit-learn's NewtonSolver).
            if abs(ft - f) <= _ROUNDING * abs(f):
                g_t = problem.gradient(Ct, Ut)
                if Problem.norm(*g_t) < gnorm:
                    break
                g_t = None
            t *= 0.5
        else:  # no decrease within rounding: this is as close as doubles get
            break
        C, U, f = Ct, Ut, ft
        # a step the line search had to shorten overshot the quadratic model: the
        # next one may be at most _RADIUS_GROWTH times the length accepted (from
        # the constant start, a low-curvature logistic model's full Newton steps
        # overshoot: w8a, 2,048 features, 16 steps -> 13, 0.78 % test error)
        radius = None if t >= 1.0 else _RADIUS_GROWTH * t * Problem.norm(pC, pb)
        if problem.fit_intercept:
            b = b + t * pb
        gC, gb = g_t if g_t is not None else problem.gradient(C, U)
        gnorm = Problem.norm(gC, gb)
        if callback is not None:
            callback(it, objective=f, gradient_norm=gnorm / g0, CG_iterations=used, step=t)
    else:
        converged = gnorm <= tol * g0
    return Solution(C, b, it, converged, f, gnorm / g0)


def solve_lbfgs(problem, tol=1e-4, max_iter=1000, coef=None, intercept=None, callback=None):
    """Limited-memory BFGS (scipy's L-BFGS-B) on the objective and its gradient.

    Needs only the loss's ``loss`` and ``gradient``; stops on the same
    relative gradient norm as :func:`solve_newton_cg`.

    Parameters
    ----------
    problem : Problem
        Its loss needs ``loss`` and ``gradient``; it converges for
        ``curvature`` ``"smooth"`` or ``"constant"``.
    tol : float, default=1e-4
        Stop when ``|grad J| <= tol * |grad J(0)|`` (at the zero model).
    max_iter : int, default=1000
        L-BFGS iterations at most.
    coef, intercept : ndarray, optional
        The start (warm start); by default zero coefficients and the
        intercept-only optimum (:func:`best_constant`).
    callback : callable, optional
        Called after each iteration as ``callback(n_iter, objective=...,
        gradient_norm=...)`` (the gradient norm relative to the zero model's);
        an estimator's ``verbose`` passes its progress printer here.

    Returns
    -------
    Solution

    Examples
    --------
    >>> from onlinekernel import get_feature_map, get_loss
    >>> from onlinekernel.solvers import FeatureOperator, Problem
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 2)); y = np.where(X[:, :1] * X[:, 1:] > 0, 1.0, -1.0)
    >>> fmap = get_feature_map("gaussian", n_components=64, gamma=0.5).bind(2)
    >>> op = FeatureOperator(fmap, seed=1, n_blocks=2, X=X, max_bytes=1 << 30)
    >>> p = Problem(op, get_loss("logistic"), y, np.ones(300), 1e-4, True, 1)
    >>> solve_lbfgs(p, tol=1e-5).converged
    True
    """
    from scipy.optimize import minimize

    C, b = _start(problem, coef, intercept)
    M, K = problem.M, problem.K
    last = {}

    def fun(x):
        Cx = x[:M * K].reshape(M, K)
        bx = x[M * K:] if problem.fit_intercept else np.zeros(K)
        U = problem.raw(Cx, bx)
        gC, gb = problem.gradient(Cx, U)
        last["g"] = Problem.norm(gC, gb)
        last["f"] = problem.value(Cx, U)
        parts = [gC.ravel()] + ([gb] if problem.fit_intercept else [])
        return last["f"], np.concatenate(parts)

    x0 = np.concatenate([C.ravel()] + ([b] if problem.fit_intercept else []))
    fun(x0)
    g0 = problem.reference_gradient_norm(C, b, last["g"])
    state = {"n": 0, "converged": last["g"] <= tol * g0}

    def on_iteration(intermediate_result):
        state["n"] += 1
        if callback is not None:
            callback(state["n"], objective=last["f"], gradient_norm=last["g"] / g0)
        if last["g"] <= tol * g0:
            state["converged"] = True
            raise StopIteration

    if not state["converged"]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            res = minimize(fun, x0, jac=True, method="L-BFGS-B", callback=on_iteration,
                           options={"maxiter": max_iter, "gtol": 0.0, "ftol": 0.0,
                                    "maxcor": 20})
        x0 = res.x
    x = x0
    Cx = x[:M * K].reshape(M, K).copy()
    bx = x[M * K:].copy() if problem.fit_intercept else np.zeros(K)
    U = problem.raw(Cx, bx)
    gC, gb = problem.gradient(Cx, U)
    g = Problem.norm(gC, gb)
    return Solution(Cx, bx, state["n"], bool(state["converged"] or g <= tol * g0),
                    problem.value(Cx, U), g / g0)
