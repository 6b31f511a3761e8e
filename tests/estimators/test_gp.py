"""DSGGaussianProcessRegressor and the ``gp_variance`` operator objective.

* Acceptance: against scikit-learn's exact ``GaussianProcessRegressor`` with
  the same fixed RBF kernel and noise level, on a 1-D and a 5-D problem of
  2000 training rows: mean RMSE against the exact mean <= 5 % of std(y);
  median relative error of the posterior std <= 10 % and its correlation
  with the exact std >= 0.9; 95 % predictive intervals cover 90-99 % of
  held-out targets.
* The exact solver computes the exact posterior of the GP with the random
  features' kernel: checked against the closed form on the features, for
  any batching and order of the rows, with weights equal to repeated rows.
* The operator objective: registered as a loss plugin, its exact update is
  the closed-form minimiser, its stochastic steps descend the objective and
  approach that minimiser; per-sample estimators refuse it.
* The stochastic solver, bad input, persistence.
"""
import pickle

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF

import onlinekernel
from onlinekernel import DSGClassifier, DSGGaussianProcessRegressor, DSGRegressor, get_loss
from onlinekernel.losses.operator import CyOperatorObjective
from onlinekernel.solvers.operator import operator_features, operator_pass


# --------------------------------------------------------------------------- #
# acceptance against the exact GP
# --------------------------------------------------------------------------- #
# The length scales are the ones scikit-learn's marginal-likelihood optimiser
# picks on these data (RBF + WhiteKernel on 1000 rows: 0.48 and 2.16), rounded.
PROBLEMS = {
    "1d": dict(d=1, length_scale=0.5, noise_variance=0.1),
    "5d": dict(d=5, length_scale=2.0, noise_variance=0.1),
}


def _problem(d, noise_variance, n=2000, n_test=1000, seed=0):
    rng = np.random.default_rng(seed)
    if d == 1:
        X = rng.uniform(-3, 3, size=(n + n_test, 1))
        f = np.sin(2 * X[:, 0]) + 0.5 * np.cos(5 * X[:, 0])
    else:
        X = rng.normal(size=(n + n_test, d))
        f = np.sin(X[:, 0]) + np.cos(X[:, 1]) * X[:, 2] + 0.5 * X[:, 3] * X[:, 4]
    y = f + np.sqrt(noise_variance) * rng.normal(size=n + n_test)
    return X[:n], y[:n], X[n:], y[n:]


@pytest.fixture(scope="module", params=sorted(PROBLEMS))
def figures(request):
    p = PROBLEMS[request.param]
    ls, nv = p["length_scale"], p["noise_variance"]
    X, y, Xt, yt = _problem(p["d"], nv)
    # the exact GP with the same constant prior mean (the training mean)
    exact = GaussianProcessRegressor(RBF(ls), alpha=nv, optimizer=None).fit(X, y - y.mean())
    mu, sd = exact.predict(Xt, return_std=True)
    mu += y.mean()
    # normalize_y=False: the noise variance and the prior in the target's units, as here
    gp = DSGGaussianProcessRegressor(gamma=1.0 / (2 * ls ** 2), noise_variance=nv,
                                     normalize_y=False, random_state=0).fit(X, y)
    mean, std = gp.predict(Xt, return_std=True)
    half = 1.96 * np.sqrt(std ** 2 + nv)
    out = {
        "problem": request.param,
        "mean_rmse_over_std_y": float(np.sqrt(np.mean((mean - mu) ** 2)) / y.std()),
        "std_median_rel_error": float(np.median(np.abs(std - sd) / sd)),
        "std_correlation": float(np.corrcoef(std, sd)[0, 1]),
        "coverage_95": float(np.mean(np.abs(yt - mean) <= half)),
        "exact_coverage_95": float(np.mean(np.abs(yt - mu) <= 1.96 * np.sqrt(sd ** 2 + nv))),
    }
    print("\n", out)
    return out


def test_mean_matches_the_exact_gp(figures):
    assert figures["mean_rmse_over_std_y"] <= 0.05


