"""Dual coordinate descent for piecewise-linear losses (hinge, quantile, epsilon-insensitive).

Every such loss of the package is, per row and output, a maximum over a
bounded dual variable (the loss's ``dual_form``)::

    loss(y, u) = max over a in [lo, hi] of  a * (r - s * u) - eps * |a|

(hinge: ``r = 1, s = y, [0, 1], eps = 0``; pinball at level ``tau``:
``r = y, s = 1, [tau - 1, tau], eps = 0``; epsilon-insensitive:
``r = y, s = 1, [-1, 1], eps = epsilon``).  For one output the
:class:`~onlinekernel.solvers.problem.Problem` objective
``J(C, b) = sum_i w_i loss(y_i, Phi_i C + b) + lam/2 ||C||^2`` then has the
dual (maximised over the box)::

    D(a) = sum_i w_i (a_i r_i - eps_i |a_i|) - lam/2 ||C(a)||^2,
    C(a) = Phi.T (w s a) / lam,

with the equality constraint ``S(a) = sum_i w_i s_i a_i = 0`` when the
intercept ``b`` is fitted (it is the constraint's multiplier).

Method
------
* Coordinate updates of one ``a_i`` at a time, each exact (a clipped,
  soft-thresholded Newton step: the parabola of the dual in ``a_i`` plus
  ``eps |a_i|`` over ``[lo, hi]``), in a fresh random permutation each
  epoch, keeping ``C(a)`` up to date: one dot product and one axpy of
  length ``M`` per update (Hsieh et al., ICML 2008; the two-sided
  ``eps |a|`` case as in Ho & Lin, JMLR 2012).  The loop is compiled
  (:mod:`onlinekernel.solvers._dual_cd`).
* The unpenalised intercept: LIBLINEAR penalises the bias (a constant
  feature), which changes the objective.  Here the equality constraint is
  handled by an augmented Lagrangian: each epoch minimises
  ``-D(a) + b S(a) + rho/2 S(a)^2`` (the rank-one term costs nothing per
  update), then updates the multiplier ``b <- b + rho S(a)``.  In the
  primal this is the proximal-point method on the intercept, so it
  converges to the exact unpenalised optimum (``rho`` only sets the
  speed; see ``_RHO``).
* Stopping, once per epoch, on a certified duality gap.  The primal side is
  ``min_b J(C(a), b)``, computed exactly (a weighted-median-like search over
  the loss's kinks, one matvec for ``Phi C``).  The dual side needs a point
  with ``S(a) = 0``: the iterate's small residual ``S`` is removed by
  moving the cheapest coordinates (first order) toward their bounds, and
  ``D`` is evaluated exactly at that point.  Since
  ``D(a') <= min J <= J(C, b)``, ``gap / J <= tol`` certifies the objective
  to ``tol`` relative.  The best primal and dual values seen are kept.
* Rows whose coordinate sits at a bound (or at 0 inside the
  ``eps``-kink) with a gradient pushing it outward at the end of an epoch
  are left out of the next epoch; all rows are re-examined every epoch from
  the exact ``Phi C``, so this saves time without affecting the result.

Outputs are independent (the losses are separable over outputs) and solved
one after the other; the certified gap of each output is within ``tol`` of
its own objective, hence the total too.
"""
import numpy as np
from scipy import linalg

from onlinekernel.solvers.problem import Solution
from onlinekernel.solvers._dual_cd import cd_epoch

__all__ = ["solve_dual_cd"]

# Rows per chunk when float32 features are multiplied in float64 (bounds the
# temporary to CHUNK x M doubles: 32 MiB at M = 4096).
_CHUNK = 1024
_TINY = 1e-300
# Weight of the augmented Lagrangian's rank-one term, relative to the mean
# ||Phi_i||^2 / lam: a constant feature of about a sixth of the rows' norm.
# Large enough for the multiplier (the intercept) to settle in a few epochs,
# small enough that one coordinate step barely moves the effective intercept
# (measured on hinge and pinball problems: 0.01 to 0.1 are equally fast,
# 1 is up to twice as slow).
_RHO = 0.03
# Warm start: rows within this fraction of the median distance of a kink
# are taken as the free dual variables, at most _MAX_FREE of them (their
# least-squares recovery costs M * _MAX_FREE^2).
_KINK = 1e-3
_MAX_FREE = 1024


