"""gamma="auto": the bandwidth chosen on held-out rows by small models of the batch solvers."""
import numpy as np
import pytest

import onlinekernel
from onlinekernel import (DSGClassifier, DSGRegressor, FixedFeatureRegressor, get_feature_map)
from onlinekernel.estimators._base import _GAMMA_PATH


def _data(n, frequency, noise=0.1, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, size=(n, 2))
    y = np.sin(frequency * X[:, 0]) * np.cos(frequency * X[:, 1]) + noise * rng.normal(size=n)
    return X, y


def _scale(X):
    return 1.0 / (X.shape[1] * X.var())


def test_a_wiggly_target_gets_a_wider_bandwidth_than_a_smooth_one():
    X, wiggly = _data(1500, 3.0)
    _, smooth = _data(1500, 0.3)
    kw = dict(gamma="auto", n_components=512, random_state=0)
    a = DSGRegressor(**kw).fit(X, wiggly)
    b = DSGRegressor(**kw).fit(X, smooth)
    mults = {round(m.gamma_ / _scale(X), 9) for m in (a, b)}
    assert mults <= {round(float(m), 9) for m in _GAMMA_PATH}
    assert a.gamma_ / b.gamma_ >= 8
    # and it pays: on fresh rows of the wiggly target, better than "scale"
    Xt, yt = _data(2000, 3.0, noise=0.0, seed=1)
    fixed = DSGRegressor(n_components=512, gamma="scale", random_state=0).fit(X, wiggly)
    rmse = [np.sqrt(np.mean((m.predict(Xt) - yt) ** 2)) for m in (a, fixed)]
    assert rmse[0] < 0.5 * rmse[1]


@pytest.mark.parametrize("make, classify", [
    (lambda: DSGRegressor(gamma="auto", n_components=256, random_state=3), False),
    (lambda: DSGRegressor(gamma="auto", alpha=1e-4, n_components=256, random_state=3), False),
    (lambda: DSGClassifier(gamma="auto", alpha="auto", n_components=256, random_state=3), True),
])
def test_auto_gives_the_model_of_its_chosen_gamma(make, classify):
    X, y = _data(900, 1.5)
    if classify:
        y = (y > 0).astype(int)
    auto = make().fit(X, y)
    params = dict(gamma=auto.gamma_)
    if auto.alpha == "auto":
        params["alpha"] = auto.alpha_
    same = make().set_params(**params).fit(X, y)
    assert same.gamma_ == auto.gamma_ and same.alpha_ == auto.alpha_
    method = "decision_function" if classify else "predict"
    assert np.array_equal(getattr(auto, method)(X), getattr(same, method)(X))


def test_no_path_where_no_batch_solver_runs_or_the_map_has_no_bandwidth_to_choose():
    X, y = _data(600, 1.5)
    scale = _scale(X)
    sgd = DSGRegressor(gamma="auto", solver="sgd", max_iter=2, tol=None, n_components=256,
                       random_state=0).fit(X, y)
    assert sgd.gamma_ == pytest.approx(scale, rel=1e-12)
    streamed = DSGRegressor(gamma="auto", n_components=256, random_state=0)
    streamed.partial_fit(X, y)
    assert streamed.gamma_ == pytest.approx(scale, rel=1e-12)
    own = get_feature_map("gaussian", n_components=256, gamma=0.7)
    given = DSGRegressor(kernel=own, gamma="auto", n_components=256, random_state=0).fit(X, y)
    assert given.gamma_ == 0.7
    # a warm start continues the fitted model and its bandwidth
    fitted = DSGRegressor(gamma="auto", n_components=256, warm_start=True,
                          random_state=0).fit(X, y)
    before = fitted.gamma_
    assert fitted.fit(X[::-1], y[::-1] + 1.0).gamma_ == before


def test_estimators_without_the_path_refuse_auto_and_say_why():
    X, y = _data(200, 1.0)
    with pytest.raises(ValueError, match="gamma='auto'.*FixedFeatureRegressor does not run"):
        FixedFeatureRegressor(gamma="auto").fit(X, y)
    with pytest.raises(ValueError, match="gamma"):
        DSGRegressor(gamma="wide").fit(X, y)


def test_the_chosen_gamma_survives_the_model_file(tmp_path):
    X, y = _data(700, 2.0)
    model = DSGRegressor(gamma="auto", n_components=256, random_state=0).fit(X, y)
    model.save(tmp_path / "m.okm")
    back = onlinekernel.load(tmp_path / "m.okm")
    assert back.gamma == "auto" and back.gamma_ == model.gamma_
    assert np.array_equal(back.predict(X), model.predict(X))
