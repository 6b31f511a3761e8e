"""Sparse (CSR) input: the same model and predictions as the dense rows.

The maps multiply CSR rows by their regenerated projections (``nnz * F``
products a row, never a densified batch); with sorted, distinct column
indices the products are the dense ones bit for bit, so every estimator fits
the same model on ``X`` and on ``csr_matrix(X)``.
"""
import numpy as np
import pytest
import scipy.sparse as sp

from onlinekernel import (DSGClassifier, DSGDensityRatio, DSGGaussianProcessRegressor,
                          DSGOneClassSVM, DSGQuantileRegressor, DSGRegressor,
                          FixedFeatureClassifier, FixedFeatureRegressor,
                          ShrinkingGradientRegressor, get_feature_map)
from conftest import load_dataset, needs_data

SMALL = {"block_size": 32, "max_blocks": 3, "random_state": 0}


def _sparse_data(n=300, d=40, density=0.15, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[rng.random((n, d)) > density] = 0.0
    return X


def _state(model):
    return {k: v for k, v in vars(model).items() if isinstance(v, np.ndarray)}


def _assert_same_model(a, b, atol=1e-10):
    sa, sb = _state(a), _state(b)
    assert sa.keys() == sb.keys()
    for k in sa:
        np.testing.assert_allclose(sa[k], sb[k], rtol=0, atol=atol, err_msg=k)


MAPS = [("gaussian", {}), ("gaussian", {"pairs": True}), ("laplacian", {}),
        ("matern", {"nu": 0.5}), ("matern", {"nu": 1.5}), ("matern", {"nu": 2.5}),
        ("isotropic_cauchy", {}),
        ("arccos", {"order": 0}), ("arccos", {"order": 1}), ("arccos", {"order": 2}),
        ("iln", {}), ("poly_sketch", {}), ("orf", {}), ("orf", {"pairs": True}),
        ("sorf", {}), ("fastfood", {"pairs": True})]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name,params", MAPS)
def test_every_map_gives_the_dense_features_on_csr_rows(name, params, dtype):
    X = _sparse_data(n=200, d=30).astype(dtype)
    fmap = get_feature_map(name, n_components=64, **params).bind(30)
    for block in (0, 5):
        dense = fmap.transform_block(11, block, X, dtype=dtype)
        sparse = fmap.transform_block(11, block, sp.csr_matrix(X), dtype=dtype)
        assert sparse.dtype == dtype
        np.testing.assert_array_equal(sparse, dense)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n_components,pairs", [(67, False), (256, False), (70, True)])
def test_both_csr_products_give_the_dense_bits(n_components, pairs, dtype):
    # Rows holding at least 3 d stored entries go through the transposed
    # frequencies (a contiguous axpy a stored entry), fewer through the
    # gathered ones (panels of 8 frequencies, each read by every row): the
    # same fma chains, so both are the dense bits -- with empty rows, and
    # widths that leave remainders of every vector and panel width.
    X = _sparse_data(n=400, d=50, density=0.08, seed=3).astype(dtype)
    X[[0, 7, 399]] = 0.0
    Xs = sp.csr_matrix(X)
    fmap = get_feature_map("gaussian", n_components=n_components, pairs=pairs).bind(50)
    dense = fmap.transform_block(2, 1, X, dtype=dtype)
    np.testing.assert_array_equal(fmap.transform_block(2, 1, Xs, dtype=dtype), dense)
    assert Xs[:10].nnz < 150 <= Xs.nnz  # ten rows: the gathered path
    for rows in (slice(0, 1), slice(1, 2), slice(7, 8), slice(399, 400), slice(0, 10),
                 slice(385, 400)):
        np.testing.assert_array_equal(fmap.transform_block(2, 1, Xs[rows], dtype=dtype),
                                      dense[rows])


@pytest.mark.filterwarnings("ignore::UserWarning")  # cache_bytes=0 holds no block
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("kernel", ["gaussian", "arccos"])
def test_kept_transposed_frequencies_give_the_same_bits(kernel, dtype):
    # A cached block keeps its frequencies transposed for CSR rows (the
    # vectorised product on a training step's few rows); without a cache the
    # product gathers or transposes per call: the same bits, model and outputs.
    def fit(cache_bytes):
        return DSGClassifier(solver="sgd", max_iter=2, tol=None, kernel=kernel, dtype=dtype,
                             cache_bytes=cache_bytes, **SMALL).fit(Xs0, Y_CLASS)
    kept, uncached = fit(64 * 2 ** 20), fit(0)
    assert kept._blocks.n_cached == 3 and uncached._blocks.n_cached == 0
    _assert_same_model(kept, uncached, atol=0)
    np.testing.assert_array_equal(kept.decision_function(Xs0),
                                  uncached.decision_function(Xs0))


def test_unsorted_and_duplicate_entries_are_read_as_scipy_reads_them():
    X = _sparse_data(n=50, d=20)
    coo = sp.coo_matrix(X)
    # split every entry into two halves, stored in reverse order
    half = coo.data / 2
    rows = np.concatenate([coo.row, coo.row])[::-1]
    cols = np.concatenate([coo.col, coo.col])[::-1]
    data = np.concatenate([half, coo.data - half])[::-1]
    messy = sp.csr_matrix((data, (rows, cols)), shape=X.shape)
    messy.has_canonical_format = False
    fmap = get_feature_map("gaussian", n_components=32).bind(20)
    np.testing.assert_allclose(fmap.transform_block(3, 0, messy),
                               fmap.transform_block(3, 0, X), rtol=0, atol=1e-12)


def _pairs(make, fit_args):
    """``(dense model, sparse model)`` fitted by ``fit_args(model, sparse)``."""
    dense, sparse = make(), make()
    fit_args(dense, False)
    fit_args(sparse, True)
    return dense, sparse


X0 = _sparse_data()
Xs0 = sp.csr_matrix(X0)
Y_CLASS = (X0[:, 0] + X0[:, 1] > 0).astype(int)
Y_REG = X0[:, 0] - 2 * X0[:, 2] + 0.1 * np.random.default_rng(1).normal(size=X0.shape[0])

SUPERVISED = [
    (lambda: DSGClassifier(**SMALL), Y_CLASS),
    (lambda: DSGClassifier(loss="hinge", **SMALL), Y_CLASS),
    (lambda: DSGClassifier(solver="sgd", max_iter=3, tol=None, **SMALL), Y_CLASS),
    (lambda: DSGClassifier(dtype="float32", solver="sgd", max_iter=2, tol=None, **SMALL),
     Y_CLASS),
    (lambda: DSGClassifier(solver="sgd", max_iter=2, tol=None, reuse="check",
                           precondition=False, **SMALL), Y_CLASS),
    (lambda: DSGClassifier(solver="sgd", max_iter=2, tol=None, precondition="eigenpro",
                           batch_size=64, **SMALL), Y_CLASS),
    (lambda: DSGRegressor(**SMALL), Y_REG),
    (lambda: DSGRegressor(loss="huber", **SMALL), Y_REG),
    (lambda: DSGQuantileRegressor(**SMALL), Y_REG),
    (lambda: FixedFeatureRegressor(n_components=96, block_size=32, random_state=0), Y_REG),
    (lambda: FixedFeatureClassifier(n_components=96, block_size=32, random_state=0),
     Y_CLASS),
    (lambda: DSGGaussianProcessRegressor(variance_blocks=2, **SMALL), Y_REG),
    (lambda: ShrinkingGradientRegressor(random_state=0), Y_REG),
]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("make,y", SUPERVISED, ids=[
    "classifier", "hinge", "sgd", "sgd-float32", "sgd-check", "sgd-eigenpro", "regressor",
    "huber", "quantile", "fixed-regressor", "fixed-classifier", "gp", "shrinking"])
def test_fit_and_predict_on_csr_give_the_dense_model(make, y):
    dense, sparse = _pairs(make, lambda m, s: m.fit(Xs0 if s else X0, y))
    _assert_same_model(dense, sparse)
    np.testing.assert_allclose(sparse.predict(Xs0), dense.predict(X0), rtol=0, atol=1e-10)
    if hasattr(dense, "decision_function"):
        np.testing.assert_allclose(sparse.decision_function(Xs0), dense.decision_function(X0),
                                   rtol=0, atol=1e-10)


@pytest.mark.parametrize("make,y", [SUPERVISED[0], SUPERVISED[6], SUPERVISED[9]],
                         ids=["classifier", "regressor", "fixed"])
def test_partial_fit_on_csr_batches_gives_the_dense_model(make, y):
    def stream(model, sparse):
        for start in range(0, X0.shape[0], 64):
            rows = slice(start, start + 64)
            kw = {"classes": [0, 1]} if y is Y_CLASS else {}
            model.partial_fit(Xs0[rows] if sparse else X0[rows], y[rows], **kw)
    dense, sparse = _pairs(make, stream)
    _assert_same_model(dense, sparse)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_unsupervised_estimators_take_csr():
    dense, sparse = _pairs(lambda: DSGOneClassSVM(**SMALL),
                           lambda m, s: m.fit(Xs0 if s else X0))
    _assert_same_model(dense, sparse)
    np.testing.assert_allclose(sparse.score_samples(Xs0), dense.score_samples(X0), atol=1e-10)
    Xq = _sparse_data(seed=2) * 1.5
    dense, sparse = _pairs(lambda: DSGDensityRatio(**SMALL),
                           lambda m, s: m.fit(Xs0 if s else X0, sp.csr_matrix(Xq) if s else Xq))
    _assert_same_model(dense, sparse)
    np.testing.assert_allclose(sparse.log_ratio(Xs0), dense.log_ratio(X0), atol=1e-10)


def test_gp_predictive_std_on_csr():
    gp = DSGGaussianProcessRegressor(variance_blocks=2, **SMALL).fit(X0, Y_REG)
    m_d, s_d = gp.predict(X0, return_std=True)
    m_s, s_s = gp.predict(Xs0, return_std=True)
    np.testing.assert_allclose(m_s, m_d, atol=1e-10)
    np.testing.assert_allclose(s_s, s_d, atol=1e-10)


def test_gamma_scale_counts_the_zeros_of_sparse_x():
    w = np.random.default_rng(3).uniform(0.5, 2.0, size=X0.shape[0])
    for sw in (None, w):
        a = DSGRegressor(max_iter=1, **SMALL).fit(X0, Y_REG, sample_weight=sw)
        b = DSGRegressor(max_iter=1, **SMALL).fit(Xs0, Y_REG, sample_weight=sw)
        assert b.gamma_ == pytest.approx(a.gamma_, rel=1e-12)


def test_other_sparse_formats_are_converted_and_bad_values_refused():
    model = DSGClassifier(**SMALL).fit(sp.coo_matrix(X0), Y_CLASS)
    np.testing.assert_array_equal(model.predict(sp.csc_matrix(X0)), model.predict(X0))
    before = _state(model)
    bad = Xs0.copy()
    bad.data[0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        model.partial_fit(bad, Y_CLASS)
    with pytest.raises(ValueError, match="features"):
        model.predict(sp.csr_matrix(np.ones((2, X0.shape[1] + 1))))
    assert all(np.array_equal(before[k], v) for k, v in _state(model).items())


def test_sparse_input_is_scaled_but_never_centred():
    scale = np.full(X0.shape[1], 2.0)
    scaled = DSGRegressor(input_scaling=(np.zeros(X0.shape[1]), scale), **SMALL)
    dense = DSGRegressor(input_scaling=(np.zeros(X0.shape[1]), scale), **SMALL)
    _assert_same_model(scaled.fit(Xs0, Y_REG), dense.fit(X0, Y_REG))
    centred = DSGRegressor(input_scaling=(np.ones(X0.shape[1]), scale), **SMALL)
    with pytest.raises(ValueError, match="nonzero mean would make sparse X dense"):
        centred.fit(Xs0, Y_REG)
    assert not hasattr(centred, "_coef")


@needs_data("w8a", "a9a")
@pytest.mark.parametrize("name", ["w8a", "a9a"])
def test_svmlight_style_data_fits_the_same_model_sparse_and_dense(name):
    X, y, Xt, yt = load_dataset(name)
    X, y, Xt, yt = X[:4000], y[:4000], Xt[:2000], yt[:2000]
    kw = {"max_blocks": 8, "random_state": 0}
    dense = DSGClassifier(**kw).fit(X, y)
    sparse = DSGClassifier(**kw).fit(sp.csr_matrix(X), y)
    _assert_same_model(dense, sparse)
    np.testing.assert_allclose(sparse.decision_function(sp.csr_matrix(Xt)),
                               dense.decision_function(Xt), rtol=0, atol=1e-10)
    assert np.mean(sparse.predict(sp.csr_matrix(Xt)) == yt) > 0.8
