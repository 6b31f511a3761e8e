"""Properties every registered loss must have, and the built-ins' formulas.

The generic tests iterate over ``onlinekernel.available_losses()`` -- the
built-ins, since the suite runs with third-party plugins switched off
(``conftest.py``) -- and over the losses of the example third-party plugin
that the test command installs (each loss built with its default
parameters, plus non-default settings of the parametrised built-ins), so a
plugin's loss is checked exactly like the built-ins.  Other installed
plugins are left out: their losses need not be convex or buildable without
parameters; ``ONLINEKERNEL_DISABLE_PLUGINS=0`` puts them through these tests
too.

* finite differences agree with ``gradient`` wherever the loss is smooth, and
  at kinks ``gradient`` lies between the one-sided derivatives (a subgradient);
* the compiled path and the pure-Python path agree: each built-in is
  re-implemented in numpy from the table in DESIGN.md, as a subclass of
  :class:`onlinekernel.Loss`, and must give the same values and gradients
  (1e-12) and, trained through the estimators, the same model (1e-10);
  other registered losses are compared with a Python wrapper that runs them
  through the Python-loss adapter;
* midpoint convexity on random points;
* pickling and deep copies give equal, equally behaving objects.
"""
import copy
import pickle

import numpy as np
import pytest
from scipy.special import expit, logsumexp

import onlinekernel
from onlinekernel import DSGClassifier, DSGRegressor, Loss, get_loss
from onlinekernel.losses.operator import CyOperatorObjective

from conftest import PySquared, all_entry_points, loss_gradient

# --------------------------------------------------------------------------- #
# the losses under test, built once at collection time
# --------------------------------------------------------------------------- #
BUILTINS = ("hinge", "squared_hinge", "logistic", "multinomial", "squared", "huber",
            "epsilon_insensitive", "quantile")
NON_DEFAULT = [("huber", {"delta": 0.3}), ("huber", {"delta": 2.5}),
               ("epsilon_insensitive", {"epsilon": 0.0}),
               ("epsilon_insensitive", {"epsilon": 0.5}),
               ("quantile", {"quantile": 0.1}), ("quantile", {"quantile": 0.9})]


EXAMPLE_PLUGIN = "onlinekernel-example-plugin"


def _loss_cases():
    # operator objectives (matrix-valued coefficients, e.g. gp_variance) have
    # no per-sample gradient: tests/estimators/test_gp.py checks them
    losses = {name: get_loss(name) for name in onlinekernel.available_losses()}
    with all_entry_points():  # the example plugin's losses, built while it is loaded
        losses.update({name: get_loss(name)
                       for name, info in onlinekernel.available_losses().items()
                       if info["distribution"] == EXAMPLE_PLUGIN})
    cases = [(name, {}, loss) for name, loss in losses.items()
             if not isinstance(loss, CyOperatorObjective)]
    cases += [(name, params, get_loss(name, **params)) for name, params in NON_DEFAULT]
    out = []
    for name, params, loss in cases:
        label = name + "".join(f"-{k}={v}" for k, v in params.items())
        out.append(pytest.param(name, params, loss, id=label))
    return out


LOSS_CASES = _loss_cases()
N_CLASSES = 3  # outputs of class-index losses in the generic tests


def _points(loss, n, rng, n_outputs=2):
    """Targets and raw predictions suited to ``loss.target_encoding``."""
    enc = loss.target_encoding
    if enc == "margin":
        y = rng.choice([-1.0, 1.0], size=(n, n_outputs))
        raw = rng.uniform(-3.0, 3.0, size=(n, n_outputs))
    elif enc == "real":
        y = rng.normal(scale=2.0, size=(n, n_outputs))
        raw = y + rng.normal(scale=1.5, size=(n, n_outputs))
    elif enc == "class_index":
        y = rng.integers(0, N_CLASSES, size=(n, 1)).astype(np.float64)
        raw = rng.normal(scale=2.0, size=(n, N_CLASSES))
    else:
        raise AssertionError(f"loss {loss!r} has an unknown target_encoding {enc!r}")
    return y, raw


