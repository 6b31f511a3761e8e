"""``n_components``: the feature budget as a number of random features (issue 16, item 20).

Users coming from scikit-learn's ``RBFSampler`` or ``Nystroem`` look for
``n_components`` first.  On the DSG estimators it replaces ``max_blocks`` by
``ceil(n_components / block_size)`` blocks; ``None`` keeps
``max_blocks * block_size``.  Models are compared bit for bit: a budget given
as ``n_components`` must train exactly the model of the same ``max_blocks``.
"""
import numpy as np
import pytest
from conftest import fit_any, partial_fit_any
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from sklearn.utils.estimator_checks import parametrize_with_checks

import onlinekernel
from onlinekernel import (DSGClassifier, DSGDensityRatio, DSGGaussianProcessRegressor,
                          DSGOneClassSVM, DSGQuantileRegressor, DSGRegressor,
                          FixedFeatureClassifier, FixedFeatureRegressor,
                          ShrinkingGradientRegressor)
from onlinekernel.io import modelfile

SGD = dict(solver="sgd", max_iter=2, tol=None, random_state=0)


def _data(n=160, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, X[:, 0] + 0.3 * np.sin(3 * X[:, 1]) + 0.1 * rng.normal(size=n)


def _same_model(a, b, X):
    assert a.n_blocks_ == b.n_blocks_ and a.n_random_features_ == b.n_random_features_
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.intercept_, b.intercept_)


# every estimator with a block budget, trained by its stochastic steps
BUDGETED = [
    lambda **kw: DSGClassifier(batch_size=8, **SGD, **kw),
    lambda **kw: DSGRegressor(batch_size=8, **SGD, **kw),
    lambda **kw: DSGQuantileRegressor(batch_size=8, **SGD, **kw),
    lambda **kw: DSGOneClassSVM(batch_size=8, max_iter=2, tol=None, random_state=0, **kw),
    lambda **kw: DSGDensityRatio(batch_size=8, max_iter=2, tol=None, random_state=0, **kw),
    lambda **kw: DSGGaussianProcessRegressor(batch_size=8, solver="sgd", variance_blocks=1,
                                             max_iter=2, tol=None, random_state=0, **kw),
]
IDS = ["DSGClassifier", "DSGRegressor", "DSGQuantileRegressor", "DSGOneClassSVM",
       "DSGDensityRatio", "DSGGaussianProcessRegressor"]


def test_the_rbfsampler_way_of_asking_for_1024_features():
    X, y = _data(n=300)
    clf = DSGClassifier(n_components=1024, block_size=256, random_state=0).fit(X, y > 0)
    assert clf.n_random_features_ == 1024 and clf.n_blocks_ == 4
    assert clf.coef_.shape == (1024, 1)
    # the stochastic solver grows to the same budget and stops there
    sgd = DSGClassifier(n_components=1024, block_size=256, batch_size=8, **SGD).fit(X, y > 0)
    assert sgd.n_random_features_ == 1024


@pytest.mark.parametrize("make", BUDGETED, ids=IDS)
def test_n_components_trains_the_model_of_the_same_max_blocks(make):
    X, y = _data()
    by_blocks = fit_any(make(block_size=16, max_blocks=3), X, y)
    by_count = fit_any(make(block_size=16, n_components=48), X, y)
    _same_model(by_blocks, by_count, X)
    assert by_count.n_random_features_ == 48
    # n_components takes the place of max_blocks, whatever max_blocks says
    ignored = fit_any(make(block_size=16, n_components=48, max_blocks=None), X, y)
    _same_model(by_blocks, ignored, X)


@pytest.mark.parametrize("n, blocks", [(1, 1), (16, 1), (17, 2), (40, 3), (48, 3)])
def test_n_components_is_rounded_up_to_whole_blocks(n, blocks):
    X, y = _data()
    model = DSGRegressor(block_size=16, n_components=n, batch_size=8, **SGD).fit(X, y)
    assert model.n_blocks_ == blocks and model.n_random_features_ == 16 * blocks
    _same_model(model, DSGRegressor(block_size=16, max_blocks=blocks, batch_size=8,
                                    **SGD).fit(X, y), X)


def test_the_batch_solvers_use_the_whole_budget():
    X, y = _data()
    for solver in ("cholesky", "newton-cg"):
        reg = DSGRegressor(solver=solver, block_size=32, n_components=96, random_state=0)
        assert reg.fit(X, y).n_random_features_ == 96
        _same_model(reg, DSGRegressor(solver=solver, block_size=32, max_blocks=3,
                                      random_state=0).fit(X, y), X)


