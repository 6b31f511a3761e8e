"""The batch solvers reach the regularised optimum; solver choice and stopping rules."""
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression

from onlinekernel import (DSGClassifier, DSGDensityRatio, DSGGaussianProcessRegressor,
                          DSGOneClassSVM, DSGRegressor, FeatureMap, get_feature_map,
                          get_loss)
from onlinekernel.featuremaps.base import as_cy_feature_map
from onlinekernel.solvers import (
    FeatureOperator, Problem, choose_solver, solve_cholesky, solve_lbfgs, solve_newton_cg)

from conftest import PyLogistic, PySquared, gaussian_problem


def _problem(loss, y, n=300, d=3, alpha=1e-4, fit_intercept=True, K=1, cached=True, w=None):
    return gaussian_problem(loss, y, n, d, alpha, seed=11, fit_intercept=fit_intercept, K=K,
                            cached=cached, w=w)


def _explicit(p):
    return np.vstack([P for _, _, P in p.features.batches()])


def _sine(X):
    return np.sin(X[:, :1]) + 0.1 * np.cos(3 * X[:, 1:2])


def _xor(X):
    return np.where(X[:, :1] * X[:, 1:2] > 0, 1.0, -1.0)


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("cached", [False, True])
def test_cholesky_matches_least_squares(fit_intercept, cached):
    p, X, _ = _problem("squared", _sine, fit_intercept=fit_intercept, cached=cached)
    Phi = _explicit(p)
    n, M = Phi.shape
    A = np.hstack([Phi, np.ones((n, 1))]) if fit_intercept else Phi
    ridge = np.sqrt(n * p.lam) * np.eye(A.shape[1])
    if fit_intercept:
        ridge[-1, -1] = 0.0  # the intercept is not penalised
    ref = np.linalg.lstsq(np.vstack([A, ridge]),
                          np.concatenate([p.Y[:, 0], np.zeros(A.shape[1])]), rcond=None)[0]
    sol = solve_cholesky(p)
    assert sol.converged and sol.n_iter == 1
    np.testing.assert_allclose(sol.coef[:, 0], ref[:M], rtol=0, atol=1e-8 * np.abs(ref).max())
    if fit_intercept:
        assert abs(sol.intercept[0] - ref[-1]) <= 1e-8 * max(1.0, abs(ref[-1]))
    else:
        assert sol.intercept[0] == 0.0


def test_operator_streams_the_same_products():
    p1, _, _ = _problem("squared", _sine, cached=True)
    p2, _, _ = _problem("squared", _sine, cached=False)
    C = np.random.default_rng(1).normal(size=(p1.M, 2))
    np.testing.assert_allclose(p1.features.matvec(C), p2.features.matvec(C), rtol=1e-12)
    G = np.random.default_rng(2).normal(size=(p1.features.shape[0], 2))
    np.testing.assert_allclose(p1.features.rmatvec(G), p2.features.rmatvec(G), rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["kept", "regenerated", "nystrom"])
def test_sandwich_is_both_products_in_one_pass(kind, dtype, monkeypatch):
    """``sandwich`` gives ``Phi^T weigh(Phi C)`` and ``Phi C`` in row batches of a few
    rows (the batch size is forced down so that many batches and a partial one occur),
    each batch read once."""
    import onlinekernel.solvers.features as features
    rng = np.random.default_rng(3)
    X = rng.normal(size=(203, 3))
    fmap = get_feature_map("nystrom" if kind == "nystrom" else "gaussian",
                           n_components=16, gamma=0.5).bind(3)
    if kind == "nystrom":
        fmap.fit(X, 5, 2)
    op = FeatureOperator(fmap, seed=5, n_blocks=2, X=X, max_bytes=0 if kind == "regenerated"
                         else 1 << 30, dtype=dtype)
    assert op.cached == (kind != "regenerated") and op.factored == (kind == "nystrom")
    for name in ("_SANDWICH_BYTES", "_SANDWICH_BYTES_THREADED"):
        monkeypatch.setattr(features, name, 17 * op._width * op.dtype.itemsize)
    C = rng.normal(size=(op.shape[1], 2))
    d = rng.uniform(0.5, 2.0, size=(203, 1))
    batches = []

    def weigh(r0, r1, V):
        batches.append((r0, r1))
        V += 1.0  # what weigh leaves in V is what comes back
        return d[r0:r1] * V

    PtG, V = op.sandwich(C, weigh)
    assert batches[0][0] == 0 and batches[-1][1] == 203 and len(batches) >= 12
    assert all(b[1] == a[0] for b, a in zip(batches, batches[1:]))  # each row once, in order
    U = op.matvec(C) + 1.0
    tol = 1e-5 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(V, U, rtol=tol, atol=tol)
    np.testing.assert_allclose(PtG, op.rmatvec(d * U), rtol=tol, atol=tol * np.abs(PtG).max())


@pytest.mark.parametrize("solve", [solve_newton_cg, solve_lbfgs])
def test_newton_and_lbfgs_match_logistic_regression(solve):
    p, X, _ = _problem("logistic", _xor)
    Phi = _explicit(p)
    n = Phi.shape[0]
    sol = solve(p, tol=1e-8)
    assert sol.converged and sol.gradient_norm <= 1e-8
    ref = LogisticRegression(C=1.0 / (n * p.lam), tol=1e-12, max_iter=10_000).fit(Phi, p.Y[:, 0])
    U = Phi @ ref.coef_.T + ref.intercept_
    f_ref = p.value(ref.coef_.T, U)
    assert sol.objective <= f_ref * (1 + 1e-4)
    assert abs(sol.objective - f_ref) <= 1e-4 * f_ref


class _RoundedValues(Problem):
    """The objective as a sum in another order gives it: off by a few roundings.

    A distributed fit sums its partitions' values in another order than one
    machine does, which moves ``J`` by a few units in its last place.
    """

    def value(self, C, U):
        f = super().value(C, U)
        return f + f * 4 * np.finfo(float).eps * np.sin(1e6 * float(C.sum()))


def test_newton_reaches_a_tight_tol_when_values_are_only_rounding_apart():
    # near the optimum the line search's decrease is below J's rounding: the
    # step is judged by the gradient there, not given up on (it stalled at a
    # relative gradient of 1e-10 before)
    p, _, _ = _problem("logistic", _xor)
    p.__class__ = _RoundedValues
    sol = solve_newton_cg(p, tol=1e-13, max_iter=30)
    assert sol.converged and sol.gradient_norm <= 1e-13 and sol.n_iter < 30


def test_newton_matches_multinomial_logistic_regression():
    p, X, _ = _problem("multinomial", lambda X: np.digitize(X[:, :1], [-0.5, 0.5]).astype(float),
                       K=3)
    Phi = _explicit(p)
    sol = solve_newton_cg(p, tol=1e-8)
    ref = LogisticRegression(C=1.0 / (Phi.shape[0] * p.lam), tol=1e-12,
                             max_iter=10_000).fit(Phi, p.Y[:, 0])
    f_ref = p.value(ref.coef_.T, Phi @ ref.coef_.T + ref.intercept_)
    assert abs(sol.objective - f_ref) <= 1e-4 * f_ref


def test_squared_hinge_matches_linear_svc():
    from sklearn.svm import LinearSVC
    p, X, _ = _problem("squared_hinge", _xor, fit_intercept=False)
    Phi = _explicit(p)
    n = Phi.shape[0]
    sol = solve_newton_cg(p, tol=1e-8)
    # LinearSVC minimises |w|^2 / 2 + C sum_i max(0, 1 - y_i w.x_i)^2, ours (whose loss
    # is half that) divided by n lam with C = 1 / (2 n lam); its primal solver is TRON
    ref = LinearSVC(loss="squared_hinge", C=0.5 / (n * p.lam), fit_intercept=False,
                    tol=1e-12, max_iter=100_000, dual=False).fit(Phi, p.Y[:, 0])
    f_ref = p.value(ref.coef_.T, Phi @ ref.coef_.T)
    assert abs(sol.objective - f_ref) <= 1e-4 * f_ref


def test_sample_weights_equal_repeated_rows():
    rng = np.random.default_rng(3)
    w = rng.integers(1, 4, size=300).astype(float)
    p, X, fmap = _problem("logistic", _xor, w=w)
    sol = solve_newton_cg(p, tol=1e-10)
    idx = np.repeat(np.arange(300), w.astype(int))
    op = FeatureOperator(fmap, 11, 2, X[idx], max_bytes=1 << 30)
    p2 = Problem(op, get_loss("logistic"), p.Y[idx], np.ones(idx.size), 1e-4, True, 1)
    sol2 = solve_newton_cg(p2, tol=1e-10)
    np.testing.assert_allclose(sol.coef, sol2.coef, atol=1e-6)


