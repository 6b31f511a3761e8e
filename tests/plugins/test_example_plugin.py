"""The example third-party plugin package, exercised by name.

``examples/onlinekernel-example-plugin`` is a separate distribution that
declares its plugin object ``onlinekernel_example_plugin:plugin`` under the
``onlinekernel`` entry-point group; it registers the pure-Python loss
``smooth_hinge`` and feature map ``cauchy``.  The test command installs it
next to onlinekernel::

    pip install ".[test]" ./examples/onlinekernel-example-plugin && pytest -n 2

so these tests see it exactly as a user sees a plugin from PyPI: through the
registry, the estimators, the command line and model files.  The rest of the
suite runs on the built-ins alone (``conftest.py``); this module switches
entry-point loading on for all of its tests.  Without the plugin this
module fails at collection with the command to run -- it never skips, since
a silently skipped plugin test would hide a broken entry point.
"""
import doctest
import importlib
import importlib.metadata
import io
import json
import math
import pickle
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

import onlinekernel
from onlinekernel import (DSGClassifier, ModelFileError, cli, get_feature_map, get_loss,
                          registry)
from onlinekernel.io import modelfile
from onlinekernel.featuremaps.base import as_cy_feature_map

from conftest import all_entry_points, refused

DIST = "onlinekernel-example-plugin"
MODULE = "onlinekernel_example_plugin"
PLUGIN_DIR = Path(__file__).resolve().parents[2] / "examples" / DIST


def _require_installed_plugin():
    """Fail the whole module, with the command to run, if the plugin is missing."""
    try:
        importlib.metadata.distribution(DIST)
    except importlib.metadata.PackageNotFoundError:
        problem = f"the example plugin distribution {DIST!r} is not installed"
    else:
        if ("smooth_hinge" in onlinekernel.available_losses()
                and "cauchy" in onlinekernel.available_feature_maps()):
            return
        problem = (f"the example plugin distribution {DIST!r} is installed but its plugin is "
                   f"not registered (see the registry's warnings)")
    pytest.fail(f"{problem}. tests/plugins/test_example_plugin.py uses it as a third-party plugin; "
                f"install it from the repository root with\n"
                f"    pip install ./examples/{DIST}\n"
                f"(the full test command is: pip install \".[test]\" ./examples/{DIST} && "
                f"pytest -n 2)", pytrace=False)


with all_entry_points():
    _require_installed_plugin()


@pytest.fixture(scope="module", autouse=True)
def plugins_loaded():
    """Entry-point loading on for the whole module (before ``xor_model``)."""
    with all_entry_points():
        yield

# the classifier settings of the learning tests: 4 blocks of 256 features
SMALL = dict(block_size=256, max_blocks=4, solver="sgd", max_iter=3, tol=None)


def _xor(n, seed):
    """Labels by the sign of x0 * x1: no linear model beats chance."""
    X = np.random.default_rng(seed).uniform(-2.0, 2.0, size=(n, 2))
    return X, np.where(X[:, 0] * X[:, 1] > 0, "same", "opposite")


@pytest.fixture(scope="module")
def xor_model():
    X, y = _xor(1000, 0)
    return DSGClassifier(loss="smooth_hinge", kernel="cauchy", gamma=1.0, random_state=0,
                         **SMALL).fit(X, y)


@pytest.fixture
def fresh_registry():
    """Reload the plugins after the test (it may change what is registered)."""
    yield
    registry.reset()


# --------------------------------------------------------------------------- #
# registration
# --------------------------------------------------------------------------- #
def test_entry_point_is_declared_by_the_distribution():
    eps = importlib.metadata.distribution(DIST).entry_points.select(group="onlinekernel")
    assert [(ep.name, ep.value) for ep in eps] == [("example", f"{MODULE}:plugin")]


def test_both_components_are_listed_with_their_distribution():
    loss = onlinekernel.available_losses()["smooth_hinge"]
    assert loss == {"distribution": DIST, "plugin": "example",
                    "factory": f"{MODULE}.smooth_hinge.SmoothHinge",
                    "parameters": {"smoothing": 1.0}}
    fmap = onlinekernel.available_feature_maps()["cauchy"]
    assert fmap == {"distribution": DIST, "plugin": "example",
                    "factory": f"{MODULE}.cauchy.CauchyFeatures",
                    "parameters": {"n_components": 256, "gamma": 1.0}}


