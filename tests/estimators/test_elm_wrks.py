"""Extreme learning machines and weighted random kitchen sinks (issue 15 items 4 and 5)."""
import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.exceptions import ConvergenceWarning

from onlinekernel import (DSGClassifier, DSGRegressor, ExtremeLearningMachineClassifier,
                          ExtremeLearningMachineRegressor, WeightedKitchenSinksClassifier,
                          WeightedKitchenSinksRegressor, get_feature_map, get_loss, load)
from onlinekernel.solvers import FeatureOperator, Problem, solve_wrks
from onlinekernel.solvers.wrks import project


@pytest.fixture(scope="module")
def regression_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * rng.normal(size=300)
    return X, y


@pytest.fixture(scope="module")
def classification_data():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 2))
    r = np.hypot(X[:, 0], X[:, 1])
    y = np.where(r < 0.8, "a", np.where(r < 1.4, "b", "c"))
    return X, y


# --------------------------------------------------------------------------- #
# ELM: the shared mechanism, bit for bit
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("kernel, activation", [("iln", None), ("iln", "sigmoid"),
                                                ("gaussian", None), ("arccos", None)])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_elm_regressor_is_dsg_cholesky(regression_data, kernel, activation, dtype):
    X, y = regression_data
    elm = ExtremeLearningMachineRegressor(n_components=200, activation=activation,
                                          kernel=kernel, alpha=1e-4, block_size=64,
                                          dtype=dtype, random_state=3).fit(X, y)
    kp = {"bias": 1.0} if kernel == "iln" else None  # bias="auto" on a map with biases
    if activation is not None:
        kp["activation"] = activation
    dsg = DSGRegressor(kernel=kernel, gamma="scale", kernel_params=kp, n_components=200,
                       alpha=1e-4, block_size=64, solver="cholesky", dtype=dtype,
                       random_state=3).fit(X, y)
    assert elm.solver_ == "cholesky" and elm.n_random_features_ == 256
    assert np.array_equal(elm.coef_, dsg.coef_)
    assert np.array_equal(elm.intercept_, dsg.intercept_)
    assert np.array_equal(elm.predict(X), dsg.predict(X))


def test_elm_classifier_is_ridge_on_pm1_targets(classification_data):
    X, y = classification_data
    elm = ExtremeLearningMachineClassifier(n_components=128, activation="relu",
                                           random_state=0).fit(X, y)
    dsg = DSGClassifier(loss="squared", kernel="iln",
                        kernel_params={"activation": "relu", "bias": 1.0},
                        n_components=128, solver="cholesky", random_state=0).fit(X, y)
    assert np.array_equal(elm.decision_function(X), dsg.decision_function(X))
    assert np.array_equal(elm.predict(X), dsg.predict(X))
    assert elm.coef_.shape == (256, 3)  # one output per class
    # the ridge regression of the +1 / -1 one-vs-rest targets on the hidden units
    Phi = np.hstack([elm.feature_map_.transform_block(elm.seed_, j, X)
                     for j in range(elm.n_blocks_)])
    T = np.where(y[:, None] == elm.classes_[None, :], 1.0, -1.0)
    n, M = Phi.shape
    Pc, Tc = Phi - Phi.mean(0), T - T.mean(0)
    C = np.linalg.solve(Pc.T @ Pc / n + 1e-6 * M * np.eye(M), Pc.T @ Tc / n)
    assert np.allclose(elm.coef_, C, atol=1e-6 * np.abs(C).max())
    assert not hasattr(elm, "predict_proba")


def test_elm_has_no_partial_fit_and_clear_errors(regression_data):
    X, y = regression_data
    elm = ExtremeLearningMachineRegressor(n_components=64)
    assert not hasattr(elm, "partial_fit")
    with pytest.raises(AttributeError, match="DSGRegressor"):
        elm.partial_fit(X, y)
    with pytest.raises(ValueError, match="no activation parameter"):
        ExtremeLearningMachineRegressor(kernel="gaussian", activation="relu").fit(X, y)
    with pytest.raises(ValueError, match="activation"):
        ExtremeLearningMachineRegressor(activation="tanh").fit(X, y)
    with pytest.raises(ValueError, match="n_components"):
        ExtremeLearningMachineRegressor(n_components=None).fit(X, y)
    with pytest.raises(ValueError, match="no bias parameter"):
        ExtremeLearningMachineRegressor(kernel="gaussian", bias=0.5).fit(X, y)
    unbiased = ExtremeLearningMachineRegressor(n_components=64, bias=None, random_state=0)
    assert unbiased.fit(X, y).feature_map_.get_params()["bias"] == 0.0
    with pytest.raises(ValueError, match="disagree"):
        ExtremeLearningMachineRegressor(activation="relu",
                                        kernel_params={"activation": "sigmoid"}).fit(X, y)