def test_newton_warm_start_and_cap():
    p, _, _ = _problem("logistic", _xor, alpha=1e-7)
    one = solve_newton_cg(p, tol=1e-12, max_iter=1)
    assert not one.converged and one.n_iter == 1
    resumed = solve_newton_cg(p, tol=1e-6, coef=one.coef, intercept=one.intercept)
    assert resumed.converged


def _multiclass(X):
    return np.digitize(X[:, :1], [-0.5, 0.5]).astype(float)


def _unbalanced(X):
    # about one row in ten positive, as ijcnn1 (9.5 %)
    return np.where(X[:, :1] + 0.3 * X[:, 1:2] > 1.3, 1.0, -1.0)


@pytest.mark.parametrize("loss, target, K", [("logistic", _unbalanced, 1),
                                             ("multinomial", _multiclass, 3),
                                             ("squared", _sine, 1)])
def test_best_constant_is_the_intercept_only_optimum(loss, target, K):
    from onlinekernel.solvers.newton import best_constant
    w = np.random.default_rng(3).uniform(0.2, 2.0, size=400)
    p, X, _ = _problem(loss, target, n=400, K=K, w=w)
    b = best_constant(p)
    y, share = p.Y[:, 0], w / w.sum()
    if loss == "logistic":  # the weighted log-odds of the positive class
        pos = share @ (y > 0)
        np.testing.assert_allclose(b, [np.log(pos / (1 - pos))], rtol=1e-9)
    elif loss == "multinomial":  # softmax(b) is the weighted class frequencies, sum(b) = 0
        freq = np.array([share @ (y == k) for k in range(3)])
        np.testing.assert_allclose(np.exp(b) / np.exp(b).sum(), freq, rtol=1e-9)
        assert abs(b.sum()) < 1e-12  # no drift along the shift the risk does not see
    else:
        np.testing.assert_allclose(b, [share @ y], rtol=1e-9)
    # a cold start is zero coefficients and that constant
    start = solve_newton_cg(p, tol=1e-4, max_iter=0)
    assert not np.any(start.coef) and np.array_equal(start.intercept, b)


def test_newton_first_step_learns_more_than_the_class_prior():
    # From zero, the first step's loose CG solve spent itself on the intercept of
    # an unbalanced problem and the model predicted the majority class.
    p, X, _ = _problem("logistic", _unbalanced, n=2000, d=2, alpha=1e-5)
    y = p.Y[:, 0]

    def error(sol):
        return np.mean(np.sign(p.raw(sol.coef, sol.intercept)[:, 0]) != y)

    majority = min(np.mean(y > 0), np.mean(y < 0))
    best, zero = ([error(solve_newton_cg(p, tol=1e-12, max_iter=k, **start)) for k in (1, 2)]
                  for start in ({}, {"intercept": np.zeros(1)}))
    # measured: 5.5 % and 0.8 % after steps 1 and 2, against 8.7 % and 5.1 % from a
    # zero intercept (the majority class: 10.3 %)
    assert best[0] < 0.7 * min(majority, zero[0]) and best[1] < 0.3 * zero[1]
    converged = solve_newton_cg(p, tol=1e-8)
    ref = solve_newton_cg(p, tol=1e-8, intercept=np.zeros(1))
    assert converged.converged and ref.converged
    assert converged.objective == pytest.approx(ref.objective, rel=1e-10)


def test_cg_truncates_its_step_at_the_radius():
    from onlinekernel.solvers.newton import _cg
    p, _, _ = _problem("logistic", _xor, alpha=1e-6)
    C, b = np.zeros((p.M, 1)), np.zeros(1)
    U = p.raw(C, b)
    gC, gb = p.gradient(C, U)
    free = _cg(p, U, gC, gb, 1e-6, 50)
    full = Problem.norm(free[0], free[1])
    for radius in (0.5 * full, 0.05 * full):
        pC, pb, pU, used = _cg(p, U, gC, gb, 1e-6, 50, radius=radius)
        assert Problem.norm(pC, pb) == pytest.approx(radius, rel=1e-12)
        assert used < free[3]
        assert float(np.sum(gC * pC) + gb @ pb) < 0  # still a descent direction
        np.testing.assert_allclose(pU, p.raw(pC, pb), atol=1e-10)  # its outputs with it
    # a radius it never reaches changes nothing
    same = _cg(p, U, gC, gb, 1e-6, 50, radius=2 * full)
    np.testing.assert_array_equal(same[0], free[0])


@pytest.mark.parametrize("solve", [solve_newton_cg, solve_lbfgs])
def test_tol_is_relative_to_the_zero_model_whatever_the_start(solve):
    # A path of penalties starts each solve at the last one's solution; measured
    # from that start's own (tiny) gradient, tol would ask for ever more steps.
    p, _, _ = _problem("logistic", _xor, alpha=1e-6)
    cold = solve(p, tol=1e-6)
    zero = Problem.norm(*p.gradient(np.zeros_like(cold.coef),
                                    np.zeros((p.features.shape[0], 1))))
    assert cold.converged
    at_optimum = solve(p, tol=1e-4, coef=cold.coef, intercept=cold.intercept)
    assert at_optimum.converged and at_optimum.n_iter == 0
    g = Problem.norm(*p.gradient(at_optimum.coef, p.raw(at_optimum.coef,
                                                        at_optimum.intercept)))
    assert at_optimum.gradient_norm == pytest.approx(g / zero)
    # the reference holds for every penalty (the penalty's gradient vanishes at zero)
    p.lam *= 100.0
    moved = solve(p, tol=1e-4, coef=cold.coef, intercept=cold.intercept)
    assert moved.converged and moved.n_iter >= 1
    assert p.reference_gradient_norm(cold.coef, cold.intercept, 0.0) == pytest.approx(zero)


def test_choose_solver_by_curvature_and_memory():
    assert choose_solver(get_loss("squared"), 1000, 4096, 1, 8, 1 << 31) == "cholesky"
    assert choose_solver(get_loss("huber"), 1000, 4096, 1, 8, 1 << 31) == "newton-cg"
    assert choose_solver(get_loss("multinomial"), 10 ** 7, 4096, 10, 8, 1 << 31) == "sgd"
    assert choose_solver(get_loss("squared"), 1000, 4096, 1, 8, 1 << 20) == "sgd"


def test_a_loss_without_curvature_trains_by_sgd():
    assert PySquared.curvature is None  # the squared loss in Python declares none
    X = np.random.default_rng(0).normal(size=(100, 2))
    reg = DSGRegressor(loss=PySquared(), max_iter=2, tol=None, random_state=0).fit(X, X[:, 0])
    assert reg.solver_ == "sgd" and reg.n_iter_ == 2
    with pytest.raises(ValueError, match="curvature"):
        DSGRegressor(loss=PySquared(), solver="cholesky").fit(X, X[:, 0])


def test_estimator_batch_fit_is_the_optimum():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = np.sin(X[:, 0]) + 0.05 * rng.normal(size=400)
    # one problem for the three solvers: the same bandwidth (gamma="auto"
    # scores its candidates with each solver's own small models)
    kw = dict(block_size=32, max_blocks=4, alpha=1e-5, gamma="scale", random_state=0)
    reg = DSGRegressor(solver="newton-cg", tol=1e-8, **kw).fit(X, y)
    assert reg.n_random_features_ == 128
    exact = DSGRegressor(solver="cholesky", **kw).fit(X, y)
    lbfgs = DSGRegressor(solver="lbfgs", tol=1e-8, **kw).fit(X, y)
    np.testing.assert_allclose(reg.predict(X), lbfgs.predict(X), atol=1e-5)
    np.testing.assert_allclose(exact.predict(X), lbfgs.predict(X), atol=1e-5)


def test_unknown_solver_and_memory_cap_errors_leave_the_model():
    X = np.random.default_rng(0).normal(size=(50, 2))
    y = (X[:, 0] > 0).astype(int)
    with pytest.raises(ValueError, match="unknown solver 'newton'"):
        DSGClassifier(solver="newton").fit(X, y)
    clf = DSGClassifier(loss="logistic", block_size=16, max_blocks=2, random_state=0).fit(X, y)
    before = clf.coef_.copy()
    clf.set_params(solver="newton-cg", max_memory=10, warm_start=True)
    with pytest.raises(ValueError, match="max_memory"):
        clf.fit(X, y)
    np.testing.assert_array_equal(clf.coef_, before)


