"""Weighted random kitchen sinks: the risk on random features under a norm constraint.

Rahimi & Recht (2008, "Weighted sums of random kitchen sinks: replacing
minimization with randomization in learning", NIPS 21) draw ``M`` random
features and fit their weights by empirical risk minimisation over the ball
``||c||_inf <= radius / M``: a convex problem whose solution is within
``O(radius / sqrt(M) + radius / sqrt(n))`` of the best function of the
kernel's class of ``p``-weighted sums (their Theorem 1, for Lipschitz
losses).  :func:`solve_wrks` minimises :class:`~onlinekernel.solvers.Problem`'s
objective (whose ``alpha`` penalty may be zero) over that ball or over the
Euclidean ball ``||c||_2 <= radius / sqrt(M)`` -- the random-feature RKHS
norm ``sqrt(M) ||c||_2`` (see :mod:`._problem`) at most ``radius``, the
constrained form of ridge regression.  The L-infinity ball lies inside the
L2 ball of the same radius.  With several outputs, each output's
coefficients (a column of ``C``) are constrained on their own; the
intercept is free.
"""
import numpy as np

from onlinekernel.solvers.problem import Problem, Solution

__all__ = ["solve_wrks", "project", "CONSTRAINTS"]

#: The norm balls :func:`solve_wrks` constrains the coefficients to.
CONSTRAINTS = ("linf", "l2")


def project(C, constraint, radius):
    """Euclidean projection of coefficients ``C`` (``M x K``) onto the ball, a new array.

    ``"linf"``: every ``|C[k, j]| <= radius / M`` (a clip); ``"l2"``: every
    column's norm ``<= radius / sqrt(M)`` (a rescaling of the columns outside).

    Examples
    --------
    >>> C = np.array([[3.0], [-0.5], [0.1], [0.0]])
    >>> project(C, "linf", 2.0).ravel()
    array([ 0.5, -0.5,  0.1,  0. ])
    >>> round(float(np.linalg.norm(project(C, "l2", 2.0))), 12)
    1.0
    """
    M = C.shape[0]
    if constraint == "linf":
        bound = radius / M
        return np.clip(C, -bound, bound)
    if constraint == "l2":
        bound = radius / np.sqrt(M)
        norms = np.sqrt(np.einsum("ij,ij->j", C, C))
        shrink = np.where(norms > bound, bound / np.maximum(norms, np.finfo(float).tiny), 1.0)
        return C * shrink
    raise ValueError(f"constraint must be one of {', '.join(map(repr, CONSTRAINTS))}, "
                     f"got {constraint!r}")


def check_ball(constraint, radius):
    """The radius as a float, after checking the constraint name and the radius."""
    if not isinstance(constraint, str) or constraint not in CONSTRAINTS:
        raise ValueError(f"constraint must be one of {', '.join(map(repr, CONSTRAINTS))}, "
                         f"got {constraint!r}")
    try:
        radius = float(radius)
    except (TypeError, ValueError):
        raise ValueError(f"radius must be a positive number, got {radius!r}") from None
    if not (np.isfinite(radius) and radius > 0):
        raise ValueError(f"radius must be a positive finite number, got {radius!r}")
    return radius


def _lipschitz(problem, U, rng, steps=8):
    """An estimate of the largest Hessian eigenvalue at ``U`` (power iteration)."""
    V = rng.standard_normal((problem.M, problem.K))
    vb = np.zeros(problem.K)
    lam = 0.0
    for _ in range(steps):
        nv = Problem.norm(V, vb)
        if nv == 0:
            break
        V, vb = V / nv, vb / nv
        hC, hb = problem.hessian_product(U, V, vb)
        lam = Problem.norm(hC, hb)
        V, vb = hC, (hb if problem.fit_intercept else vb)
    return lam