def test_components_are_built_by_name_as_pure_python_plugins():
    loss = get_loss("smooth_hinge", smoothing=0.5)
    assert isinstance(loss, onlinekernel.Loss)
    assert (type(loss).name, loss.get_params()) == ("smooth_hinge", {"smoothing": 0.5})
    fmap = get_feature_map("cauchy", n_components=32, gamma=2.0)
    assert isinstance(fmap, onlinekernel.FeatureMap)
    assert (type(fmap).name, fmap.get_params()) == ("cauchy", {"n_components": 32, "gamma": 2.0})


@pytest.mark.parametrize("name, params, word", [
    *refused("smooth_hinge", "smoothing", 0.0, -1.0, math.nan, math.inf, True, "1"),
    *refused("smooth_hinge", "delta", 1.0, match="invalid parameters for loss 'smooth_hinge'"),
    *refused("cauchy", "gamma", 0.0, math.inf),
    *refused("cauchy", "n_components", 0),
    *refused("cauchy", "degree", 2, match="invalid parameters for feature map 'cauchy'"),
])
def test_invalid_parameters_are_refused_by_name(name, params, word):
    build = get_loss if name == "smooth_hinge" else get_feature_map
    with pytest.raises(ValueError, match=word):
        build(name, **params)


@pytest.mark.parametrize("module", [MODULE, f"{MODULE}.smooth_hinge", f"{MODULE}.cauchy"])
def test_docstring_examples(module):
    # tests/docs/test_doctests.py walks onlinekernel's own packages only
    mod = importlib.import_module(module)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    tests = [t for t in doctest.DocTestFinder(exclude_empty=True).find(mod, module,
                                                                         globs=vars(mod).copy())
             if t.examples]
    assert tests, f"{module} has no examples"
    for t in tests:
        runner.run(t)
    assert runner.summarize(verbose=False).failed == 0


# --------------------------------------------------------------------------- #
# the smooth hinge
# --------------------------------------------------------------------------- #
def _reference_smooth_hinge(z, h):
    """The piecewise definition, one margin at a time."""
    if z >= 1.0:
        return 0.0
    if z > 1.0 - h:
        return (1.0 - z) ** 2 / (2.0 * h)
    return 1.0 - z - h / 2.0


def test_smooth_hinge_follows_its_definition():
    z = np.array([3.0, 1.0, 0.999, 0.75, 0.5, 0.0, -1e-9, -0.5, -4.0, 1.0 - 0.3])
    for h in (1.0, 0.3, 2.5):
        loss = get_loss("smooth_hinge", smoothing=h)
        for y in (1.0, -1.0):  # z = y * raw
            values = loss.loss(np.full((z.size, 1), y), (y * z)[:, None])
            expected = [_reference_smooth_hinge(zi, h) for zi in z]
            np.testing.assert_allclose(values, expected, rtol=1e-14, atol=1e-15)
    # h = 1: 0 above the margin, (1 - z)^2 / 2 on (0, 1), 1/2 - z below
    loss = get_loss("smooth_hinge")
    np.testing.assert_allclose(loss.loss([[1.0]] * 3, [[1.5], [0.4], [-2.0]]),
                               [0.0, 0.18, 2.5], rtol=1e-14)
    # as the smoothing vanishes, the hinge
    sharp = get_loss("smooth_hinge", smoothing=1e-9)
    raw = np.linspace(-3, 3, 61)[:, None]
    np.testing.assert_allclose(sharp.loss(np.ones_like(raw), raw),
                               get_loss("hinge").loss(np.ones_like(raw), raw), atol=1e-9)


def test_smooth_hinge_gradient_matches_finite_differences():
    rng = np.random.default_rng(0)
    eps = 1e-6
    for h in (1.0, 0.25, 3.0):
        loss = get_loss("smooth_hinge", smoothing=h)
        y = rng.choice([-1.0, 1.0], size=(500, 3))
        raw = rng.uniform(-3.0, 3.0, size=(500, 3))
        grad = loss.gradient(y, raw)
        assert grad.shape == raw.shape
        for c in range(3):
            up, down = raw.copy(), raw.copy()
            up[:, c] += eps
            down[:, c] -= eps
            central = (loss.loss(y, up) - loss.loss(y, down)) / (2 * eps)
            # C^1 everywhere: no kinks to exclude, only rounding
            np.testing.assert_allclose(grad[:, c], central, rtol=1e-6, atol=1e-6,
                                       err_msg=f"smoothing={h}, output {c}")
        assert np.all(np.abs(grad) <= 1.0)  # a Lipschitz loss, like the hinge
    # every piece was visited
    z = y * raw
    assert (z >= 1).any() and ((z < 1) & (z > 1 - h)).any() and (z <= 1 - h).any()