@pytest.mark.parametrize("cls, data", [
    (ExtremeLearningMachineRegressor, "regression_data"),
    (ExtremeLearningMachineClassifier, "classification_data"),
    (WeightedKitchenSinksRegressor, "regression_data"),
    (WeightedKitchenSinksClassifier, "classification_data")])
def test_model_files_round_trip(cls, data, request, tmp_path):
    X, y = request.getfixturevalue(data)
    kw = {"activation": "sigmoid"} if cls.__name__.startswith("Extreme") else {
        "constraint": "l2", "radius": 5.0}
    model = cls(n_components=64, random_state=0, **kw).fit(X, y)
    path = tmp_path / "model.okm"
    model.save(path)
    again = load(path)
    assert type(again) is cls
    assert again.get_params() == model.get_params()
    assert np.array_equal(again.predict(X), model.predict(X))


# --------------------------------------------------------------------------- #
# WRKS: the constrained fit
# --------------------------------------------------------------------------- #
def _problem(n=120, d=2, F=16, blocks=2, loss="squared", seed=0, alpha=0.0, K=1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if loss == "squared":
        Y = np.sin(2 * X[:, :1]) + 0.3 * X[:, 1:2]
    else:
        Y = np.where(X[:, :1] * X[:, 1:2] > 0, 1.0, -1.0)
    fmap = get_feature_map("gaussian", n_components=F, gamma=0.5).bind(d)
    op = FeatureOperator(fmap, seed=1, n_blocks=blocks, X=X, max_bytes=1 << 30)
    return Problem(op, get_loss(loss), Y, np.ones(n), alpha, True, K), op


def _reference(problem, op, constraint, radius):
    """L-BFGS-B (box) or SLSQP (ball) on the explicit features: the same objective."""
    Phi = op._Phi.astype(np.float64)
    M = Phi.shape[1]
    w, Y, loss, lam = problem.w, problem.Y, problem.loss, problem.lam

    def fun(x):
        C, b = x[:M, None], x[M:]
        U = Phi @ C + b
        G = loss.gradient(Y, U) * w[:, None]
        f = float(w @ loss.loss(Y, U)) + 0.5 * lam * float(np.sum(C * C))
        return f, np.concatenate([(Phi.T @ G + lam * C).ravel(), G.sum(0)])

    x0 = np.zeros(M + 1)
    if constraint == "linf":
        bound = radius / M
        res = minimize(fun, x0, jac=True, method="L-BFGS-B",
                       bounds=[(-bound, bound)] * M + [(None, None)],
                       options={"maxiter": 20000, "ftol": 1e-15, "gtol": 1e-12})
    else:
        r2 = radius ** 2 / M
        res = minimize(fun, x0, jac=True, method="SLSQP",
                       constraints=[{"type": "ineq", "fun": lambda x: r2 - x[:M] @ x[:M],
                                     "jac": lambda x: np.concatenate([-2 * x[:M], [0.0]])}],
                       options={"maxiter": 2000, "ftol": 1e-15})
    return res.x[:M, None], res.x[M:], res.fun


@pytest.mark.parametrize("loss", ["squared", "logistic"])
@pytest.mark.parametrize("constraint, radius", [("linf", 2.0), ("linf", 20.0), ("l2", 1.0)])
def test_wrks_matches_scipy_reference(loss, constraint, radius):
    problem, op = _problem(loss=loss)
    sol = solve_wrks(problem, tol=1e-8, max_iter=20000, constraint=constraint, radius=radius)
    assert sol.converged and sol.gradient_norm <= 1e-8
    C, b, f = _reference(problem, op, constraint, radius)
    M = problem.M
    if constraint == "linf":
        assert np.abs(sol.coef).max() <= radius / M * (1 + 1e-12)
    else:
        assert np.sqrt(M) * np.linalg.norm(sol.coef) <= radius * (1 + 1e-12)
    assert sol.objective <= f + 1e-9 * max(1.0, abs(f))
    assert abs(sol.objective - f) <= 1e-7 * max(1.0, abs(f))
    # the same function (with alpha = 0 flat directions leave the coefficients
    # themselves less determined than the outputs)
    U, Uref = problem.raw(sol.coef, sol.intercept), op._Phi @ C + b
    assert np.allclose(U, Uref, atol=1e-4 * np.abs(Uref).max())


def test_wrks_constraint_is_active_and_respected():
    problem, _ = _problem()
    free = solve_wrks(problem, tol=1e-10, max_iter=50000, radius=1e6)
    tight = solve_wrks(problem, tol=1e-6, radius=1.0)
    bound = 1.0 / problem.M
    assert np.abs(tight.coef).max() <= bound * (1 + 1e-12)
    assert np.isclose(np.abs(tight.coef).max(), bound)  # active
    assert tight.objective > free.objective


def test_wrks_several_outputs_each_in_its_ball():
    problem, _ = _problem(n=100)
    rng = np.random.default_rng(2)
    Y = np.hstack([problem.Y, rng.normal(size=(100, 1))])
    problem = Problem(problem.features, get_loss("squared"), Y, np.ones(100), 0.0, True, 2)
    sol = solve_wrks(problem, tol=1e-6, constraint="l2", radius=0.5)
    norms = np.sqrt(problem.M) * np.linalg.norm(sol.coef, axis=0)
    assert sol.converged and np.all(norms <= 0.5 * (1 + 1e-12))


def test_wrks_callback_and_max_iter():
    problem, _ = _problem()
    seen = []
    sol = solve_wrks(problem, tol=1e-12, max_iter=5, radius=50.0,
                     callback=lambda it, **v: seen.append((it, sorted(v))))
    assert not sol.converged and sol.n_iter == 5
    assert seen == [(i, ["gradient_norm", "objective", "step"]) for i in range(1, 6)]


def test_project():
    C = np.array([[3.0, 0.1], [-4.0, 0.0]])
    assert np.array_equal(project(C, "linf", 2.0), [[1.0, 0.1], [-1.0, 0.0]])
    P = project(C, "l2", np.sqrt(2) * 1.0)
    assert np.allclose(np.linalg.norm(P, axis=0), [1.0, 0.1])
    with pytest.raises(ValueError, match="constraint"):
        project(C, "l1", 1.0)


def test_wrks_estimator(regression_data):
    X, y = regression_data
    reg = WeightedKitchenSinksRegressor(n_components=256, radius=5.0, tol=1e-6,
                                        random_state=0).fit(X, y)
    assert reg.solver_ == "wrks" and reg.n_iter_ >= 1
    assert np.abs(reg.coef_).max() <= 5.0 / 256 * (1 + 1e-12)
    with pytest.warns(ConvergenceWarning, match="max_iter=2"):
        WeightedKitchenSinksRegressor(n_components=128, max_iter=2, tol=1e-10,
                                      random_state=0).fit(X, y)
    for bad, match in [({"constraint": "l1"}, "constraint"), ({"radius": 0.0}, "radius"),
                       ({"loss": "quantile"}, "curvature")]:
        with pytest.raises(ValueError, match=match):
            WeightedKitchenSinksRegressor(n_components=64, **bad).fit(X, y)
    with pytest.raises(ValueError, match="curvature") as info:
        WeightedKitchenSinksRegressor(n_components=64, loss="quantile").fit(X, y)
    assert "sgd" not in str(info.value)  # not a choice of this estimator
    with pytest.raises(ValueError, match="unknown solver 'wrks'"):
        DSGRegressor(solver="wrks").fit(X, y)


def test_wrks_classifier_multiclass(classification_data):
    X, y = classification_data
    clf = WeightedKitchenSinksClassifier(n_components=256, radius=10.0, max_iter=5000,
                                         random_state=0).fit(X, y)
    assert clf.coef_.shape == (256, 3) and clf.predict_proba(X).shape == (300, 3)
    assert clf.loss_.name == "multinomial" and clf.score(X, y) > 0.9
    assert np.abs(clf.coef_).max() <= 10.0 / 256 * (1 + 1e-12)
