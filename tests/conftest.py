"""Shared test fixtures: where the benchmark datasets are, and which plugins load.

The tests run against onlinekernel's own losses and feature maps, whatever
else is installed: a third-party plugin (a loss that is not convex, one that
needs a parameter, a module that fails to import) must not change what the
generic tests iterate over or count.  As pytest's ``-p no:`` and
``PYTEST_DISABLE_PLUGIN_AUTOLOAD`` do for pytest, this module sets
``ONLINEKERNEL_DISABLE_PLUGINS=1`` (:data:`onlinekernel.registry.DISABLE_ENV`)
before any test module is imported; subprocesses (the command line, the docs
build) inherit it.  Tests of third-party plugins -- the example plugin, the
distributions that ``tests/plugins/test_registry.py`` installs -- switch entry-point
loading back on with the ``entry_point_plugins`` fixture or, for module-scoped
fixtures and collection, the :func:`all_entry_points` context.

To run the suite against every installed plugin instead (say, to put your
plugin's losses through ``tests/losses/test_losses.py``), set
``ONLINEKERNEL_DISABLE_PLUGINS=0``: an explicit setting is kept.
"""
import contextlib
import inspect
import json
import os
import pickle
from pathlib import Path

import numpy as np
import pytest
import scipy.linalg  # noqa: F401  (its BLAS is loaded before the workers' limit below)
from scipy.special import expit, softmax
from threadpoolctl import threadpool_limits

from onlinekernel import FeatureMap, Loss, get_feature_map, get_loss, registry
from onlinekernel.solvers import FeatureOperator, Problem

# Under pytest-xdist every worker would run a BLAS pool as large as the machine:
# n workers oversubscribe the cores n times, and spinning BLAS threads then stall
# each other (a verbose lbfgs test: 0.69 s alone, 41 s in `pytest -n 2` on 2 cores).
# Each worker gets its share, as scikit-learn's own test configuration does;
# tests of threading set their own limits inside.
if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
    threadpool_limits(max(1, (os.cpu_count() or 1)
                          // int(os.environ["PYTEST_XDIST_WORKER_COUNT"])), user_api="blas")

os.environ.setdefault(registry.DISABLE_ENV, "1")
registry.reset()  # in case something looked a name up before this module ran

# ../shared/data beside the repository (CI has it); ONLINEKERNEL_DATA overrides.
DATA_DIR = Path(os.environ.get("ONLINEKERNEL_DATA",
                               Path(__file__).resolve().parents[2] / "shared" / "data"))


def polynomial_mean(values, eta):
    """Shamir & Zhang's polynomial-decay average of ``values``, written out as weights."""
    n = len(values)
    # the n-th value enters with c_n = (1 + eta) / (n + eta); later ones keep 1 - c_k of it
    c = [(1.0 + eta) / (k + eta) for k in range(1, n + 1)]
    w = [c[s] * np.prod([1.0 - ck for ck in c[s + 1:]]) for s in range(n)]
    assert np.isclose(sum(w), 1.0)  # c_1 = 1: the weights are a mean's
    return sum(wi * v for wi, v in zip(w, values))


def load_dataset(name):
    """``X_train, y_train, X_test, y_test`` of ``DATA_DIR/name.npz`` as float64 X."""
    with np.load(DATA_DIR / f"{name}.npz") as d:
        return (d["X_train"].astype(np.float64), d["y_train"],
                d["X_test"].astype(np.float64), d["y_test"])


def needs_data(*names):
    """Skip (cleanly, with the reason) when a dataset is absent."""
    missing = [n for n in names if not (DATA_DIR / f"{n}.npz").exists()]
    return pytest.mark.skipif(bool(missing),
                              reason=f"benchmark data {missing} not found in {DATA_DIR}")


@contextlib.contextmanager
def all_entry_points():
    """Load every installed plugin within the block, as a user's process does.

    For collection and module-scoped fixtures; tests use the
    ``entry_point_plugins`` fixture, whose changes undo in order with the
    test's own ``monkeypatch`` settings of the same variable.
    """
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(registry.DISABLE_ENV, raising=False)
        registry.reset()
        try:
            yield
        finally:
            registry.reset()  # the next lookup sees the restored setting


@pytest.fixture
def entry_point_plugins(monkeypatch):
    """Every installed plugin loads during the test (third-party ones included)."""
    monkeypatch.delenv(registry.DISABLE_ENV, raising=False)
    registry.reset()
    yield
    registry.reset()


def write_tiny_datasets(path):
    """``reg.npz`` and ``cls.npz`` in ``path``: 400 + 100 rows of 4 inputs, for smoke tests.

    A regression target ``sin(x0) + x1 x2`` and three classes from two
    thresholds, in the layout of ``shared/data`` (float32 inputs).
    """
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 4)).astype(np.float32)
    y_reg = (np.sin(X[:, 0]) + X[:, 1] * X[:, 2]).astype(np.float64)
    y_cls = (X[:, 0] > 0).astype(np.int64) + (X[:, 1] > 0.5)
    np.savez_compressed(path / "reg.npz", X_train=X[:400], y_train=y_reg[:400],
                        X_test=X[400:], y_test=y_reg[400:])
    np.savez_compressed(path / "cls.npz", X_train=X[:400], y_train=y_cls[:400],
                        X_test=X[400:], y_test=y_cls[400:])