def test_std_matches_the_exact_gp(figures):
    assert figures["std_median_rel_error"] <= 0.10
    assert figures["std_correlation"] >= 0.9


def test_95_percent_intervals_cover_held_out_targets(figures):
    assert 0.90 <= figures["coverage_95"] <= 0.99


# --------------------------------------------------------------------------- #
# the exact solver is the exact posterior of the random-feature GP
# --------------------------------------------------------------------------- #
SMALL = dict(gamma=0.5, noise_variance=0.05, block_size=32, variance_blocks=2, max_blocks=4,
             normalize_y=False)


def _small(n=240, d=3, seed=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.sin(2 * X[:, 0]) + X[:, 1] ** 2 + 0.2 * rng.normal(size=n)
    return X, y


def _closed_form(gp, X, y, Xt, sample_weight=None, center=True):
    """Bayesian linear regression on the model's scaled variance features."""
    Z = operator_features(gp.feature_map_, gp.seed_, gp.variance_blocks_, X)
    Zt = operator_features(gp.feature_map_, gp.seed_, gp.variance_blocks_, Xt)
    w = np.ones(len(y)) if sample_weight is None else sample_weight
    m = np.average(y, weights=w) if center else 0.0
    P = np.linalg.inv((Z * w[:, None]).T @ Z + gp.noise_variance * np.eye(Z.shape[1]))
    mean = m + Zt @ (P @ (Z.T @ (w * (y - m))))
    var = gp.noise_variance * np.einsum("ij,jk,ik->i", Zt, P, Zt)
    return mean, np.sqrt(var)


@pytest.mark.parametrize("center", [True, False])
def test_exact_solver_is_the_posterior_on_the_features(center):
    X, y = _small()
    gp = DSGGaussianProcessRegressor(**SMALL, center_y=center, random_state=0).fit(X, y + 3.0)
    Xt = np.vstack([X[:20], X[:20] + 5.0])
    mean, std = gp.predict(Xt, return_std=True)
    ref_mean, ref_std = _closed_form(gp, X, y + 3.0, Xt, center=center)
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(std, ref_std, rtol=1e-9, atol=1e-12)
    assert gp.intercept_[0] == pytest.approx(np.mean(y + 3.0) if center else 0.0)
    assert gp.n_random_features_ == 64 and gp.coef_.shape == (64, 1)


def test_partial_fit_in_any_chunks_and_order_is_fit():
    X, y = _small()
    Xt = X[:30] + 0.1
    ref = DSGGaussianProcessRegressor(**SMALL, random_state=0).fit(X, y)
    ref_mean, ref_std = ref.predict(Xt, return_std=True)
    online = DSGGaussianProcessRegressor(**SMALL, random_state=0)
    for lo, hi in ((0, 1), (1, 2), (2, 75), (75, 76), (76, 240)):
        online.partial_fit(X[lo:hi], y[lo:hi])
    perm = np.random.default_rng(0).permutation(len(y))
    shuffled = DSGGaussianProcessRegressor(**SMALL, random_state=0).fit(X[perm], y[perm])
    for model in (online, shuffled):
        mean, std = model.predict(Xt, return_std=True)
        np.testing.assert_allclose(mean, ref_mean, rtol=1e-8, atol=1e-8)
        np.testing.assert_allclose(std, ref_std, rtol=1e-8, atol=1e-10)
    assert online.samples_seen_ == len(y)


def test_sample_weight_is_repeated_rows_and_a_noise_level():
    X, y = _small(n=120)
    w = np.random.default_rng(1).integers(0, 4, size=len(y)).astype(float)
    weighted = DSGGaussianProcessRegressor(**SMALL, random_state=0).fit(X, y, sample_weight=w)
    rep = np.repeat(np.arange(len(y)), w.astype(int))
    repeated = DSGGaussianProcessRegressor(**SMALL, random_state=0).fit(X[rep], y[rep])
    Xt = X[:25] - 0.2
    for a, b in zip(weighted.predict(Xt, return_std=True), repeated.predict(Xt, return_std=True)):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-10)
    # non-integer weights: row i observed with noise variance sigma^2 / w_i
    w = np.random.default_rng(2).uniform(0.2, 3.0, size=len(y))
    gp = DSGGaussianProcessRegressor(**SMALL, random_state=0).fit(X, y, sample_weight=w)
    mean, std = gp.predict(Xt, return_std=True)
    ref_mean, ref_std = _closed_form(gp, X, y, Xt, sample_weight=w)
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(std, ref_std, rtol=1e-9, atol=1e-12)