def test_batch_solver_warns_when_the_cap_is_hit():
    X = np.random.default_rng(0).normal(size=(200, 2))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    with pytest.warns(ConvergenceWarning, match="max_iter=1"):
        DSGClassifier(loss="logistic", solver="newton-cg", max_iter=1, tol=1e-12,
                      random_state=0).fit(X, y)


def test_sgd_stops_early_on_an_easy_problem():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2))
    y = np.where(X[:, 0] > 0, 1, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        clf = DSGClassifier(solver="sgd", max_iter=200, tol=1e-3, random_state=0).fit(X, y)
    assert clf.n_iter_ < 200
    early = DSGClassifier(solver="sgd", max_iter=200, tol=1e-3, early_stopping=True,
                          random_state=0).fit(X, y)
    assert early.n_iter_ < 200 and early.score(X, y) > 0.9


def test_sgd_warns_on_a_hard_problem():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2))
    y = rng.integers(0, 2, size=300)  # noise: the objective keeps moving
    with pytest.warns(ConvergenceWarning, match="max_iter=3"):
        DSGClassifier(solver="sgd", max_iter=3, tol=1e-12, random_state=0).fit(X, y)


def _ill_conditioned(loss, y, n=2000, alpha=1e-8):
    return gaussian_problem(loss, y, n, 2, alpha, data_seed=5, seed=3, n_components=64,
                            gamma=0.3)[0]


@pytest.mark.parametrize("loss, target", [("squared", _sine), ("logistic", _xor)])
def test_preconditioned_newton_reaches_the_same_optimum(loss, target):
    p = _ill_conditioned(loss, target)
    counts = {}
    sols = {}
    for precondition in (False, True):
        calls = []
        original = p.hessian_product
        p.hessian_product = lambda *a, _f=original, **k: calls.append(1) or _f(*a, **k)
        sols[precondition] = solve_newton_cg(p, tol=1e-8, precondition=precondition)
        del p.hessian_product
        counts[precondition] = len(calls)
        assert sols[precondition].converged
    f0, f1 = sols[False].objective, sols[True].objective
    assert abs(f0 - f1) <= 1e-6 * abs(f0)
    if loss == "squared":  # a fixed Hessian: the sampled factor is all CG needs
        assert counts[True] < counts[False] / 4
        ref = solve_cholesky(p)
        # (the coefficients of so ill-conditioned a problem are not: compare the model)
        np.testing.assert_allclose(p.raw(sols[True].coef, sols[True].intercept),
                                   p.raw(ref.coef, ref.intercept), rtol=0, atol=1e-5)
        assert abs(ref.objective - f1) <= 1e-8 * ref.objective


def test_preconditioned_newton_is_reproducible_and_weighted():
    p = _ill_conditioned("logistic", _xor)
    a = solve_newton_cg(p, tol=1e-8, precondition=True)
    b = solve_newton_cg(p, tol=1e-8, precondition=True)
    np.testing.assert_array_equal(a.coef, b.coef)


def test_auto_solves_quadratics_with_many_rows_by_conjugate_gradients():
    from onlinekernel.solvers import (
        PCG_FEATURES_PER_OUTPUT, PCG_MIN_FEATURES, PCG_ROWS_PER_FEATURE)
    M = PCG_MIN_FEATURES
    squared = get_loss("squared")
    assert choose_solver(squared, PCG_ROWS_PER_FEATURE * M, M, 1, 8, 1 << 34) == "newton-cg"
    assert choose_solver(squared, PCG_ROWS_PER_FEATURE * M - 1, M, 1, 8, 1 << 34) == "cholesky"
    # fewer features, or many output columns per feature: the normal equations
    assert choose_solver(squared, 10 ** 5, M // 2, 1, 8, 1 << 34) == "cholesky"
    K = M // PCG_FEATURES_PER_OUTPUT
    assert choose_solver(squared, 10 ** 5, M, K, 8, 1 << 34) == "newton-cg"
    assert choose_solver(squared, 10 ** 5, M, K + 1, 8, 1 << 34) == "cholesky"
    # the feature matrix over the cap: the normal equations, streamed
    assert choose_solver(squared, 10 ** 6, M, 1, 8, 1 << 30) == "cholesky"


def test_auto_solves_factored_quadratics_by_conjugate_gradients_from_fewer_features():
    from onlinekernel.solvers import PCG_MIN_FEATURES, PCG_MIN_FEATURES_FACTORED
    squared = get_loss("squared")
    M = PCG_MIN_FEATURES_FACTORED
    assert M < PCG_MIN_FEATURES
    assert choose_solver(squared, 10 ** 5, M, 1, 8, 1 << 34) == "cholesky"
    assert choose_solver(squared, 10 ** 5, M, 1, 8, 1 << 34, factored=True) == "newton-cg"
    assert choose_solver(squared, 10 ** 5, M // 2, 1, 8, 1 << 34, factored=True) == "cholesky"


def test_estimators_tell_auto_whether_the_map_is_factored(monkeypatch):
    import onlinekernel.estimators._base as base
    seen = []

    def spy(*args, **kwargs):
        seen.append(kwargs["factored"])
        return choose_solver(*args, **kwargs)

    monkeypatch.setattr(base, "choose_solver", spy)
    X = np.random.default_rng(0).normal(size=(200, 3))
    y = np.sin(X[:, 0])
    for kernel in ("nystrom", "gaussian"):
        DSGRegressor(kernel=kernel, max_blocks=2, block_size=32, random_state=0).fit(X, y)
    assert seen == [True, False]


# the SGD estimators without batch solvers stop by the same rule
def _stopping_cases():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2))
    return [
        (lambda **kw: DSGOneClassSVM(nu=0.2, random_state=0, **kw), (X,)),
        (lambda **kw: DSGDensityRatio(random_state=0, **kw), (X + 1.0, X)),
        (lambda **kw: DSGGaussianProcessRegressor(solver="sgd", random_state=0, **kw),
         (X, np.sin(X[:, 0]) + 0.1 * rng.normal(size=300))),
    ]


@pytest.mark.parametrize("case", range(3), ids=["one_class", "density_ratio", "gp"])
@pytest.mark.parametrize("early_stopping", [False, True])
def test_other_sgd_estimators_stop_early_and_warn_at_the_cap(case, early_stopping):
    make, data = _stopping_cases()[case]
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model = make(max_iter=300, early_stopping=early_stopping).fit(*data)
    assert 1 <= model.n_iter_ < 300 and model.n_epochs_seen_ == model.n_iter_
    with pytest.warns(ConvergenceWarning, match="max_iter=2") as record:
        capped = make(max_iter=2, tol=1e-12, early_stopping=early_stopping).fit(*data)
    assert capped.n_iter_ == 2
    assert record[0].filename == __file__  # attributed to the caller, not to onlinekernel
    fixed = make(max_iter=4, tol=None, early_stopping=early_stopping).fit(*data)
    assert fixed.n_iter_ == 4


# --------------------------------------------------------------------------- #
# the variance-reduced solvers: SVRG and SARAH
# --------------------------------------------------------------------------- #
_VR_CASES = {"squared": (_sine, 1), "logistic": (_xor, 1), "multinomial": (_multiclass, 3)}


@pytest.mark.parametrize("centred", [True, False])
@pytest.mark.parametrize("method", ["svrg", "sarah"])
@pytest.mark.parametrize("loss", list(_VR_CASES))
def test_variance_reduced_solvers_reach_tol_and_the_optimum(method, loss, centred):
    from onlinekernel.solvers import solve_sarah, solve_svrg
    target, K = _VR_CASES[loss]
    p, _, _ = _problem(loss, target, n=1000, d=2, alpha=1e-3, K=K)
    solve = {"svrg": solve_svrg, "sarah": solve_sarah}[method]
    sol = solve(p, tol=1e-6, batch_size=16, centred=centred)
    assert sol.converged and sol.gradient_norm <= 1e-6 and sol.n_iter < 1000
    ref = solve_newton_cg(p, tol=1e-10)
    assert sol.objective >= ref.objective * (1 - 1e-12)
    assert sol.objective - ref.objective <= 1e-6 * ref.objective
    # the same model as the reference (strongly convex: close in objective, close in f)
    np.testing.assert_allclose(p.raw(sol.coef, sol.intercept), p.raw(ref.coef, ref.intercept),
                               atol=2e-3)