def _dual_form_of(loss):
    """The loss's ``dual_form`` (also through the adapter of a Python loss)."""
    fn = getattr(loss, "dual_form", None)
    if fn is None:
        fn = getattr(getattr(loss, "loss_obj", None), "dual_form", None)
    if fn is None:
        name = getattr(loss, "name", None) or type(loss).__name__
        raise ValueError(
            f"solver 'dual-cd' needs a loss with a dual_form method (a piecewise-linear "
            f"loss such as hinge, quantile, epsilon_insensitive or multi_quantile); "
            f"loss {name!r} has none: use another solver for it")
    return fn


def _check_dual_form(parts, n, K, name):
    out = []
    for label, x in zip(("r", "s", "lo", "hi", "eps"), parts):
        x = np.asarray(x, dtype=np.float64)
        if x.ndim == 1 and K == 1:
            x = x[:, None]
        if x.shape != (n, K):
            raise ValueError(f"{name}.dual_form returned {label} of shape {x.shape}, "
                             f"expected {(n, K)} (rows, outputs)")
        if not np.isfinite(x).all():
            raise ValueError(f"{name}.dual_form returned non-finite {label}")
        out.append(x)
    r, s, lo, hi, eps = out
    if (lo > 0).any() or (hi < 0).any() or (eps < 0).any():
        raise ValueError(f"{name}.dual_form must give lo <= 0 <= hi and eps >= 0")
    return out


def _rows_dot(Phi, rows, v, M):
    """``Phi[rows].T @ v`` in float64, by chunks of rows (no full-size copy)."""
    out = np.zeros(M, dtype=np.float64)
    for k in range(0, len(rows), _CHUNK):
        idx = rows[k:k + _CHUNK]
        out += Phi[idx].astype(np.float64, copy=False).T @ v[k:k + _CHUNK]
    return out


def _loss_values(z, lo, hi, eps):
    """``max_{a in [lo, hi]} a z - eps |a|`` elementwise (``lo <= 0 <= hi``)."""
    return np.maximum(np.maximum(hi * (z - eps), lo * (z + eps)), 0.0)


def _best_intercept(u0, w, r, s, lo, hi, eps, default):
    """``argmin_b sum_i w_i loss_i(u0_i + b)``, exactly.

    The sum is convex and piecewise linear in ``b``; its slope starts at
    ``-sum w |s| (hi if s > 0 else -lo)`` and rises by ``w |s| hi`` at each
    kink ``r - s (u0 + b) = eps`` and by ``w |s| (-lo)`` at each kink
    ``r - s (u0 + b) = -eps``: the minimum is at the first kink where the
    slope becomes non-negative.
    """
    m = (w > 0) & (s != 0)
    if not m.any():
        return default
    w, r, s, lo, hi, eps, u0 = (x[m] for x in (w, r, s, lo, hi, eps, u0))
    ws = w * np.abs(s)
    kinks = np.concatenate(((r - eps) / s - u0, (r + eps) / s - u0))
    jumps = np.concatenate((ws * hi, ws * -lo))
    slope0 = -float(ws @ np.where(s > 0, hi, -lo))
    if slope0 >= 0.0:
        return default
    order = np.argsort(kinks)
    slope = slope0 + np.cumsum(jumps[order])
    k = min(int(np.searchsorted(slope, 0.0, side="left")), len(order) - 1)
    return float(kinks[order[k]])


def _feasible_dual(Phi, a, C, u0, w, r, s, lo, hi, eps, lam, S, M):
    """``D(a')`` at a point ``a'`` of the box with ``S(a') = 0`` near ``a``.

    The residual ``S`` is removed by moving coordinates toward the bound
    that reduces ``|S|``, cheapest first: the cost of coordinate ``i`` per
    unit of ``S`` is its first-order loss of dual value (an upper bound when
    the move crosses ``eps``'s kink at 0).  A point exists: ``a = 0`` has
    ``S = 0``.  ``D(a')`` itself is then evaluated exactly.
    """
    ws = w * s
    need = -S
    sigma = np.sign(need) * np.sign(ws)             # direction of each move
    room = np.where(sigma > 0, hi - a, a - lo)
    cap = np.abs(ws) * np.maximum(room, 0.0)       # the most |S| each row can absorb
    cand = np.flatnonzero((sigma != 0) & (cap > 0))
    s_abs = np.abs(s[cand])
    cost = ((s[cand] * u0[cand] - r[cand]) * sigma[cand] + eps[cand]) / s_abs
    cand = cand[np.argsort(cost)]
    cum = np.cumsum(cap[cand])
    last = min(int(np.searchsorted(cum, abs(need), side="left")), len(cand) - 1)
    take = cap[cand[:last + 1]].copy()
    take[-1] -= cum[last] - abs(need)               # the last row moves part way
    T = cand[:last + 1]
    delta = sigma[T] * take / np.abs(ws[T])
    aT = np.clip(a[T] + delta, lo[T], hi[T])
    delta = aT - a[T]
    a2 = a.copy()
    a2[T] = aT
    d = _rows_dot(Phi, T, ws[T] * delta, M) / lam
    C2 = C + d
    return float(w @ (a2 * r - eps * np.abs(a2))) - 0.5 * lam * float(C2 @ C2)


