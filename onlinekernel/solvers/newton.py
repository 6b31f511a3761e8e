"""Second-order batch solvers: Cholesky for quadratic losses, Newton-CG for smooth ones.

Both minimise :class:`~onlinekernel.solvers._problem.Problem`'s objective and
stop on the relative gradient norm ``|grad J| <= tol * |grad J(start)|``.

* :func:`solve_cholesky` is for losses of ``curvature = "constant"`` (the
  squared loss): their Hessian ``Phi^T D Phi + lam I`` does not depend on the
  model, so one Newton step from zero is the optimum.  ``Phi^T D Phi`` is
  accumulated in one streamed pass of BLAS level-3 products over row batches
  (memory ``M^2``, never the ``n x M`` features), then solved by Cholesky,
  with the unpenalised intercept eliminated (the weighted-centred Gram
  matrix).  This is kernel ridge regression on the random features.
* :func:`solve_newton_cg` is for ``curvature = "smooth"`` losses (logistic,
  multinomial, squared hinge, Huber): inexact Newton steps, each solved by
  conjugate gradients on Hessian-vector products
  ``Phi^T (D (Phi v)) + lam v`` (two passes over the features), with an
  Armijo line search on the step (Nocedal & Wright, Algorithm 7.1).  The
  loss's ``hessian_product`` supplies ``D v``.
"""
import warnings

import numpy as np
from scipy import linalg

from onlinekernel.solvers._problem import Problem, Solution

__all__ = ["solve_cholesky", "solve_newton_cg"]

# Added to the diagonal (relative to its mean) when alpha = 0 leaves the
# normal equations singular: the minimum-norm-like solution they then give.
_JITTER = 1e-10


def _start(problem, coef, intercept):
    C = np.zeros((problem.M, problem.K)) if coef is None else np.array(coef, dtype=np.float64)
    b = np.zeros(problem.K) if intercept is None else np.array(intercept, dtype=np.float64)
    if not problem.fit_intercept:
        b[:] = 0.0
    return C, b


def solve_cholesky(problem, tol=1e-4, max_iter=1, coef=None, intercept=None):
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

    Returns
    -------
    Solution

    Examples
    --------
    >>> import numpy as np
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
    M, K = problem.M, problem.K
    n = problem.features.shape[0]
    zeros_C, zeros_b = np.zeros((M, K)), np.zeros(K)
    U0 = np.zeros((n, K))
    # The Hessian's row weights: D = w * (second derivative), per output.
    D = problem.loss.hessian_product(problem.Y, U0, np.ones_like(U0)) * problem.w[:, None]
    if not np.allclose(D, D[:, :1]):
        raise ValueError(f"{_name(problem.loss)}: the outputs have different curvatures; "
                         "solver 'cholesky' needs one Hessian for all outputs")
    d = D[:, 0]
    G0 = problem.loss.gradient(problem.Y, U0) * problem.w[:, None]  # -D t for targets t
    gb = G0.sum(axis=0) if problem.fit_intercept else zeros_b
    gC = problem.features.rmatvec(G0)  # the gradient at zero: -Phi^T D t
    if problem.features.cached and n < M:
        C, b = _cholesky_dual(problem, d, G0)
    else:
        C, b = _cholesky_primal(problem, d, gC, gb)
    U = problem.raw(C, b)
    g = Problem.norm(*problem.gradient(C, U))
    g0 = max(Problem.norm(gC, gb), np.finfo(float).tiny)
    return Solution(C, b, 1, True, problem.value(C, U), g / g0)


def _cho_solve(A, B):
    return linalg.cho_solve(linalg.cho_factor(A, lower=True, overwrite_a=True,
                                              check_finite=False), B, check_finite=False)


def _cholesky_primal(problem, d, gC, gb):
    """``(Phi^T D Phi + lam I) C = -gC`` with the intercept eliminated (``M x M``)."""
    M = problem.M
    A, s = problem.features.gram(d)
    h = float(d.sum()) if problem.fit_intercept else 0.0
    if h > 0:  # eliminate the intercept: the weighted-centred Gram matrix
        A -= np.outer(s, s) / h
        rhs = -(gC - np.outer(s, gb) / h)
    else:
        rhs = -gC
    A[np.diag_indices_from(A)] += problem.lam + _JITTER * max(np.trace(A) / M, 1e-300)
    C = _cho_solve(A, rhs)
    b = -(gb + s @ C) / h if h > 0 else np.zeros(problem.K)
    return C, b


