"""Quantile regression: calibration of ``DSGRegressor(loss="quantile")`` and of
``DSGQuantileRegressor``, non-crossing, and the ``multi_quantile`` loss.

Calibration is measured on held-out data: the fraction of targets below the
predicted :math:`\\tau`-quantile must be within 2 percentage points of
:math:`\\tau` for :math:`\\tau \\in \\{0.1, 0.5, 0.9\\}`.  The pinball
gradients are bounded, so the steps decay as ``1/t`` from ``eta0=2`` with
averaging (the DSGQuantileRegressor defaults); the targets are standardised.
"""
import pickle

import numpy as np
import pytest
from sklearn.preprocessing import StandardScaler

from conftest import load_dataset, needs_data
from onlinekernel import (DSGClassifier, DSGQuantileRegressor, DSGRegressor, Loss, get_loss,
                          load)

TAUS = (0.1, 0.5, 0.9)
# The step settings of the calibration tests (DSGQuantileRegressor's defaults).
STEPS = dict(learning_rate="inverse", eta0=2.0, t0=50.0, average=True)
SMALL = dict(block_size=64, max_blocks=8)


def heteroscedastic(n, seed):
    """``y = sin(1.5 x0) + 0.3 x1 + (0.1 + 0.4 |x0|) e``, x uniform on [-2, 2]^2.

    The noise level varies fivefold across x0, so a constant offset from
    the conditional median cannot be calibrated: the quantile curves must
    widen with |x0|.
    """
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2.0, 2.0, size=(n, 2))
    sigma = 0.1 + 0.4 * np.abs(X[:, 0])
    y = np.sin(1.5 * X[:, 0]) + 0.3 * X[:, 1] + sigma * rng.normal(size=n)
    return X, y


def cadata(n_train=6000):
    """cadata: the first ``n_train`` training rows (for speed) and the whole
    test split.  Features are standardised by a StandardScaler fitted on
    those training rows; the target is centred and scaled by their mean and
    standard deviation (the fraction below a quantile does not depend on it).
    """
    X, y, Xt, yt = load_dataset("cadata")
    X, y = X[:n_train], y[:n_train]
    scaler = StandardScaler().fit(X)
    mu, sd = y.mean(), y.std()
    return scaler.transform(X), (y - mu) / sd, scaler.transform(Xt), (yt - mu) / sd


def _coverage(y, pred):
    """Fraction of targets below the prediction (one column per level)."""
    return (y[:, None] < pred.reshape(len(y), -1)).mean(axis=0)


# --------------------------------------------------------------------------- #
# calibration
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("tau", TAUS)
def test_quantile_loss_is_calibrated_on_a_heteroscedastic_problem(tau):
    X, y = heteroscedastic(4000, seed=0)
    Xt, yt = heteroscedastic(20000, seed=1)  # held-out fraction's sd: 0.0035 at 0.5
    model = DSGRegressor(loss=get_loss("quantile", quantile=tau), solver="sgd", max_iter=10, tol=None, random_state=0,
                         **STEPS, **SMALL).fit(X, y)
    pred = model.predict(Xt)
    assert abs(_coverage(yt, pred)[0] - tau) <= 0.02
    # and it is a conditional quantile, not a shifted mean: where the noise
    # is large the 0.1 and 0.9 quantiles lie farther from the median
    if tau != 0.5:
        median = DSGRegressor(loss=get_loss("quantile", quantile=0.5), solver="sgd", max_iter=10, tol=None,
                              random_state=0, **STEPS, **SMALL).fit(X, y).predict(Xt)
        wide = np.abs(Xt[:, 0]) > 1.5
        narrow = np.abs(Xt[:, 0]) < 0.5
        gap = np.abs(pred - median)
        assert gap[wide].mean() > 2.5 * gap[narrow].mean()


@needs_data("cadata")
@pytest.mark.parametrize("tau", TAUS)
def test_quantile_loss_is_calibrated_on_cadata(tau):
    X, y, Xt, yt = cadata()
    model = DSGRegressor(loss=get_loss("quantile", quantile=tau), solver="sgd", max_iter=5, tol=None, random_state=0,
                         **STEPS).fit(X, y)
    assert abs(_coverage(yt, model.predict(Xt))[0] - tau) <= 0.02


def test_quantile_regressor_is_calibrated_and_does_not_cross():
    X, y = heteroscedastic(4000, seed=0)
    Xt, yt = heteroscedastic(20000, seed=1)  # held-out fraction's sd: 0.0035 at 0.5
    model = DSGQuantileRegressor(quantiles=TAUS, random_state=0, **SMALL).fit(X, y)
    pred = model.predict(Xt)
    assert pred.shape == (len(yt), 3)
    np.testing.assert_allclose(_coverage(yt, pred), TAUS, rtol=0, atol=0.02)
    assert np.all(np.diff(pred, axis=1) >= 0)
    assert model.score(Xt, yt) > 0.3  # D^2 pinball: far better than constants


