"""The exact kernel machines fitted by EigenPro (EigenProClassifier, EigenProRegressor)."""
import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV
from sklearn.svm import SVC
from sklearn.utils.estimator_checks import parametrize_with_checks

from onlinekernel import EigenProClassifier, EigenProRegressor, get_feature_map
from onlinekernel.datasets import load_letter
from onlinekernel.featuremaps.gaussian import gaussian_kernel
from onlinekernel.solvers.kernel_eigenpro import (
    TILE, centre_order, eigenpro_epoch, kernel_products, preconditioner)


def _ring(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    return X, (np.hypot(X[:, 0], X[:, 1]) < 1.2).astype(int)


@parametrize_with_checks([EigenProClassifier(), EigenProRegressor(),
                          EigenProClassifier(dtype="float32", kernel="laplacian"),
                          EigenProRegressor(kernel=get_feature_map("matern", gamma=0.5))])
def test_sklearn_estimator_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        check(estimator)


# --------------------------------------------------------------------------- #
# the solver
# --------------------------------------------------------------------------- #
def test_kernel_products_are_the_dense_product_whatever_the_threads():
    rng = np.random.default_rng(0)
    X, C = rng.normal(size=(7, 3)), rng.normal(size=(2 * TILE + 5, 3))
    A = rng.normal(size=(2 * TILE + 5, 2))
    k = lambda P, Q: gaussian_kernel(P, Q, 0.3)  # noqa: E731
    out1, kept1 = kernel_products(k, X, C, A, n_jobs=1, keep=TILE + 3)
    out2, kept2 = kernel_products(k, X, C, A, n_jobs=2, keep=TILE + 3)
    assert np.array_equal(out1, out2) and np.array_equal(kept1, kept2)
    np.testing.assert_allclose(out1, k(X, C) @ A, rtol=1e-12)
    np.testing.assert_array_equal(kept1, k(X, C)[:, :TILE + 3])


def test_preconditioner_uses_the_top_eigenpairs_of_the_subsample():
    C = np.random.default_rng(1).normal(size=(300, 4))
    k = lambda P, Q: gaussian_kernel(P, Q, 0.2)  # noqa: E731
    P = preconditioner(k, C, 20, max_batch=300)
    sigma = np.linalg.eigvalsh(k(C, C))[::-1]
    q = P.V.shape[1]
    assert 1 <= q <= 20
    np.testing.assert_allclose(P.tail, sigma[q] / 300, rtol=1e-8)
    np.testing.assert_allclose(P.D, (1 - sigma[q] / sigma[:q]) / sigma[:q], rtol=1e-6)
    # the critical batch of q flattened directions fits the largest batch
    assert P.beta / P.tail <= 300 and P.batch_size <= 300
    # a smaller batch flattens fewer directions
    assert preconditioner(k, C, 20, max_batch=10).V.shape[1] < q


def test_epochs_converge_to_the_exact_interpolant():
    """The reference optimum: ``a = K^{-1} Y`` (no penalty), on a well-conditioned kernel."""
    rng = np.random.default_rng(2)
    C, T = rng.normal(size=(200, 2)), rng.normal(size=(100, 2))
    Y = np.sin(C[:, :1] * 2) + C[:, 1:] ** 2
    k = get_feature_map("matern", gamma=1.0, nu=0.5).kernel
    exact = np.linalg.solve(k(C, C), Y)
    P = preconditioner(k, C[:100], 30, max_batch=20)
    A = np.zeros_like(Y)
    errors = []
    for epoch in range(300):
        eigenpro_epoch(k, C, Y, A, P, seed=0, epoch=epoch)
        errors.append(np.abs(k(C, C) @ A - Y).max())
    assert errors[-1] < 2e-5 * np.abs(Y).max()
    assert errors[100] < errors[10] < errors[0]
    # on new rows the model is the interpolant's, and so are its coefficients
    np.testing.assert_allclose(k(T, C) @ A, k(T, C) @ exact, atol=1e-4)
    np.testing.assert_allclose(A, exact, atol=2e-3 * np.abs(exact).max())


def test_centre_order_is_a_seeded_permutation():
    a, b = centre_order(7, 1000), centre_order(7, 1000)
    assert np.array_equal(a, b) and np.array_equal(np.sort(a), np.arange(1000))
    assert not np.array_equal(a, centre_order(8, 1000))
    # golden: the order depends on the package's Philox stream only
    assert centre_order(12345, 8).tolist() == GOLDEN_ORDER


GOLDEN_ORDER = [4, 5, 1, 7, 0, 2, 3, 6]


# --------------------------------------------------------------------------- #
# the estimators
# --------------------------------------------------------------------------- #
def test_learns_a_ring_and_seeds_reproduce_the_model():
    X, y = _ring(1000)
    a = EigenProClassifier(max_iter=10, random_state=0).fit(X[:800], y[:800])
    b = EigenProClassifier(max_iter=10, random_state=0).fit(X[:800], y[:800])
    c = EigenProClassifier(max_iter=10, random_state=1).fit(X[:800], y[:800])
    assert a.score(X[800:], y[800:]) > 0.95
    assert np.array_equal(a.coef_, b.coef_) and np.array_equal(a.centers_, b.centers_)
    assert not np.array_equal(a.coef_, c.coef_)


def test_auto_subsample_is_an_eighth_of_the_rows_within_bounds():
    for n, s in ((300, 300), (2000, 500), (8000, 1000)):
        X, y = _ring(n)
        clf = EigenProClassifier(max_iter=1, tol=None, random_state=0).fit(X, y)
        assert clf.subsample_size_ == s and 0 <= clf.n_eigenpairs_ <= 160
    assert EigenProClassifier(subsample_size=50, max_iter=1, tol=None).fit(X, y).subsample_size_ == 50


def test_threads_give_the_same_model():
    X, y = _ring(3000)
    one = EigenProClassifier(max_iter=2, tol=None, random_state=0, n_jobs=1).fit(X, y)
    two = EigenProClassifier(max_iter=2, tol=None, random_state=0, n_jobs=2).fit(X, y)
    assert np.array_equal(one.coef_, two.coef_)
    assert np.array_equal(one.decision_function(X), two.decision_function(X))


def test_letter_matches_the_exact_svc():
    """Learning on real data: the bundled letter set (16 features, 26 classes), each
    model at its best bandwidth of one grid (factors of 'scale'), as issue 12 compares
    them.  Measured: the SVC 7.5 / 6.15 / 5.55 % at 1x / 2x / 4x; ours (30 epochs,
    the default 500-row subsample) 6.85 % at 2x, 5.55 % at 4x."""
    X, y, Xt, yt = load_letter()
    X, y, Xt, yt = X[:4000], y[:4000], Xt[:2000], yt[:2000]
    scale = 1.0 / (X.shape[1] * X.var())
    svc, ours = [], []
    for factor in (1.0, 2.0, 4.0):
        svc.append(1 - SVC(C=10.0, gamma=factor * scale).fit(X, y).score(Xt, yt))
        ours.append(1 - EigenProClassifier(gamma=factor * scale, max_iter=30, tol=None,
                                           random_state=0).fit(X, y).score(Xt, yt))
    assert min(ours) <= min(svc) + 0.005, (ours, svc)


def test_raw_targets_give_the_model_of_standardised_ones():
    rng = np.random.default_rng(3)
    X = rng.uniform(-3, 3, size=(400, 2))
    y = np.sin(X[:, 0]) * X[:, 1]
    raw = EigenProRegressor(max_iter=5, tol=None, random_state=0).fit(X, 1e6 * y + 3e7)
    std = EigenProRegressor(max_iter=5, tol=None, random_state=0).fit(X, y)
    np.testing.assert_allclose((raw.predict(X) - 3e7) / 1e6, std.predict(X), atol=1e-9)
    multi = EigenProRegressor(max_iter=5, tol=None, random_state=0).fit(X, np.c_[y, 2 * y])
    assert multi.predict(X).shape == (400, 2)


def test_stopping_rules_and_convergence_warning():
    X, y = _ring(500)
    with pytest.warns(ConvergenceWarning, match="max_iter=1"):
        one = EigenProClassifier(max_iter=1, random_state=0).fit(X, y)
    assert one.n_iter_ == 1 and len(one.loss_curve_) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        loose = EigenProClassifier(max_iter=100, tol=0.5, random_state=0).fit(X, y)
        EigenProClassifier(max_iter=2, tol=None, random_state=0).fit(X, y)  # no rule: no warning
    assert 2 <= loose.n_iter_ < 100
    assert loose.loss_curve_[-2] - loose.loss_curve_[-1] < 0.5 * loose.loss_curve_[-2]


def test_pipeline_grid_search_clone_and_pickle():
    X, y = _ring(400)
    grid = GridSearchCV(EigenProClassifier(max_iter=3, tol=None, random_state=0),
                        {"gamma": [0.25, 1.0]}, cv=2).fit(X, y)
    best = grid.best_estimator_
    assert clone(best).get_params() == best.get_params()
    again = pickle.loads(pickle.dumps(best))
    assert np.array_equal(again.predict(X), best.predict(X))


@pytest.mark.parametrize("make, error, match", [
    (lambda: EigenProClassifier(kernel="no_such_map"), ValueError, "no_such_map"),
    (lambda: EigenProClassifier(gamma="auto"), ValueError, "gamma must be 'scale'"),
    (lambda: EigenProClassifier(batch_size=0), ValueError, "batch_size must be an integer"),
    (lambda: EigenProClassifier(kernel=object()), ValueError, "no exact kernel function"),
])
def test_bad_parameters_are_named(make, error, match):
    X, y = _ring(100)
    with pytest.raises(error, match=match):
        make().fit(X, y)


def test_bad_input_leaves_the_fitted_model_unchanged():
    X, y = _ring(300)
    clf = EigenProClassifier(max_iter=2, tol=None, random_state=0).fit(X, y)
    before = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in vars(clf).items()}
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        clf.fit(bad, y)
    with pytest.raises(ValueError, match="Unknown label type|continuous"):
        clf.fit(X, X[:, 0])
    with pytest.raises(ValueError, match="3 features"):
        clf.predict(np.c_[X, X[:, :1]])
    after = vars(clf)
    assert before.keys() == after.keys()
    for k, v in before.items():
        if isinstance(v, np.ndarray):
            assert np.array_equal(v, after[k]), k
        else:
            assert v is after[k] or v == after[k], k


def test_model_files_refuse_it_by_name(tmp_path):
    from onlinekernel.io import modelfile
    X, y = _ring(100)
    clf = EigenProClassifier(max_iter=1, tol=None, random_state=0).fit(X, y)
    with pytest.raises(TypeError, match="EigenProClassifier cannot be saved in one \\(pickle"):
        modelfile.save(clf, tmp_path / "m.okm")
    assert not (tmp_path / "m.okm").exists()