def gaussian_problem(loss, target, n, d, alpha, *, data_seed=0, seed=1, n_components=32,
                     gamma=0.5, fit_intercept=True, K=1, cached=True, w=None):
    """A batch solver's problem on ``n`` normal rows: ``(problem, X, bound map)``.

    Two blocks of Gaussian features of seed ``seed``; ``target(X)`` gives
    the targets; unit sample weights unless ``w``; ``cached=False`` makes the
    operator regenerate the features on every pass.
    """
    X = np.random.default_rng(data_seed).normal(size=(n, d))
    fmap = get_feature_map("gaussian", n_components=n_components, gamma=gamma).bind(d)
    op = FeatureOperator(fmap, seed, 2, X, max_bytes=(1 << 30) if cached else 0)
    w = np.ones(n) if w is None else w
    return Problem(op, get_loss(loss), target(X), w, alpha, fit_intercept, K), X, fmap


def loss_gradient(name, params, Y, U):
    """dloss/draw of the built-in losses (DESIGN.md, section 2), in numpy, vectorised.

    An independent formula for the tests to compare the compiled losses and the
    solvers with; ``params`` may leave a parameter at its default.
    """
    if name == "hinge":
        return np.where(Y * U < 1.0, -Y, 0.0)
    if name == "squared_hinge":
        return -Y * np.maximum(0.0, 1.0 - Y * U)
    if name == "logistic":
        return -Y * expit(-Y * U)
    if name == "multinomial":
        G = softmax(U, axis=1)
        G[np.arange(U.shape[0]), Y[:, 0].astype(np.intp)] -= 1.0
        return G
    if name == "squared":
        return U - Y
    if name == "huber":
        R, delta = U - Y, params.get("delta", 1.0)
        return np.where(np.abs(R) <= delta, R, delta * np.sign(R))
    if name == "epsilon_insensitive":
        eps = params.get("epsilon", 0.1)
        return np.where(np.abs(Y - U) > eps, np.sign(U - Y), 0.0)
    if name == "quantile":
        return (Y < U).astype(np.float64) - params.get("quantile", 0.5)
    raise KeyError(name)


class PyLogistic(Loss):
    """The logistic loss in Python (margin targets), as a reference for the compiled one."""
    name = "py_logistic"
    target_encoding = "margin"
    link = "logistic"

    def loss(self, y, raw):
        return np.logaddexp(0.0, -y * raw).sum(axis=1)

    def gradient(self, y, raw):
        return -y / (1.0 + np.exp(y * raw))


class PySquared(Loss):
    """The squared loss in Python (real targets)."""
    name = "py_squared"
    target_encoding = "real"

    def loss(self, y, raw):
        return (0.5 * (raw - y) ** 2).sum(axis=1)

    def gradient(self, y, raw):
        return raw - y


