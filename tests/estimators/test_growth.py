"""Growth mode: a model that adds blocks as data arrives, up to a cap in bytes (issue 13).

``max_blocks=None`` is Dai et al.'s unbounded DSG (one new block per step);
``max_model_bytes`` caps its learned state, the coefficients and their
running average (``2 * block_size * n_outputs * itemsize`` bytes a block).
At the cap the model stops growing and keeps learning as ``reuse`` says.
A byte cap is one more way of giving the block budget, so a model under it
must be the model of the same ``max_blocks``, bit for bit.
"""
import numpy as np
import pytest
from conftest import fit_any, partial_fit_any

import onlinekernel
from onlinekernel import (DSGClassifier, DSGDensityRatio, DSGOneClassSVM, DSGQuantileRegressor,
                          DSGRegressor)
from onlinekernel.io import modelfile

F = 16  # block_size: small blocks, many steps per block


def _data(n=160, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, X[:, 0] + 0.3 * np.sin(3 * X[:, 1]) + 0.1 * rng.normal(size=n)


def _block_bytes(outputs=1, itemsize=8):
    return 2 * F * outputs * itemsize


def _same_model(a, b):
    assert a.n_blocks_ == b.n_blocks_
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.intercept_, b.intercept_)


SGD = dict(max_iter=2, tol=None, random_state=0, block_size=F, batch_size=8)
GROWING = [
    lambda **kw: DSGClassifier(solver="sgd", **SGD, **kw),
    lambda **kw: DSGRegressor(solver="sgd", **SGD, **kw),
    lambda **kw: DSGQuantileRegressor(solver="sgd", **SGD, **kw),
    lambda **kw: DSGOneClassSVM(**SGD, **kw),
    lambda **kw: DSGDensityRatio(**SGD, **kw),
]
IDS = ["DSGClassifier", "DSGRegressor", "DSGQuantileRegressor", "DSGOneClassSVM",
       "DSGDensityRatio"]


@pytest.mark.parametrize("make", GROWING, ids=IDS)
def test_a_byte_cap_trains_the_model_of_the_blocks_it_holds(make):
    X, y = _data()
    reference = fit_any(make(max_blocks=3), X, y)
    outputs = reference._n_outputs  # the quantile regressor: one per quantile
    # a little less than 4 blocks' bytes: 3 blocks (the cap is never exceeded)
    cap = 4 * _block_bytes(outputs) - 1
    capped = fit_any(make(max_blocks=None, max_model_bytes=cap), X, y)
    assert capped.n_blocks_ == 3
    _same_model(capped, reference)
    # without the cap the same steps grow one block per step (2 epochs of 8-row
    # steps: at least 40 blocks)
    assert fit_any(make(max_blocks=None), X, y).n_blocks_ >= 2 * 160 // 8


def test_the_cap_counts_every_output_and_the_precision():
    X, y = _data(n=240)
    classes = np.digitize(y, [-0.5, 0.5])  # 3 classes: 3 outputs
    cap = 5 * _block_bytes(outputs=3)
    clf = DSGClassifier(solver="sgd", **SGD, max_blocks=None, max_model_bytes=cap).fit(X, classes)
    assert clf.n_blocks_ == 5 and clf.coef_.shape == (5 * F, 3)
    assert clf._coef.nbytes + clf._coef_avg.nbytes <= cap
    # float32 coefficients take half the bytes: twice the blocks
    single = DSGClassifier(solver="sgd", **SGD, max_blocks=None, max_model_bytes=cap,
                           dtype="float32").fit(X, classes)
    assert single.n_blocks_ == 10


def test_at_the_cap_the_model_stops_growing_and_keeps_learning():
    X, y = _data(n=400)
    model = DSGRegressor(block_size=F, batch_size=8, max_blocks=None,
                         max_model_bytes=4 * _block_bytes(), random_state=0)
    model.partial_fit(X[:200], y[:200])
    assert model.n_blocks_ == 4
    before = model.coef_.copy()
    model.partial_fit(X[200:], y[200:])
    assert model.n_blocks_ == 4
    assert not np.array_equal(model.coef_, before)  # every block moved (reuse="all")
    # reuse="none" replaces the oldest blocks instead: the model of the last steps
    recent = DSGRegressor(block_size=F, batch_size=8, max_blocks=None, reuse="none",
                          max_model_bytes=4 * _block_bytes(), random_state=0)
    recent.partial_fit(X, y)
    _same_model(recent, DSGRegressor(block_size=F, batch_size=8, max_blocks=4, reuse="none",
                                     random_state=0).partial_fit(X, y))


