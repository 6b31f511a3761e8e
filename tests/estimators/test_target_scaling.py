"""Raw (unscaled) targets: every regressor standardises them internally."""
import numpy as np
import pytest
from sklearn.metrics import r2_score
from sklearn.preprocessing import StandardScaler

from conftest import load_dataset, needs_data
from onlinekernel import DSGQuantileRegressor, DSGRegressor, get_loss


def _heteroscedastic(n, seed, offset=3e8, size=1e7):
    """y = offset + size * (sin(x0) + noise growing with |x1|): targets around 1e8."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = np.sin(X[:, 0]) + (0.2 + 0.5 * np.abs(X[:, 1])) * rng.normal(size=n)
    return X, offset + size * y


@pytest.mark.parametrize("loss", ["squared", "huber", "quantile"])
def test_raw_and_standardised_targets_give_the_same_model(loss):
    X, y = _heteroscedastic(600, seed=0)
    mu, sd = y.mean(), y.std()
    # loss parameters are in the target's units: the same loss on both scales
    params = {"huber": {"delta": 1.0}, "quantile": {"quantile": 0.7}}.get(loss, {})
    raw_params = {k: v * sd if k == "delta" else v for k, v in params.items()}
    # solved to 1e-6 (the default 1e-4 lets the two runs stop at different points)
    common = dict(block_size=32, max_blocks=4, alpha=1e-4, random_state=0, tol=1e-6)
    raw = DSGRegressor(loss=get_loss(loss, **raw_params), **common).fit(X, y)
    std = DSGRegressor(loss=get_loss(loss, **params), **common).fit(X, (y - mu) / sd)
    np.testing.assert_allclose((raw.predict(X) - mu) / sd, std.predict(X), atol=1e-3)
    assert raw._y_scale == pytest.approx(sd)


def test_partial_fit_on_raw_targets_learns():
    # targets around 3e8: without the scaling the steps are nonsense; delta is
    # in the target's units (here one noise standard deviation)
    X, y = _heteroscedastic(3000, seed=1)
    reg = DSGRegressor(loss=get_loss("huber", delta=1e7), random_state=0)
    for start in range(0, 3000, 100):
        reg.partial_fit(X[start:start + 100], y[start:start + 100])
    Xt, yt = _heteroscedastic(2000, seed=2)
    assert r2_score(yt, reg.predict(Xt)) > 0.3  # the noise caps R^2 near 0.6


@pytest.mark.parametrize("tau", [0.1, 0.5, 0.9])
def test_quantile_coverage_on_raw_heteroscedastic_targets(tau):
    X, y = _heteroscedastic(2000, seed=3)
    Xt, yt = _heteroscedastic(4000, seed=4)
    reg = DSGRegressor(loss=get_loss("quantile", quantile=tau), block_size=64, max_blocks=4,
                       alpha=1e-3, random_state=0).fit(X, y)
    assert abs(np.mean(yt <= reg.predict(Xt)) - tau) <= 0.03
    multi = DSGQuantileRegressor(quantiles=(0.1, 0.5, 0.9), block_size=64, max_blocks=4,
                                 random_state=0).fit(X, y)
    cover = np.mean(yt[:, None] <= multi.predict(Xt), axis=0)
    np.testing.assert_allclose(cover, (0.1, 0.5, 0.9), atol=0.03)


@needs_data("cadata")
def test_cadata_raw_targets_match_standardised_ones():
    X, y, Xt, yt = load_dataset("cadata")
    X, y = X[:5000], y[:5000]
    scaler = StandardScaler().fit(X)
    X, Xt = scaler.transform(X), scaler.transform(Xt)
    mu, sd = y.mean(), y.std()
    for loss, params in [("squared", {}), ("huber", {"delta": 1.0}),
                         ("quantile", {"quantile": 0.5})]:
        raw_params = {k: v * sd if k == "delta" else v for k, v in params.items()}
        common = dict(gamma=0.25, alpha=1e-3 if loss == "quantile" else 1e-5, random_state=0)
        raw = DSGRegressor(loss=get_loss(loss, **raw_params), **common)
        std = DSGRegressor(loss=get_loss(loss, **params), **common)
        r2_raw = r2_score(yt, raw.fit(X, y).predict(Xt))
        r2_std = r2_score(yt, std.fit(X, (y - mu) / sd).predict(Xt) * sd + mu)
        assert r2_raw > 0.6 and abs(r2_raw - r2_std) <= 0.01, (loss, r2_raw, r2_std)


@needs_data("cadata")
@pytest.mark.parametrize("tau", [0.1, 0.5, 0.9])
def test_cadata_quantile_coverage_with_raw_targets(tau):
    X, y, Xt, yt = load_dataset("cadata")
    X, y = X[:5000], y[:5000]
    scaler = StandardScaler().fit(X)
    reg = DSGRegressor(loss=get_loss("quantile", quantile=tau), gamma=0.25, alpha=1e-3,
                       random_state=0)
    reg.fit(scaler.transform(X), y)
    assert abs(np.mean(yt <= reg.predict(scaler.transform(Xt))) - tau) <= 0.03


@pytest.mark.parametrize("loss", ["huber", "epsilon_insensitive"])
def test_default_widths_are_relative_to_the_targets_spread(loss):
    # delta / epsilon left at None: one (a tenth of a) standard deviation, so
    # streaming on targets around 1e8 learns as on standardised ones (with a
    # width of 1.0 in raw units the Huber model stayed at R^2 0.0)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40000, 3))
    f = 1 + 0.3 * np.sin(X[:, 0]) + 0.1 * X[:, 1]
    y = 1e8 * f + 1e6 * rng.normal(size=X.shape[0])
    raw = DSGRegressor(loss=loss, random_state=0)
    unit = DSGRegressor(loss=loss, random_state=0)
    for s in range(0, X.shape[0], 5000):
        raw.partial_fit(X[s:s + 5000], y[s:s + 5000])
        unit.partial_fit(X[s:s + 5000], (y[s:s + 5000] - 1e8) / 1e7)
    assert raw.loss_.get_params() == {("delta" if loss == "huber" else "epsilon"): None}
    Xt = rng.normal(size=(2000, 3))
    yt = 1e8 * (1 + 0.3 * np.sin(Xt[:, 0]) + 0.1 * Xt[:, 1])
    assert raw.score(Xt, yt) > 0.7
    assert abs(raw.score(Xt, yt) - unit.score(Xt, (yt - 1e8) / 1e7)) < 0.02