def test_variance_reduced_coordinates():
    from onlinekernel.solvers.variance_reduced import coordinates, solve_svrg
    p, _, _ = _problem("logistic", _xor, alpha=1e-3)
    Phi = _explicit(p)
    mean, s = coordinates(p, rng=0)
    np.testing.assert_allclose(mean, Phi.mean(axis=0), rtol=1e-12, atol=1e-12)
    # all 300 rows fit in the sample: s^2 is the covariance's top eigenvalue, from below
    top = np.linalg.eigvalsh(np.cov(Phi, rowvar=False, bias=True))[-1]
    assert top * (1 - 1e-3) <= s ** 2 <= top * (1 + 1e-12)
    # without an intercept the mean cannot be absorbed: the plain coordinates
    q, _, _ = _problem("logistic", _xor, alpha=1e-3, fit_intercept=False)
    mean, s = coordinates(q)
    assert s == 1.0 and not mean.any()
    a = solve_svrg(q, tol=1e-6)
    b = solve_svrg(q, tol=1e-6, centred=False)
    assert a.converged and a.n_iter == b.n_iter and np.array_equal(a.coef, b.coef)
    assert not a.intercept.any()
    assert a.objective == pytest.approx(solve_newton_cg(q, tol=1e-10).objective, rel=1e-9)


@pytest.mark.parametrize("method", ["svrg", "sarah"])
@pytest.mark.parametrize("loss", list(_VR_CASES))
def test_variance_reduced_centred_coordinates_need_fewer_epochs(method, loss):
    # the reason for the centred coordinates (the module docstring): the features' mean
    # caps the plain step and the unpenalised intercept converges slowly; measured here
    # 11-33 centred epochs against 117 to over 200 plain ones
    from onlinekernel.solvers import BATCH_SOLVERS
    solve = BATCH_SOLVERS[method][0]
    target, K = _VR_CASES[loss]
    p, _, _ = _problem(loss, target, n=1000, d=2, alpha=1e-3, K=K)
    centred = solve(p, tol=1e-6)
    assert centred.converged
    assert not solve(p, tol=1e-6, max_iter=3 * centred.n_iter, centred=False).converged


@pytest.mark.parametrize("method", ["svrg", "sarah"])
def test_variance_reduced_passes_count_the_set_up(method):
    from onlinekernel.solvers import BATCH_SOLVERS
    p, _, _ = _problem("logistic", _xor, alpha=1e-3)
    passes = {}
    for centred in (True, False):
        seen = []
        BATCH_SOLVERS[method][0](p, tol=1e-6, max_iter=2, centred=centred,
                                 callback=lambda n, passes, **_: seen.append(passes))
        passes[centred] = seen
    # 300 rows, all in the power iterations' sample (20 products each way, per iteration):
    # plain: full gradient, row norms, one power iteration; centred: also the mean row and s's
    plain_setup = 1 + 1 + 40
    inner = 2 * (19 if method == "svrg" else 18) * 16 / 300
    assert passes[False][0] == pytest.approx(plain_setup + inner + 1)
    assert passes[True][0] == pytest.approx(plain_setup + 1 + 40 + inner + 1)
    assert passes[True][1] - passes[True][0] == pytest.approx(inner + 1)


@pytest.mark.parametrize("method", ["svrg", "sarah"])
def test_variance_reduced_regenerated_rows_give_the_cached_result(method):
    from onlinekernel.solvers import BATCH_SOLVERS
    solve = BATCH_SOLVERS[method][0]
    kept, _, _ = _problem("logistic", _xor, alpha=1e-3, cached=True)
    regen, _, _ = _problem("logistic", _xor, alpha=1e-3, cached=False)
    a = solve(kept, tol=1e-5, batch_size=16)
    b = solve(regen, tol=1e-5, batch_size=16)
    assert a.converged and b.converged and a.n_iter == b.n_iter
    np.testing.assert_allclose(a.coef, b.coef, rtol=0, atol=1e-9)


def test_variance_reduced_sample_weights_are_repeated_rows():
    from onlinekernel.solvers import solve_svrg
    w = np.random.default_rng(3).integers(1, 4, size=300).astype(float)
    p, X, fmap = _problem("logistic", _xor, alpha=1e-3, w=w)
    idx = np.repeat(np.arange(300), w.astype(int))
    op = FeatureOperator(fmap, 11, 2, X[idx], max_bytes=1 << 30)
    p2 = Problem(op, get_loss("logistic"), p.Y[idx], np.ones(idx.size), 1e-3, True, 1)
    a, b = solve_svrg(p, tol=1e-7, batch_size=8), solve_svrg(p2, tol=1e-7, batch_size=8)
    assert a.converged and b.converged
    assert abs(a.objective - b.objective) <= 1e-9 * b.objective


def test_variance_reduced_solvers_stop_at_max_iter_and_the_estimator_warns():
    from onlinekernel.solvers import solve_sarah, solve_svrg
    p, _, _ = _problem("logistic", _xor, alpha=1e-3)
    for solve in (solve_svrg, solve_sarah):
        capped = solve(p, tol=1e-12, max_iter=3)
        assert not capped.converged and capped.n_iter == 3
        resumed = solve(p, tol=1e-4, coef=capped.coef, intercept=capped.intercept)
        assert resumed.converged  # a warm start continues
    X = np.random.default_rng(0).normal(size=(200, 2))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    for method in ("svrg", "sarah"):
        with pytest.warns(ConvergenceWarning, match=f"solver '{method}' stopped after max_iter=2"):
            clf = DSGClassifier(loss="logistic", solver=method, max_iter=2, tol=1e-12,
                                block_size=16, max_blocks=2, random_state=0).fit(X, y)
        assert clf.solver_ == method and clf.n_iter_ == 2


def test_variance_reduced_solvers_refuse_non_smooth_losses():
    from onlinekernel.solvers import solve_sarah, solve_svrg
    p, _, _ = _problem("hinge", _xor)
    for solve, name in ((solve_svrg, "svrg"), (solve_sarah, "sarah")):
        with pytest.raises(ValueError, match=rf"solver '{name}' needs a smooth loss .* hinge "
                                             r"has curvature='piecewise_linear' \(use solver "
                                             r"'dual-cd'"):
            solve(p)
    X = np.random.default_rng(0).normal(size=(50, 2))
    with pytest.raises(ValueError, match=r"solver='svrg' converges for losses of curvature "
                                         r"'constant' or 'smooth'; 'hinge'"):
        DSGClassifier(loss="hinge", solver="svrg").fit(X, X[:, 0] > 0)
    with pytest.raises(ValueError, match="batch_size must be an integer >= 1"):
        solve_svrg(_problem("logistic", _xor)[0], batch_size=0)


def test_variance_reduced_estimators_reach_the_batch_optimum():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 2))
    y = np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=600)
    common = dict(block_size=32, max_blocks=2, alpha=1e-2, random_state=0)
    ref = DSGRegressor(loss="huber", solver="newton-cg", tol=1e-10, **common).fit(X, y)
    for method in ("svrg", "sarah"):
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            reg = DSGRegressor(loss="huber", solver=method, tol=1e-6, **common).fit(X, y)
        assert reg.solver_ == method
        np.testing.assert_allclose(reg.predict(X), ref.predict(X), atol=1e-3)


def test_step_from_the_declared_or_estimated_curvature_bound():
    from onlinekernel.solvers import smoothness_bound, solve_svrg
    assert [get_loss(n).curvature_bound for n in
            ("squared", "logistic", "multinomial", "squared_hinge", "huber")] == [
        1.0, 0.25, 0.5, 1.0, 1.0]
    p, _, _ = _problem("logistic", _xor, alpha=1e-3)
    Phi = _explicit(p)
    expected = 0.25 * ((Phi ** 2).sum(axis=1).max() + 1.0) + p.lam
    assert smoothness_bound(p) == pytest.approx(expected, rel=1e-12)

    class Logistic(PyLogistic):  # a Python loss that declares no bound: estimated at the start
        curvature = "smooth"

    assert Logistic.curvature_bound is None

    from onlinekernel.losses.base import as_cy_loss
    p2 = Problem(p.features, as_cy_loss(Logistic()), p.Y, np.ones(300), 1e-3, True, 1)
    assert smoothness_bound(p2) == pytest.approx(expected, rel=1e-6)
    assert solve_svrg(p2, tol=1e-6).objective == pytest.approx(
        solve_newton_cg(p, tol=1e-10).objective, rel=1e-8)