# --------------------------------------------------------------------------- #
# independent numpy formulas of the built-ins (DESIGN.md, section 2)
# --------------------------------------------------------------------------- #
def np_value(kind, p, y, u):
    if kind == "hinge":
        v = np.maximum(0.0, 1.0 - y * u)
    elif kind == "squared_hinge":
        v = 0.5 * np.maximum(0.0, 1.0 - y * u) ** 2
    elif kind == "logistic":
        v = np.logaddexp(0.0, -y * u)
    elif kind == "multinomial":
        idx = y[:, 0].astype(np.intp)
        return logsumexp(u, axis=1) - u[np.arange(u.shape[0]), idx]
    elif kind == "squared":
        v = 0.5 * (u - y) ** 2
    elif kind == "huber":
        r, d = np.abs(u - y), p["delta"]
        v = np.where(r <= d, 0.5 * r ** 2, d * r - 0.5 * d ** 2)
    elif kind == "epsilon_insensitive":
        v = np.maximum(0.0, np.abs(y - u) - p["epsilon"])
    elif kind == "quantile":
        tau = p["quantile"]
        v = np.maximum(tau * (y - u), (tau - 1.0) * (y - u))
    else:
        raise KeyError(kind)
    return v.sum(axis=1)


ENCODING = {"hinge": "margin", "squared_hinge": "margin", "logistic": "margin",
            "multinomial": "class_index", "squared": "real", "huber": "real",
            "epsilon_insensitive": "real", "quantile": "real"}
LINK = {"logistic": "logistic", "multinomial": "softmax"}


class NumpyLoss(Loss):
    """A built-in loss re-implemented in numpy: the pure-Python path."""

    def __init__(self, kind, delta=None, epsilon=None, quantile=0.5):
        self.kind = kind
        self.delta = delta
        self.epsilon = epsilon
        self.quantile = quantile
        self.name = "numpy_" + kind
        self.target_encoding = ENCODING[kind]
        self.link = LINK.get(kind, "identity")
        # parameters in the target's units, as the compiled twin declares them
        self.target_unit_params = get_loss(kind).target_unit_params

    def _p(self):
        # None: the compiled losses' relative defaults, in the units the loss sees
        return {"delta": 1.0 if self.delta is None else self.delta,
                "epsilon": 0.1 if self.epsilon is None else self.epsilon,
                "quantile": self.quantile}

    def loss(self, y, raw):
        return np_value(self.kind, self._p(), np.asarray(y), np.asarray(raw))

    def gradient(self, y, raw):
        return loss_gradient(self.kind, self._p(), np.asarray(y), np.asarray(raw))

    def multiclass_loss(self):
        return NumpyLoss("multinomial") if self.kind == "logistic" else self


class DelegatingLoss(Loss):
    """Runs any loss's own ``loss``/``gradient`` through the Python-loss adapter."""

    def __init__(self, inner):
        self.inner = inner
        self.name = "python_" + str(inner.name)
        self.target_encoding = inner.target_encoding
        self.link = inner.link

    def loss(self, y, raw):
        return self.inner.loss(y, raw)

    def gradient(self, y, raw):
        return self.inner.gradient(y, raw)

    def multiclass_loss(self):
        inner = self.inner.multiclass_loss()
        return self if inner is self.inner else DelegatingLoss(inner)


def python_version(name, params, loss):
    if name in BUILTINS and type(loss).__module__ == "onlinekernel.losses.builtin":
        return NumpyLoss(name, **params)
    return DelegatingLoss(loss)


def test_builtins_are_registered_as_compiled_losses():
    registered = onlinekernel.available_losses()
    for name in BUILTINS:
        assert name in registered
        assert registered[name]["distribution"] == "onlinekernel"
        assert registered[name]["factory"].startswith("onlinekernel.losses.builtin.")
        assert ENCODING[name] == get_loss(name).target_encoding


# --------------------------------------------------------------------------- #
# gradients
# --------------------------------------------------------------------------- #
def _one_sided(loss, y, raw, c, h):
    """Forward and backward differences of every row's loss along raw[:, c]."""
    up, down = raw.copy(), raw.copy()
    up[:, c] += h
    down[:, c] -= h
    l0 = loss.loss(y, raw)
    return (loss.loss(y, up) - l0) / h, (l0 - loss.loss(y, down)) / h