def test_prior_far_from_the_data_and_shrinking_std_with_data():
    rng = np.random.default_rng(4)
    X = rng.uniform(-3, 3, size=(300, 1))
    y = 3.0 + np.sin(2 * X[:, 0]) + 0.3 * rng.normal(size=300)
    far = np.array([[6.0], [10.0], [-20.0], [50.0]])
    for normalize_y in (True, False):
        gp = DSGGaussianProcessRegressor(gamma=2.0, noise_variance=0.1, normalize_y=normalize_y,
                                         random_state=0).fit(X[:150], y[:150])
        mean, std = gp.predict(far, return_std=True)
        # far away the posterior is the prior (mean m, std sqrt(k(x,x)) = 1 in the
        # model's units), up to the random-feature kernel's own values there, of
        # order M^-1/2 (M = 2048)
        np.testing.assert_allclose(mean, np.mean(y[:150]), atol=0.15)
        np.testing.assert_allclose(std, np.std(y[:150]) if normalize_y else 1.0, rtol=0.1)
    _, before = gp.predict(X[:150], return_std=True)
    assert np.all(before < 0.4)
    gp.partial_fit(X[150:], y[150:])
    _, after = gp.predict(X[:150], return_std=True)
    # more data never raise the exact posterior variance
    assert np.all(after <= before + 1e-12) and np.mean(after) < 0.9 * np.mean(before)


def test_variance_memory_is_the_feature_budget():
    X, y = _small()
    gp = DSGGaussianProcessRegressor(**SMALL, random_state=0)
    for lo in range(0, 240, 60):
        gp.partial_fit(X[lo:lo + 60], y[lo:lo + 60])
        A = gp.variance_coef_
        assert A.shape == (64, 64) and A.nbytes == 8 * 64 ** 2
        np.testing.assert_array_equal(A, A.T)
    assert gp.n_random_features_ == 64


# --------------------------------------------------------------------------- #
# the operator objective
# --------------------------------------------------------------------------- #
def _features(n, M, seed=0):
    return np.random.default_rng(seed).normal(size=(n, M)) / np.sqrt(M)


def test_gp_variance_is_a_registered_loss_plugin():
    info = onlinekernel.available_losses()["gp_variance"]
    assert info["distribution"] == "onlinekernel" and info["plugin"] == "builtin_losses"
    assert info["factory"] == "onlinekernel.losses.gp_variance.GPVariance"
    obj = get_loss("gp_variance")
    assert isinstance(obj, CyOperatorObjective) and obj.name == "gp_variance"
    assert obj.has_exact_update
    assert pickle.loads(pickle.dumps(obj)) == obj
    with pytest.raises(ValueError, match="invalid parameters"):
        get_loss("gp_variance", nu=1.0)


def test_exact_update_is_the_closed_form_minimiser_in_any_batching():
    obj = get_loss("gp_variance")
    Z = _features(90, 12)
    w = np.random.default_rng(1).uniform(0, 2, size=90)
    w[::7] = 0.0
    lam = 0.3
    S = (Z * w[:, None]).T @ Z
    A_star = S @ np.linalg.inv(S + lam * np.eye(12))
    A = obj.initial(12)
    for lo, hi in ((0, 1), (1, 40), (40, 41), (41, 90)):
        A = obj.update(Z[lo:hi], A, lam, sample_weight=w[lo:hi])
    np.testing.assert_allclose(A, A_star, atol=1e-12)
    # it minimises the sum-form objective: the gradient vanishes there
    grad = (A - np.eye(12)) @ S + lam * A
    np.testing.assert_allclose(grad, 0.0, atol=1e-12)
    # the readout is the posterior variance on the features
    zt = _features(6, 12, seed=2)
    ref = lam * np.einsum("ij,jk,ik->i", zt, np.linalg.inv(S + lam * np.eye(12)), zt)
    np.testing.assert_allclose(obj.predict(zt, A), ref, rtol=1e-10)
    with pytest.raises(ValueError, match="lam > 0"):
        obj.update(Z, A, 0.0)