def _dual_from_primal(Phi, coef0, b, w, r, s, lo, hi, eps, lam, fit_intercept):
    """Dual variables ``a`` (and ``C(a)``) recovered from a primal model ``(coef0, b)``.

    Rows off the loss's kinks get their only subgradient, ``lo`` or ``hi``
    (exact at the optimum).  At the optimum the rows on a kink (at most
    ``M + 1`` generically) are the ones whose ``a`` is free; they are taken
    as the rows within ``_KINK`` times the median distance of a kink, and
    their ``a`` solve ``C(a) = coef0`` (and ``S(a) = 0`` with an intercept)
    in the least-squares sense, then are clipped to the box.  From the exact
    optimum this recovers the optimal dual; from another model it is a start
    that the iterations correct.
    """
    n, M = Phi.shape
    ws = w * s
    z = r - s * (np.asarray(Phi @ np.asarray(coef0, dtype=Phi.dtype), dtype=np.float64) + b)
    a = np.where(z > eps, hi, np.where(z < -eps, lo, 0.0))
    ok = (w > 0) & (s != 0)
    a[~ok] = 0.0
    dist = np.minimum(np.abs(z - eps), np.abs(z + eps))
    cand = np.flatnonzero(ok)
    if cand.size:
        near = cand[dist[cand] <= _KINK * np.median(dist[cand])]
        free = near[np.argsort(dist[near])][:min(M + 1, _MAX_FREE)]
    else:
        free = cand
    if free.size:
        a[free] = 0.0
        nz = np.flatnonzero(a)
        target = lam * np.asarray(coef0, dtype=np.float64) - _rows_dot(Phi, nz, ws[nz] * a[nz], M)
        A = (Phi[free].astype(np.float64) * ws[free, None]).T
        if fit_intercept:
            # S(a) = 0 as one more equation, scaled like a column of Phi
            scale = np.sqrt(np.mean(np.einsum("ij,ij->j", A, A) / ws[free] ** 2))
            A = np.vstack([A, scale * ws[free]])
            target = np.append(target, -scale * float(ws @ a))
        a_free = linalg.lstsq(A, target, lapack_driver="gelsy", cond=1e-10)[0]
        a[free] = np.clip(a_free, lo[free], hi[free])
    nz = np.flatnonzero(a)
    return a, _rows_dot(Phi, nz, ws[nz] * a[nz], M) / lam


def _settled(a, g, lo, hi, eps):
    """Rows whose next coordinate update would certainly not move them.

    ``g`` is the gradient of the smooth part of the (augmented) dual in
    ``a_i`` over ``w_i``; the one-sided slopes of ``g a + eps |a|`` must
    point into the bound (or into the kink at 0).
    """
    at_lo = (a <= lo) & (np.where(lo < 0, g - eps, g + eps) > 0)
    at_hi = (a >= hi) & (np.where(hi > 0, -(g + eps), -(g - eps)) > 0)
    at_zero = (a == 0) & (lo < 0) & (hi > 0) & (np.abs(g) < eps)
    return at_lo | at_hi | at_zero