@pytest.mark.parametrize("name, params, loss", LOSS_CASES)
def test_gradient_matches_finite_differences(name, params, loss):
    rng = np.random.default_rng(1)
    y, raw = _points(loss, 400, rng)
    grad = loss.gradient(y, raw)
    assert grad.shape == raw.shape
    assert np.isfinite(grad).all()
    h = 1e-7
    n_checked = 0
    for c in range(raw.shape[1]):
        fwd, bwd = _one_sided(loss, y, raw, c, h)
        smooth = np.abs(fwd - bwd) <= 1e-5 * (1.0 + np.abs(fwd))
        central = 0.5 * (fwd + bwd)
        np.testing.assert_allclose(grad[smooth, c], central[smooth], rtol=1e-5, atol=1e-5,
                                   err_msg=f"{name}: gradient vs finite differences")
        # where a kink sits in [raw - h, raw + h] the gradient is a subgradient
        lo, hi = np.minimum(fwd, bwd), np.maximum(fwd, bwd)
        kink = ~smooth
        assert np.all(grad[kink, c] >= lo[kink] - 1e-5), name
        assert np.all(grad[kink, c] <= hi[kink] + 1e-5), name
        n_checked += smooth.sum()
    # the kink filter may only drop a small share of random points
    assert n_checked >= 0.95 * raw.size


# the losses that second-order solvers take (a declared curvature)
CURVED_CASES = [case for case in LOSS_CASES
                if getattr(case.values[2], "curvature", None) in ("constant", "smooth")]


@pytest.mark.parametrize("name, params, loss", CURVED_CASES)
def test_hessian_product_matches_differences_of_the_gradient(name, params, loss):
    # the batch solvers' curvature: exact for the built-ins that define it, central
    # differences otherwise; either way the directional derivative of the gradient
    # wherever the gradient is smooth (the kinks' neighbourhoods are left out)
    rng = np.random.default_rng(2)
    y, raw = _points(loss, 400, rng)
    v = rng.normal(size=raw.shape)
    hv = loss.hessian_product(y, raw, v)
    assert hv.shape == raw.shape and np.isfinite(hv).all()
    h = 1e-5
    fwd = (loss.gradient(y, raw + h * v) - loss.gradient(y, raw)) / h
    bwd = (loss.gradient(y, raw) - loss.gradient(y, raw - h * v)) / h
    smooth = np.all(np.abs(fwd - bwd) <= 1e-4 * (1.0 + np.abs(fwd)), axis=1)
    assert smooth.mean() >= 0.95
    np.testing.assert_allclose(hv[smooth], 0.5 * (fwd + bwd)[smooth], rtol=1e-4, atol=1e-6,
                               err_msg=f"{name}: hessian_product vs differences of gradient")


def test_exact_hessian_products_of_the_builtins():
    # second derivatives from the formulas: squared 1, logistic p (1 - p), squared
    # hinge 1 inside the margin, Huber 1 inside delta, multinomial diag(p) - p p^T
    y = np.array([[1.0], [-1.0], [1.0]])
    u = np.array([[0.0], [2.0], [3.0]])
    v = np.array([[2.0], [1.0], [-1.0]])
    p = expit(y * u)
    np.testing.assert_allclose(get_loss("logistic").hessian_product(y, u, v),
                               p * (1 - p) * v, rtol=1e-14)
    np.testing.assert_array_equal(get_loss("squared").hessian_product(y, u, v), v)
    np.testing.assert_array_equal(get_loss("squared_hinge").hessian_product(y, u, v),
                                  [[2.0], [1.0], [0.0]])
    np.testing.assert_array_equal(
        get_loss("huber", delta=1.5).hessian_product(y, u, v), [[2.0], [0.0], [0.0]])
    raw = np.array([[0.0, np.log(3.0)]])
    P = np.array([0.25, 0.75])
    np.testing.assert_allclose(
        get_loss("multinomial").hessian_product([[1.0]], raw, [[1.0, 2.0]]),
        [(np.diag(P) - np.outer(P, P)) @ [1.0, 2.0]], rtol=1e-14)
    # a direction of another shape is refused by name
    for name, y in (("logistic", [[1.0, -1.0]]), ("multinomial", [[1.0]])):
        with pytest.raises(ValueError, match="v of shape"):
            get_loss(name).hessian_product(y, [[0.0, 0.0]], [[1.0, 2.0, 3.0]])
    # logistic's curvature is finite and tends to 0 for huge margins (no overflow)
    np.testing.assert_array_equal(
        get_loss("logistic").hessian_product([[1.0]], [[1e6]], [[1.0]]), [[0.0]])