class _Mixed(FeatureMap):
    """Gaussian RFF blocks, each mixed by an upper-triangular matrix of its seed: ``Phi = B T``."""
    name = "test_mixed"

    def __init__(self, n_components=8, gamma=0.5, factored=True, pad=0):
        super().__init__(n_components)
        self.gamma, self.factored, self.pad = gamma, factored, pad

    def param_size(self):
        F, d = self.n_components, self.n_features_in
        return F * (d + 1) + F * F

    def generate_params(self, seed, block):
        F, d = self.n_components, self.n_features_in
        w = self.normal(seed, block, 0, F * d) * np.sqrt(2 * self.gamma)
        b = self.uniform(seed, block, 1, F, 0.0, 2 * np.pi)
        T = np.triu(self.normal(seed, block, 2, F * F).reshape(F, F)) / F + np.eye(F)
        return np.concatenate([w, b, T.ravel()])

    def _split(self, params):
        F, d = self.n_components, self.n_features_in
        W, b = params[:F * d].reshape(F, d), params[F * d:F * (d + 1)]
        return W, b, params[F * (d + 1):].reshape(F, F)

    def _base(self, params, X):
        W, b, _ = self._split(params)
        return np.sqrt(2.0) * np.cos(X @ W.T + b)

    def features(self, params, X):
        return self._base(params, X) @ self._split(params)[2]

    def linear_factor(self, seed, n_blocks):
        if not self.factored:
            return None
        import scipy.linalg
        blocks = [self.generate_params(seed, j) for j in range(n_blocks)]
        T = scipy.linalg.block_diag(*[self._split(p)[2] for p in blocks])
        # pad: B gets columns that T maps to nothing (B wider than Phi)
        T = np.vstack([T, np.zeros((self.pad, T.shape[1]))])
        return _Factor(lambda X, dtype: np.hstack([self._base(p, X) for p in blocks]
                                                  + [np.cos(X[:, :1]) * np.ones(self.pad)]), T)


class _Factor:
    def __init__(self, base, T):
        self.base, self.T, self.width = base, T, T.shape[0]

    def apply(self, C):
        return self.T @ C

    def apply_transposed(self, G):
        return self.T.T @ G


def _mixed(d, factored=True, pad=0):
    return as_cy_feature_map(_Mixed(factored=factored, pad=pad)).bind(d)


def _phi(fmap, seed, n_blocks, X):
    return np.hstack([fmap.transform_block(seed, j, X) for j in range(n_blocks)])