def _solve_output(Phi, w, r, s, lo, hi, eps, qd, lam, fit_intercept, tol, max_iter, rng,
                  coef0, b0, report=None):
    """Solve one output; returns ``(C, b, epochs, converged, primal, gap)``.

    ``report(epoch, objective, duality_gap)``, if given, is called after
    each epoch with the best primal value and the relative certified gap.
    """
    n, M = Phi.shape
    single = Phi.dtype == np.float32
    ws = w * s
    rows = np.flatnonzero(w > 0)
    a = np.zeros(n)
    C = np.zeros(M)
    b = 0.0
    if coef0 is not None:
        b = float(b0) if fit_intercept else 0.0
        a, C = _dual_from_primal(Phi, coef0, b, w, r, s, lo, hi, eps, lam, fit_intercept)
        u0 = Phi @ (C.astype(np.float32) if single else C)
        S0 = float(ws @ a)
        D0 = (_feasible_dual(Phi, a, C, u0, w, r, s, lo, hi, eps, lam, S0, M)
              if fit_intercept and S0 != 0.0
              else float(w @ (a * r - eps * np.abs(a))) - 0.5 * lam * float(C @ C))
        if not D0 > 0.0:
            # a worse dual start than a = 0 (whose dual value is 0): start cold
            a, C = np.zeros(n), np.zeros(M)
    C_work = C.astype(np.float32) if single else C
    rho = _RHO * float(qd[rows].mean()) if (fit_intercept and rows.size) else 0.0
    S = float(ws @ a)
    best_P, best_D = np.inf, -np.inf
    best_C, best_b = C.copy(), b
    active = rows
    converged = False
    epoch = 0
    for epoch in range(1, max_iter + 1):
        order = rng.permutation(active)
        cd_epoch(Phi, order, w, r, s, lo, hi, eps, qd, a, C, C_work, lam, b, rho, S)
        S = float(ws @ a)          # exact, free of the running sum's rounding
        u0 = np.asarray(Phi @ C_work, dtype=np.float64)
        pen = 0.5 * lam * float(C @ C)
        b_star = _best_intercept(u0, w, r, s, lo, hi, eps, b) if fit_intercept else 0.0
        P = float(w @ _loss_values(r - s * (u0 + b_star), lo, hi, eps)) + pen
        if fit_intercept and S != 0.0:
            D = _feasible_dual(Phi, a, C, u0, w, r, s, lo, hi, eps, lam, S, M)
        else:
            D = float(w @ (a * r - eps * np.abs(a))) - pen
        if P < best_P:
            best_P, best_C, best_b = P, C.copy(), b_star
        best_D = max(best_D, D)
        if report is not None:
            report(epoch, best_P, max(best_P - best_D, 0.0) / max(abs(best_P), _TINY))
        if best_P - best_D <= tol * max(abs(best_P), _TINY):
            converged = True
            break
        if fit_intercept:
            b += rho * S           # the multiplier step of the augmented Lagrangian
        g = s * (u0 + b + rho * S) - r
        active = rows[~_settled(a[rows], g[rows], lo[rows], hi[rows], eps[rows])]
    return best_C, best_b, epoch, converged, best_P, max(best_P - best_D, 0.0)