KINKS = {
    "hinge": ({}, [[1.0], [-1.0], [1.0]], [[1.0], [-1.0], [1.0 - 1e-13]]),
    "epsilon_insensitive": ({"epsilon": 0.25}, [[0.0], [0.0], [2.0]], [[0.25], [-0.25], [2.0]]),
    "quantile": ({"quantile": 0.3}, [[0.5], [-1.0]], [[0.5], [-1.0]]),
    "huber": ({"delta": 0.5}, [[0.0], [0.0]], [[0.5], [-0.5]]),
    "squared_hinge": ({}, [[1.0], [-1.0]], [[1.0], [-1.0]]),
}


@pytest.mark.parametrize("name", sorted(KINKS))
def test_gradient_at_exact_kinks_is_a_subgradient_and_follows_the_table(name):
    params, y, raw = KINKS[name]
    loss = get_loss(name, **params)
    y, raw = np.array(y), np.array(raw)
    grad = loss.gradient(y, raw)
    fwd, bwd = _one_sided(loss, y, raw, 0, 1e-6)
    assert np.all(grad[:, 0] >= np.minimum(fwd, bwd) - 1e-6)
    assert np.all(grad[:, 0] <= np.maximum(fwd, bwd) + 1e-6)
    full = {"delta": 1.0, "epsilon": 0.1, "quantile": 0.5, **params}
    np.testing.assert_array_equal(grad, loss_gradient(name, full, y, raw))


# --------------------------------------------------------------------------- #
# the compiled path against the Python path
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("name, params, loss", LOSS_CASES)
def test_python_and_compiled_values_agree(name, params, loss):
    rng = np.random.default_rng(2)
    y, raw = _points(loss, 300, rng)
    if loss.target_encoding == "margin":  # points on the margin's kink too
        raw[:20] = y[:20]
    elif loss.target_encoding == "real":  # and on the real losses' kinks
        raw[:10] = y[:10]
        raw[10:20] = y[10:20] + 0.1
        raw[20:30] = y[20:30] - params.get("delta", 1.0)
    py = python_version(name, params, loss)
    assert py.target_encoding == loss.target_encoding
    assert py.link == loss.link
    np.testing.assert_allclose(loss.loss(y, raw), py.loss(y, raw), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(loss.gradient(y, raw), py.gradient(y, raw), rtol=1e-12,
                               atol=1e-12)
    # 1-d inputs of a single output are accepted as one column
    if loss.target_encoding != "class_index":
        np.testing.assert_allclose(loss.loss(y[:, 0], raw[:, 0]),
                                   py.loss(y[:, :1], raw[:, :1]), rtol=1e-12, atol=1e-12)


def _estimator_problems(loss):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(70, 3))
    if loss.target_encoding == "real":
        y = np.sin(X[:, 0]) + 0.5 * X[:, 1] + 0.1 * rng.normal(size=70)
        return [(DSGRegressor, X, y)]
    y2 = np.where(X[:, 0] * X[:, 1] > 0, "pos", "neg")
    y3 = np.digitize(X[:, 0] + 0.3 * X[:, 2], [-0.5, 0.5]) * 10 + 1
    return [(DSGClassifier, X, y2), (DSGClassifier, X, y3)]