def test_the_smaller_budget_wins():
    X, y = _data()
    cap = 6 * _block_bytes()
    assert DSGRegressor(solver="sgd", **SGD, max_blocks=2,
                        max_model_bytes=cap).fit(X, y).n_blocks_ == 2
    assert DSGRegressor(solver="sgd", **SGD, n_components=8 * F,
                        max_model_bytes=cap).fit(X, y).n_blocks_ == 6
    assert DSGRegressor(solver="sgd", **SGD, max_blocks=9,
                        max_model_bytes=cap).fit(X, y).n_blocks_ == 6


def test_a_byte_cap_is_a_finite_budget_for_the_batch_solvers():
    X, y = _data()
    model = DSGRegressor(block_size=F, max_blocks=None, max_model_bytes=3 * _block_bytes(),
                         alpha=1e-3, gamma=1.0, random_state=0).fit(X, y)
    assert model.solver_ == "cholesky" and model.n_random_features_ == 3 * F
    _same_model(model, DSGRegressor(block_size=F, max_blocks=3, alpha=1e-3, gamma=1.0,
                                    random_state=0).fit(X, y))


@pytest.mark.parametrize("make", GROWING, ids=IDS)
def test_a_cap_below_one_block_is_refused_and_leaves_the_model_unchanged(make):
    X, y = _data()
    model = partial_fit_any(make(max_blocks=None, max_model_bytes=10 * _block_bytes()), X, y)
    before = {k: np.copy(v) for k, v in vars(model).items() if isinstance(v, np.ndarray)}
    model.set_params(max_model_bytes=100)
    for call in (fit_any, partial_fit_any):
        with pytest.raises(ValueError, match=r"max_model_bytes=100 holds no block: one block of "
                                             r"block_size=16 features takes \d+ bytes"):
            call(model, X, y)
    assert all(np.array_equal(v, getattr(model, k)) for k, v in before.items())
    for bad in (0, -5, 2.5, "1MB"):
        with pytest.raises(ValueError, match="max_model_bytes must be an integer >= 1"):
            fit_any(make(max_model_bytes=bad), X, y)


def test_a_lower_cap_than_the_model_is_refused_by_name():
    X, y = _data()
    model = DSGRegressor(block_size=F, batch_size=8, max_blocks=None,
                         max_model_bytes=4 * _block_bytes(), random_state=0).partial_fit(X, y)
    model.set_params(max_model_bytes=2 * _block_bytes())
    with pytest.raises(ValueError, match=r"the model has 4 blocks, more than max_blocks=None, "
                                         r"max_model_bytes=512 \(2 blocks of block_size=16\)"):
        model.partial_fit(X, y)
    assert model.n_blocks_ == 4


def test_model_files_keep_the_cap_and_older_files_load_without_it(tmp_path):
    X, y = _data()
    model = DSGRegressor(solver="sgd", **SGD, max_blocks=None,
                         max_model_bytes=3 * _block_bytes()).fit(X, y)
    model.save(tmp_path / "m.okm")
    loaded = onlinekernel.load(tmp_path / "m.okm")
    assert loaded.get_params()["max_model_bytes"] == 3 * _block_bytes()
    _same_model(partial_fit_any(model, X, y), partial_fit_any(loaded, X, y))
    header, payload = modelfile._unpack(modelfile.dumps(model), "test")
    del header["params"]["max_model_bytes"]
    old = modelfile.loads(modelfile._pack(header, bytes(payload)))  # as an older version wrote
    assert old.get_params()["max_model_bytes"] is None
    np.testing.assert_array_equal(old.predict(X), model.predict(X))
