"""The single-row path: partial_fit, predict and decision_function on one row.

A fitted model checks a plain numpy row directly (width, finiteness, known
labels) and skips the validation of parameters it has already accepted; the
outcome must be the one of the full validation: the same model, the same
bits, the same errors, and a refused call leaves the model unchanged.
"""
import pickle

import numpy as np
import pytest

from onlinekernel import DSGClassifier, DSGRegressor
from onlinekernel.estimators import _base


def _stream(n=300, d=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, (X[:, 0] * X[:, 1] > 0).astype(int)


def _fitted(**kw):
    X, y = _stream()
    clf = DSGClassifier(batch_size=4, block_size=32, max_blocks=4, random_state=0, **kw)
    return clf.partial_fit(X[:100], y[:100], classes=[0, 1]), X, y


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_one_row_steps_equal_the_validated_path(dtype):
    # the fast path (plain numpy rows) and the full validation (lists) train
    # the same model, bit for bit
    fast, X, y = _fitted(dtype=dtype)
    slow, _, _ = _fitted(dtype=dtype)
    for i in range(100, 140):
        fast.partial_fit(X[i:i + 1], y[i:i + 1])
        slow.partial_fit(X[i:i + 1].tolist(), y[i:i + 1].tolist())
    assert fast._coef.tobytes() == slow._coef.tobytes()
    assert fast.intercept_.tobytes() == slow.intercept_.tobytes()
    assert fast.t_ == slow.t_ and fast.samples_seen_ == slow.samples_seen_


def test_one_row_predictions_are_the_rows_of_a_batch_prediction():
    clf, X, _ = _fitted()
    Xq = X[200:]
    whole = clf.decision_function(Xq)
    rows = np.concatenate([clf.decision_function(Xq[i:i + 1]) for i in range(len(Xq))])
    assert whole.tobytes() == rows.tobytes()
    assert clf.predict(Xq[5:6])[0] == clf.predict(Xq)[5]
    # a non-contiguous or float32 row takes the same path, converted
    assert clf.decision_function(Xq[::-1][:1]).tobytes() == whole[-1:].tobytes()


@pytest.mark.parametrize("bad, match", [
    (np.full((1, 6), np.nan), "NaN"),
    (np.ones((1, 5)), "features"),
    (np.ones(6), "2D array"),
])
def test_a_bad_row_is_refused_by_name_and_leaves_the_model_unchanged(bad, match):
    clf, X, y = _fitted()
    before = pickle.dumps(clf)
    with pytest.raises(ValueError, match=match):
        clf.partial_fit(bad, y[:1])
    with pytest.raises(ValueError, match=match):
        clf.predict(bad)
    assert pickle.dumps(clf) == before


def test_an_unknown_label_is_refused_and_leaves_the_model_unchanged():
    clf, X, _ = _fitted()
    before = pickle.dumps(clf)
    with pytest.raises(ValueError, match="not among the classes"):
        clf.partial_fit(X[:1], np.array([7]))
    assert pickle.dumps(clf) == before
    reg = DSGRegressor(block_size=32, max_blocks=2, random_state=0).partial_fit(X[:50], X[:50, 0])
    before = pickle.dumps(reg)
    with pytest.raises(ValueError, match="NaN|infinity"):
        reg.partial_fit(X[:1], np.array([np.nan]))
    assert pickle.dumps(reg) == before


def test_parameters_changed_after_a_step_are_validated_again():
    clf, X, y = _fitted()
    clf.partial_fit(X[:1], y[:1])
    clf.set_params(eta0=-1.0)
    with pytest.raises(ValueError, match="eta0"):
        clf.partial_fit(X[:1], y[:1])
    clf.set_params(eta0=True)  # equal to 1 but of another type: checked, refused
    with pytest.raises(ValueError, match="eta0"):
        clf.partial_fit(X[:1], y[:1])
    clf.set_params(eta0=16.0, reuse_schedule=(True, 0))
    with pytest.raises(ValueError, match="reuse_schedule"):
        clf.partial_fit(X[:1], y[:1])
    clf.set_params(reuse_schedule=(1, 0))
    clf.partial_fit(X[:1], y[:1])


def test_a_dict_parameter_is_validated_at_every_call():
    clf, X, y = _fitted(loss="hinge", loss_params={})
    clf.partial_fit(X[:1], y[:1])
    assert clf not in _base._validated or _base._validated[clf] is None
    clf.loss_params["nonsense"] = 1  # changed in place, without set_params
    with pytest.raises(Exception, match="nonsense"):
        clf.partial_fit(X[:1], y[:1])


def test_the_memo_is_not_pickled_and_a_copy_validates_again():
    clf, X, y = _fitted()
    clf.partial_fit(X[:1], y[:1])
    assert clf in _base._validated
    copy = pickle.loads(pickle.dumps(clf))
    assert copy not in _base._validated
    copy.partial_fit(X[:1], y[:1])
    assert copy in _base._validated