@pytest.mark.parametrize("name, params, loss", LOSS_CASES)
def test_python_and_compiled_models_agree(name, params, loss):
    py = python_version(name, params, loss)
    settings = dict(gamma=0.4, alpha=1e-3, batch_size=8, block_size=16, max_blocks=5,
                    solver="sgd", max_iter=2, tol=None, learning_rate="invsqrt", eta0=0.5, random_state=7)
    if loss.intercept_rule != "constant_feature":
        # a Python loss's intercept is the default constant feature: a loss
        # stepping it by its own rule (novelty's offset) is compared without
        settings["fit_intercept"] = False
    for Est, X, y in _estimator_problems(loss):
        compiled = Est(loss=loss, **settings).fit(X, y)
        python = Est(loss=py, **settings).fit(X, y)
        assert compiled.seed_ == python.seed_
        assert compiled.n_blocks_ == python.n_blocks_ == 5  # the budget-full branch ran
        assert np.abs(compiled.coef_).max() > 1e-3  # a model that actually moved
        np.testing.assert_allclose(python.coef_, compiled.coef_, rtol=0, atol=1e-10)
        np.testing.assert_allclose(python.intercept_, compiled.intercept_, rtol=0, atol=1e-10)
        if Est is DSGClassifier:
            np.testing.assert_allclose(python.decision_function(X),
                                       compiled.decision_function(X), rtol=0, atol=1e-10)
        else:
            np.testing.assert_allclose(python.predict(X), compiled.predict(X), rtol=0,
                                       atol=1e-10)


# --------------------------------------------------------------------------- #
# convexity
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("name, params, loss", LOSS_CASES)
def test_midpoint_convexity(name, params, loss):
    rng = np.random.default_rng(4)
    y, a = _points(loss, 2000, rng)
    _, b = _points(loss, 2000, rng)
    b = b * rng.uniform(0.5, 3.0, size=(b.shape[0], 1))  # pairs far apart as well
    la, lb, lm = loss.loss(y, a), loss.loss(y, b), loss.loss(y, 0.5 * (a + b))
    assert np.isfinite(la).all() and np.isfinite(lb).all() and np.isfinite(lm).all()
    slack = 1e-12 * (1.0 + np.abs(la) + np.abs(lb))
    assert np.all(lm <= 0.5 * (la + lb) + slack), name
    # and at other points of the segment
    for s in (0.1, 0.37, 0.9):
        ls = loss.loss(y, s * a + (1 - s) * b)
        assert np.all(ls <= s * la + (1 - s) * lb + slack), (name, s)


def test_convexity_check_catches_a_concave_loss():
    class Concave(Loss):
        name = "concave"
        target_encoding = "real"

        def loss(self, y, raw):
            return -((raw - y) ** 2).sum(axis=1)

        def gradient(self, y, raw):
            return -2.0 * (raw - y)

    with pytest.raises(AssertionError):
        test_midpoint_convexity("concave", {}, Concave())


def test_finite_difference_check_catches_a_wrong_gradient():
    class WrongSign(PySquared):
        name = "wrong_sign"

        def gradient(self, y, raw):
            return y - raw

    with pytest.raises(AssertionError):
        test_gradient_matches_finite_differences("wrong_sign", {}, WrongSign())


# --------------------------------------------------------------------------- #
# numerical range
# --------------------------------------------------------------------------- #
def test_logistic_is_finite_and_correct_for_huge_margins():
    loss = get_loss("logistic")
    m = np.concatenate([-np.logspace(-3, 6, 200), [0.0], np.logspace(-3, 6, 200),
                        [-745.0, 745.0, -710.0, 710.0, 36.0, -36.0]])
    for y_sign in (1.0, -1.0):
        y = np.full((m.shape[0], 1), y_sign)
        raw = (m * y_sign)[:, None]  # margin y * raw == m
        v, g = loss.loss(y, raw), loss.gradient(y, raw)[:, 0]
        assert np.isfinite(v).all() and np.isfinite(g).all()
        np.testing.assert_allclose(v, np.logaddexp(0.0, -m), rtol=1e-13, atol=1e-300)
        np.testing.assert_allclose(g, -y_sign * expit(-m), rtol=1e-13, atol=1e-300)
        big = m == 1e6
        assert np.all(v[big] == 0.0) and np.all(g[big] == 0.0)
        worst = m == -1e6
        assert np.all(v[worst] == 1e6) and np.all(g[worst] == -y_sign)
    # every value is positive, as log(1 + e^-m) is, until it underflows
    y = np.ones((3, 1))
    np.testing.assert_allclose(loss.loss(y, [[30.0], [40.0], [700.0]]),
                               [np.exp(-30.0), np.exp(-40.0), np.exp(-700.0)], rtol=1e-12)


