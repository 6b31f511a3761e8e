"""EigenPro steps (``precondition="eigenpro"``): the preconditioner, the estimator, learning.

* The correction against its definition (eigenpairs of the features'
  covariance from numpy), the step rule, the curvature of the losses.
* The compiled helpers it runs on: ``block_features`` is the features every
  step and prediction uses, ``gemm`` is numpy's product.
* The estimator: the budget grows by DSG steps, then EigenPro's; seeded and
  thread-count invariant; a model file resumes exactly; bad settings refused.
* Learning on real data: one pass beats one pass of the default steps.
"""
import numpy as np
import pytest

from conftest import load_dataset, needs_data, polynomial_mean
from onlinekernel import DSGClassifier, DSGRegressor, get_feature_map, get_loss, load
from onlinekernel.solvers.dsg import BlockSource, block_features, gemm, predict_raw
from onlinekernel.solvers.eigenpro import EigenPro, Iterate, max_curvature


def _spectrum_data(n=600, M=40, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, M)) * np.geomspace(3.0, 0.05, M)


def test_estimate_matches_numpys_eigendecomposition():
    Phi = _spectrum_data()
    pre = EigenPro.estimate(Phi, k=6)
    lam, V = np.linalg.eigh(Phi.T @ Phi / Phi.shape[0])
    lam, V = lam[::-1], V[:, ::-1]
    np.testing.assert_allclose(pre.values, lam[:7], rtol=1e-10)
    # the same directions, up to sign
    np.testing.assert_allclose(np.abs(np.sum(pre.vectors * V[:, :6], axis=0)), 1.0, rtol=1e-8)


def test_correction_flattens_the_top_of_the_spectrum():
    Phi = _spectrum_data()
    pre = EigenPro.estimate(Phi, k=6)
    C = Phi.T @ Phi / Phi.shape[0]
    # P C has the top 6 eigenvalues brought down to lambda_7, the rest unchanged
    PC = np.column_stack([pre.correct(C[:, [i]])[:, 0] for i in range(C.shape[0])])
    top = np.sort(np.linalg.eigvals(PC).real)[::-1]
    np.testing.assert_allclose(top[:7], pre.values[6], rtol=1e-8)
    np.testing.assert_allclose(top[7:], np.linalg.eigvalsh(C)[::-1][7:], rtol=1e-8)


def test_step_rule():
    Phi = _spectrum_data()
    beta = np.max(np.sum(Phi ** 2, axis=1))
    lam7 = EigenPro.estimate(Phi, k=6).values[6]
    # without a batch size: the corrected quadratic's 1 / lambda_{k+1}
    pre = EigenPro.estimate(Phi, k=6)
    assert pre.step == pytest.approx(1.0 / lam7) and pre.level == lam7
    # batches above the critical size beta / lambda_{k+1}: level lambda_{k+1}
    m = int(np.ceil(2 * beta / lam7))
    big = EigenPro.estimate(Phi, k=6, batch_size=m)
    assert big.level == lam7 and big.step == pytest.approx(m / (beta + (m - 1) * lam7))
    # below it: flattened to beta / m only
    small = EigenPro.estimate(Phi, k=6, batch_size=2)
    assert small.level == pytest.approx(beta / 2)
    assert small.step == pytest.approx(2 / (beta + beta / 2))
    # flatter losses: at most twice the squared loss's step
    assert EigenPro.estimate(Phi, k=6, curvature=0.25).step == pytest.approx(2.0 / lam7)
    assert EigenPro.estimate(Phi, k=6, curvature=4.0).step == pytest.approx(0.25 / lam7)


@pytest.mark.parametrize("name, expected", [("squared", 1.0), ("logistic", 0.25),
                                            ("squared_hinge", 1.0), ("hinge", 0.0)])
def test_max_curvature_of_the_losses(name, expected):
    Y = np.array([[1.0], [-1.0], [1.0]])
    U = np.zeros((3, 1))
    assert max_curvature(get_loss(name), Y, U) == pytest.approx(expected, abs=1e-6)


def test_max_curvature_of_the_multinomial_loss():
    # at equal scores over K classes the Hessian diag(p) - p p^T has top eigenvalue 1/K
    loss = get_loss("multinomial")
    Y = np.array([[0.0], [1.0], [2.0]])
    assert max_curvature(loss, Y, np.zeros((3, 4))) == pytest.approx(0.25, rel=1e-6)