def test_smooth_hinge_takes_one_output_as_a_1d_array():
    loss = get_loss("smooth_hinge", smoothing=0.5)
    y, raw = np.array([1.0, -1.0, 1.0]), np.array([0.8, 0.3, -2.0])
    np.testing.assert_array_equal(loss.loss(y, raw), loss.loss(y[:, None], raw[:, None]))
    np.testing.assert_array_equal(loss.gradient(y, raw), loss.gradient(y[:, None], raw[:, None]))


def _convexity_violations(f, a, b):
    """Points of segments [a, b] where f lies above its chord (beyond rounding)."""
    fa, fb = f(a), f(b)
    bad = 0
    for s in (0.1, 0.37, 0.5, 0.9):
        fs = f(s * a + (1 - s) * b)
        bad += int(np.sum(fs > s * fa + (1 - s) * fb + 1e-12 * (1 + np.abs(fa) + np.abs(fb))))
    return bad


def test_smooth_hinge_is_convex():
    rng = np.random.default_rng(1)
    y = rng.choice([-1.0, 1.0], size=(3000, 2))
    a = rng.uniform(-4.0, 4.0, size=y.shape)
    b = rng.uniform(-4.0, 4.0, size=y.shape) * rng.uniform(0.2, 3.0, size=(3000, 1))
    for h in (1.0, 0.1, 4.0):
        loss = get_loss("smooth_hinge", smoothing=h)
        assert _convexity_violations(lambda r: loss.loss(y, r), a, b) == 0, h
        # the gradient is monotone
        assert np.all(((loss.gradient(y, a) - loss.gradient(y, b)) * (a - b)).sum(1) >= -1e-12)
        # and the check does catch a non-convex function
        assert _convexity_violations(lambda r: -loss.loss(y, r), a, b) > 100


# --------------------------------------------------------------------------- #
# the Cauchy feature map
# --------------------------------------------------------------------------- #
def test_cauchy_kernel_closed_form():
    rng = np.random.default_rng(2)
    X, Y = rng.normal(size=(7, 4)), rng.normal(size=(5, 4))
    fmap = get_feature_map("cauchy", gamma=0.7).bind(4)
    K = fmap.kernel(X, Y)
    expected = [[math.prod(1.0 / (1.0 + 0.7 * (xk - yk) ** 2) for xk, yk in zip(x, y_))
                 for y_ in Y] for x in X]
    np.testing.assert_allclose(K, expected, rtol=1e-14)
    G = fmap.kernel(X, X)
    np.testing.assert_allclose(np.diag(G), 1.0)
    np.testing.assert_array_equal(G, G.T)
    assert np.linalg.eigvalsh(G).min() > -1e-12  # a positive definite kernel
    with pytest.raises(ValueError, match="columns"):
        fmap.kernel(X, Y[:, :3])


def _max_gram_error(fmap, X, seed):
    Z = fmap.features(fmap.generate_params(seed, 0), X)
    return np.abs(Z @ Z.T / Z.shape[1] - fmap.kernel(X, X)).max()


def test_cauchy_monte_carlo_kernel_converges_to_the_closed_form():
    X = np.random.default_rng(3).normal(scale=0.8, size=(40, 3))
    sizes = [2 ** 6, 2 ** 9, 2 ** 12, 2 ** 15]
    errors = []
    for F in sizes:
        fmap = get_feature_map("cauchy", n_components=F, gamma=1.5).bind(3)
        errors.append(np.mean([_max_gram_error(fmap, X, seed) for seed in range(4)]))
    # 8x the features: the error of a Monte-Carlo mean falls by about sqrt(8) = 2.8
    for (F, e), e_next in zip(zip(sizes, errors), errors[1:]):
        assert e_next < e / 2.0, f"error {e:.4f} with {F} features, {e_next:.4f} with {8 * F}"
    slope = np.polyfit(np.log(sizes), np.log(errors), 1)[0]
    assert -0.65 < slope < -0.35, f"error ~ F^{slope:.2f}, expected F^-0.5 ({errors})"
    assert errors[-1] < 0.02


def test_cauchy_frequencies_are_laplace_and_phases_uniform():
    F, d, gamma = 10000, 3, 2.0
    params = get_feature_map("cauchy", n_components=F, gamma=gamma).bind(d).generate_params(0, 0)
    w, b = params[:F * d], params[F * d:]
    assert stats.kstest(w, stats.laplace(scale=math.sqrt(gamma)).cdf).pvalue > 1e-3
    assert stats.kstest(b, stats.uniform(0.0, 2 * math.pi).cdf).pvalue > 1e-3
    # and not Gaussian: the check can fail
    assert stats.kstest(w, stats.norm(scale=w.std()).cdf).pvalue < 1e-6


