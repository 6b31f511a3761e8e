"""The dual coordinate descent solver reaches the exact optimum of Problem's objective.

References: scikit-learn's LinearSVC (LIBLINEAR) on the explicit features
for the hinge without intercept, and a small quadratic programme solved by
SciPy's SLSQP (the primal with one slack per row: the loss is the maximum of
three affine functions) for every loss with or without the unpenalised
intercept.
"""
import numpy as np
import pytest
from scipy.optimize import minimize

from onlinekernel import get_feature_map, get_loss
from onlinekernel.solvers import FeatureOperator, Problem
from onlinekernel.solvers.dual_cd import solve_dual_cd


def _features(X, n_components=64, gamma=0.5, dtype=np.float64, max_bytes=1 << 30):
    fmap = get_feature_map("gaussian", n_components=n_components, gamma=gamma).bind(X.shape[1])
    return FeatureOperator(fmap, 3, 1, np.asarray(X, dtype=dtype), max_bytes=max_bytes)


def _problem(X, Y, loss, alpha, fit_intercept, sample_weight=None, **feature_kw):
    Y = np.asarray(Y, dtype=np.float64)
    Y = Y[:, None] if Y.ndim == 1 else Y
    w = np.ones(len(Y)) if sample_weight is None else sample_weight
    return Problem(_features(X, **feature_kw), loss, Y, w, alpha=alpha,
                   fit_intercept=fit_intercept, n_outputs=Y.shape[1])