def test_bad_preconditioners_are_refused():
    Phi = _spectrum_data(n=20, M=10)
    with pytest.raises(ValueError, match="more rows"):
        EigenPro.estimate(Phi, k=20)
    with pytest.raises(ValueError, match="M x k vectors"):
        EigenPro(np.zeros((10, 3)), np.ones(3), 1.0, 1.0)  # k + 1 values needed
    with pytest.raises(ValueError, match="M x k vectors"):
        EigenPro(np.zeros((10, 3)), np.array([1.0, 1.0, 1.0, np.nan]), 1.0, 1.0)
    with pytest.raises(ValueError, match="level"):
        EigenPro(np.zeros((10, 3)), np.array([4.0, 3.0, 2.0, 1.0]), 1.0, 0.5)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_block_features_are_the_models_features(dtype):
    fmap = get_feature_map("gaussian", n_components=16, gamma=0.5).bind(3)
    src = BlockSource(fmap, 11, 1 << 20, dtype=dtype)
    X = np.random.default_rng(0).normal(size=(300, 3)).astype(dtype)
    Phi = block_features(src, X, 4)
    assert Phi.shape == (300, 64) and Phi.dtype == dtype
    coef = np.random.default_rng(1).normal(size=(64, 2)).astype(dtype)
    # a prediction sums the same features
    np.testing.assert_allclose(Phi.astype(np.float64) @ coef,
                               predict_raw(src, X, coef, 4, 1.0, np.zeros(2)),
                               rtol=1e-4 if dtype == np.float32 else 1e-12, atol=1e-5)
    np.testing.assert_array_equal(block_features(src, X, 4, n_jobs=2), Phi)
    ref = np.hstack([fmap.transform_block(11, j, X.astype(np.float64)) for j in range(4)])
    np.testing.assert_allclose(Phi, ref, rtol=1e-4 if dtype == np.float32 else 1e-12,
                               atol=1e-5 if dtype == np.float32 else 1e-12)


def test_gemm_is_the_matrix_product():
    rng = np.random.default_rng(0)
    A, B = rng.normal(size=(37, 19)), rng.normal(size=(19, 5))
    np.testing.assert_allclose(gemm(A, B), A @ B, rtol=1e-12)
    C = rng.normal(size=(37, 3))
    np.testing.assert_allclose(gemm(A, C, transpose_a=True), A.T @ C, rtol=1e-12)
    with pytest.raises(ValueError, match="do not multiply"):
        gemm(A, A)


# --------------------------------------------------------------------------- #
# the estimator
# --------------------------------------------------------------------------- #
EP = dict(precondition="eigenpro", batch_size=64, block_size=64, max_blocks=8,
          random_state=0)