def test_shrinking_gradient_takes_its_prediction_features_as_n_components():
    X, y = _data(n=100)
    y = np.tanh(y)
    params = dict(n_estimates=16, block_size=32, random_state=0)
    by_blocks = ShrinkingGradientRegressor(predict_blocks=2, **params).fit(X, y)
    by_count = ShrinkingGradientRegressor(n_components=64, predict_blocks=7, **params).fit(X, y)
    _same_model(by_blocks, by_count, X)
    np.testing.assert_array_equal(by_blocks.predict(X), by_count.predict(X))
    assert ShrinkingGradientRegressor(n_components=33, **params).fit(X, y).n_blocks_ == 2
    kernel_only = ShrinkingGradientRegressor(n_components=0, prediction="kernel",
                                             kernel="gaussian", **params).fit(X, y)
    assert kernel_only.n_blocks_ == 0


def test_the_gp_mean_budget_is_at_least_the_variance_features():
    X, y = _data()
    # n_components=1 (what scikit-learn's checks set): the 2 variance blocks
    gp = DSGGaussianProcessRegressor(n_components=1, block_size=16, variance_blocks=2,
                                     random_state=0).fit(X, y)
    assert gp.n_blocks_ == 2
    sgd = DSGGaussianProcessRegressor(n_components=1, block_size=16, variance_blocks=2,
                                      solver="sgd", max_iter=2, tol=None,
                                      random_state=0).fit(X, y)
    assert sgd.n_blocks_ == 2
    assert DSGGaussianProcessRegressor(n_components=80, block_size=16, variance_blocks=2,
                                       solver="sgd", max_iter=2, tol=None, batch_size=8,
                                       random_state=0).fit(X, y).n_blocks_ == 5


# --------------------------------------------------------------------------- #
# scikit-learn parameters
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("Est", [DSGClassifier, DSGRegressor, DSGQuantileRegressor,
                                 DSGOneClassSVM, DSGDensityRatio, DSGGaussianProcessRegressor,
                                 ShrinkingGradientRegressor, FixedFeatureRegressor,
                                 FixedFeatureClassifier])
def test_n_components_is_a_parameter_that_round_trips(Est):
    default = Est().get_params()["n_components"]
    assert default == ("auto" if Est in (FixedFeatureRegressor, FixedFeatureClassifier)
                       else None)
    model = Est(n_components=512)
    assert model.get_params()["n_components"] == 512
    copy = clone(model)
    assert copy.get_params() == model.get_params() and copy.n_components == 512
    assert copy.set_params(n_components=256) is copy and copy.get_params()["n_components"] == 256
    assert model.n_components == 512


def test_a_grid_search_over_n_components():
    X, y = _data()
    grid = GridSearchCV(DSGRegressor(block_size=16, random_state=0),
                        {"n_components": [16, 64]}, cv=2).fit(X, y)
    assert grid.best_params_["n_components"] in (16, 64)
    assert grid.best_estimator_.n_random_features_ == grid.best_params_["n_components"]


BAD = [(0, "n_components must be an integer >= 1, got 0"),
       (-256, "n_components must be an integer >= 1, got -256"),
       (512.0, "n_components must be an integer >= 1, got 512.0"),
       ("1024", "n_components must be an integer >= 1, got '1024'"),
       (True, "n_components must be an integer >= 1, got True")]


@pytest.mark.parametrize("value, match", BAD, ids=[repr(v) for v, _ in BAD])
@pytest.mark.parametrize("make", BUDGETED, ids=IDS)
def test_a_bad_value_is_refused_and_leaves_the_model_unchanged(make, value, match):
    X, y = _data()
    model = fit_any(make(block_size=16, max_blocks=2), X, y)
    before = {k: np.copy(v) for k, v in vars(model).items() if isinstance(v, np.ndarray)}
    model.set_params(n_components=value)
    for call in (fit_any, partial_fit_any):
        with pytest.raises(ValueError, match=match):
            call(model, X, y)
    assert before.keys() == {k for k, v in vars(model).items() if isinstance(v, np.ndarray)}
    assert all(np.array_equal(v, getattr(model, k)) for k, v in before.items())
    # and an unfitted one stays unfitted
    fresh = make(block_size=16, n_components=value)
    with pytest.raises(ValueError, match=match):
        fit_any(fresh, X, y)
    assert not hasattr(fresh, "_coef")


def test_shrinking_gradient_refuses_a_bad_n_components():
    X, y = _data(n=50)
    for value, match in [(-1, "n_components must be an integer >= 0, got -1"),
                         (2.5, "n_components must be an integer >= 0, got 2.5"),
                         (0, "prediction='features' needs n_components >= 1")]:
        with pytest.raises(ValueError, match=match):
            ShrinkingGradientRegressor(n_components=value, random_state=0).fit(X, y)