@needs_data("cadata")
def test_quantile_regressor_is_calibrated_on_cadata():
    X, y, Xt, yt = cadata()
    model = DSGQuantileRegressor(quantiles=TAUS, solver="sgd", max_iter=5, tol=None, random_state=0).fit(X, y)
    pred = model.predict(Xt)
    np.testing.assert_allclose(_coverage(yt, pred), TAUS, rtol=0, atol=0.02)
    assert np.all(np.diff(pred, axis=1) >= 0)


# --------------------------------------------------------------------------- #
# DSGQuantileRegressor: one output per level, shared features
# --------------------------------------------------------------------------- #
def test_each_output_is_the_single_quantile_model():
    # the outputs share the features and the shuffles but nothing else: output
    # c is DSGRegressor(quantile=tau_c) with the same seed
    X, y = heteroscedastic(300, seed=2)
    params = dict(STEPS, **SMALL, solver="sgd", max_iter=2, tol=None, alpha=1e-6,
                  random_state=5)
    multi = DSGQuantileRegressor(quantiles=(0.8, 0.2, 0.5), **params).fit(X, y)
    raw = multi.predict(X, rearrange=False)
    assert multi.quantiles_ == (0.8, 0.2, 0.5)
    assert multi.coef_.shape == (multi.n_random_features_, 3)
    for c, tau in enumerate((0.8, 0.2, 0.5)):
        single = DSGRegressor(loss=get_loss("quantile", quantile=tau), **params).fit(X, y)
        assert single.seed_ == multi.seed_
        np.testing.assert_allclose(multi.coef_[:, c], single.coef_[:, 0], rtol=0, atol=1e-12)
        np.testing.assert_allclose(raw[:, c], single.predict(X), rtol=0, atol=1e-12)


def test_rearrangement_sorts_each_row_in_the_order_of_the_levels():
    # two passes on a tiny sample: the raw curves cross somewhere
    X, y = heteroscedastic(64, seed=3)
    levels = (0.9, 0.1, 0.5, 0.3)
    model = DSGQuantileRegressor(quantiles=levels, solver="sgd", max_iter=2, tol=None, batch_size=8, eta0=8.0,
                                 random_state=0, **SMALL).fit(X, y)
    Xt = np.random.default_rng(4).uniform(-3.0, 3.0, size=(500, 2))
    raw = model.predict(Xt, rearrange=False)
    pred = model.predict(Xt)
    order = np.argsort(levels)
    crossed = np.any(np.diff(raw[:, order], axis=1) < 0, axis=1)
    assert crossed.any(), "the raw outputs should cross on this problem"
    # the rearranged rows are the sorted raw rows, assigned in level order
    np.testing.assert_array_equal(pred[:, order], np.sort(raw, axis=1))
    assert np.all(np.diff(pred[:, order], axis=1) >= 0)
    # where the raw curves do not cross, nothing changes
    np.testing.assert_array_equal(pred[~crossed], raw[~crossed])


def test_partial_fit_in_batches_equals_one_epoch_of_fit():
    X, y = heteroscedastic(200, seed=5)
    # normalize_y=False: fit scales the targets by all rows, partial_fit by the first batch
    params = dict(STEPS, **SMALL, gamma=0.5, batch_size=16, solver="sgd", max_iter=1, tol=None,
                  shuffle=False, random_state=1, normalize_y=False)
    full = DSGQuantileRegressor(**params).fit(X, y)
    online = DSGQuantileRegressor(**params)
    for start in range(0, len(y), 16):
        online.partial_fit(X[start:start + 16], y[start:start + 16])
    assert online.t_ == full.t_ == 13
    np.testing.assert_array_equal(online.coef_, full.coef_)
    np.testing.assert_array_equal(online.predict(X), full.predict(X))


def test_pickle_and_model_file_round_trips(tmp_path):
    X, y = heteroscedastic(200, seed=6)
    model = DSGQuantileRegressor(quantiles=(0.7, 0.2), solver="sgd", max_iter=2, tol=None, random_state=0,
                                 **SMALL).fit(X, y)
    model.save(tmp_path / "quantiles.okm")
    for clone in (pickle.loads(pickle.dumps(model)), load(tmp_path / "quantiles.okm")):
        assert type(clone) is DSGQuantileRegressor
        np.testing.assert_array_equal(clone.predict(X, rearrange=False),
                                      model.predict(X, rearrange=False))
        assert clone.quantiles_ == model.quantiles_ == (0.7, 0.2)


# --------------------------------------------------------------------------- #
# bad input
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("quantiles, match", [
    ((), "at least one level"),
    ((0.1, 1.0), r"levels in \(0, 1\), got 1.0"),
    ((0.0, 0.5), r"levels in \(0, 1\), got 0.0"),
    ((0.5, np.nan), r"levels in \(0, 1\), got nan"),
    ((0.2, 0.2), "distinct"),
    ("0.5", "sequence of levels"),
    (0.5, "sequence of levels"),
    ((0.5, "a"), r"levels in \(0, 1\), got 'a'"),
])
def test_invalid_quantiles_raise_and_leave_the_model_unchanged(quantiles, match):
    X, y = heteroscedastic(64, seed=7)
    with pytest.raises(ValueError, match=match):
        DSGQuantileRegressor(quantiles=quantiles).fit(X, y)
    model = DSGQuantileRegressor(solver="sgd", max_iter=1, tol=None, random_state=0, **SMALL).fit(X, y)
    before = model.predict(X)
    model.set_params(quantiles=quantiles)
    for method in ("fit", "partial_fit"):
        with pytest.raises(ValueError, match=match):
            getattr(model, method)(X, y)
        np.testing.assert_array_equal(model.predict(X), before)