# Block 1000 of seed 12345, F = 4, d = 3, gamma = 2: drawn only from the
# package's stable streams with IEEE products, so the same on every machine.
GOLDEN = [-4.117442578616864, 0.029098094168169403, 0.4424834166387902, -5.668910750570594,
          0.6885159404846245, -3.091075138573421, -1.923175995624662, -4.78117379632549,
          -1.2848255830329025, -0.10663768749663005, 0.07079827927276121, -0.4134061754735093,
          3.1052761579418, 2.3647189208084285, 1.8358597531074137, 2.8542769615202386]


def test_cauchy_blocks_are_golden_and_regenerate_alone():
    fmap = get_feature_map("cauchy", n_components=4, gamma=2.0).bind(3)
    assert fmap.generate_params(12345, 1000).tolist() == GOLDEN
    blocks = [fmap.generate_params(9, j) for j in range(4)]
    for j in (3, 1, 0, 2):
        np.testing.assert_array_equal(fmap.generate_params(9, j), blocks[j])
    assert not np.array_equal(blocks[0], blocks[1])
    with pytest.raises(ValueError, match="bind"):
        get_feature_map("cauchy").generate_params(0, 0)


def test_cauchy_features_are_what_the_solver_runs():
    fmap = get_feature_map("cauchy", n_components=64, gamma=0.5)
    solver_view = as_cy_feature_map(fmap).bind(5)  # as the estimators bind it
    X = np.random.default_rng(4).normal(size=(9, 5))
    np.testing.assert_array_equal(solver_view.transform_block(77, 6, X),
                                  fmap.features(fmap.generate_params(77, 6), X))


# --------------------------------------------------------------------------- #
# through the estimators
# --------------------------------------------------------------------------- #
def test_classifier_by_name_learns_a_nonlinear_problem(xor_model):
    from sklearn.linear_model import SGDClassifier
    X, y = _xor(1000, 0)
    X_test, y_test = _xor(2000, 1)
    assert SGDClassifier(random_state=0).fit(X, y).score(X_test, y_test) < 0.65  # not linear
    assert xor_model.score(X_test, y_test) > 0.93  # 0.97-0.99 over seeds
    assert type(xor_model.loss_).name == "smooth_hinge"
    assert xor_model.feature_map_.name == "cauchy"
    assert xor_model.feature_map_.get_params() == {"n_components": 256, "gamma": 1.0}
    assert xor_model.n_random_features_ == 1024


def test_classifier_parameters_reach_the_plugins():
    X, y = _xor(300, 2)
    clf = DSGClassifier(loss=get_loss("smooth_hinge", smoothing=0.2), kernel="cauchy",
                        gamma="scale", block_size=32, max_blocks=2, solver="sgd", max_iter=1, tol=None,
                        random_state=0).fit(X, y)
    assert clf.loss_.smoothing == 0.2
    assert clf.feature_map_.gamma == clf.gamma_ == pytest.approx(1.0 / (2 * X.var()))
    assert clf.feature_map_.n_components == 32


def test_three_classes_one_vs_rest():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(1500, 2))
    y = np.digitize(np.hypot(X[:, 0], X[:, 1]), [0.8, 1.5])  # two rings and the centre
    clf = DSGClassifier(loss="smooth_hinge", kernel="cauchy", gamma=1.0, random_state=0,
                        **{**SMALL, "solver": "sgd", "max_iter": 5, "tol": None}).fit(X[:1000], y[:1000])
    assert clf.decision_function(X[:3]).shape == (3, 3)
    # 0.95-0.98 over seeds; a linear model scores 0.37 (the majority class is 0.40)
    assert clf.score(X[1000:], y[1000:]) > 0.9


def test_pickle_round_trip_predicts_the_same(xor_model):
    X, _ = _xor(200, 3)
    clone = pickle.loads(pickle.dumps(xor_model))
    np.testing.assert_array_equal(clone.decision_function(X), xor_model.decision_function(X))


# --------------------------------------------------------------------------- #
# model files
# --------------------------------------------------------------------------- #
def test_model_file_round_trip_is_bit_for_bit(xor_model, tmp_path):
    path = tmp_path / "xor.okm"
    xor_model.save(path)
    header = modelfile.read_header(path)
    assert (header["loss"]["name"], header["loss"]["distribution"]) == ("smooth_hinge", DIST)
    assert (header["feature_map"]["name"], header["feature_map"]["distribution"]) == ("cauchy",
                                                                                      DIST)
    assert header["feature_map"]["params"] == {"n_components": 256, "gamma": 1.0}
    loaded = onlinekernel.load(path)
    X, _ = _xor(500, 4)
    np.testing.assert_array_equal(loaded.decision_function(X), xor_model.decision_function(X))
    np.testing.assert_array_equal(loaded.predict(X), xor_model.predict(X))
    assert type(loaded.loss_).name == "smooth_hinge" and loaded.loss_.smoothing == 1.0
    # the file is the coefficients (their average and, to go on learning, the
    # iterate) plus a small header: no features inside
    assert xor_model.n_averaged_
    assert path.stat().st_size < 2 * xor_model.coef_.nbytes + 4096