class PyCauchyLoss(Loss):
    """c^2/2 log(1 + (r/c)^2) of r = raw - y, in Python: robust, and not convex."""
    name = "py_cauchy"
    target_encoding = "real"

    def __init__(self, c=1.0):
        self.c = c

    def loss(self, y, raw):
        r = (np.asarray(raw) - np.asarray(y)) / self.c
        return 0.5 * self.c ** 2 * np.log1p(r ** 2).reshape(len(r), -1).sum(axis=1)

    def gradient(self, y, raw):
        r = np.asarray(raw) - np.asarray(y)
        return r / (1.0 + (r / self.c) ** 2)


class PyGaussianRFF(FeatureMap):
    """Gaussian random Fourier features in Python: sqrt(2) cos(x W^T + b)."""
    name = "py_gaussian_rff"

    def __init__(self, n_components=256, gamma=1.0):
        super().__init__(n_components)
        self.gamma = gamma

    def param_size(self):
        return self.n_components * (self.n_features_in + 1)

    def generate_params(self, seed, block):
        F, d = self.n_components, self.n_features_in
        w = self.normal(seed, block, 0, F * d) * np.sqrt(2 * self.gamma)
        b = self.uniform(seed, block, 1, F, 0.0, 2 * np.pi)
        return np.concatenate([w, b])

    def features(self, params, X):
        F, d = self.n_components, self.n_features_in
        return np.sqrt(2.0) * np.cos(X @ params[:F * d].reshape(F, d).T + params[F * d:])


def plugin_source(*classes):
    """The source code of ``classes`` (defined here), for a plugin module written at test time.

    A distribution the tests install must not import the test suite (it may
    be loaded in a fresh process): its module carries a copy of the classes
    it builds on, and imports what they use (``np``, ``Loss``, ``FeatureMap``).
    """
    return "".join("\n\n" + inspect.getsource(cls) for cls in classes)


def refused(name, param, *values, match=None):
    """Rows ``(name, {param: value}, match)`` of a table of invalid parameters, one a value.

    Each of ``values`` given as ``param`` to the loss or feature map ``name``
    is to be refused with an error matching ``match`` (by default ``param``).
    """
    return [(name, {param: value}, param if match is None else match) for value in values]


def run_quick(bench, data_dir, *argv, name=None, out_flag="--output-dir"):
    """``bench.main`` in quick mode on the datasets in ``data_dir``: ``(report, saved)``.

    The results go to ``data_dir / "out"``; ``saved`` is the JSON written
    there, checked to be the quick report of benchmark ``name`` (by default
    the module's name).
    """
    name = name or bench.__name__.rsplit(".", 1)[-1]
    out = data_dir / "out"
    report = bench.main(["--quick", *argv, "--data-dir", str(data_dir), out_flag, str(out)])
    saved = json.loads((out / f"{name}_quick.json").read_text())
    assert saved["benchmark"] == name and saved["mode"] == "quick"
    return report, saved


def learn_then_pickle(model, stream, split):
    """``(model, copy)``: ``model`` learns ``stream[:split]`` one row at a time, is
    pickled into ``copy``, then both learn the rest."""
    for x, y in stream[:split]:
        model.learn_one(x, y)
    copy = pickle.loads(pickle.dumps(model))
    for x, y in stream[split:]:
        model.learn_one(x, y)
        copy.learn_one(x, y)
    return model, copy


def fit_any(model, X, y):
    """``fit`` as each kind of estimator takes it (y: real targets, thresholded for classes).

    The density ratio fits ``X`` against ``X + 0.5``, the one-class model ``X``
    alone, a classifier ``y > 0``, anything else ``(X, y)``.
    """
    return _train_any(model.fit, model, X, y)


def partial_fit_any(model, X, y):
    """``partial_fit`` as :func:`fit_any` calls ``fit`` (a classifier gets its classes)."""
    return _train_any(model.partial_fit, model, X, y)


def _train_any(method, model, X, y):
    from onlinekernel import DSGClassifier, DSGDensityRatio, DSGOneClassSVM
    if isinstance(model, DSGDensityRatio):
        return method(X, X + 0.5)
    if isinstance(model, DSGOneClassSVM):
        return method(X)
    if isinstance(model, DSGClassifier):
        extra = {"classes": [False, True]} if method.__name__ == "partial_fit" else {}
        return method(X, y > 0, **extra)
    return method(X, y)