@pytest.mark.parametrize("method", ["fit", "partial_fit"])
@pytest.mark.parametrize("case", ["nan_X", "nan_y", "n_features", "empty", "string_y",
                                  "other_levels"])
def test_bad_input_leaves_the_model_unchanged(method, case):
    X, y = heteroscedastic(64, seed=8)
    model = DSGQuantileRegressor(solver="sgd", max_iter=1, tol=None, random_state=0, **SMALL).fit(X, y)
    before = (model.coef_.copy(), model.intercept_.copy(), model.t_, model.predict(X))
    Xb, yb, match = X.copy(), y.copy(), None
    if case == "nan_X":
        Xb[3, 1], match = np.nan, "Input X contains NaN"
    elif case == "nan_y":
        yb[2], match = np.nan, "Input y contains NaN"
    elif case == "n_features":
        Xb, match = X[:, :1], "X has 1 features, but DSGQuantileRegressor is expecting 2"
        model.set_params(warm_start=True)
    elif case == "empty":
        Xb, yb, match = X[:0], yb[:0], r"Found array with 0 sample\(s\)"
    elif case == "string_y":
        yb = y.astype(object)
        yb[0], match = "big", "could not convert string to float"
    else:
        model.set_params(quantiles=(0.2, 0.8), warm_start=True)
        match = (r"quantiles=\(0.2, 0.8\) differs from the fitted model's "
                 r"quantiles=\(0.1, 0.5, 0.9\)")
    with pytest.raises(ValueError, match=match):
        getattr(model, method)(Xb, yb)
    np.testing.assert_array_equal(model.coef_, before[0])
    np.testing.assert_array_equal(model.intercept_, before[1])
    assert model.t_ == before[2]
    np.testing.assert_array_equal(model.predict(X), before[3])


# --------------------------------------------------------------------------- #
# the multi_quantile loss
# --------------------------------------------------------------------------- #
class NumpyMultiQuantile(Loss):
    """The multi_quantile loss in numpy, from its definition."""
    name = "numpy_multi_quantile"
    target_encoding = "real"

    def __init__(self, quantiles):
        self.quantiles = quantiles

    def loss(self, y, raw):
        tau = np.asarray(self.quantiles)[:raw.shape[1]]
        r = y - raw
        return np.maximum(tau * r, (tau - 1.0) * r).sum(axis=1)

    def gradient(self, y, raw):
        tau = np.asarray(self.quantiles)[:raw.shape[1]]
        return (y < raw).astype(np.float64) - tau


def test_multi_quantile_loss_matches_its_formula():
    rng = np.random.default_rng(9)
    levels = (0.25, 0.9, 0.05)
    loss = get_loss("multi_quantile", quantiles=levels)
    ref = NumpyMultiQuantile(levels)
    y = rng.normal(size=(200, 3))
    raw = y + rng.normal(size=(200, 3))
    raw[:10] = y[:10]  # at the kink the gradient is -tau (y < raw is false)
    np.testing.assert_allclose(loss.loss(y, raw), ref.loss(y, raw), rtol=1e-14, atol=1e-14)
    np.testing.assert_array_equal(loss.gradient(y, raw), ref.gradient(y, raw))
    # fewer outputs than levels: the leading levels
    np.testing.assert_array_equal(loss.gradient(y[:, :2], raw[:, :2]),
                                  ref.gradient(y[:, :2], raw[:, :2]))
    # more outputs than levels: an error naming both
    with pytest.raises(ValueError, match=r"3 levels .* but the model has 4 outputs"):
        loss.gradient(np.zeros((2, 4)), np.zeros((2, 4)))
    assert loss.n_outputs == 3 and loss.get_params() == {"quantiles": levels}
    clone = pickle.loads(pickle.dumps(loss))
    assert clone == loss and clone.quantiles == levels
    assert get_loss("multi_quantile", quantiles=[0.9, 0.1]).quantiles == (0.9, 0.1)


def test_multi_quantile_loss_with_more_outputs_than_levels_fails_in_training():
    # one-vs-rest on three classes gives the model three outputs: the
    # solver's batch_gradient raises, and the model stays unfitted
    X, _ = heteroscedastic(60, seed=10)
    y = np.arange(60) % 3
    model = DSGClassifier(loss=get_loss("multi_quantile", quantiles=(0.3, 0.7)), **SMALL)
    with pytest.raises(ValueError, match=r"2 levels \(0.3, 0.7\) but the model has 3 outputs"):
        model.fit(X, y)
    assert not hasattr(model, "coef_")