@pytest.mark.parametrize("cached", [True, False])
@pytest.mark.parametrize("pad", [0, 2])
def test_a_factored_map_gives_the_products_of_its_features(cached, pad):
    """Phi = B T: products through B and T equal those with Phi itself (FALKON's arrangement)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    fmap = _mixed(3, pad=pad)
    op = FeatureOperator(fmap, seed=5, n_blocks=3, X=X, max_bytes=1 << 30 if cached else 0)
    assert op.factored and op.cached == cached
    Phi = _phi(fmap, 5, 3, X)
    C, G, d = rng.normal(size=(24, 2)), rng.normal(size=(300, 2)), rng.random(300)
    np.testing.assert_allclose(op.matvec(C), Phi @ C, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(op.rmatvec(G), Phi.T @ G, rtol=1e-10, atol=1e-10)
    A, s = op.gram(d)
    np.testing.assert_allclose(A, Phi.T @ (d[:, None] * Phi), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(s, Phi.T @ d, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(op.rows(np.array([4, 0, 7])), Phi[[4, 0, 7]], atol=1e-12)
    for r0, r1, P in op.batches(whole=False):
        np.testing.assert_allclose(P, Phi[r0:r1], atol=1e-12)
    if cached:
        np.testing.assert_allclose(op.dense(), Phi, atol=1e-12)
        assert not op.factored  # Phi is what is kept now
        np.testing.assert_allclose(op.matvec(C), Phi @ C, rtol=1e-10, atol=1e-10)
    else:
        with pytest.raises(ValueError, match="not kept in memory"):
            op.dense()


@pytest.mark.parametrize("solver", [solve_cholesky, solve_newton_cg])
def test_solvers_reach_the_same_optimum_on_a_factored_map(solver):
    """The solvers see Phi = B T only through the operator: the optimum of Phi itself."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 2))
    y = np.sin(2 * X[:, :1])
    sols = []
    for factored in (True, False):
        op = FeatureOperator(_mixed(2, factored), seed=3, n_blocks=2, X=X, max_bytes=1 << 30)
        assert op.factored == factored
        p = Problem(op, get_loss("squared"), y, np.ones(200), 1e-4, True, 1)
        sols.append(solver(p, tol=1e-10))
    np.testing.assert_allclose(sols[0].coef, sols[1].coef, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(sols[0].intercept, sols[1].intercept, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("model", [np.float64, np.float32])
def test_a_nystrom_operator_keeps_b_in_the_model_s_precision(model):
    """Nystrom's factor asks a float64 model for a float64 B even with float32
    features (L^-1 amplifies B's rounding); a float32 model keeps B in float32."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(500, 4))
    fmap = get_feature_map("nystrom", n_components=32, gamma=0.3).bind(4).fit(X, 1, 2)
    op = FeatureOperator(fmap, seed=1, n_blocks=2, X=X.astype(model), max_bytes=1 << 30,
                         dtype=np.float32)
    assert op.factored and op.cached
    assert op.dtype == model and op._Phi.dtype == model
    Phi = _phi(fmap, 1, 2, X)
    C = rng.normal(size=(64, 1))
    rtol = 1e-9 if model == np.float64 else 1e-3
    np.testing.assert_allclose(op.matvec(C), Phi @ C, rtol=rtol, atol=rtol)
    # the landmarks' rows (FALKON's preconditioner) in the precision asked for
    rows = op.sample_rows(np.float32)
    assert rows.dtype == np.float32 and rows.flags.f_contiguous
    np.testing.assert_allclose(rows, op.sample_rows(), rtol=1e-6, atol=1e-6)


def test_a_float64_nystrom_operator_keeps_b_in_float32_where_tol_allows_its_gain(
        monkeypatch):
    """float32 features of a float64 model keep Nystrom's B in float32 exactly when
    float32 rounding amplified by the factor's rounding gain still reaches tol."""
    from onlinekernel.solvers import FLOAT32_TOL

    rng = np.random.default_rng(5)
    X = rng.normal(size=(400, 20))
    fmap = get_feature_map("nystrom", n_components=32, gamma=0.02).bind(20).fit(X, 1, 2)
    gain = fmap.linear_factor(1, 2).rounding_gain()
    assert 1.0 < gain < 100.0
    Phi = _phi(fmap, 1, 2, X)
    C = rng.normal(size=(64, 2))
    for tol, kept in ((2 * FLOAT32_TOL * gain, np.float32),
                      (0.5 * FLOAT32_TOL * gain, np.float64), (None, np.float64)):
        op = FeatureOperator(fmap, seed=1, n_blocks=2, X=X, max_bytes=1 << 30,
                             dtype=np.float32, tol=tol)
        assert op.dtype == kept and op._Phi.dtype == kept
        # float32 B's rounding, amplified at most ``gain`` times
        scale = np.abs(Phi @ C).max()
        np.testing.assert_allclose(op.matvec(C), Phi @ C, rtol=0,
                                   atol=(1e-12 if kept == np.float64 else gain * 1e-6) * scale)
    # the estimators pass their tol: newton-cg's float32 features, B float32 at 1e-3
    Y = (X[:, :1] > 0).astype(float)
    built, real = [], FeatureOperator.__init__

    def spy(self, *args, **kwargs):
        real(self, *args, **kwargs)
        built.append(self.dtype)

    monkeypatch.setattr(FeatureOperator, "__init__", spy)
    for tol, kept in ((1e-3, np.float32), (1e-8, np.float64)):
        built.clear()
        DSGRegressor(kernel="nystrom", n_components=64, block_size=32, gamma=0.02,
                     solver="newton-cg", tol=tol, random_state=1).fit(X, Y.ravel())
        assert built and all(b == kept for b in built)


@pytest.mark.parametrize("d, gamma, kept", [(20, 0.02, np.float32), (2, 0.5, np.float64)])
def test_max_memory_counts_the_precision_a_nystrom_b_is_kept_in(monkeypatch, d, gamma, kept):
    """The memory a solver is allowed is counted at the precision its operator keeps
    Nystrom's B in: float32 for a well-conditioned factor, float64 where the factor's
    rounding gain rules float32 out (counted at float32, newton-cg was allowed, then
    regenerated its float64 B on every product, or kept it past max_memory with its
    working arrays), and the kept matrix takes at most what the solver leaves."""
    from onlinekernel.solvers import feature_dtype, rounding_gain, solver_memory

    rng = np.random.default_rng(3)
    n, M, tol = 1200, 128, 1e-4
    X = rng.normal(size=(n, d))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    kw = dict(kernel="nystrom", block_size=64, max_blocks=2, gamma=gamma, loss="logistic",
              tol=tol, random_state=1)
    fmap = get_feature_map("nystrom", n_components=64, gamma=gamma).bind(d).fit(X, 1, 2)
    assert (feature_dtype("newton-cg", np.float64, tol, rounding_gain(fmap, 1, 2, tol))
            == kept)
    need = {size: solver_memory("newton-cg", n, M, 1, size) for size in (4, 8)}
    built, real = [], FeatureOperator.__init__

    def spy(self, fmap, seed, n_blocks, X, max_bytes, *args, **kwargs):
        real(self, fmap, seed, n_blocks, X, max_bytes, *args, **kwargs)
        built.append((self.dtype, self.cached, max_bytes))

    monkeypatch.setattr(FeatureOperator, "__init__", spy)
    # what float32 needs: enough for a well-conditioned factor, too little otherwise
    clf = DSGClassifier(solver="newton-cg", max_memory=need[4], **kw)
    if kept == np.float64:
        with pytest.raises(ValueError, match="max_memory"):
            clf.fit(X, y)
        assert not built
        assert DSGClassifier(max_memory=need[4], **kw).fit(X, y).solver_ == "sgd"
    else:
        assert clf.fit(X, y).solver_ == "newton-cg"
    built.clear()
    clf = DSGClassifier(solver="newton-cg", max_memory=need[8 if kept == np.float64 else 4],
                        **kw).fit(X, y)
    beyond = solver_memory("newton-cg", n, M, 1, 0)
    (dtype, cached, max_bytes), = built
    assert dtype == kept and cached and max_bytes == clf.max_memory - beyond
    assert n * M * np.dtype(dtype).itemsize + beyond <= clf.max_memory


def test_a_nystrom_operator_preconditions_from_its_landmarks(monkeypatch):
    """A constant-curvature loss builds FALKON's preconditioner from the landmarks'
    features (``sqrt(M) L``, no whitening of drawn rows) and, on that factor alone (no
    grown sample), reaches the exact optimum."""
    from onlinekernel.solvers import newton

    monkeypatch.setattr(newton, "_grown_size", lambda *a: None)
    rng = np.random.default_rng(2)
    X = rng.normal(size=(600, 3))
    y = np.sin(2 * X[:, :1]) + 0.1 * rng.normal(size=(600, 1))
    fmap = get_feature_map("nystrom", n_components=16, gamma=0.5).bind(3).fit(X, 4, 2)
    op = FeatureOperator(fmap, seed=4, n_blocks=2, X=X, max_bytes=1 << 30)
    assert op.factored
    np.testing.assert_allclose(op.sample_rows(), _phi(fmap, 4, 2, fmap.landmarks_), atol=1e-5)
    exact = solve_cholesky(Problem(op, get_loss("squared"), y, np.ones(600), 1e-4, True, 1),
                           tol=1e-12)

    def no_drawn_rows(index):
        raise AssertionError("the preconditioner whitened drawn rows")

    op.rows = no_drawn_rows
    sol = solve_newton_cg(Problem(op, get_loss("squared"), y, np.ones(600), 1e-4, True, 1),
                          tol=1e-10, precondition=True)
    assert sol.converged
    np.testing.assert_allclose(sol.coef, exact.coef, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(sol.intercept, exact.intercept, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("alpha", [1e-2, 1e-9])  # a float32 and a float64 preconditioner
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_the_landmark_preconditioner_by_lauum_is_the_product(monkeypatch, fit_intercept, alpha):
    """Built from Nystrom's triangular rows by ``lauum``, the preconditioner is the one
    the general path builds with ``Q^T Q`` on the same rows."""
    from onlinekernel.solvers import newton

    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 3))
    fmap = get_feature_map("nystrom", n_components=16, gamma=0.5).bind(3).fit(X, 1, 2)
    op = FeatureOperator(fmap, seed=1, n_blocks=2, X=X, max_bytes=1 << 30)
    p = Problem(op, get_loss("squared"), np.sin(X[:, :1]), np.ones(400), alpha,
                fit_intercept, 1)
    Phi = op.sample_rows()
    assert newton._lower_triangular(Phi)
    assert not newton._lower_triangular(Phi.T) and not newton._lower_triangular(Phi[:, :-1])
    built = []
    for triangular in (True, False):
        if not triangular:
            monkeypatch.setattr(newton, "_lower_triangular", lambda P: False)
        built.append(newton._Preconditioner(p, np.zeros((400, 1)), 32,
                                            np.random.default_rng(0)))
    r, rb = rng.normal(size=(32, 1)), rng.normal(size=1)
    (zC, zb), (eC, eb) = (pre.solve(r, rb) for pre in built)
    assert built[0].factor[0].dtype == (np.float32 if alpha > 1e-3 else np.float64)
    # float64 at alpha = 1e-9: rounding times a condition number of about 1e8
    tol = 1e-4 if alpha > 1e-3 else 1e-6
    np.testing.assert_allclose(zC, eC, rtol=tol, atol=tol * np.abs(eC).max())
    np.testing.assert_allclose(zb, eb, rtol=tol)


def test_sandwich_tiles_follow_the_blas_threads():
    """One BLAS thread: tiles of 512 KiB (the products' working set shares the cache);
    more: 2 MiB, which a threaded BLAS splits; at least 16 rows and 2 K rows."""
    from threadpoolctl import threadpool_limits

    import onlinekernel.solvers.features as features
    from onlinekernel.core.threads import one_blas_thread

    assert features._sandwich_rows(4096, 1, 8, 1) == 16
    assert features._sandwich_rows(4096, 1, 8, 2) == 64
    assert features._sandwich_rows(8192, 10, 4, 2) == 64
    assert features._sandwich_rows(1024, 10, 8, 1) == 64
    assert features._sandwich_rows(8192, 26, 8, 1) == 52
    np.ones(2) @ np.ones(2)  # numpy's BLAS is loaded
    with threadpool_limits(1):
        assert one_blas_thread.blas_threads() == 1
    with one_blas_thread:
        assert one_blas_thread.blas_threads() == 1


class _Coupled:
    """A loss as given, but declared not separable: one CG recurrence for all outputs."""
    separable_outputs = False

    def __init__(self, loss):
        self._loss = loss

    def __getattr__(self, name):
        return getattr(self._loss, name)


def test_separable_outputs_take_one_conjugate_gradient_recurrence_each():
    """Logistic one-vs-rest outputs at a point where their curvatures differ by orders of
    magnitude: one recurrence per output solves each block to the same tolerance in
    fewer Hessian products than one recurrence over all of them."""
    from onlinekernel.solvers import newton

    assert get_loss("logistic").separable_outputs and get_loss("squared").separable_outputs
    assert not get_loss("multinomial").separable_outputs
    three = lambda X: np.column_stack([_xor(X), np.sign(X[:, 0]), -np.ones(len(X))])
    steps = {}
    for name, wrap in (("separate", lambda loss: loss), ("joint", _Coupled)):
        p, X, _ = _problem("logistic", three, n=400, alpha=1e-5, K=3)
        p.loss = wrap(p.loss)
        assert p.loss.separable_outputs == (name == "separate")
        # saturated (tiny curvature), moderate and flat outputs
        U = np.column_stack([8.0 * _xor(X)[:, 0], X[:, 0], np.zeros(len(X))])
        gC, gb = p.gradient(np.zeros((p.M, 3)), U)
        pC, pb, pU, used = newton._cg(p, U, gC, gb, 1e-6, 500)
        hC, hb = p.hessian_product(U, pC, pb)
        residual = np.sqrt(np.sum((hC + gC) ** 2) + np.sum((hb + gb) ** 2))
        assert residual <= 1e-6 * np.sqrt(np.sum(gC ** 2) + np.sum(gb ** 2))
        np.testing.assert_allclose(pU, p.raw(pC, pb), atol=1e-8)  # outputs kept in step
        # solved tightly, both are the same step
        steps[name] = (used, newton._cg(p, U, gC, gb, 1e-11, 5000)[0])
    assert steps["separate"][0] < steps["joint"][0] / 1.5  # measured: 92 products against 207
    np.testing.assert_allclose(steps["separate"][1], steps["joint"][1], rtol=1e-6,
                               atol=1e-6 * np.abs(steps["joint"][1]).max())


def test_a_python_loss_declares_its_outputs_separable_through_the_adapter():
    from onlinekernel.losses.base import PyLossAdapter

    assert not PyLossAdapter(PySquared()).separable_outputs

    class Separable(PySquared):
        separable_outputs = True

    assert PyLossAdapter(Separable()).separable_outputs


def _clustered_nystrom(n=6000, alpha=1e-9):
    """A tight cluster and a few spread rows: the landmarks' Hessian misses the ridge's
    small directions (skin_nonskin's shape, in miniature)."""
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(size=(n - n // 32, 3)) * 0.05, rng.normal(size=(n // 32, 3))])
    y = np.sin(3 * X[:, :1]) + 0.05 * rng.normal(size=(n, 1))
    fmap = get_feature_map("nystrom", n_components=32, gamma=0.5).bind(3).fit(X, 4, 2)
    op = FeatureOperator(fmap, seed=4, n_blocks=2, X=X, max_bytes=1 << 30)
    return Problem(op, get_loss("squared"), y, np.ones(n), alpha, True, 1)


def test_a_quadratic_grows_its_preconditioner_when_its_iterations_crawl(monkeypatch):
    """Conjugate gradients that crawl on the landmarks' factor draw more rows for a
    new one, take several times fewer products, and reach the normal equations' optimum."""
    from onlinekernel.solvers import newton

    products, sols = {}, {}
    # the grown sample is drawn by the solver's own seed: the same fit twice
    again = solve_newton_cg(_clustered_nystrom(), tol=1e-8, precondition=True)
    for grow in (True, False):
        if not grow:
            monkeypatch.setattr(newton, "_grown_size", lambda *a: None)
        p = _clustered_nystrom()
        calls = []
        original = p.hessian_product
        p.hessian_product = lambda *a, _f=original, **k: calls.append(1) or _f(*a, **k)
        sols[grow] = solve_newton_cg(p, tol=1e-8, precondition=True)
        products[grow] = len(calls)
        assert sols[grow].converged and sols[grow].gradient_norm <= 1e-8
    assert products[True] * 4 < products[False]
    p = _clustered_nystrom()
    ref = solve_cholesky(p)
    np.testing.assert_allclose(p.raw(sols[True].coef, sols[True].intercept),
                               p.raw(ref.coef, ref.intercept), rtol=0, atol=1e-5)
    assert abs(sols[True].objective - ref.objective) <= 1e-8 * ref.objective
    np.testing.assert_array_equal(again.coef, sols[True].coef)


def test_grown_size_weighs_the_factor_against_the_iterations_it_saves():
    from onlinekernel.solvers.newton import _grown_size

    # crawling (a residual 10x down in 10 iterations, 1e-10 to go): 4x the rows
    assert _grown_size(100_000, 1024, 1, 2048, 10, 0.1, 1.0, 1e-10) == 8192
    # ... never more rows than there are
    assert _grown_size(5000, 1024, 1, 2048, 10, 0.1, 1.0, 1e-10) == 5000
    assert _grown_size(5000, 1024, 1, 5000, 10, 0.1, 1.0, 1e-10) is None
    # fast (1e-6 down in 10 iterations, one more left): not worth a factor
    assert _grown_size(100_000, 1024, 1, 2048, 10, 1e-6, 1.0, 1e-7) is None
    # no progress at all: grow
    assert _grown_size(100_000, 1024, 1, 2048, 10, 1.0, 1.0, 1e-10) == 8192
    # few rows per feature: the factor costs more than many products
    assert _grown_size(20_000, 8192, 1, 16_384, 10, 0.1, 1.0, 1e-10) is None


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_drawn_rows_form_the_preconditioner_by_chunks(monkeypatch, fit_intercept):
    """A sample larger than a chunk of rows sums its chunks' Gram matrices: the factor of
    all the rows at once."""
    from onlinekernel.solvers import newton

    p = _ill_conditioned("squared", _sine)  # alpha = 1e-8: a float64 factor
    p.fit_intercept = fit_intercept
    U = np.zeros((p.features.shape[0], 1))
    one = newton._Preconditioner(p, U, 1000, np.random.default_rng(0), landmarks=False)
    monkeypatch.setattr(newton, "_chunk", lambda M: 37)
    chunked = newton._Preconditioner(p, U, 1000, np.random.default_rng(0), landmarks=False)
    assert one.factor[0].dtype == chunked.factor[0].dtype == np.float64
    A = [np.tril(pre.factor[0]) @ np.tril(pre.factor[0]).T for pre in (one, chunked)]
    np.testing.assert_allclose(A[1], A[0], rtol=0, atol=1e-12 * np.abs(A[0]).max())


@pytest.mark.parametrize("kind", ["kept", "regenerated", "nystrom"])
@pytest.mark.parametrize("weights", ["equal", "unequal"])
def test_gram_gives_the_right_hand_side_in_the_same_pass(kind, weights):
    rng = np.random.default_rng(6)
    X = rng.normal(size=(2500, 3))  # more rows than one regenerated batch
    fmap = get_feature_map("nystrom" if kind == "nystrom" else "gaussian",
                           n_components=16, gamma=0.5).bind(3)
    if kind == "nystrom":
        fmap.fit(X, 5, 2)
    op = FeatureOperator(fmap, seed=5, n_blocks=2, X=X,
                         max_bytes=0 if kind == "regenerated" else 1 << 30)
    d = np.full(2500, 0.3) if weights == "equal" else rng.uniform(0.1, 2.0, 2500)
    G = rng.normal(size=(2500, 2))
    A, s, PtG = op.gram(d, G)
    Phi = np.vstack([P for _, _, P in op.batches()])
    np.testing.assert_allclose(A, Phi.T @ (d[:, None] * Phi), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(s, Phi.T @ d, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(PtG, op.rmatvec(G), rtol=1e-10, atol=1e-10)
    A2, s2 = op.gram(d)
    assert np.array_equal(A, A2) and np.array_equal(s, s2) and np.array_equal(A, A.T)


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("alpha", [1e-2, 1e-7, 0.0])
@pytest.mark.parametrize("cached", [False, True])
def test_cholesky_reports_the_gradient_and_objective_a_pass_would(fit_intercept, alpha, cached):
    # solve_cholesky takes them from its factor and the normal equations, without a
    # pass over the features; they must be what one would measure (alpha = 0: the
    # jittered system, whose shift is not part of the objective)
    w = np.random.default_rng(7).uniform(0.5, 2.0, 400)
    p, _, _ = _problem("squared", lambda X: np.hstack([_sine(X), _xor(X)]), n=400,
                       alpha=alpha, fit_intercept=fit_intercept, K=2, cached=cached, w=w)
    sol = solve_cholesky(p)
    U = p.raw(sol.coef, sol.intercept)
    g = Problem.norm(*p.gradient(sol.coef, U))
    g0 = Problem.norm(*p.gradient(np.zeros_like(sol.coef), np.zeros_like(U)))
    assert sol.gradient_norm == pytest.approx(g / g0, rel=1e-3, abs=1e-13)
    assert sol.gradient_norm < 1e-8
    value = p.value(sol.coef, U)
    risk0 = p.value(np.zeros_like(sol.coef), np.zeros_like(U))
    # to the rounding of J(0): the formula subtracts terms of its size
    assert abs(sol.objective - value) <= 1e-12 * risk0 + 1e-9 * abs(value)


def test_a_cholesky_fit_keeps_no_feature_matrix(monkeypatch):
    # with at least as many rows as features the normal equations are its only pass
    import onlinekernel.solvers.features as features
    made = []
    real = features.FeatureOperator.__init__

    def spy(self, *args, **kwargs):
        real(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(features.FeatureOperator, "__init__", spy)
    X = np.random.default_rng(8).normal(size=(600, 3))
    y = np.sin(X[:, 0])
    DSGRegressor(solver="cholesky", max_blocks=2, block_size=64, random_state=0).fit(X, y)
    assert made and not any(op.cached for op in made)
    made.clear()
    # fewer rows than features: the n x n system, on the kept rows
    DSGRegressor(solver="cholesky", max_blocks=2, block_size=64, random_state=0).fit(X[:100],
                                                                                      y[:100])
    assert any(op.cached and op.shape == (100, 128) for op in made)


def test_a_cholesky_retry_forms_the_normal_equations_once(monkeypatch):
    # a factorisation that fails is retried with the next jitter on the same normal
    # equations (forming them again would take another pass over the features)
    from onlinekernel.solvers import newton
    p, _, _ = _problem("squared", _sine, n=400, alpha=1e-6, cached=False)
    formed = []
    real_normal = p.normal_equations

    def normal(**kwargs):
        formed.append(1)
        return real_normal(**kwargs)

    monkeypatch.setattr(p, "normal_equations", normal)
    # a first jitter that leaves the matrix indefinite: its factorisation fails
    monkeypatch.setattr(newton, "_JITTERS", (-10.0,) + newton._JITTERS)
    retried = solve_cholesky(p)
    assert formed == [1]
    monkeypatch.setattr(newton, "_JITTERS", newton._JITTERS[1:])
    again = solve_cholesky(p)  # the second jitter from the start
    assert np.array_equal(retried.coef, again.coef)
    assert np.array_equal(retried.intercept, again.intercept)


def _nystrom_problem(d, gamma, m, alpha, n=3000, dtype=np.float64, seed=8):
    """A squared-loss problem on one block of ``m`` Nystrom landmarks of ``n`` normal rows."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.sin(X[:, :1]) + 0.1 * rng.normal(size=(n, 1))
    fmap = get_feature_map("nystrom", n_components=m, gamma=gamma).bind(d).fit(X, 2, 1)
    op = FeatureOperator(fmap, seed=2, n_blocks=1, X=X.astype(dtype), max_bytes=1 << 30)
    return Problem(op, get_loss("squared"), y, np.ones(n), alpha, True, 1)


def _count_factored_grams(monkeypatch, op):
    calls = []
    factored = op._factor.transposed_gram
    monkeypatch.setattr(op._factor, "transposed_gram",
                        lambda A: calls.append(1) or factored(A))
    return calls


def _true_gradient_norm(p, sol):
    """The relative gradient norm at ``sol`` from whitened, float64 features (numpy)."""
    Phi = np.vstack([P for _, _, P in p.features.batches()]).astype(np.float64)
    w = p.w[:, None]  # squared loss: dloss/du = u - y
    R, R0 = w * (Phi @ sol.coef + sol.intercept - p.Y), -w * p.Y
    g = np.concatenate([(Phi.T @ R + p.lam * sol.coef).ravel(), R.sum(axis=0)])
    g0 = np.concatenate([(Phi.T @ R0).ravel(), R0.sum(axis=0)])
    return np.linalg.norm(g) / np.linalg.norm(g0)


@pytest.mark.parametrize("tol", [1e-4, 1e-8])
def test_cholesky_forms_a_well_conditioned_nystrom_gram_from_b_and_still_reaches_tol(
        monkeypatch, tol):
    """T^T (B^T D B) T skips the whitening of every row where T's amplified rounding
    lets the penalty reach tol: the true gradient is within tol, and the solution is
    the whitened one's."""
    p = _nystrom_problem(20, 0.02, 64, 1e-4)
    calls = _count_factored_grams(monkeypatch, p.features)
    sol = solve_cholesky(p, tol=tol)
    assert calls == [1]
    assert _true_gradient_norm(p, sol) <= tol
    whitened = solve_cholesky(_nystrom_problem(20, 0.02, 64, 1e-4), tol=None)
    np.testing.assert_allclose(sol.coef, whitened.coef, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(sol.intercept, whitened.intercept, rtol=1e-9)


def test_cholesky_whitens_the_rows_of_an_ill_conditioned_nystrom_factor(monkeypatch):
    # 2-d inputs, 256 landmarks: |T|^2 is ~1e10 times the whitened rows' scale, so
    # B^T D B's rounding would swamp a small penalty (DESIGN: its Gram matrix was
    # indefinite after centring); the whitened pass reaches tol
    p = _nystrom_problem(2, 0.5, 256, 1e-8)
    assert p.features._factor.norm() ** 2 * 2e-16 * 3000 > 1e-4 * p.lam
    calls = _count_factored_grams(monkeypatch, p.features)
    sol = solve_cholesky(p, tol=1e-4)
    assert calls == []
    assert _true_gradient_norm(p, sol) <= 1e-4


def test_the_factored_gram_is_checked_after_its_pass(monkeypatch):
    """A prediction from the landmarks that undersells the rows' norms is caught by the
    trace of the matrix formed: the whitened pass follows, and its matrix is returned."""
    p = _nystrom_problem(2, 0.5, 256, 1e-8)
    op = p.features
    monkeypatch.setattr(op._factor, "typical_row_norm2", lambda: 1e-30)
    assert op._factored_gram_may_reach(np.ones(3000), p.lam, 1e-4)
    calls = _count_factored_grams(monkeypatch, op)
    A, s = op.gram(np.ones(3000), ridge=p.lam, tol=1e-4)
    assert calls == []
    Phi = np.vstack([P for _, _, P in op.batches()])
    np.testing.assert_allclose(A, Phi.T @ Phi, rtol=1e-12, atol=1e-12 * np.abs(A).max())


def test_the_factored_gram_needs_a_penalty_a_tol_and_a_precise_b(monkeypatch):
    # without a penalty, a tol, or with float32 B (whose batch sums round at 6e-8),
    # the same well-conditioned factor is whitened row by row
    p = _nystrom_problem(20, 0.02, 64, 1e-4)
    op, d = p.features, np.ones(3000)
    calls = _count_factored_grams(monkeypatch, op)
    for ridge, tol in [(0.0, 1e-4), (p.lam, 0.0)]:
        op.gram(d, ridge=ridge, tol=tol)
        assert calls == []
    A, s = op.gram(d, ridge=p.lam, tol=1e-4)
    assert calls == [1]
    Phi = np.vstack([P for _, _, P in op.batches()])
    np.testing.assert_allclose(A, Phi.T @ Phi, rtol=1e-9, atol=1e-9 * np.abs(A).max())
    np.testing.assert_allclose(s, Phi.sum(axis=0), rtol=1e-9, atol=1e-9 * np.abs(s).max())
    single = _nystrom_problem(20, 0.02, 64, 1e-4, dtype=np.float32)
    assert single.features.dtype == np.float32
    assert not single.features._factored_gram_may_reach(d, p.lam, 1e-4)
    # a regularisation path keeps one Gram matrix for smaller penalties: whitened
    p.keep_normal_equations = True
    p.normal_equations(tol=1e-4)
    assert calls == [1]


@pytest.mark.parametrize("targets", ["binary", "one-vs-rest", "continuous"])
def test_the_constant_risk_over_distinct_targets_is_that_of_every_row(targets):
    """constant_terms over a classifier's few distinct targets, weighed by their rows,
    is the risk of all the rows; continuous targets keep every row."""
    from onlinekernel.solvers.newton import best_constant
    from onlinekernel.solvers.problem import constant_terms, distinct_rows

    rng = np.random.default_rng(9)
    n = 3000
    Y = {"binary": np.where(rng.random((n, 1)) < 0.3, 1.0, -1.0),
         "one-vs-rest": np.where(rng.random((n, 3)) < 0.3, 1.0, -1.0),
         "continuous": rng.normal(size=(n, 1))}[targets]
    w = rng.uniform(0.5, 2.0, n)
    loss = get_loss("squared_hinge" if targets == "one-vs-rest" else
                    "logistic" if targets == "binary" else "huber")
    p = Problem(FeatureOperator(get_feature_map("gaussian", n_components=8).bind(2), 0, 1,
                                rng.normal(size=(n, 2)), max_bytes=0),
                loss, Y, w, 1e-4, True, Y.shape[1])
    Yd, wd = distinct_rows(p.Y, p.w)
    assert Yd.shape[0] == {"binary": 2, "one-vs-rest": 8, "continuous": n}[targets]
    assert wd.sum() == pytest.approx(1.0, rel=1e-12)
    b = rng.normal(size=Y.shape[1])
    for got, want in zip(p.constant_terms(b), constant_terms(loss, p.Y, p.w, b)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    # the intercept's start: the optimum of the constant risk over every row
    b0 = best_constant(p)
    g = constant_terms(loss, p.Y, p.w, b0)[1]
    assert np.linalg.norm(g) <= 1e-8 * np.linalg.norm(constant_terms(loss, p.Y, p.w, 0 * b0)[1])