def _rings(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    return X, (np.linalg.norm(X, axis=1) > 2.0).astype(int)


def test_budget_grows_then_eigenpro_steps():
    X, y = _rings()
    clf = DSGClassifier(**EP).partial_fit(X[:300], y[:300], classes=[0, 1])
    # 300 rows: 5 growth steps, the budget not yet full
    assert clf.n_blocks_ == 5 and "_eig_vectors" not in vars(clf)
    clf.partial_fit(X[300:], y[300:])
    assert clf.n_blocks_ == 8 and clf._eig_vectors.shape == (512, 160)
    assert clf._eig_values.shape == (161,) and clf._eig_step > 0
    assert clf._eig_level >= clf._eig_values[-1]
    assert clf.t_ == 5 + 3 + -(-(2700 - 3 * 64) // 64)
    assert clf.score(X, y) > 0.9


def test_a_small_call_on_a_full_budget_defers_the_estimate():
    X, y = _rings()
    clf = DSGClassifier(**EP).partial_fit(X[:512], y[:512], classes=[0, 1])
    assert clf.n_blocks_ == 8 and "_eig_vectors" not in vars(clf)  # 0 rows left over
    clf.partial_fit(X[512:700], y[512:700])  # 188 rows, fewer than 2 k: DSG steps
    assert "_eig_vectors" not in vars(clf)
    clf.partial_fit(X[700:], y[700:])
    assert "_eig_vectors" in vars(clf)


def test_seeded_and_thread_count_invariant():
    X, y = _rings()
    a = DSGClassifier(**EP, n_jobs=1).fit(X, y)
    b = DSGClassifier(**EP, n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.intercept_, b.intercept_)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_model_file_resumes_exactly(dtype, tmp_path):
    X, y = _rings()
    clf = DSGClassifier(**EP, dtype=dtype).partial_fit(X[:2000], y[:2000], classes=[0, 1])
    clf.save(tmp_path / "ep.okm")
    loaded = load(tmp_path / "ep.okm")
    np.testing.assert_array_equal(loaded._eig_vectors, clf._eig_vectors)
    for model in (clf, loaded):
        model.partial_fit(X[2000:], y[2000:])
    np.testing.assert_array_equal(loaded.coef_, clf.coef_)
    np.testing.assert_array_equal(loaded.decision_function(X), clf.decision_function(X))


def test_regressor_with_averaging():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(3000, 3))
    y = 1e3 * np.sin(2 * X[:, 0]) + 5e3  # raw targets: the regressor scales them
    reg = DSGRegressor(**dict(EP, average=True)).partial_fit(X, y)
    assert reg.n_averaged_ == reg.t_
    assert reg.score(X, y) > 0.8


def test_eigenpro_steps_average_with_the_polynomial_decay():
    """Iterate.average_decay: the n-th iterate weighs (1 + eta) / (n + eta) in the mean."""
    fmap = get_feature_map("gaussian", n_components=16, gamma=0.5).bind(4)
    src = BlockSource(fmap, 3, 1 << 20)
    X, y = _rings(n=400)
    Y = np.where(y == 1, 1.0, -1.0)[:, None]
    sw, loss, M = np.ones(400), get_loss("logistic"), 64
    pre = EigenPro.estimate(block_features(src, X, 4), 10, 0.25, 16)
    order = np.arange(160, dtype=np.int64)

    def fresh(start, decay):
        return Iterate(coef=np.zeros((M, 1)), intercept=np.zeros(1),
                       coef_avg=np.zeros((M, 1)), intercept_avg=np.zeros(1), t=0,
                       n_averaged=0, average_start=start, average_decay=decay)

    plain, iterates = fresh(-1, 0.0), []
    for s in range(0, 160, 16):  # one step a call: the iterates, one by one
        pre.steps(src, loss, X, Y, sw, order[s:s + 16], 16, 1e-4, True, plain)
        iterates.append(plain.coef.copy())
    avg = fresh(0, 3.0)
    pre.steps(src, loss, X, Y, sw, order, 16, 1e-4, True, avg)
    np.testing.assert_allclose(avg.coef_avg, polynomial_mean(iterates, 3.0),
                               rtol=1e-10, atol=1e-14)
    np.testing.assert_array_equal(avg.coef, plain.coef)  # the iterates themselves are the same
    assert avg.n_averaged == 10


@pytest.mark.parametrize("params, match", [
    (dict(max_blocks=None), "finite max_blocks"),
    (dict(reuse="uniform"), "reuse='all'"),
    (dict(reuse_schedule=(2, 1)), "reuse_schedule"),
    (dict(precondition="eigen"), "precondition must be"),
])
def test_settings_it_cannot_run_are_refused(params, match):
    X, y = _rings(n=200)
    with pytest.raises(ValueError, match=match):
        DSGClassifier(**dict(EP, **params)).fit(X, y)


@needs_data("kin40k")
def test_one_pass_on_kin40k_beats_the_default_steps():
    # measured (rows shuffled, chunks of 10,000): test RMSE 0.344 against 0.614
    X, y, Xt, yt = load_dataset("kin40k")
    mu, sd = X.mean(axis=0), X.std(axis=0)
    X, Xt = (X - mu) / sd, (Xt - mu) / sd
    order = np.random.default_rng(100).permutation(X.shape[0])
    rmse = {}
    for name, params in (("default", {}), ("eigenpro", dict(precondition="eigenpro",
                                                             batch_size=512))):
        reg = DSGRegressor(random_state=0, **params)
        for s in range(0, X.shape[0], 10_000):
            rows = order[s:s + 10_000]
            reg.partial_fit(X[rows], y[rows])
        rmse[name] = np.sqrt(np.mean((reg.predict(Xt) - yt) ** 2))
    assert rmse["eigenpro"] < 0.7 * rmse["default"]
