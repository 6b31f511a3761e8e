"""The ``nystrom`` map through the estimators: fitting, persistence, errors.

The map's properties shared with every registered map (kernel convergence,
golden landmark choices, float32/float64, pickling) are checked in
``test_feature_maps.py``; here is what is particular to a map fitted on
data: landmarks chosen at the first fit and kept by partial_fit, stored in
pickles and model files (format version 3), the base kernels, scikit-learn's
checks and the errors.
"""
import json
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from sklearn.utils.estimator_checks import parametrize_with_checks

import onlinekernel
from onlinekernel import DSGClassifier, DSGRegressor, get_feature_map
from onlinekernel.io.modelfile import ModelFileError, dumps, loads, read_header

SMALL = dict(kernel="nystrom", n_components=64, block_size=32, random_state=0)


def _data(n=300, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2]


def test_landmarks_are_training_rows_chosen_at_fit_and_kept_by_partial_fit():
    X, y = _data()
    reg = DSGRegressor(**SMALL).fit(X, y)
    C = reg.feature_map_.landmarks_
    assert C.shape == (64, 3)
    assert all((X == c).all(1).any() for c in C)  # every landmark is a row of X
    # fit refits: other rows, other landmarks; the same rows, the same ones
    X2, y2 = _data(seed=1)
    assert not np.array_equal(DSGRegressor(**SMALL).fit(X2, y2).feature_map_.landmarks_, C)
    assert np.array_equal(DSGRegressor(**SMALL).fit(X, y).feature_map_.landmarks_, C)
    # partial_fit chooses them on its first batch and keeps them
    inc = DSGRegressor(**SMALL)
    inc.partial_fit(X[:100], y[:100])
    first = inc.feature_map_.landmarks_.copy()
    assert all((X[:100] == c).all(1).any() for c in first)
    inc.partial_fit(X[100:], y[100:])
    assert np.array_equal(inc.feature_map_.landmarks_, first)


def test_gamma_scale_reaches_the_base_kernel():
    X, y = _data()
    reg = DSGRegressor(gamma="scale", **SMALL).fit(X, y)
    assert reg.feature_map_.gamma == pytest.approx(reg.gamma_)
    expected = np.exp(-reg.gamma_ * ((X[:2, None] - X[None, :2]) ** 2).sum(-1))
    np.testing.assert_allclose(reg.feature_map_.kernel(X[:2], X[:2]), expected, rtol=1e-12)


def test_nystrom_beats_rff_when_the_function_is_smooth():
    # a smooth target on 2-d inputs: the kernel matrix's spectrum decays fast,
    # which is where 64 landmarks beat 64 random frequencies
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(2000, 2))
    y = np.sin(X[:, 0]) * np.cos(X[:, 1])
    Xt = rng.uniform(-2, 2, size=(1000, 2))
    yt = np.sin(Xt[:, 0]) * np.cos(Xt[:, 1])
    params = dict(n_components=64, block_size=32, gamma=0.5, alpha=1e-6, solver="cholesky",
                  random_state=0)
    nys = DSGRegressor(kernel="nystrom", **params).fit(X, y)
    rff = DSGRegressor(kernel="gaussian", **params).fit(X, y)
    err = [np.sqrt(np.mean((m.predict(Xt) - yt) ** 2)) for m in (nys, rff)]
    assert err[0] < 0.5 * err[1], err


@pytest.mark.parametrize("base, params", [("laplacian", {}), ("matern", {"nu": 2.5}),
                                          ("arccos", {"order": 1}),
                                          ("poly_sketch", {"degree": 2})])
def test_any_registered_kernel_is_a_base(base, params):
    X, y = _data(d=4)
    fmap = get_feature_map("nystrom", n_components=32, gamma=0.3, base_kernel=base,
                           base_params=params).bind(4).fit(X, 0, 4)
    exact = get_feature_map(base, **({"gamma": 0.3} if base != "arccos" else {}), **params)
    np.testing.assert_allclose(fmap.kernel(X[:5], X[:7]), exact.bind(4).kernel(X[:5], X[:7]))
    # exact at the landmarks, whatever the kernel
    C = fmap.landmarks_[:6]
    Z = np.hstack([fmap.transform_block(0, j, C) for j in range(4)])
    K = fmap.kernel(C, C)
    assert np.abs(Z @ Z.T / Z.shape[1] - K).max() < 1e-5 * np.abs(K).max()
    reg = DSGRegressor(kernel="nystrom", n_components=128, block_size=32,
                       kernel_params={"base_kernel": base, "base_params": params},
                       random_state=0).fit(X, y)
    assert reg.score(X, y) > 0.5