# --------------------------------------------------------------------------- #
# partial_fit after set_params: as max_blocks
# --------------------------------------------------------------------------- #
def test_a_larger_n_components_takes_effect_on_the_next_partial_fit():
    X, y = _data()
    model = DSGRegressor(block_size=16, max_blocks=2, batch_size=8, random_state=0)
    model.partial_fit(X, y)
    assert model.n_blocks_ == 2
    model.set_params(n_components=64)
    model.partial_fit(X, y)
    assert model.n_blocks_ == 4 and model.n_random_features_ == 64
    # the same as raising max_blocks
    other = DSGRegressor(block_size=16, max_blocks=2, batch_size=8, random_state=0)
    other.partial_fit(X, y).set_params(max_blocks=4).partial_fit(X, y)
    _same_model(model, other, X)


@pytest.mark.parametrize("make", BUDGETED, ids=IDS)
def test_a_budget_below_the_model_is_refused_and_leaves_it_unchanged(make):
    X, y = _data()
    model = partial_fit_any(make(block_size=16, n_components=64), X, y)
    assert model.n_blocks_ == 4
    before = {k: np.copy(v) for k, v in vars(model).items() if isinstance(v, np.ndarray)}
    model.set_params(n_components=32)
    with pytest.raises(ValueError, match=r"the model has 4 blocks, more than n_components=32 "
                                         r"\(2 blocks of block_size=16\): the budget cannot "
                                         r"shrink"):
        partial_fit_any(model, X, y)
    assert all(np.array_equal(v, getattr(model, k)) for k, v in before.items())
    fit_any(model, X, y)  # fit builds a new model of the new budget
    assert model.n_blocks_ == 2


def test_shrinking_gradient_refuses_to_continue_with_other_prediction_features():
    X, y = _data(n=60)
    y = np.tanh(y)
    model = ShrinkingGradientRegressor(n_estimates=16, block_size=32, n_components=64,
                                       random_state=0).fit(X, y)
    before = model.predict(X)
    model.set_params(n_components=128)
    with pytest.raises(ValueError, match="the model has 64 prediction features .2 blocks.; "
                                         "it cannot continue with n_components=128"):
        model.partial_fit(X, y)
    np.testing.assert_array_equal(model.predict(X), before)
    model.set_params(n_components=None, predict_blocks=3)
    with pytest.raises(ValueError, match="cannot continue with predict_blocks=3"):
        model.partial_fit(X, y)
    model.set_params(predict_blocks=2)
    model.partial_fit(X, y)  # the model's own size again


# --------------------------------------------------------------------------- #
# model files
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("make", BUDGETED, ids=IDS)
def test_model_files_keep_n_components(make, tmp_path):
    X, y = _data()
    model = fit_any(make(block_size=16, n_components=48), X, y)
    model.save(tmp_path / "m.okm")
    assert modelfile.read_header(tmp_path / "m.okm")["params"]["n_components"] == 48
    loaded = onlinekernel.load(tmp_path / "m.okm")
    assert loaded.get_params()["n_components"] == 48
    _same_model(model, loaded, X)
    # and it continues as the saved model does
    _same_model(partial_fit_any(model, X, y), partial_fit_any(loaded, X, y), X)


def test_files_written_before_n_components_and_verbose_load_with_their_defaults(tmp_path):
    X, y = _data()
    model = DSGClassifier(block_size=16, max_blocks=3, batch_size=8, **SGD).fit(X, y > 0)
    header, payload = modelfile._unpack(modelfile.dumps(model), "test")
    del header["params"]["n_components"], header["params"]["verbose"]
    old = modelfile._pack(header, bytes(payload))  # a file as the previous version wrote it
    loaded = modelfile.loads(old)
    assert loaded.get_params()["n_components"] is None and loaded.get_params()["verbose"] == 0
    np.testing.assert_array_equal(loaded.decision_function(X), model.decision_function(X))
    assert loaded.n_blocks_ == 3


# --------------------------------------------------------------------------- #
# scikit-learn's estimator checks with the budget given as n_components (they
# set n_components=1 in some checks: one block).  The classifier's tight tol:
# Newton-CG stops at tol, and the weighted and repeated optima must agree to
# 1e-7 (as for the loss objects of test_estimators.py; with 4 blocks and the
# default tol they differ by 1.3e-7, as they do with max_blocks=4).
# --------------------------------------------------------------------------- #
@parametrize_with_checks([DSGRegressor(n_components=512, block_size=128),
                          DSGClassifier(n_components=1024, block_size=256, tol=1e-10)])
def test_sklearn_estimator_checks_with_n_components(estimator, check, monkeypatch):
    if getattr(check, "func", check).__name__ == "check_array_api_input":
        monkeypatch.setenv("SCIPY_ARRAY_API", "1")  # as in test_estimators.py
    check(estimator)