def _cholesky_dual(problem, d, G0):
    """The same optimum through the ``n x n`` system, for fewer rows than features.

    With ``C = Phi^T a`` (the representer theorem on the features) and
    ``a = D^{1/2} beta``: ``(lam I + D^{1/2} Phi Phi^T D^{1/2}) beta =
    D^{1/2} (t - b)``, where the targets are ``t = -G0 / D``; the unpenalised
    intercept adds the constraint ``sum a = 0``, which fixes ``b``.
    """
    Phi = problem.features._Phi
    n = Phi.shape[0]
    r = np.sqrt(d)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(d[:, None] > 0, -G0 / d[:, None], 0.0)
    Kr = Phi @ Phi.T
    S = (r[:, None] * np.asarray(Kr, dtype=np.float64)) * r[None, :]
    S[np.diag_indices(n)] += problem.lam + _JITTER * max(np.trace(S) / n, 1e-300)
    factor = linalg.cho_factor(S, lower=True, overwrite_a=True, check_finite=False)
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


def _cg(problem, U, gC, gb, rtol, max_cg):
    """Approximately solve ``H p = -g`` by conjugate gradients (from p = 0)."""
    pC, pb = np.zeros_like(gC), np.zeros_like(gb)
    rC, rb = -gC, -gb
    dC, db = rC.copy(), rb.copy()
    rr = float(np.einsum("ij,ij->", rC, rC) + rb @ rb)
    stop = rtol ** 2 * rr
    for _ in range(max_cg):
        if rr <= stop:
            break
        hC, hb = problem.hessian_product(U, dC, db)
        dHd = float(np.einsum("ij,ij->", dC, hC) + db @ hb)
        if dHd <= 0:  # no curvature along d (cannot happen with lam > 0)
            break
        a = rr / dHd
        pC += a * dC
        pb += a * db
        rC -= a * hC
        rb -= a * hb
        rr_new = float(np.einsum("ij,ij->", rC, rC) + rb @ rb)
        beta = rr_new / rr
        dC = rC + beta * dC
        db = rb + beta * db
        rr = rr_new
    if not (np.any(pC) or np.any(pb)):
        pC, pb = -gC, -gb  # steepest descent when CG made no progress
    return pC, pb


def solve_newton_cg(problem, tol=1e-4, max_iter=100, coef=None, intercept=None, max_cg=None):
    """Inexact Newton with conjugate-gradient steps and an Armijo line search.

    Parameters
    ----------
    problem : Problem
        Its loss needs a gradient and ``hessian_product`` (every loss of the
        protocol has one); it converges for ``curvature`` ``"smooth"`` or
        ``"constant"``.
    tol : float, default=1e-4
        Stop when ``|grad J| <= tol * |grad J(start)|``.
    max_iter : int, default=100
        Newton steps at most.
    coef, intercept : ndarray, optional
        The start (warm start); zero by default.
    max_cg : int, optional
        Conjugate-gradient iterations per Newton step (default ``M + 1``, capped
        at 250).

    Returns
    -------
    Solution

    Examples
    --------
    >>> import numpy as np
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
    U = problem.raw(C, b)
    f = problem.value(C, U)
    gC, gb = problem.gradient(C, U)
    g0 = max(Problem.norm(gC, gb), np.finfo(float).tiny)
    gnorm = g0
    converged = False
    it = 0
    while it < max_iter:
        if gnorm <= tol * g0:
            converged = True
            break
        it += 1
        # forcing term: loose solves far from the optimum, tight ones near it
        pC, pb = _cg(problem, U, gC, gb, min(0.5, np.sqrt(gnorm / g0)), max_cg)
        slope = float(np.einsum("ij,ij->", gC, pC) + gb @ pb)
        if slope >= 0:  # not a descent direction (an inexact Hessian): steepest descent
            pC, pb = -gC, -gb
            slope = -gnorm ** 2
        dU = problem.features.matvec(pC) + (pb if problem.fit_intercept else 0.0)
        t = 1.0
        for _ in range(60):
            Ct = C + t * pC
            Ut = U + t * dU
            ft = problem.value(Ct, Ut)
            if ft <= f + 1e-4 * t * slope:
                break
            t *= 0.5
        else:  # no decrease within rounding: this is as close as doubles get
            break
        C, U, f = Ct, Ut, ft
        if problem.fit_intercept:
            b = b + t * pb
        gC, gb = problem.gradient(C, U)
        gnorm = Problem.norm(gC, gb)
    else:
        converged = gnorm <= tol * g0
    return Solution(C, b, it, converged, f, gnorm / g0)


def solve_lbfgs(problem, tol=1e-4, max_iter=1000, coef=None, intercept=None):
    """Limited-memory BFGS (scipy's L-BFGS-B) on the objective and its gradient.

    Needs only the loss's ``loss`` and ``gradient``; stops on the same
    relative gradient norm as :func:`solve_newton_cg`.

    Examples
    --------
    >>> import numpy as np
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
    g0 = max(last["g"], np.finfo(float).tiny)
    state = {"n": 0, "converged": last["g"] <= tol * g0}

    def callback(intermediate_result):
        state["n"] += 1
        if last["g"] <= tol * g0:
            state["converged"] = True
            raise StopIteration

    if not state["converged"]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            res = minimize(fun, x0, jac=True, method="L-BFGS-B", callback=callback,
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