def test_stochastic_steps_descend_to_the_minimiser():
    obj = get_loss("gp_variance")
    n, M, nu = 200, 10, 0.05
    Z = _features(n, M)
    w = np.random.default_rng(3).uniform(0.5, 1.5, size=n)
    C = Z.T @ Z / n
    A_star = C @ np.linalg.inv(C + nu * np.eye(M))
    # one step is A - step * sym((A - I) C_w + nu A), C_w the weighted batch moment
    A0 = _features(M, M, seed=4)
    A0 = A0 + A0.T
    Cw = (Z[:20] * w[:20, None]).T @ Z[:20] / 20
    G = (A0 - np.eye(M)) @ Cw
    expected = A0 - 0.7 * (0.5 * (G + G.T) + nu * A0)
    np.testing.assert_allclose(obj.step(Z[:20], A0, 0.7, nu, sample_weight=w[:20]), expected,
                               atol=1e-13)
    # full-batch steps descend monotonically to the minimiser
    A = obj.initial(M)
    values = [obj.value(Z, A, nu)]
    for _ in range(200):
        A = obj.step(Z, A, 1.0, nu)
        values.append(obj.value(Z, A, nu))
    assert all(b <= a + 1e-14 for a, b in zip(values, values[1:]))  # (rounding at the end)
    assert np.abs(A - A_star).max() < 1e-6
    # mini-batch steps reach the neighbourhood their step size allows
    A = obj.initial(M)
    for _ in range(60):
        for lo in range(0, n, 20):
            A = obj.step(Z[lo:lo + 20], A, 0.5, nu)
    assert np.abs(A - A_star).max() < 0.05 * np.abs(A_star).max()
    np.testing.assert_array_equal(A, A.T)


