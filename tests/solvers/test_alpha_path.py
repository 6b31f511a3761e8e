"""alpha="auto": the regularisation path of the batch solvers, and its content split."""
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from onlinekernel import DSGClassifier, DSGDensityRatio, DSGRegressor
from onlinekernel.core.splits import content_split, row_hashes
from onlinekernel.estimators._base import _ALPHA_PATH, _AUTO_ALPHA


def _sine(n, noise, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, size=(n, 2))
    y = np.sin(X[:, 0]) * np.cos(X[:, 1]) + noise * rng.normal(size=n)
    return X, y


def test_content_split_puts_copies_on_one_side_and_ignores_the_storage():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(500, 6)) * (rng.random((500, 6)) < 0.4)
    X2 = np.vstack([X, X[:100]])  # 100 rows twice
    train, val = content_split(X2, seed=5, fraction=0.2)
    side = np.zeros(600, bool)
    side[val] = True
    assert np.array_equal(side[:100], side[500:])
    assert 60 < val.size < 180
    dense = content_split(X, seed=5, fraction=0.2)
    sparse = content_split(sp.csr_matrix(X), seed=5, fraction=0.2)
    assert all(np.array_equal(a, b) for a, b in zip(dense, sparse))
    # the seed changes the split; -0.0 and 0.0 are the same entry
    assert not np.array_equal(content_split(X, seed=6, fraction=0.2)[1], dense[1])
    Z = X.copy()
    Z[Z == 0] = -0.0
    assert np.array_equal(row_hashes(Z, 5), row_hashes(X, 5))


def test_path_picks_a_weak_penalty_for_clean_data_and_a_strong_one_for_noise():
    X, y_clean = _sine(1500, 0.0)
    _, y_noisy = _sine(1500, 2.0)
    # one bandwidth for both: gamma="auto" would answer the noise with a
    # smoother kernel, and the penalty is what this test watches
    kw = dict(n_components=512, gamma="scale", random_state=0)
    clean = DSGRegressor(**kw).fit(X, y_clean)
    noisy = DSGRegressor(**kw).fit(X, y_noisy)
    assert clean.solver_ == noisy.solver_ == "cholesky"
    assert _ALPHA_PATH.min() / 10 < clean.alpha_ < noisy.alpha_ <= _ALPHA_PATH.max()
    assert noisy.alpha_ / clean.alpha_ > 100


@pytest.mark.parametrize("make", [
    lambda: DSGRegressor(n_components=256, random_state=3),
    lambda: DSGClassifier(alpha="auto", n_components=256, random_state=3),
    lambda: DSGClassifier(loss="hinge", alpha="auto", n_components=256, random_state=3),
])
def test_auto_gives_the_model_of_its_chosen_alpha(make):
    X, y = _sine(800, 0.3)
    est = make()
    if isinstance(est, DSGClassifier):
        y = (y > 0).astype(int)
    auto = est.fit(X, y)
    assert auto.alpha_ in set(_ALPHA_PATH) or _ALPHA_PATH.min() < auto.alpha_ < _ALPHA_PATH.max()
    fixed = make().set_params(alpha=auto.alpha_)
    fixed.fit(X, y)
    assert np.array_equal(auto.coef_, fixed.coef_)
    assert np.array_equal(auto.intercept_, fixed.intercept_)


def test_auto_beats_the_old_fixed_default_where_it_overfits():
    X, y = _sine(600, 1.0, seed=2)  # few noisy rows, a narrow kernel
    Xt, yt = _sine(2000, 0.0, seed=3)  # the noise-free function
    kw = dict(n_components=1024, gamma=2.0, random_state=0)
    auto = DSGRegressor(**kw).fit(X, y)
    fixed = DSGRegressor(alpha=1e-6, **kw).fit(X, y)
    rmse = lambda m: float(np.sqrt(np.mean((m.predict(Xt) - yt) ** 2)))  # noqa: E731
    assert rmse(auto) < 0.7 * rmse(fixed)


def test_no_path_where_no_batch_solver_runs():
    X, y = _sine(300, 0.1)
    with pytest.warns(ConvergenceWarning):
        sgd = DSGRegressor(solver="sgd", max_iter=2, n_components=128, random_state=0).fit(X, y)
    assert sgd.alpha_ == _AUTO_ALPHA
    online = DSGRegressor(n_components=128, random_state=0).partial_fit(X, y)
    assert online.alpha_ == _AUTO_ALPHA
    explicit = DSGRegressor(alpha=3e-4, n_components=128, random_state=0).fit(X, y)
    assert explicit.alpha_ == 3e-4


def test_auto_is_refused_by_an_estimator_without_the_path():
    X, _ = _sine(100, 0.1)
    est = DSGDensityRatio(alpha="auto")
    with pytest.raises(ValueError, match="alpha='auto'.*DSGDensityRatio does not run"):
        est.fit(X, X + 0.5)
    assert not hasattr(est, "n_blocks_")


def test_cholesky_survives_features_beyond_the_kernels_numerical_rank():
    # Nystrom features of 2-d inputs: far more landmarks than the kernel's
    # numerical rank, and a penalty below the Gram matrix's rounding
    X, y = _sine(3000, 0.05)
    for alpha in (1e-12, "auto"):
        reg = DSGRegressor(kernel="nystrom", n_components=1024, alpha=alpha, solver="cholesky",
                           random_state=0).fit(X, y)
        assert np.all(np.isfinite(reg.predict(X)))
        assert reg.score(X, y) > 0.95


def test_the_chosen_alpha_is_stored_in_the_model_file():
    from onlinekernel.io.modelfile import dumps, loads
    X, y = _sine(400, 0.5)
    reg = DSGRegressor(n_components=128, random_state=0).fit(X, y)
    loaded = loads(dumps(reg))
    assert loaded.alpha == "auto" and loaded.alpha_ == reg.alpha_
    # partial_fit goes on with the chosen penalty, as the original does
    assert np.array_equal(loaded.partial_fit(X[:64], y[:64]).coef_,
                          reg.partial_fit(X[:64], y[:64]).coef_)