def test_pickle_and_model_file_round_trips_are_exact(tmp_path):
    X, y = _data()
    for model in (DSGRegressor(**SMALL).fit(X, y),
                  DSGClassifier(dtype="float32", kernel_params={"sampling": "kmeans++"},
                                **SMALL).fit(X, y > 0)):
        again = pickle.loads(pickle.dumps(model))
        assert np.array_equal(again.decision_function(X) if hasattr(again, "classes_")
                              else again.predict(X),
                              model.decision_function(X) if hasattr(model, "classes_")
                              else model.predict(X))
        path = tmp_path / "nystrom.okm"
        model.save(path)
        header = read_header(path)
        assert header["format_version"] == 3
        assert set(header["feature_map"]["fitted"]) == {"landmarks", "factor", "n_blocks"}
        assert header["arrays"]["feature_map.landmarks"]["shape"] == [64, 3]
        loaded = onlinekernel.load(path)
        assert np.array_equal(loaded.feature_map_.landmarks_, model.feature_map_.landmarks_)
        assert np.array_equal(loaded.predict(X), model.predict(X))
        # and it trains on as the saved model does
        loaded.partial_fit(X[:50], y[:50] if not hasattr(model, "classes_") else y[:50] > 0)
        model.partial_fit(X[:50], y[:50] if not hasattr(model, "classes_") else y[:50] > 0)
        assert np.array_equal(loaded.predict(X), model.predict(X))


def test_predictions_go_through_the_linear_factor(monkeypatch):
    # B (T coef): m kernel values and one product a row, where forming the
    # blocks' features B T costs O(M^2) a row; the blocks are never formed
    from onlinekernel.estimators import _base
    X, y = _data()
    for model in (DSGRegressor(**SMALL).fit(X, y),
                  DSGClassifier(dtype="float32", **SMALL).fit(X, y > 0)):
        fmap = model.feature_map_
        Xm = X.astype(model._coef.dtype).astype(np.float64)  # the inputs in the model's dtype
        Phi = np.hstack([fmap.transform_block(model.seed_, j, Xm)
                         for j in range(model.n_blocks_)])
        expected = model.intercept_ + model._scale * Phi @ model._coef.astype(np.float64)
        monkeypatch.setattr(_base, "predict_raw", None)  # not called: it would fail
        out = _base.model_outputs(model.__dict__, X)
        monkeypatch.undo()
        if model._coef.dtype == np.float64:
            np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-10)
        else:
            # a float32 model's kernel values are float32, as in its training,
            # summed against T coef in float64
            factor = fmap.linear_factor(model.seed_, model.n_blocks_)
            B = fmap.kernel(X.astype(np.float32), factor.C, np.float32)
            assert B.dtype == np.float32
            exact = model.intercept_ + model._scale * B.astype(np.float64) @ factor.apply(
                model._coef)
            np.testing.assert_allclose(out, exact, rtol=1e-10, atol=1e-10)
            np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)
        # in row tiles: the same rows whatever the tile
        monkeypatch.setattr(_base, "_FACTOR_TILE_BYTES", 8 * 64 * 7)
        tiled = _base.model_outputs(model.__dict__, X)
        monkeypatch.undo()
        np.testing.assert_allclose(tiled, out, rtol=1e-12, atol=1e-12)