def solve_dual_cd(problem, tol=1e-4, max_iter=1000, coef=None, intercept=None,
                  random_state=0, callback=None):
    """Exact minimiser of a piecewise-linear loss's risk by dual coordinate descent.

    See the module docstring for the method.  The loss must have
    ``dual_form`` (hinge, quantile, epsilon-insensitive, multi-quantile) and
    the feature matrix must be kept in memory (``problem.features.cached``).
    Float32 features are used as they are: the compiled loop takes float32
    rows and accumulates its dot products in double (BLAS ``dsdot``) against
    a float32 image of the float64 coefficients; no float64 copy of the
    matrix is made.

    Parameters
    ----------
    problem : Problem
        The objective; ``alpha`` must be positive (the dual needs ``lam > 0``).
    tol : float, default=1e-4
        Stop when the certified duality gap is at most ``tol`` times the
        primal objective (checked once per epoch, at the cost of one product
        ``Phi C`` per output).
    max_iter : int, default=1000
        Maximum number of epochs (passes over the rows) per output.
    coef : ndarray of shape (M, K), optional
        Warm start.  The dual variables are not stored with a model, so they
        are recovered from ``(coef, intercept)``: the loss's subgradient for
        rows off a kink, a least-squares fit of ``C(a) = coef`` for the rows
        on one (exact from an optimum; see ``_dual_from_primal``).  The
        iterations restart from those dual variables, so ``coef`` itself is
        not kept; a recovered start worse than the cold one (dual value
        below 0) is ignored.
    intercept : ndarray of shape (K,), optional
        Warm start of the intercept (the multiplier's starting value); used
        only with ``coef`` and ``problem.fit_intercept``.
    random_state : int or None, default=0
        Seed of the ``numpy.random.Generator`` that draws the permutations
        (one generator per output, each with this seed, so that output ``c``
        is bit for bit the solution of the one-output problem of column
        ``c``); the result is deterministic given an int.
    callback : callable, optional
        Called after each epoch as ``callback(n_iter, objective=...,
        duality_gap=...)``: the best primal objective so far and the
        certified duality gap relative to it (with several outputs, also
        ``output=c``, the output being solved, whose epochs count from 1);
        an estimator's ``verbose`` passes its progress printer here.

    Returns
    -------
    Solution
        ``n_iter`` is the largest number of epochs over the outputs,
        ``converged`` whether every output met ``tol`` and
        ``gradient_norm`` the total certified gap over the total primal
        objective.

    Raises
    ------
    ValueError
        If the loss has no ``dual_form``, if the features are not kept in
        memory, or if ``problem.lam <= 0``.

    Examples
    --------
    >>> from onlinekernel import get_feature_map, get_loss
    >>> from onlinekernel.solvers import FeatureOperator, Problem
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 2))
    >>> y = np.where(X[:, 0] * X[:, 1] > 0, 1.0, -1.0)
    >>> fmap = get_feature_map("gaussian", n_components=64, gamma=0.5).bind(2)
    >>> op = FeatureOperator(fmap, 0, 1, X, max_bytes=1 << 30)
    >>> problem = Problem(op, get_loss("hinge"), y[:, None], np.ones(200),
    ...                   alpha=1e-3, fit_intercept=True, n_outputs=1)
    >>> sol = solve_dual_cd(problem, tol=1e-6)
    >>> sol.converged, sol.gradient_norm <= 1e-6
    (True, True)
    >>> U = problem.raw(sol.coef, sol.intercept)
    >>> bool(abs(problem.value(sol.coef, U) - sol.objective) < 1e-12)
    True
    >>> float(np.mean(np.sign(U[:, 0]) == y)) > 0.9
    True
    """
    if not tol >= 0:
        raise ValueError(f"tol must be >= 0, got {tol}")
    max_iter = int(max_iter)
    if max_iter < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter}")
    loss = problem.loss
    dual_form = _dual_form_of(loss)
    features = problem.features
    if not features.cached:
        raise ValueError(
            "solver 'dual-cd' needs the whole feature matrix in memory, but the "
            f"{features.shape[0]} x {features.shape[1]} features do not fit the memory "
            "cap: use solver='sgd' or raise max_memory")
    lam = float(problem.lam)
    if not lam > 0:
        raise ValueError(f"solver 'dual-cd' needs a positive penalty (alpha > 0), got "
                         f"lam = {lam}")
    Phi = features.dense()
    if Phi.dtype not in (np.float32, np.float64):
        Phi = Phi.astype(np.float64)
    Phi = np.ascontiguousarray(Phi)
    n, M = Phi.shape
    K = problem.K
    name = getattr(loss, "name", None) or type(loss).__name__
    r, s, lo, hi, eps = _check_dual_form(dual_form(problem.Y), n, K, name)
    w = np.ascontiguousarray(problem.w, dtype=np.float64)

    # ||Phi_i||^2 / lam in float64, by row batches (no float64 copy of Phi)
    qd = np.empty(n)
    for r0 in range(0, n, _CHUNK):
        P = Phi[r0:r0 + _CHUNK].astype(np.float64, copy=False)
        qd[r0:r0 + _CHUNK] = np.einsum("ij,ij->i", P, P) / lam

    coef0 = None if coef is None else np.asarray(coef, dtype=np.float64).reshape(M, K)
    b0 = np.zeros(K) if intercept is None else np.asarray(intercept, dtype=np.float64)
    C_all = np.zeros((M, K))
    b_all = np.zeros(K)
    n_iter, converged, P_total, gap_total = 0, True, 0.0, 0.0
    for c in range(K):
        col = (np.ascontiguousarray(x[:, c]) for x in (r, s, lo, hi, eps))
        report = None
        if callback is not None:
            def report(epoch, objective, gap, c=c):
                callback(epoch, **({"output": c} if K > 1 else {}), objective=objective,
                         duality_gap=gap)
        C, b, epochs, ok, P, gap = _solve_output(
            # a generator per output, seeded alike: output c of a K-output
            # problem is solved exactly as the one-output problem of column c
            Phi, w, *col, qd, lam, problem.fit_intercept, tol, max_iter,
            np.random.default_rng(random_state),
            None if coef0 is None else coef0[:, c], b0[c], report)
        C_all[:, c], b_all[c] = C, b
        n_iter, converged = max(n_iter, epochs), converged and ok
        P_total, gap_total = P_total + P, gap_total + gap
    objective = problem.value(C_all, problem.raw(C_all, b_all))
    return Solution(coef=C_all, intercept=b_all, n_iter=n_iter, converged=converged,
                    objective=objective, gradient_norm=gap_total / max(abs(P_total), _TINY))