def test_operator_pass_takes_every_row_whatever_the_batch():
    fmap = onlinekernel.get_feature_map("gaussian", n_components=16, gamma=0.3).bind(2)
    X = np.random.default_rng(0).normal(size=(37, 2))
    Z = operator_features(fmap, 5, 2, X)
    S = Z.T @ Z
    A_star = S @ np.linalg.inv(S + 0.2 * np.eye(32))
    obj = get_loss("gp_variance")
    for batch in (1, 5, 36, 37, 100):  # 37 rows: a short last batch, or one short batch
        A = np.zeros((32, 32))
        ZtY, Zsum = np.zeros((32, 1)), np.zeros(32)
        steps = operator_pass(fmap, 5, 2, obj, X, np.ones(37), np.arange(37, dtype=np.int64),
                              batch, A, 0.2, None, X[:, :1].copy(), ZtY, Zsum)
        assert steps == -(-37 // batch)
        np.testing.assert_allclose(A, A_star, atol=1e-12)
        np.testing.assert_allclose(ZtY[:, 0], Z.T @ X[:, 0], atol=1e-12)
        np.testing.assert_allclose(Zsum, Z.sum(axis=0), atol=1e-12)


@pytest.mark.parametrize("Est", [DSGRegressor, DSGClassifier])
def test_per_sample_estimators_refuse_the_operator_objective(Est):
    X, y = _small(n=60)
    y = (y > np.median(y)).astype(int) if Est is DSGClassifier else y
    model = Est(block_size=16, max_blocks=2, random_state=0).fit(X, y)
    before = model.predict(X)
    model.set_params(loss="gp_variance")
    with pytest.raises(ValueError, match="not a per-sample loss"):
        model.fit(X, y)
    np.testing.assert_array_equal(model.predict(X), before)


# --------------------------------------------------------------------------- #
# the stochastic solver
# --------------------------------------------------------------------------- #
def test_sgd_solver_approaches_the_exact_posterior_with_more_epochs():
    rng = np.random.default_rng(5)
    X = rng.uniform(-2, 2, size=(400, 1))
    y = np.sin(2 * X[:, 0]) + 0.3 * rng.normal(size=400)
    params = dict(SMALL, gamma=2.0, noise_variance=0.1, solver="sgd", random_state=0)
    exact = DSGGaussianProcessRegressor(**dict(params, solver="exact")).fit(X, y)
    Xt = np.linspace(-2, 2, 50)[:, None]
    mean_x, std_x = exact.predict(Xt, return_std=True)
    errors = []
    for n_epochs in (2, 30):
        gp = DSGGaussianProcessRegressor(**dict(params, max_iter=n_epochs, tol=None)).fit(X, y)
        mean, std = gp.predict(Xt, return_std=True)
        assert np.all(np.isfinite(mean)) and np.all(std >= 0)
        errors.append((np.sqrt(np.mean((mean - mean_x) ** 2)),
                       np.abs(gp.variance_coef_ - exact.variance_coef_).max()))
    assert errors[1][0] < 0.5 * errors[0][0]
    assert errors[1][1] < 0.7 * errors[0][1]
    assert errors[1][0] < 0.1 * np.std(y)


def test_sgd_partial_fit_runs_one_pass_and_follows_the_data_mean():
    X, y = _small(n=200)
    gp = DSGGaussianProcessRegressor(**dict(SMALL, solver="sgd"), random_state=0)
    gp.partial_fit(X[:100], y[:100])
    assert gp.t_ == -(-100 // 64) and gp.n_epochs_seen_ == 0
    gp.partial_fit(X[100:], y[100:] + 1.0)
    assert gp.intercept_[0] == pytest.approx(np.mean(np.r_[y[:100], y[100:] + 1.0]))
    assert gp.n_blocks_ == 4  # the mean's budget; the variance keeps its 2 blocks
    assert gp.variance_coef_.shape == (64, 64)


# --------------------------------------------------------------------------- #
# bad input and persistence
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("params, match", [
    (dict(noise_variance=0.0), "noise_variance"),
    (dict(noise_variance=-1.0), "noise_variance"),
    (dict(noise_variance=float("nan")), "noise_variance"),
    (dict(noise_variance="big"), "noise_variance"),
    (dict(solver="lbfgs"), "solver"),
    (dict(variance_blocks=0), "variance_blocks"),
    (dict(variance_blocks=5), "exceeds max_blocks"),
    (dict(center_y="yes"), "center_y"),
    (dict(learning_rate="pegasos"), "pegasos"),
])
def test_bad_parameters_raise_and_leave_the_model_unchanged(params, match):
    X, y = _small(n=60)
    gp = DSGGaussianProcessRegressor(**SMALL, random_state=0).fit(X, y)
    before = gp.predict(X, return_std=True)
    gp.set_params(**params)
    for call in (gp.fit, gp.partial_fit):
        with pytest.raises(ValueError, match=match):
            call(X, y)
    gp.set_params(**{k: SMALL.get(k, DSGGaussianProcessRegressor().get_params()[k])
                     for k in params})
    for a, b in zip(gp.predict(X, return_std=True), before):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("change, match", [
    (dict(solver="sgd"), "fitted with solver='exact'"),
    (dict(variance_blocks=1), "variance operator has 2 blocks"),
    (dict(noise_variance=0.2), "noise_variance=0.05"),
])
def test_continuing_with_other_settings_is_refused(change, match):
    X, y = _small(n=60)
    gp = DSGGaussianProcessRegressor(**SMALL, random_state=0).fit(X, y)
    before = gp.predict(X, return_std=True)
    gp.set_params(**change)
    with pytest.raises(ValueError, match=match):
        gp.partial_fit(X, y)
    gp.set_params(warm_start=True)
    with pytest.raises(ValueError, match=match):
        gp.fit(X, y)
    for a, b in zip(gp.predict(X, return_std=True), before):
        np.testing.assert_array_equal(a, b)
    gp.set_params(warm_start=False).fit(X, y)  # a fresh fit takes the new settings
    assert gp.solver_ == gp.solver and gp.variance_blocks_ == gp.variance_blocks


def test_bad_data_raise_and_leave_the_model_unchanged():
    X, y = _small(n=60)
    gp = DSGGaussianProcessRegressor(**SMALL, random_state=0)
    with pytest.raises(NotFittedError):
        gp.predict(X, return_std=True)
    gp.fit(X, y)
    before = gp.predict(X, return_std=True)
    state = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in vars(gp).items()}
    bad_X = X.copy()
    bad_X[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        gp.partial_fit(bad_X, y)
    with pytest.raises(ValueError, match="features"):
        gp.partial_fit(X[:, :2], y)
    with pytest.raises(ValueError, match="sample_weight"):
        gp.partial_fit(X, y, sample_weight=-np.ones(len(y)))
    with pytest.raises(ValueError):
        gp.partial_fit(X, y[:-1])
    with pytest.raises(ValueError, match="features"):
        gp.predict(X[:, :2], return_std=True)
    for key, value in state.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(getattr(gp, key), value)
    for a, b in zip(gp.predict(X, return_std=True), before):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("solver", ["exact", "sgd"])
def test_pickle_and_model_file_round_trips(solver, tmp_path):
    X, y = _small(n=80)
    gp = DSGGaussianProcessRegressor(**dict(SMALL, solver=solver, max_iter=2, tol=None),
                                     random_state=0).fit(X, y)
    before = gp.predict(X, return_std=True)
    path = tmp_path / "gp.okm"
    gp.save(path)
    for copy in (pickle.loads(pickle.dumps(gp)), onlinekernel.load(path)):
        for a, b in zip(copy.predict(X, return_std=True), before):
            np.testing.assert_array_equal(a, b)
        copy.partial_fit(X[:10], y[:10])  # and they continue like the original
    gp.partial_fit(X[:10], y[:10])
    np.testing.assert_array_equal(copy.predict(X, return_std=True)[1],
                                  gp.predict(X, return_std=True)[1])


@pytest.mark.parametrize("solver", ["exact", "sgd"])
def test_raw_targets_give_the_posterior_of_standardised_ones(solver):
    # normalize_y: the prior and the noise are relative to the targets' variance,
    # so a target in other units (times 1e4, shifted by 1e5) is the same model
    X, y = _small(n=200)
    params = dict(SMALL, normalize_y=True, solver=solver, max_iter=5, tol=None, random_state=0)
    unit = DSGGaussianProcessRegressor(**params).fit(X, y)
    raw = DSGGaussianProcessRegressor(**params).fit(X, 1e4 * y + 1e5)
    mean, std = unit.predict(X, return_std=True)
    mean_raw, std_raw = raw.predict(X, return_std=True)
    np.testing.assert_allclose(mean_raw, 1e4 * mean + 1e5, rtol=1e-9)
    np.testing.assert_allclose(std_raw, 1e4 * std, rtol=1e-7)
    assert raw._y_scale == pytest.approx(1e4 * np.std(y))


def test_normalize_y_is_scikit_learns():
    # the same model as GaussianProcessRegressor(normalize_y=True), up to the features
    p = PROBLEMS["1d"]
    X, y, Xt, _ = _problem(p["d"], p["noise_variance"], n=1000, n_test=300)
    y = 50.0 * y + 200.0
    exact = GaussianProcessRegressor(RBF(p["length_scale"]), alpha=p["noise_variance"],
                                     optimizer=None, normalize_y=True).fit(X, y)
    mu, sd = exact.predict(Xt, return_std=True)
    gp = DSGGaussianProcessRegressor(gamma=1.0 / (2 * p["length_scale"] ** 2),
                                     noise_variance=p["noise_variance"],
                                     random_state=0).fit(X, y)
    mean, std = gp.predict(Xt, return_std=True)
    assert np.sqrt(np.mean((mean - mu) ** 2)) <= 0.05 * y.std()
    assert np.median(np.abs(std - sd) / sd) <= 0.10