def test_the_whitening_is_formed_once_at_the_first_features(monkeypatch):
    """A batch fit and its prediction never form L^{-T} (M^3 flops); the first block's
    features do, once, however many threads ask at the same time, and give the
    features of a map that formed it at once."""
    from concurrent.futures import ThreadPoolExecutor

    from onlinekernel.featuremaps import nystrom

    X, y = _data(400)
    inverses = []
    solve = nystrom.scipy.linalg.solve_triangular

    def counted(L, B, **kw):  # L^{-1} itself: a square right-hand side
        if np.shape(B) == np.shape(L):
            inverses.append(L.shape[0])
        return solve(L, B, **kw)

    monkeypatch.setattr(nystrom.scipy.linalg, "solve_triangular", counted)
    reg = DSGRegressor(**SMALL, solver="cholesky").fit(X, y)
    reg.predict(X)
    assert inverses == []
    fmap = pickle.loads(pickle.dumps(reg.feature_map_))
    with ThreadPoolExecutor(4) as pool:
        blocks = list(pool.map(lambda j: fmap.transform_block(0, j % 2, X), range(8)))
    assert inverses == [64]
    # the features of sqrt(M) L^{-T} formed at once
    L = fmap.fitted_arrays()["factor"]
    T = solve(L, np.eye(64), lower=True).T * 8.0
    K = fmap.kernel(X, fmap.landmarks_)
    for j, got in enumerate(blocks):
        e = 32 * (j % 2 + 1)
        np.testing.assert_allclose(got, K[:, :e] @ T[:e, e - 32:e], rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(got, blocks[j % 2])


def test_random_feature_models_stay_format_version_2(tmp_path):
    X, y = _data()
    model = DSGRegressor(kernel="gaussian", n_components=64, block_size=32).fit(X, y)
    header = json.loads(dumps(model)[24:24 + int.from_bytes(dumps(model)[12:16], "little")])
    assert header["format_version"] == 2 and "fitted" not in header["feature_map"]


def _edited(data, edit):
    from onlinekernel.io import modelfile
    hlen = int.from_bytes(data[12:16], "little")
    header = json.loads(data[24:24 + hlen])
    edit(header)
    return modelfile._pack(header, data[24 + hlen:-32])


def test_a_model_file_without_the_fitted_state_is_refused():
    X, y = _data()
    data = dumps(DSGRegressor(**SMALL).fit(X, y))

    def drop(h):
        del h["feature_map"]["fitted"]
    with pytest.raises(ModelFileError, match="belong to no fitted feature map"):
        loads(_edited(data, drop))

    def drop_all(h):
        del h["feature_map"]["fitted"]
        for k in [k for k in h["arrays"] if k.startswith("feature_map.")]:
            del h["arrays"][k]
    with pytest.raises(ModelFileError, match="holds none of its fitted state"):
        loads(_edited(data, drop_all))

    def as_version_2(h):
        h["format_version"] = 2
    with pytest.raises(ModelFileError, match="unknown"):
        loads(_edited(data, as_version_2))


def test_sparse_rows_give_the_dense_model():
    X, y = _data()
    dense = DSGRegressor(**SMALL).fit(X, y)
    sparse = DSGRegressor(**SMALL).fit(sp.csr_matrix(X), y)
    assert np.array_equal(sparse.feature_map_.landmarks_, dense.feature_map_.landmarks_)
    np.testing.assert_allclose(sparse.predict(sp.csr_matrix(X)), dense.predict(X),
                               rtol=1e-9, atol=1e-9)


def test_clone_and_grid_search():
    X, y = _data()
    reg = DSGRegressor(**SMALL)
    assert clone(reg).get_params() == reg.get_params()
    search = GridSearchCV(reg, {"alpha": [1e-6, 1e-3],
                                "kernel_params": [{"sampling": "uniform"},
                                                  {"sampling": "leverage"}]}, cv=3).fit(X, y)
    assert search.best_estimator_.feature_map_.n_blocks_ == 2


def test_errors_name_the_problem_and_leave_the_map_unfitted():
    X, _ = _data()
    fmap = get_feature_map("nystrom", n_components=8).bind(3)
    with pytest.raises(ValueError, match="not fitted"):
        fmap.transform_block(0, 0, X)
    with pytest.raises(ValueError, match=r"shape \(n, 3\)"):
        fmap.fit(X[:, :2], 0, 1)
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        fmap.fit(bad, 0, 1)
    assert fmap.fitted_arrays() == {}
    fmap.fit(X, 0, 2)
    with pytest.raises(ValueError, match="past the 2 blocks"):
        fmap.transform_block(0, 2, X)
    with pytest.raises(ValueError, match="shape"):
        fmap.transform_block(0, 0, X[:, :2])
    with pytest.raises(FloatingPointError, match="non-finite"):
        fmap.transform_block(0, 0, bad)
    for kwargs, word in [({"sampling": "random"}, "sampling"), ({"gamma": -1.0}, "gamma"),
                         ({"base_kernel": "nystrom"}, "itself"),
                         ({"base_kernel": "nope"}, "unknown"), ({"jitter": 1.0}, "jitter"),
                         ({"base_kernel": "iln", "base_params": {"activation": "sigmoid"}},
                          "no exact kernel")]:
        with pytest.raises(ValueError, match=word):
            get_feature_map("nystrom", **kwargs)
    arrays = fmap.fitted_arrays()
    with pytest.raises(ValueError, match="lower triangular"):
        fmap.set_fitted_arrays(dict(arrays, factor=arrays["factor"].T.copy()))
    with pytest.raises(ValueError, match="landmarks must have shape"):
        fmap.set_fitted_arrays(dict(arrays, landmarks=arrays["landmarks"][:, :2]))


def test_estimator_errors_leave_the_model_unchanged():
    X, y = _data()
    with pytest.raises(ValueError, match="finite feature budget"):
        DSGRegressor(kernel="nystrom", max_blocks=None, solver="sgd").fit(X, y)
    reg = DSGRegressor(**SMALL).fit(X, y)
    before = reg.predict(X)
    with pytest.raises(ValueError, match="features"):
        reg.predict(X[:, :2])
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        reg.partial_fit(bad, y)
    assert np.array_equal(reg.predict(X), before)


def test_fewer_rows_than_landmarks_use_every_row_and_warn():
    X, y = _data(n=40)
    with pytest.warns(UserWarning, match="40 rows for 64 landmarks"):
        reg = DSGRegressor(**SMALL).fit(X, y)
    fmap = reg.feature_map_
    assert fmap.landmarks_.shape == (40, 3)
    Z = fmap.transform_block(reg.seed_, 1, X)
    assert not Z[:, 8:].any() and Z[:, :8].any()  # features 40..63 are zero
    assert np.isfinite(reg.predict(X)).all()


@parametrize_with_checks([DSGRegressor(kernel="nystrom", n_components=128, block_size=64),
                          DSGClassifier(kernel="nystrom", n_components=128, block_size=64,
                                        tol=1e-10)])
def test_sklearn_estimator_checks(estimator, check, monkeypatch):
    if getattr(check, "func", check).__name__ == "check_array_api_input":
        monkeypatch.setenv("SCIPY_ARRAY_API", "1")  # as in test_estimators.py
    with warnings.catch_warnings():
        # the checks' tiny datasets have fewer rows than 128 landmarks
        warnings.filterwarnings("ignore", message="nystrom: .* rows for", category=UserWarning)
        check(estimator)


@pytest.mark.parametrize("d, gamma", [(20, 0.02), (2, 0.5)])  # well / ill conditioned
def test_the_rounding_gain_is_sqrt_m_level_times_the_norm_of_L_inverse(d, gamma):
    # the power iterations climb to sqrt(m level) |L^-1|_2 from below (level: the
    # landmarks' mean k(c, c)); past a limit they stop at a value above it
    X = np.random.default_rng(4).normal(size=(400, d))
    fmap = get_feature_map("nystrom", n_components=32, gamma=gamma).bind(d).fit(X, 3, 2)
    L = fmap.fitted_arrays()["factor"]
    m = L.shape[0]
    exact = np.sqrt(m * np.mean(np.sum(L * L, axis=1)) / np.linalg.eigvalsh(L @ L.T)[0])
    f = fmap.linear_factor(3, 2)
    gain = f.rounding_gain()
    assert 0.9 * exact <= gain <= exact * (1 + 1e-9)
    assert f.rounding_gain() == gain and fmap.linear_factor(3, 2).rounding_gain() == gain
    fresh = get_feature_map("nystrom", n_components=32, gamma=gamma).bind(d).fit(X, 3, 2)
    early = fresh.linear_factor(3, 2).rounding_gain(limit=gain / 10)
    assert gain / 10 < early <= gain
    # a refitted map forgets the gains of its old factor
    fmap.fit(X[:200] * 3, 3, 2)
    assert fmap.linear_factor(3, 2).rounding_gain() != gain
    if d == 2:  # 2-d inputs: nearly dependent landmarks
        assert gain > 1e4
    else:
        assert gain < 100


@pytest.mark.parametrize("rows", [50, 9])  # as many landmarks as features, and fewer
def test_the_factor_applies_T_and_its_transpose(rows):
    # T = sqrt(M) [L^{-T} | 0]: apply_transposed is the whitening of every row batch of a
    # batch fit (one copy and a trsm in its result's memory), apply its adjoint
    X = np.random.default_rng(1).normal(size=(rows, 2))
    fmap = get_feature_map("nystrom", n_components=8, gamma=0.5).bind(2).fit(X, 0, 2)
    f = fmap.linear_factor(0, 2)
    L = fmap.fitted_arrays()["factor"][:f.width, :f.width]
    T = np.zeros((f.width, 16))
    T[:, :f.width] = 4.0 * np.linalg.inv(L).T
    G = np.random.default_rng(2).normal(size=(f.width, 5))
    for given in (G, np.asfortranarray(G), G.astype(np.float32)):
        got = f.apply_transposed(given)
        assert got.shape == (16, 5) and got.dtype == np.float64
        np.testing.assert_allclose(got, T.T @ G, rtol=1e-6 if given.dtype == np.float32
                                   else 1e-10, atol=1e-6)
    np.testing.assert_allclose(f.apply(np.ones((16, 3))), T @ np.ones((16, 3)), rtol=1e-10)
    assert np.array_equal(G, np.random.default_rng(2).normal(size=(f.width, 5)))  # unchanged


@pytest.mark.parametrize("d, gamma", [(20, 0.02), (2, 0.5)])  # well / ill conditioned
def test_the_factor_s_norm_is_that_of_T(d, gamma):
    # |T|_2 = scale |L^-1|_2, from the rounding gain's power iterations (from below);
    # past a limit, a value at least min over the limit and |T|
    X = np.random.default_rng(4).normal(size=(400, d))
    fmap = get_feature_map("nystrom", n_components=32, gamma=gamma).bind(d).fit(X, 3, 2)
    f = fmap.linear_factor(3, 2)
    exact = np.linalg.norm(f.apply(np.eye(64)), 2)
    assert 0.9 * exact <= f.norm() <= exact * (1 + 1e-9)
    fresh = get_feature_map("nystrom", n_components=32, gamma=gamma).bind(d).fit(X, 3, 2)
    assert min(exact, exact / 10) * 0.9 <= fresh.linear_factor(3, 2).norm(limit=exact / 10)


@pytest.mark.parametrize("rows", [50, 9])  # as many landmarks as features, and fewer
def test_the_factor_s_transposed_gram_is_that_of_the_features(rows):
    # T^T A T for A = B^T D B: Phi's weighted Gram matrix, zero past the landmarks
    X = np.random.default_rng(1).normal(size=(rows, 2))
    fmap = get_feature_map("nystrom", n_components=8, gamma=0.5).bind(2).fit(X, 0, 2)
    f = fmap.linear_factor(0, 2)
    Z = np.random.default_rng(2).normal(size=(300, 2))
    B, w = f.base(Z, np.float64), np.random.default_rng(3).uniform(0.5, 2.0, 300)
    Phi = np.hstack([fmap.transform_block(0, j, Z) for j in range(2)])
    got = f.transposed_gram(B.T @ (w[:, None] * B))
    assert got.shape == (16, 16) and got.flags.c_contiguous and np.array_equal(got, got.T)
    np.testing.assert_allclose(got, Phi.T @ (w[:, None] * Phi), rtol=1e-8,
                               atol=1e-8 * np.abs(got).max())
    assert not got[f.width:].any() and not got[:, f.width:].any()


def test_the_typical_row_norm_is_the_landmarks_mean_and_kept():
    X = np.random.default_rng(5).normal(size=(2000, 4))
    fmap = get_feature_map("nystrom", n_components=600, gamma=0.3).bind(4).fit(X, 1, 1)
    f = fmap.linear_factor(1, 1)
    K = f.base(f.C, np.float64)
    mean = np.mean(np.sum(K ** 2, axis=1))
    got = f.typical_row_norm2()  # from every third landmark of 600 (at most 256)
    assert got == pytest.approx(mean, rel=0.05)
    rows = np.mean(np.sum(f.base(X, np.float64) ** 2, axis=1))  # and the data's rows'
    assert 0.5 * rows <= got <= 2 * rows
    assert f.typical_row_norm2() == got
