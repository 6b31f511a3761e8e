"""float32 models, thread counts and the one-row partial_fit path.

* ``n_jobs`` never changes a result: models trained and predictions made
  with 1, 2 or 3 threads are identical bit for bit, in both precisions,
  with the block cache on or off.
* ``dtype="float32"`` models learn what float64 models learn (to float32
  rounding); tests/estimators/test_estimators.py runs scikit-learn's checks on them.
* The fast path of ``partial_fit`` (numpy rows of a fitted model) takes
  exactly the same step as the fully validated path, and bad input still
  gets the full validation's error with the model left as it was.
"""
import numpy as np
import pytest

from onlinekernel import (DSGClassifier, DSGOneClassSVM, DSGQuantileRegressor, DSGRegressor,
                          load)

SMALL = dict(alpha=1e-6, learning_rate="invsqrt", eta0=1.0, t0=1.0, block_size=16,
             max_blocks=4, batch_size=8, gamma=0.5)


def _data(n=300, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(np.hypot(X[:, 0], X[:, 1]) < 1.0, 1, -1)
    return X, y


def _same(a, b, X):
    assert a.coef_.dtype == b.coef_.dtype
    assert np.array_equal(a.coef_, b.coef_)
    assert np.array_equal(a.intercept_, b.intercept_)
    assert np.array_equal(a.decision_function(X), b.decision_function(X))


# --------------------------------------------------------------------------- #
# threads
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("cache_bytes", [64 * 2 ** 20, 0])
def test_training_and_prediction_do_not_depend_on_n_jobs(dtype, cache_bytes):
    # 300 rows: several prediction tiles and a short last one; max_blocks=6
    # is reached in the first epoch, so both growing and full-budget steps run
    X, y = _data()
    Xt = np.random.default_rng(5).normal(size=(1000, 5))
    params = dict(SMALL, max_blocks=6, dtype=dtype, cache_bytes=cache_bytes, solver="sgd", max_iter=2, tol=None,
                  random_state=3)
    models = [DSGClassifier(**params, n_jobs=n).fit(X, y) for n in (1, 2, 3)]
    for m in models[1:]:
        _same(models[0], m, Xt)
    # prediction alone, with a thread count the model was not trained with
    ref = models[0].decision_function(Xt)
    assert np.array_equal(models[0].set_params(n_jobs=-1).decision_function(Xt), ref)


def test_multioutput_models_do_not_depend_on_n_jobs():
    X, _ = _data()
    y = np.digitize(X[:, 0] + X[:, 2], [-0.5, 0.5])
    a = DSGClassifier(**SMALL, random_state=0, n_jobs=1).fit(X, y)
    b = DSGClassifier(**SMALL, random_state=0, n_jobs=2).fit(X, y)
    _same(a, b, X)


@pytest.mark.parametrize("value", [0, 1.5, "2", True])
def test_bad_n_jobs_is_refused(value):
    X, y = _data(40)
    with pytest.raises(ValueError, match="n_jobs"):
        DSGClassifier(**SMALL, n_jobs=value).fit(X, y)


# --------------------------------------------------------------------------- #
# float32
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("value", ["float16", "int64", "double-ish", None, True])
def test_bad_dtype_is_refused(value):
    X, y = _data(40)
    with pytest.raises(ValueError, match="dtype"):
        DSGClassifier(**SMALL, dtype=value).fit(X, y)


@pytest.mark.parametrize("Est", [DSGClassifier, DSGRegressor, DSGQuantileRegressor])
def test_float32_model_learns_what_float64_learns(Est):
    X, y = _data(400)
    target = y if Est is DSGClassifier else X[:, 0] ** 2 + np.sin(X[:, 1])
    params = dict(SMALL, random_state=0, solver="sgd", max_iter=3, tol=None)
    m64 = Est(**params).fit(X, target)
    m32 = Est(**params, dtype="float32").fit(X, target)
    assert m32.coef_.dtype == np.float32 and m64.coef_.dtype == np.float64
    f64 = m64.decision_function(X) if Est is DSGClassifier else m64.predict(X)
    f32 = m32.decision_function(X) if Est is DSGClassifier else m32.predict(X)
    assert f32.dtype == np.float64  # outputs are float64 either way
    # the same seeded features and steps, to float32 rounding
    scale = np.abs(f64).max()
    assert np.abs(f32 - f64).max() < 1e-3 * scale
    assert not np.array_equal(f32, f64)  # it really ran in float32


def test_float32_novelty_detector():
    X, _ = _data(300)
    a = DSGOneClassSVM(random_state=0, block_size=16, max_blocks=4).fit(X)
    b = DSGOneClassSVM(random_state=0, block_size=16, max_blocks=4, dtype="float32").fit(X)
    assert b.coef_.dtype == np.float32
    assert np.mean(a.predict(X) == b.predict(X)) > 0.98


def test_changing_dtype_converts_a_fitted_model():
    X, y = _data()
    m = DSGClassifier(**SMALL, random_state=0).fit(X, y)
    before = m.decision_function(X)
    m.set_params(dtype="float32").partial_fit(X[:8], y[:8])
    assert m.coef_.dtype == np.float32 and m._blocks.dtype == np.float32
    # the same model, continued in float32: close to where it was
    assert np.abs(m.decision_function(X) - before).max() < 0.5 * np.abs(before).max()


def test_float32_model_file_round_trip(tmp_path):
    X, y = _data()
    m = DSGClassifier(**SMALL, random_state=0, dtype="float32").fit(X, y)
    m.save(tmp_path / "m.okm")
    loaded = load(tmp_path / "m.okm")
    assert loaded.coef_.dtype == np.float32
    assert np.array_equal(loaded.decision_function(X), m.decision_function(X))


# --------------------------------------------------------------------------- #
# the one-row partial_fit path
# --------------------------------------------------------------------------- #
def _stream(Est, rows, **kw):
    X, y = _data(200)
    target = y if Est is DSGClassifier else X[:, 0] - X[:, 1] ** 2
    m = Est(**SMALL, random_state=0, **kw)
    m.partial_fit(X[:50], target[:50], **({"classes": [-1, 1]} if Est is DSGClassifier else {}))
    for i in range(50, 50 + rows):
        xi, yi = X[i:i + 1], target[i:i + 1]
        m.partial_fit(xi, yi)
    return m, X, target


@pytest.mark.parametrize("Est", [DSGClassifier, DSGRegressor])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_fast_path_takes_the_validated_step(Est, dtype):
    fast, X, target = _stream(Est, 40, dtype=dtype)
    # the same stream through the full validation (lists are not fast-path input)
    slow = Est(**SMALL, random_state=0, dtype=dtype)
    slow.partial_fit(X[:50].tolist(), target[:50].tolist(),
                     **({"classes": [-1, 1]} if Est is DSGClassifier else {}))
    for i in range(50, 90):
        slow.partial_fit(X[i:i + 1].tolist(), target[i:i + 1].tolist())
    assert np.array_equal(fast.coef_, slow.coef_)
    assert np.array_equal(fast.intercept_, slow.intercept_)
    assert fast.samples_seen_ == slow.samples_seen_ == 90


@pytest.mark.parametrize("bad, match", [
    (lambda x, y: (np.full_like(x, np.nan), y), "NaN"),
    (lambda x, y: (np.full_like(x, np.inf), y), "infinity"),
    (lambda x, y: (x[:, :3], y), "features"),
    (lambda x, y: (x, np.array([7])), "not among the classes"),
    (lambda x, y: (x, np.array([1, -1])), "inconsistent numbers of samples"),
])
def test_fast_path_input_errors_leave_the_model_unchanged(bad, match):
    m, X, y = _stream(DSGClassifier, 5)
    before = (m.coef_.copy(), m.intercept_.copy(), m.t_, m.samples_seen_)
    with pytest.raises(ValueError, match=match):
        m.partial_fit(*bad(X[100:101], y[100:101]))
    after = (m.coef_, m.intercept_, m.t_, m.samples_seen_)
    assert np.array_equal(before[0], after[0]) and np.array_equal(before[1], after[1])
    assert before[2:] == after[2:]


def test_regressor_fast_path_refuses_nan_targets():
    m, X, y = _stream(DSGRegressor, 5)
    coef = m.coef_.copy()
    with pytest.raises(ValueError, match="NaN"):
        m.partial_fit(X[100:101], np.array([np.nan]))
    assert np.array_equal(m.coef_, coef)