def test_training_resumes_from_a_model_file(tmp_path):
    X, y = _xor(600, 6)
    settings = dict(loss="smooth_hinge", kernel="cauchy", gamma=1.0, block_size=64,
                    max_blocks=4, random_state=0)
    straight = DSGClassifier(**settings)
    halted = DSGClassifier(**settings)
    for start in range(0, 300, 100):
        straight.partial_fit(X[start:start + 100], y[start:start + 100], classes=["opposite",
                                                                                 "same"])
        halted.partial_fit(X[start:start + 100], y[start:start + 100], classes=["opposite",
                                                                               "same"])
    halted.save(tmp_path / "halfway.okm")
    resumed = onlinekernel.load(tmp_path / "halfway.okm")
    for start in range(300, 600, 100):
        straight.partial_fit(X[start:start + 100], y[start:start + 100])
        resumed.partial_fit(X[start:start + 100], y[start:start + 100])
    np.testing.assert_array_equal(resumed.coef_, straight.coef_)
    np.testing.assert_array_equal(resumed.decision_function(X), straight.decision_function(X))


def test_loading_without_the_plugin_names_the_distribution(xor_model, tmp_path, monkeypatch,
                                                           fresh_registry):
    path = tmp_path / "xor.okm"
    xor_model.save(path)
    monkeypatch.setenv(registry.DISABLE_ENV, "1")  # as if the plugin were not installed
    registry.reset()
    assert "smooth_hinge" not in onlinekernel.available_losses()
    with pytest.raises(ModelFileError, match=f"smooth_hinge.*{DIST}"):
        onlinekernel.load(path)


# --------------------------------------------------------------------------- #
# the command line
# --------------------------------------------------------------------------- #
def test_cli_plugins_lists_both_with_the_distribution():
    out = io.StringIO()
    assert cli.main(["plugins"], out=out) == 0
    text = out.getvalue()
    for name, param in (("smooth_hinge", "smoothing=1.0"), ("cauchy", "gamma=1.0")):
        hits = [line for line in text.splitlines() if name in line.split()]
        assert len(hits) == 1, f"{name!r} is listed {len(hits)} times by 'plugins':\n{text}"
        assert DIST in hits[0] and param in hits[0], hits[0]
    out = io.StringIO()
    assert cli.main(["plugins", "--json"], out=out) == 0
    tables = json.loads(out.getvalue())
    assert tables["losses"]["smooth_hinge"]["distribution"] == DIST
    assert tables["feature_maps"]["cauchy"] == onlinekernel.available_feature_maps()["cauchy"]


def _write_csv(path, X, y):
    with open(path, "w") as f:
        f.write("x0,x1,label\n")
        f.writelines(f"{a!r},{b!r},{label}\n" for (a, b), label in zip(X.tolist(), y))


def test_cli_trains_and_evaluates_with_the_plugins_by_name(tmp_path, capsys):
    train, test, model = tmp_path / "train.csv", tmp_path / "test.csv", tmp_path / "m.okm"
    _write_csv(train, *_xor(1000, 0))
    _write_csv(test, *_xor(1000, 1))
    args = ["train", str(train), "--loss", "smooth_hinge", "--kernel", "cauchy", "--gamma", "1",
            "--block-size", "256", "--max-blocks", "4", "--epochs", "3", "-o", str(model)]
    assert cli.main(args + ["--loss-param", "smoothing=0.5"], out=io.StringIO()) == 0
    loaded = onlinekernel.load(model)
    assert loaded.loss_.get_params() == {"smoothing": 0.5}
    assert loaded.feature_map_.get_params() == {"n_components": 256, "gamma": 1.0}
    out = io.StringIO()
    assert cli.main(["evaluate", str(model), str(test), "--json"], out=out) == 0
    assert json.loads(out.getvalue())["accuracy"] > 0.93
    # the plugin's own parameter check reaches the user as one line
    capsys.readouterr()
    assert cli.main(args + ["--loss-param", "smoothing=0"], out=io.StringIO()) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("onlinekernel: error:") and "smoothing must be" in err[-1]
