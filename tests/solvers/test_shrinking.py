"""ShrinkingGradientRegressor (Livni, Carmon & Globerson 2017): the estimate
EST_SCALAR_PROD, the shrinking rule, the averaged predictor and its
bookkeeping, learning, reproducibility and model files.
"""
import pickle

import numpy as np
import pytest
from sklearn.preprocessing import scale
from sklearn.utils.estimator_checks import _regression_dataset

import onlinekernel
from onlinekernel import FeatureMap, ShrinkingGradientRegressor, get_feature_map
from onlinekernel.featuremaps.base import as_cy_feature_map
from onlinekernel.solvers.shrinking import est_scalar_prod, sg_rounds
from onlinekernel.estimators._shrinking import estimate_map


def _problem(n=400, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.tanh(X[:, 0]) + 0.5 * np.sin(2.0 * X[:, 1]) + 0.05 * rng.normal(size=n)
    return X, y


def _dual(model, average):
    return model._dual(model.__dict__, average)


# --------------------------------------------------------------------------- #
# EST_SCALAR_PROD
# --------------------------------------------------------------------------- #
def _estimates(fmap, support, beta, x, m, n_draws, seed=11):
    emap = estimate_map(fmap)
    return np.array([est_scalar_prod(emap, seed, t, support, beta, 1.0, x, m)
                     for t in range(n_draws)])


def _reference(name, params, support, beta, x):
    """<f, Phi(x)> exactly (closed-form kernel) or with 2**18 features."""
    fmap = get_feature_map(name, **params)
    if hasattr(fmap, "kernel"):
        return float(beta @ fmap.kernel(support, x[None])[:, 0])
    big = get_feature_map(name, **dict(params, n_components=2 ** 15)).bind(x.shape[0])
    Z = np.vstack([big.transform_block(99, j, np.vstack([support, x])) for j in range(8)])
    Z = Z.reshape(8, support.shape[0] + 1, -1).transpose(1, 0, 2).reshape(support.shape[0] + 1,
                                                                           -1)
    return float(beta @ (Z[:-1] @ Z[-1]) / Z.shape[1])


@pytest.mark.parametrize("name,params", [
    ("iln", {"gamma": 0.5, "bias": 1.0}),               # ReLU units: closed-form kernel
    ("iln", {"activation": "sigmoid", "gamma": 2.0}),   # no closed form: 2**18 features
    ("gaussian", {"gamma": 0.3, "pairs": True}),        # smallest block: 2 features
], ids=["iln-relu", "iln-sigmoid", "gaussian-pairs"])
def test_est_scalar_prod_is_unbiased(name, params):
    rng = np.random.default_rng(5)
    d = 4
    support = rng.normal(size=(12, d))
    beta = rng.normal(size=12) * 0.6          # mixed signs, ||beta||_1 far from 1
    x = rng.normal(size=d)
    l1 = np.abs(beta).sum()
    assert l1 > 3.0
    fmap = as_cy_feature_map(get_feature_map(name, **params)).bind(d)
    exact = _reference(name, params, support, beta, x)
    E = _estimates(fmap, support, beta, x, m=16, n_draws=2500)
    se = E.std() / np.sqrt(E.size)
    assert abs(E.mean() - exact) < 4 * se, (E.mean(), exact, se)
    # the tolerance is tight enough to reject biased estimators: without the
    # ||alpha||_1 factor, or without the signs of the coefficients
    assert abs(E.mean() / l1 - exact) > 4 * se / l1 + 0.05 * abs(exact)
    unsigned = _estimates(fmap, support, np.abs(beta), x, m=16, n_draws=2500)
    assert abs(unsigned.mean() - exact) > 4 * unsigned.std() / np.sqrt(unsigned.size)


def test_est_scalar_prod_variance_falls_as_one_over_m():
    rng = np.random.default_rng(6)
    support, beta, x = rng.normal(size=(8, 3)), rng.normal(size=8), rng.normal(size=3)
    fmap = get_feature_map("iln", activation="sigmoid").bind(3)
    v4 = _estimates(fmap, support, beta, x, m=4, n_draws=1500).var()
    v64 = _estimates(fmap, support, beta, x, m=64, n_draws=1500).var()
    assert 8 < v4 / v64 < 32  # 16 in expectation
    # Hoeffding's range: every estimate is within ||alpha||_1 sup|psi|^2
    assert np.abs(_estimates(fmap, support, beta, x, m=1, n_draws=200)).max() \
        <= np.abs(beta).sum()


def test_est_scalar_prod_of_the_zero_function_is_zero():
    fmap = estimate_map(get_feature_map("iln").bind(2))
    x = np.ones(2)
    assert est_scalar_prod(fmap, 0, 0, np.zeros((0, 2)), np.zeros(0), 1.0, x, 8) == 0.0
    assert est_scalar_prod(fmap, 0, 0, np.ones((3, 2)), np.zeros(3), 1.0, x, 8) == 0.0


# --------------------------------------------------------------------------- #
# the shrinking rule
# --------------------------------------------------------------------------- #
class Ones(FeatureMap):
    """psi = 1 for every unit: the estimate is exactly sum_i alpha_i when all alpha_i > 0."""
    name = "ones"

    def param_size(self):
        return 0

    def generate_params(self, seed, block):
        return np.zeros(0)

    def features(self, params, X):
        return np.ones((X.shape[0], self.n_components))


def _one_round(beta0, B, y=0.25, eta=0.5):
    """One round on a model holding one point with coefficient beta0 (scale 1)."""
    emap = as_cy_feature_map(Ones(n_components=1)).bind(2)
    support = np.zeros((2, 2))
    beta, cum, csum = np.zeros(2), np.zeros(2), np.zeros(2)
    beta[0], cum[0] = beta0, abs(beta0)
    sg = np.array([1.0, 0.0, 0.0, 0.0])
    counters = np.array([1, 0, 1], dtype=np.int64)
    est = np.zeros(1)
    sg_rounds(emap, 3, np.ones((1, 2)), np.array([y]), np.ones(1), np.zeros(1, dtype=np.int64),
              np.array([eta]), 5, 16.0 * B, False, support, beta, cum, csum, sg, counters, est)
    return est[0], sg, counters, beta


def test_shrink_rule_triggers_at_16B():
    # |E| = 16 B exactly: shrink (alpha / 4), no point stored
    E, sg, counters, beta = _one_round(beta0=1.0, B=1.0 / 16.0)
    assert E == 1.0
    assert sg[0] == 0.25 and counters.tolist() == [2, 1, 1]
    # just below: the gradient step stores the point, alpha = -eta (E - y)
    E, sg, counters, beta = _one_round(beta0=1.0 - 2.0 ** -30, B=1.0 / 16.0)
    assert E < 1.0
    assert sg[0] == 1.0 and counters.tolist() == [2, 0, 2]
    assert beta[1] == -0.5 * (E - 0.25)
    # negative estimates shrink on |E|
    E, sg, counters, _ = _one_round(beta0=-1.0, B=1.0 / 16.0)
    assert E == -1.0 and counters[1] == 1


def test_shrinks_happen_exactly_when_the_estimate_is_large():
    X, y = _problem(n=300)
    fmap = get_feature_map("iln", gamma=0.5).bind(3)
    emap = estimate_map(fmap)
    B = 0.02  # small: shrinks are frequent
    n = 300
    support, beta, cum, csum = np.zeros((n, 3)), np.zeros(n), np.zeros(n), np.zeros(n)
    sg = np.array([1.0, 0.0, 0.0, 0.0])
    counters = np.zeros(3, dtype=np.int64)
    shrinks = stored = 0
    for r in range(n):
        est = np.zeros(1)
        before = sg[0], counters[2]
        sg_rounds(emap, 8, X, y, np.ones(n), np.array([r], dtype=np.int64), np.array([0.2]),
                  32, 16.0 * B, True, support, beta, cum, csum, sg, counters, est)
        if abs(est[0]) >= 16.0 * B:
            shrinks += 1
            assert sg[0] == before[0] / 4 and counters[2] == before[1]
        else:
            stored += 1
            assert sg[0] == before[0] and counters[2] == before[1] + 1
    assert shrinks > 20 and stored > 20
    assert counters.tolist() == [n, shrinks, stored]


def test_estimator_counts_its_shrinks():
    X, y = _problem()
    # the step is eta0 B / sqrt(T) and the threshold 16 B: eta0 sets how
    # often the estimate reaches it
    small = ShrinkingGradientRegressor(B=0.05, eta0=40.0, n_estimates=32,
                                       random_state=0).fit(X, y)
    assert small.n_shrinks_ > 10
    assert small.n_shrinks_ + small.n_support_ == small.t_ == len(y)
    large = ShrinkingGradientRegressor(B=0.05, n_estimates=32, random_state=0).fit(X, y)
    assert large.n_shrinks_ < small.n_shrinks_


# --------------------------------------------------------------------------- #
# the averaged predictor: bookkeeping against a brute-force replay
# --------------------------------------------------------------------------- #
def _replay(params, X, y):
    """Row-by-row partial_fit, with alpha and b of every iterate f_t."""
    model = ShrinkingGradientRegressor(**params)
    alphas, intercepts = [], []
    for i in range(len(y)):
        if i:
            alphas.append(_dual(model, average=False))
            intercepts.append(model._sg[2])
        else:
            alphas.append(np.zeros(0))
            intercepts.append(0.0)
        model.partial_fit(X[i:i + 1], y[i:i + 1])
    n = model.n_support_
    total = sum(np.pad(a, (0, n - a.size)) for a in alphas)
    return model, total / len(y), np.mean(intercepts)


@pytest.mark.parametrize("B,eta0,T,n", [
    (0.1, 1.0, 150, 150), (0.1, 30.0, 150, 150),
    # steps of 1 against a threshold of 1.6e-8: ~15 shrinks a stored point, so
    # the scale is folded into the coefficients (below 4**-200) on the way
    (1e-9, 1e9, 1, 260)], ids=["few-shrinks", "many-shrinks", "scale-folded"])
def test_online_rounds_equal_a_fit_and_the_average_is_exact(B, eta0, T, n):
    X, y = _problem(n=n)
    # gamma fixed: "scale" would read the first partial_fit's single row
    params = dict(B=B, eta0=eta0, T=T, gamma=1.0, n_estimates=16, block_size=32,
                  predict_blocks=2, random_state=3)
    online, mean_alpha, mean_b = _replay(params, X, y)
    batch = ShrinkingGradientRegressor(shuffle=False, **params).fit(X, y)
    if eta0 > 1:
        assert batch.n_shrinks_ > 15
    if B < 1e-3:
        assert batch.n_shrinks_ > 200 and batch._sg[0] > 4.0 ** -batch.n_shrinks_
    # the same rounds, bit for bit
    for key in ("_support", "_beta", "_cum", "_frozen"):
        assert np.array_equal(getattr(online, key), getattr(batch, key)), key
    assert online.n_shrinks_ == batch.n_shrinks_ and online.t_ == batch.t_ == n
    # the average of the iterates, kept by sums of scales, is the mean of the
    # replayed alphas
    scale_ = np.abs(mean_alpha).max()
    np.testing.assert_allclose(batch.dual_coef_, mean_alpha, rtol=0, atol=1e-12 * scale_)
    np.testing.assert_allclose(batch.intercept_, [mean_b], rtol=1e-12)
    # predictions: the features' readout and the exact kernel of that average
    Xt = np.random.default_rng(9).normal(size=(20, 3))
    fmap = batch.feature_map_
    Z = np.hstack([fmap.transform_block(batch.seed_, j, np.vstack([batch.support_vectors_, Xt]))
                   for j in range(2)])
    n = batch.n_support_
    readout = mean_alpha @ Z[:n] @ Z[n:].T / Z.shape[1] + mean_b
    np.testing.assert_allclose(batch.predict(Xt), readout, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(online.predict(Xt), readout, rtol=1e-10, atol=1e-12)
    exact = mean_alpha @ fmap.kernel(batch.support_vectors_, Xt) + mean_b
    batch.set_params(prediction="kernel")
    np.testing.assert_allclose(batch.predict(Xt), exact, rtol=1e-10, atol=1e-12)
    # the last iterate
    batch.set_params(average=False, prediction="features").partial_fit(X[:1], y[:1])
    last = _dual(batch, average=False)
    np.testing.assert_allclose(batch.dual_coef_, last)
    Z = np.hstack([fmap.transform_block(batch.seed_, j, np.vstack([batch.support_vectors_, Xt]))
                   for j in range(2)])
    n = batch.n_support_
    np.testing.assert_allclose(batch.predict(Xt), last @ Z[:n] @ Z[n:].T / Z.shape[1]
                               + batch._sg[2], rtol=1e-10, atol=1e-12)


def test_scale_is_folded_into_the_coefficients_before_it_underflows():
    # B tiny, steps of 1: about 15 shrinks per stored point, far beyond 4**-200
    X, y = _problem(n=400)
    model = ShrinkingGradientRegressor(B=1e-9, T=1, eta0=1e9, n_estimates=4, block_size=16,
                                       predict_blocks=1, random_state=0).fit(X, y)
    assert model.n_shrinks_ > 200
    assert 2.0 ** -400 <= model._sg[0] <= 1.0
    for value in (model.dual_coef_, model.coef_, model.predict(X), model._beta):
        assert np.isfinite(value).all()
    # the latest point carries the largest coefficient, |alpha| <= eta |E - y|
    alpha = _dual(model, average=False)
    assert np.argmax(np.abs(alpha)) == alpha.size - 1 and abs(alpha[-1]) < 10.0


# --------------------------------------------------------------------------- #
# learning
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("kernel_params,prediction", [
    ({}, "features"), ({}, "kernel"), ({"activation": "sigmoid", "bias": 1.0}, "features")],
    ids=["relu-features", "relu-kernel", "sigmoid-features"])
def test_learning_beats_the_mean_predictor(kernel_params, prediction):
    X, y = _problem(n=1200)
    Xt, yt = _problem(n=400, seed=1)
    reg = ShrinkingGradientRegressor(kernel_params=kernel_params, prediction=prediction,
                                     gamma=1.0, B=2.0, n_estimates=128,
                                     random_state=0).fit(X, y)
    mse = np.mean((reg.predict(Xt) - yt) ** 2)
    baseline = np.mean((y.mean() - yt) ** 2)
    assert mse < 0.6 * baseline, (mse, baseline)


def test_more_pairs_per_round_learn_better():
    X, y = _problem(n=1000)
    Xt, yt = _problem(n=400, seed=1)
    scores = [np.mean([ShrinkingGradientRegressor(n_estimates=m, B=2.0, random_state=s)
                       .fit(X, y).score(Xt, yt) for s in range(2)]) for m in (2, 256)]
    assert scores[1] > scores[0] + 0.1, scores


def test_poor_score_tag_is_about_the_norm_bound():
    """The default B = 1 assumes targets in [-1, 1]; scikit-learn's check
    problem has standardised targets up to 3.4, and B = 2 clears its bar."""
    X, y = _regression_dataset()
    y = scale(y)
    assert ShrinkingGradientRegressor(B=2.0, random_state=0).fit(X, y).score(X, y) > 0.5


def test_partial_fit_without_horizon_uses_the_anytime_step():
    X, y = _problem(n=50)
    reg = ShrinkingGradientRegressor(B=2.0, eta0=0.5, random_state=0)
    reg.partial_fit(X[:10], y[:10])
    assert reg.eta_ == 0.5 * 2.0 / np.sqrt(10)
    reg.partial_fit(X[10:], y[10:])
    assert reg.eta_ == 0.5 * 2.0 / np.sqrt(50)
    fitted = ShrinkingGradientRegressor(B=2.0, eta0=0.5, random_state=0).fit(X, y)
    assert fitted.eta_ == 0.5 * 2.0 / np.sqrt(50)
    fixed = ShrinkingGradientRegressor(B=2.0, T=400, random_state=0).partial_fit(X, y)
    assert fixed.eta_ == 2.0 / 20.0


# --------------------------------------------------------------------------- #
# reproducibility, persistence, validation
# --------------------------------------------------------------------------- #
def test_same_seed_same_model_other_seed_other_model():
    X, y = _problem(n=200)
    params = dict(n_estimates=16, block_size=32, predict_blocks=2)
    a = ShrinkingGradientRegressor(random_state=4, **params).fit(X, y)
    b = ShrinkingGradientRegressor(random_state=4, **params).fit(X, y)
    assert a.seed_ == b.seed_ and np.array_equal(a.dual_coef_, b.dual_coef_)
    assert np.array_equal(a.predict(X), b.predict(X))
    c = ShrinkingGradientRegressor(random_state=5, **params).fit(X, y)
    assert not np.array_equal(a.predict(X), c.predict(X))


def test_model_file_and_pickle_round_trips_then_resume(tmp_path):
    X, y = _problem(n=240)
    params = dict(B=0.1, eta0=30.0, n_estimates=16, block_size=32, predict_blocks=2,
                  random_state=2)
    never = ShrinkingGradientRegressor(**params).fit(X[:160], y[:160])
    assert never.n_shrinks_ > 0
    never.save(tmp_path / "sg.okm")
    loaded = onlinekernel.load(tmp_path / "sg.okm")
    pickled = pickle.loads(pickle.dumps(never))
    for model in (loaded, pickled):
        assert type(model) is ShrinkingGradientRegressor
        assert np.array_equal(model.predict(X), never.predict(X))
        assert model.get_params() == never.get_params()
    never.partial_fit(X[160:], y[160:])
    for model in (loaded, pickled):
        model.partial_fit(X[160:], y[160:])
        assert np.array_equal(model.dual_coef_, never.dual_coef_)
        assert np.array_equal(model.predict(X), never.predict(X))


@pytest.mark.parametrize("params,word", [
    ({"n_estimates": 0}, "n_estimates"), ({"n_estimates": 2 ** 24 + 1}, "n_estimates"),
    ({"B": 0.0}, "B"), ({"B": np.inf}, "B"), ({"T": 0}, "T"), ({"T": 2.5}, "T"),
    ({"eta0": -1.0}, "eta0"), ({"n_epochs": 0}, "n_epochs"),
    ({"prediction": "exact"}, "prediction"), ({"predict_blocks": 0}, "predict_blocks"),
    ({"average": 1}, "average"), ({"gamma": "auto"}, "gamma"), ({"kernel": "nope"}, "nope"),
], ids=lambda v: v if isinstance(v, str) else "-".join(map(str, v)))
def test_bad_parameters_raise_and_leave_the_model_unchanged(params, word):
    X, y = _problem(n=40)
    with pytest.raises(ValueError, match=word):
        ShrinkingGradientRegressor(**params).fit(X, y)
    model = ShrinkingGradientRegressor(n_estimates=8, random_state=0).fit(X, y)
    fitted = {k: v for k, v in model.__dict__.items() if k not in model.get_params()}
    prediction = model.predict(X)
    with pytest.raises(ValueError, match=word):
        model.set_params(**params).partial_fit(X, y)
    after = {k: v for k, v in model.__dict__.items() if k not in model.get_params()}
    assert after.keys() == fitted.keys()
    assert all(after[k] is fitted[k] for k in fitted)
    model.set_params(**ShrinkingGradientRegressor(n_estimates=8, random_state=0).get_params())
    assert np.array_equal(model.predict(X), prediction)


def test_kernel_prediction_needs_a_closed_form_kernel():
    X, y = _problem(n=40)
    # the feature map is built by fit (partial_fit continues with the fitted one)
    with pytest.raises(ValueError, match="activation"):
        ShrinkingGradientRegressor(kernel_params={"activation": "tanh"}).fit(X, y)
    with pytest.raises(ValueError, match="closed-form kernel"):
        ShrinkingGradientRegressor(prediction="kernel",
                                   kernel_params={"activation": "sigmoid"}).fit(X, y)
    model = ShrinkingGradientRegressor(kernel_params={"activation": "sigmoid"}, n_estimates=8,
                                       random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="closed-form kernel"):
        model.set_params(prediction="kernel").predict(X)
    kernel_only = ShrinkingGradientRegressor(prediction="kernel", predict_blocks=0,
                                             n_estimates=8, random_state=0).fit(X, y)
    assert kernel_only.n_random_features_ == 0 and np.isfinite(kernel_only.predict(X)).all()
    with pytest.raises(ValueError, match="predict_blocks=0"):
        kernel_only.set_params(prediction="features").predict(X)


def test_python_feature_maps_run_through_the_rounds():
    class Coordinates(FeatureMap):
        """psi(x; w) = sqrt(d) x_w, w uniform over the coordinates: the linear kernel."""

        def param_size(self):
            return self.n_components

        def generate_params(self, seed, block):
            u = self.uniform(seed, block, 0, self.n_components)
            return np.floor(u * self.n_features_in)

        def features(self, params, X):
            return np.sqrt(X.shape[1]) * X[:, params.astype(int)]

        def kernel(self, X, Y):
            return X @ Y.T

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4)) / 2.0  # k(x, x) = |x|^2 of order 1, as B assumes
    y = X @ np.array([1.0, -0.6, 0.4, 0.0])
    reg = ShrinkingGradientRegressor(kernel=Coordinates(n_components=8), prediction="kernel",
                                     n_estimates=64, B=2.0, random_state=0).fit(X, y)
    assert reg.score(X, y) > 0.8