def test_multinomial_is_stable_for_huge_raw():
    loss = get_loss("multinomial")
    raw = np.array([[1e6, -1e6, 0.0], [1e6, -1e6, 0.0], [1e6, -1e6, 0.0],
                    [-1e6, -1e6, -1e6], [1e6, 1e6, -1e6], [1e6, 1e6, 1e6]])
    y = np.array([[0.0], [1.0], [2.0], [1.0], [0.0], [2.0]])
    v, g = loss.loss(y, raw), loss.gradient(y, raw)
    assert np.isfinite(v).all() and np.isfinite(g).all()
    np.testing.assert_allclose(v, [0.0, 2e6, 1e6, np.log(3.0), np.log(2.0), np.log(3.0)],
                               rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(g, [[0, 0, 0], [1, -1, 0], [1, 0, -1],
                                   [1 / 3, -2 / 3, 1 / 3], [-0.5, 0.5, 0],
                                   [1 / 3, 1 / 3, -2 / 3]], rtol=0, atol=1e-15)
    np.testing.assert_allclose(g.sum(axis=1), 0.0, atol=1e-15)


# --------------------------------------------------------------------------- #
# parameters, pickling, copies
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("name, param, bad", [
    ("huber", "delta", 0.0), ("huber", "delta", -1.0), ("huber", "delta", np.nan),
    ("epsilon_insensitive", "epsilon", -0.1), ("epsilon_insensitive", "epsilon", -1e-300),
    ("epsilon_insensitive", "epsilon", np.nan),
    ("quantile", "quantile", 0.0), ("quantile", "quantile", 1.0),
    ("quantile", "quantile", -0.5), ("quantile", "quantile", 1.5),
    ("quantile", "quantile", np.nan),
])
def test_invalid_parameters_raise_valueerror_naming_them(name, param, bad):
    with pytest.raises(ValueError, match=param):
        get_loss(name, **{param: bad})
    cls = type(get_loss(name))
    with pytest.raises(ValueError, match=param):
        cls(**{param: bad})


def test_unknown_parameter_raises_valueerror():
    with pytest.raises(ValueError, match="delta"):
        get_loss("quantile", delta=1.0)


def _behaves_like(a, b):
    rng = np.random.default_rng(5)
    y, raw = _points(b, 50, rng)
    np.testing.assert_array_equal(a.loss(y, raw), b.loss(y, raw))
    np.testing.assert_array_equal(a.gradient(y, raw), b.gradient(y, raw))


@pytest.mark.parametrize("name, params, loss", LOSS_CASES)
def test_pickle_and_deepcopy_give_equal_losses(name, params, loss):
    for clone in (pickle.loads(pickle.dumps(loss)), copy.deepcopy(loss), copy.copy(loss)):
        assert type(clone) is type(loss)
        assert clone == loss
        assert clone.get_params() == loss.get_params()
        assert clone.name == loss.name
        assert clone.target_encoding == loss.target_encoding and clone.link == loss.link
        _behaves_like(clone, loss)
    for key, value in params.items():
        assert loss.get_params()[key] == value


def test_losses_with_different_parameters_are_not_equal():
    assert get_loss("huber", delta=0.3) != get_loss("huber", delta=2.5)
    assert get_loss("huber", delta=0.3) == get_loss("huber", delta=0.3)
    assert get_loss("quantile", quantile=0.1) != get_loss("quantile")
    assert get_loss("hinge") != get_loss("squared_hinge")
    clone = pickle.loads(pickle.dumps(get_loss("epsilon_insensitive", epsilon=0.5)))
    assert clone.epsilon == 0.5