def solve_wrks(problem, tol=1e-4, max_iter=1000, coef=None, intercept=None, callback=None,
               constraint="linf", radius=10.0):
    """Minimise the regularised risk with the coefficients in a norm ball.

    Accelerated projected gradient (FISTA, Beck & Teboulle 2009) with a
    backtracking step and the gradient restart of O'Donoghue & Candès
    (2015): each iteration is a gradient (two products with the features)
    and a projection (:func:`project`).  It stops on the projected-gradient
    (gradient-mapping) norm ``|(x - P(x - g / L)) L|`` relative to its value
    at the start, ``<= tol``, which for an inactive constraint is the
    relative gradient norm the other solvers stop on.

    Parameters
    ----------
    problem : Problem
        Any loss with ``gradient`` and ``hessian_product``; it converges
        for a convex loss of ``curvature`` ``"constant"`` or ``"smooth"``.
    tol : float, default=1e-4
        Stop when the gradient mapping's norm is at most ``tol`` times the
        start's.
    max_iter : int, default=1000
        Iterations (gradient steps) at most.
    coef, intercept : ndarray, optional
        The start (warm start; projected onto the ball); zero by default.
    callback : callable, optional
        Called after each iteration as ``callback(n_iter, objective=...,
        gradient_norm=..., step=...)``: the objective at the iterate, its
        relative projected-gradient norm and the step ``1 / L``; an
        estimator's ``verbose`` passes its progress printer here.
    constraint : {"linf", "l2"}, default="linf"
        ``"linf"``: ``|c_k| <= radius / M`` for every coefficient (Rahimi &
        Recht 2008); ``"l2"``: ``sqrt(M) |c|_2 <= radius`` per output (the
        random-feature RKHS norm).
    radius : float, default=10.0
        The ball's radius ``C`` (the paper's bound on the weighted sum's norm).

    Returns
    -------
    Solution
        ``gradient_norm`` is the relative projected-gradient norm.

    Examples
    --------
    >>> from onlinekernel import get_feature_map, get_loss
    >>> from onlinekernel.solvers import FeatureOperator, Problem
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 2)); y = np.sin(2 * X[:, :1])
    >>> fmap = get_feature_map("gaussian", n_components=32, gamma=0.5).bind(2)
    >>> op = FeatureOperator(fmap, seed=1, n_blocks=2, X=X, max_bytes=1 << 30)
    >>> p = Problem(op, get_loss("squared"), y, np.ones(300), 0.0, True, 1)
    >>> sol = solve_wrks(p, tol=1e-4, max_iter=5000, radius=5.0)
    >>> sol.converged, bool(np.abs(sol.coef).max() <= 5.0 / 64)
    (True, True)
    """
    radius = check_ball(constraint, radius)
    M, K = problem.M, problem.K
    C = np.zeros((M, K)) if coef is None else np.array(coef, dtype=np.float64)
    C = project(C, constraint, radius)
    b = np.zeros(K) if intercept is None or not problem.fit_intercept else \
        np.array(intercept, dtype=np.float64)
    free_b = problem.fit_intercept
    rng = np.random.default_rng(0)  # the power iteration's start: reproducible fits
    # the objective's rounding (float32 features: relative 1e-7), within which
    # the backtracking test cannot tell a step's decrease
    eps = 8 * np.finfo(getattr(problem.features, "dtype", np.float64)).eps

    U = problem.raw(C, b)
    f = problem.value(C, U)
    gC, gb = problem.gradient(C, U)
    L = max(_lipschitz(problem, U, rng), np.finfo(float).tiny)

    def mapping(Cx, bx, gCx, gbx, Lx):
        """The projected step from ``(Cx, bx)`` and the gradient mapping's norm."""
        Cn = project(Cx - gCx / Lx, constraint, radius)
        bn = bx - gbx / Lx if free_b else bx
        return Cn, bn, Lx * Problem.norm(Cx - Cn, bx - bn)

    _, _, g0 = mapping(C, b, gC, gb, L)
    g0 = max(g0, np.finfo(float).tiny)
    gnorm = g0
    # FISTA's extrapolated point (YC, yb) with its outputs and gradient
    YC, yb, UY, fY, gYC, gYb = C, b, U, f, gC, gb
    tk = 1.0
    converged, it = gnorm <= tol * g0, 0
    while not converged and it < max_iter:
        it += 1
        for _ in range(60):  # backtracking: the quadratic model must bound f
            Cn, bn = project(YC - gYC / L, constraint, radius), (yb - gYb / L if free_b else yb)
            dC, db = Cn - YC, bn - yb
            Un = problem.raw(Cn, bn)
            fn = problem.value(Cn, Un)
            model = fY + float(np.einsum("ij,ij->", gYC, dC) + gYb @ db) \
                + 0.5 * L * Problem.norm(dC, db) ** 2
            if fn <= model + eps * abs(fY):
                break
            L *= 2.0
        else:
            break  # no decrease within rounding
        gnC, gnb = problem.gradient(Cn, Un)
        _, _, gnorm = mapping(Cn, bn, gnC, gnb, L)
        # gradient (and function-value) restart: momentum that points uphill is dropped
        uphill = (float(np.einsum("ij,ij->", YC - Cn, Cn - C) + (yb - bn) @ (bn - b)) > 0
                  or fn > f)
        t_next = 1.0 if uphill else 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * tk * tk))
        beta = 0.0 if uphill else (tk - 1.0) / t_next
        if beta:  # the outputs are linear in (C, b): no product for the extrapolation
            YC, yb, UY = Cn + beta * (Cn - C), bn + beta * (bn - b), Un + beta * (Un - U)
        C, b, U, f, gC, gb = Cn, bn, Un, fn, gnC, gnb
        if beta:
            fY = problem.value(YC, UY)
            gYC, gYb = problem.gradient(YC, UY)
        else:
            YC, yb, UY, fY, gYC, gYb = C, b, U, f, gC, gb
        tk = t_next
        if callback is not None:
            callback(it, objective=f, gradient_norm=gnorm / g0, step=1.0 / L)
        converged = gnorm <= tol * g0
    return Solution(C, b, it, bool(converged), f, gnorm / g0)