def _classification(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = np.where(X[:, 0] * X[:, 1] + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y


def _regression(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = np.sin(2 * X[:, 0]) + 0.3 * rng.normal(size=n) + 2.0
    return X, y


def _reference_objective(problem):
    """Optimum of a one-output problem by SLSQP on the primal with slacks.

    Minimise ``sum_i w_i xi_i + lam/2 ||C||^2`` over ``(C, b, xi)`` subject to
    ``xi_i >= hi_i (z_i - eps_i)``, ``xi_i >= lo_i (z_i + eps_i)``,
    ``xi_i >= 0`` with ``z_i = r_i - s_i (Phi_i C + b)``.
    """
    Phi = np.asarray(problem.features._Phi, dtype=np.float64)
    n, M = Phi.shape
    r, s, lo, hi, eps = (x[:, 0] for x in problem.loss.dual_form(problem.Y))
    w, lam = problem.w, problem.lam
    nb = int(problem.fit_intercept)
    nv = M + nb + n
    blocks, bounds = [], []
    for c, e in ((hi, -eps), (lo, eps)):
        A = np.zeros((n, nv))
        A[:, :M] = (c * s)[:, None] * Phi
        if nb:
            A[:, M] = c * s
        A[np.arange(n), M + nb + np.arange(n)] = 1.0
        blocks.append(A)
        bounds.append(c * (r + e))
    blocks.append(np.hstack([np.zeros((n, M + nb)), np.eye(n)]))
    bounds.append(np.zeros(n))
    A, lb = np.vstack(blocks), np.concatenate(bounds)

    def f(x):
        return float(w @ x[M + nb:] + 0.5 * lam * x[:M] @ x[:M])

    def grad(x):
        g = np.zeros(nv)
        g[:M] = lam * x[:M]
        g[M + nb:] = w
        return g

    x0 = np.zeros(nv)
    x0[M + nb:] = np.maximum(np.maximum(hi * (r - eps), lo * (r + eps)), 0.0) + 1.0
    res = minimize(f, x0, jac=grad, method="SLSQP", options={"ftol": 1e-15, "maxiter": 5000},
                   constraints=[{"type": "ineq", "fun": lambda x: A @ x - lb,
                                 "jac": lambda x: A}])
    assert (A @ res.x - lb).min() > -1e-8     # the reference point is feasible
    return res.fun


def _objective(problem, coef, intercept):
    return problem.value(coef, problem.raw(coef, intercept))


# --- agreement with references ------------------------------------------------

def test_hinge_without_intercept_matches_liblinear():
    svm = pytest.importorskip("sklearn.svm")
    X, y = _classification(300)
    problem = _problem(X, y, get_loss("hinge"), alpha=1e-3, fit_intercept=False)
    sol = solve_dual_cd(problem, tol=1e-7, max_iter=20000)
    assert sol.converged
    n, lam = len(y), problem.lam
    ref = svm.LinearSVC(loss="hinge", dual=True, fit_intercept=False, C=1.0 / (lam * n),
                        tol=1e-10, max_iter=10 ** 6).fit(problem.features._Phi, y)
    J_ref = _objective(problem, ref.coef_.T, np.zeros(1))
    assert abs(sol.objective - J_ref) <= 1e-4 * J_ref
    np.testing.assert_allclose(sol.coef[:, 0], ref.coef_[0], atol=1e-3)
    assert sol.intercept[0] == 0.0


@pytest.mark.parametrize("alpha", [1e-2, 1e-3])
def test_hinge_with_intercept_matches_qp(alpha):
    X, y = _classification(60)
    problem = _problem(X, y, get_loss("hinge"), alpha=alpha, fit_intercept=True, n_components=32)
    sol = solve_dual_cd(problem, tol=1e-7, max_iter=100000)
    J_ref = _reference_objective(problem)
    assert sol.converged
    assert abs(sol.objective - J_ref) <= 1e-4 * J_ref
    # The test has power: a wrong intercept costs far more than the tolerance,
    # and so does dropping the intercept altogether.
    assert _objective(problem, sol.coef, sol.intercept + 0.05) > J_ref * (1 + 1e-3)
    no_b = solve_dual_cd(_problem(X, y, get_loss("hinge"), alpha=alpha, fit_intercept=False,
                                  n_components=32), tol=1e-7, max_iter=100000)
    assert no_b.objective > J_ref * (1 + 1e-3)


@pytest.mark.parametrize("tau", [0.1, 0.5, 0.9])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_quantile_matches_qp(tau, fit_intercept):
    X, y = _regression(60)
    problem = _problem(X, y, get_loss("quantile", quantile=tau), alpha=1e-2,
                       fit_intercept=fit_intercept, n_components=32)
    sol = solve_dual_cd(problem, tol=1e-7, max_iter=100000)
    J_ref = _reference_objective(problem)
    assert sol.converged
    assert abs(sol.objective - J_ref) <= 1e-4 * J_ref


@pytest.mark.parametrize("tau", [0.1, 0.5, 0.9])
def test_quantile_coverage(tau):
    rng = np.random.default_rng(1)
    X = rng.uniform(-2, 2, size=(400, 1))
    y = np.sin(2 * X[:, 0]) + (0.2 + 0.2 * np.abs(X[:, 0])) * rng.normal(size=400)
    problem = _problem(X, y, get_loss("quantile", quantile=tau), alpha=1e-3,
                       fit_intercept=True, gamma=1.0)
    sol = solve_dual_cd(problem, tol=1e-5, max_iter=20000)
    assert sol.converged
    coverage = np.mean(y < problem.raw(sol.coef, sol.intercept)[:, 0])
    assert abs(coverage - tau) <= 0.05


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_epsilon_insensitive_matches_qp(fit_intercept):
    X, y = _regression(60, seed=2)
    problem = _problem(X, y, get_loss("epsilon_insensitive", epsilon=0.1), alpha=1e-2,
                       fit_intercept=fit_intercept, n_components=32)
    sol = solve_dual_cd(problem, tol=1e-7, max_iter=100000)
    J_ref = _reference_objective(problem)
    assert sol.converged
    assert abs(sol.objective - J_ref) <= 1e-4 * J_ref


# --- structure: outputs and weights ---------------------------------------------

def test_multi_output_hinge_equals_single_outputs():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(150, 2))
    classes = np.digitize(X[:, 0] + 0.5 * X[:, 1], [-0.5, 0.5])
    Y = np.where(classes[:, None] == np.arange(3), 1.0, -1.0)      # one-vs-rest
    loss = get_loss("hinge")
    multi = _problem(X, Y, loss, alpha=1e-2, fit_intercept=True)
    sol = solve_dual_cd(multi, tol=1e-10, max_iter=100000)
    assert sol.converged and sol.coef.shape == (64, 3) and sol.intercept.shape == (3,)
    total = 0.0
    for c in range(3):
        single = _problem(X, Y[:, c], loss, alpha=1e-2, fit_intercept=True)
        one = solve_dual_cd(single, tol=1e-10, max_iter=100000)
        total += one.objective
        # the same permutations and arithmetic: identical, not just close
        np.testing.assert_array_equal(sol.coef[:, c], one.coef[:, 0])
        assert sol.intercept[c] == one.intercept[0]
        assert abs(_objective(single, sol.coef[:, [c]], sol.intercept[[c]]) - one.objective) \
            <= 1e-12 * one.objective
    assert sol.objective == pytest.approx(total, rel=1e-10)


def test_multi_quantile_equals_single_quantiles():
    X, y = _regression(120, seed=5)
    taus = (0.2, 0.5, 0.8)
    Y = np.repeat(y[:, None], 3, axis=1)
    multi = _problem(X, Y, get_loss("multi_quantile", quantiles=taus), alpha=1e-2,
                     fit_intercept=True)
    sol = solve_dual_cd(multi, tol=1e-9, max_iter=100000)
    assert sol.converged
    for c, tau in enumerate(taus):
        single = _problem(X, y, get_loss("quantile", quantile=tau), alpha=1e-2,
                          fit_intercept=True)
        one = solve_dual_cd(single, tol=1e-9, max_iter=100000)
        np.testing.assert_array_equal(sol.coef[:, c], one.coef[:, 0])
        assert sol.intercept[c] == one.intercept[0]


@pytest.mark.parametrize("loss_name,kw,data", [
    ("hinge", {}, _classification),
    ("quantile", {"quantile": 0.3}, _regression),
])
def test_integer_weights_equal_repeated_rows(loss_name, kw, data):
    X, y = data(120, seed=6)
    counts = np.random.default_rng(6).integers(1, 4, size=len(y))
    loss = get_loss(loss_name, **kw)
    weighted = _problem(X, y, loss, alpha=1e-2, fit_intercept=True,
                        sample_weight=counts.astype(float))
    repeated = _problem(np.repeat(X, counts, axis=0), np.repeat(y, counts), loss, alpha=1e-2,
                        fit_intercept=True)
    a = solve_dual_cd(weighted, tol=1e-12, max_iter=200000)
    b = solve_dual_cd(repeated, tol=1e-12, max_iter=200000)
    assert a.converged and b.converged
    assert abs(a.objective - b.objective) <= 1e-6 * a.objective
    np.testing.assert_allclose(a.coef, b.coef, atol=1e-6)
    np.testing.assert_allclose(_objective(weighted, b.coef, b.intercept), a.objective,
                               rtol=1e-6)


# --- stopping, starting, precision, determinism -------------------------------------

def test_stops_on_certified_gap():
    X, y = _classification(200)
    problem = _problem(X, y, get_loss("hinge"), alpha=1e-3, fit_intercept=True)
    for tol in (1e-3, 1e-6):
        sol = solve_dual_cd(problem, tol=tol, max_iter=100000)
        assert sol.converged and 0.0 <= sol.gradient_norm <= tol and sol.n_iter >= 1
    hard = _problem(X, y, get_loss("hinge"), alpha=1e-5, fit_intercept=True)
    sol = solve_dual_cd(hard, tol=1e-6, max_iter=1)
    assert not sol.converged and sol.n_iter == 1 and sol.gradient_norm > 1e-6
    assert sol.objective == pytest.approx(_objective(hard, sol.coef, sol.intercept))


def test_warm_start_from_the_solution_is_quick():
    X, y = _regression(200, seed=7)
    problem = _problem(X, y, get_loss("quantile", quantile=0.7), alpha=1e-3, fit_intercept=True)
    cold = solve_dual_cd(problem, tol=1e-6, max_iter=100000)
    warm = solve_dual_cd(problem, tol=1e-6, max_iter=100000, coef=cold.coef,
                         intercept=cold.intercept)
    assert warm.converged and warm.n_iter < cold.n_iter / 2
    assert warm.objective == pytest.approx(cold.objective, rel=1e-5)


def test_deterministic_given_random_state():
    X, y = _classification(200)
    problem = _problem(X, y, get_loss("hinge"), alpha=1e-3, fit_intercept=True)
    a = solve_dual_cd(problem, tol=1e-4, random_state=3)
    b = solve_dual_cd(problem, tol=1e-4, random_state=3)
    np.testing.assert_array_equal(a.coef, b.coef)
    np.testing.assert_array_equal(a.intercept, b.intercept)
    assert a.n_iter == b.n_iter


def test_float32_features_reach_the_float64_optimum():
    X, y = _classification(300)
    J = {}
    for dtype in (np.float64, np.float32):
        problem = _problem(X, y, get_loss("hinge"), alpha=1e-3, fit_intercept=True, dtype=dtype)
        sol = solve_dual_cd(problem, tol=1e-5, max_iter=100000)
        assert sol.converged and sol.coef.dtype == np.float64
        J[dtype] = sol.objective
    assert J[np.float32] == pytest.approx(J[np.float64], rel=1e-4)


# --- errors --------------------------------------------------------------------------

def test_loss_without_dual_form_is_refused():
    X, y = _classification(50)
    problem = _problem(X, y, get_loss("logistic"), alpha=1e-3, fit_intercept=True)
    with pytest.raises(ValueError, match="dual_form.*'logistic'|'logistic'.*dual_form"):
        solve_dual_cd(problem)


def test_features_not_in_memory_are_refused():
    X, y = _classification(50)
    problem = _problem(X, y, get_loss("hinge"), alpha=1e-3, fit_intercept=True, max_bytes=0)
    assert not problem.features.cached
    with pytest.raises(ValueError, match="solver='sgd' or raise max_memory"):
        solve_dual_cd(problem)


def test_dual_forms_reproduce_their_losses():
    rng = np.random.default_rng(8)
    u = rng.normal(size=(50, 2))
    cases = [(get_loss("hinge"), np.where(rng.normal(size=(50, 2)) > 0, 1.0, -1.0)),
             (get_loss("quantile", quantile=0.3), rng.normal(size=(50, 2))),
             (get_loss("epsilon_insensitive", epsilon=0.2), rng.normal(size=(50, 2))),
             (get_loss("multi_quantile", quantiles=(0.1, 0.6, 0.9)), rng.normal(size=(50, 2)))]
    for loss, y in cases:
        r, s, lo, hi, eps = loss.dual_form(y)
        z = r - s * u
        # max over a in [lo, hi] of a z - eps |a|: attained at lo, 0 or hi
        value = np.maximum(np.maximum(hi * z - eps * np.abs(hi), lo * z - eps * np.abs(lo)), 0)
        np.testing.assert_allclose(value.sum(axis=1), loss.loss(y, u), atol=1e-12)
