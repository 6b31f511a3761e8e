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


@pytest.mark.parametrize("kernel, params", [
    ("gaussian", {}), ("gaussian", {"pairs": True}), ("laplacian", {}), ("matern", {}),
    ("isotropic_cauchy", {}), ("orf", {}), ("sorf", {}), ("fastfood", {}), ("arccos", {})])
def test_few_dense_rows_read_as_csr_are_the_rows_of_a_batch(kernel, params):
    # fewer than SMALL_DENSE dense rows are projected through the cached
    # blocks' transposed frequencies (the CSR route, vectorised), a batch by
    # the dense product: the same chains of fused products, the same bits
    X, y = _stream(d=13)
    clf = DSGClassifier(kernel=kernel, kernel_params=params or None, batch_size=4,
                        block_size=32, max_blocks=4, random_state=0)
    clf.partial_fit(X[:100], y[:100], classes=[0, 1])
    Xq = X[200:240]
    whole = clf.decision_function(Xq)
    for k in (1, 2, 3):
        rows = np.concatenate([clf.decision_function(Xq[i:i + k]) for i in range(0, 39, k)])
        assert rows.tobytes() == whole[:rows.shape[0]].tobytes()


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


@pytest.mark.parametrize("classes, loss", [
    ([0, 1], "logistic"), ([False, True], "hinge"),  # one margin column
    ([2, 5, 9], "hinge"),                             # a margin column per class
    ([2, 5, 9], "multinomial"),                       # class indices
])
def test_one_label_is_encoded_as_in_a_batch(classes, loss):
    from onlinekernel import get_loss
    from onlinekernel.estimators._classifier import fast_labels
    classes, loss = np.array(classes), get_loss(loss)
    if len(classes) > 2:
        loss = loss.multiclass_loss()
    y = np.array([classes[i] for i in (0, 2, 1, 1, 0, 2) if i < len(classes)])
    batch = DSGClassifier._encode(classes, loss, y)[0]
    for i in range(len(y)):
        one = fast_labels(classes, loss, y[i:i + 1])
        assert one.tobytes() == batch[i:i + 1].tobytes() and one.flags.writeable
    assert fast_labels(classes, loss, np.array([7])) is None  # unknown: full validation
    assert fast_labels(classes, loss, y[:1].astype(float)) is None  # another kind: the same


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


def _record_steps(monkeypatch):
    """The positional arguments of every ``train_steps`` call from here on.

    A call with more than 7 started from a prediction's outputs and features.
    """
    calls = []
    train_steps = _base.train_steps
    monkeypatch.setattr(_base, "train_steps",
                        lambda *args, **kw: calls.append(args) or train_steps(*args, **kw))
    return calls


def _shared(calls):
    return {"shared": sum(len(args) > 7 for args in calls), "all": len(calls)}


@pytest.mark.parametrize("make, shares", [
    # models that predict with their last iterate
    (lambda: DSGClassifier(batch_size=4, block_size=32, max_blocks=4, average=False,
                           random_state=0), True),
    (lambda: DSGClassifier(batch_size=4, block_size=32, max_blocks=64, average=False,
                           random_state=0), True),
    (lambda: DSGClassifier(batch_size=4, block_size=32, max_blocks=4, precondition=False,
                           reuse="check", average=False, random_state=0), True),
    (lambda: DSGClassifier(batch_size=4, block_size=32, max_blocks=4, loss="hinge",
                           average=False, random_state=0), True),
    (lambda: DSGRegressor(batch_size=4, block_size=32, max_blocks=4, loss="huber",
                          random_state=0), True),
    # predictions from the running average (the classifier's default), or summed
    # in float: nothing to share
    (lambda: DSGClassifier(batch_size=4, block_size=32, max_blocks=4, random_state=0), False),
    (lambda: DSGClassifier(batch_size=4, block_size=32, max_blocks=4, average=True,
                           random_state=0), False),
    (lambda: DSGClassifier(batch_size=4, block_size=32, max_blocks=4, dtype="float32",
                           random_state=0), False),
])
def test_a_step_on_a_row_just_predicted_starts_from_that_prediction(make, shares, monkeypatch):
    # test-then-train evaluates each row's features once, and trains the same
    # model as learning without predicting, bit for bit
    X, y = _stream()
    regressor = isinstance(make(), DSGRegressor)
    t = X[:, 2] if regressor else y
    kw = {} if regressor else {"classes": [0, 1]}
    plain, tested = make().partial_fit(X[:60], t[:60], **kw), make().partial_fit(X[:60], t[:60], **kw)
    for i in range(60, 160):
        plain.partial_fit(X[i:i + 1], t[i:i + 1])
    calls = _record_steps(monkeypatch)
    for i in range(60, 160):
        tested.predict(X[i:i + 1])
        tested.partial_fit(X[i:i + 1], t[i:i + 1])
    assert _shared(calls) == {"shared": 100 if shares else 0, "all": 100}
    assert tested._coef.tobytes() == plain._coef.tobytes()
    assert tested._intercept.tobytes() == plain._intercept.tobytes()
    assert tested._scale == plain._scale and tested.n_blocks_ == plain.n_blocks_


def test_only_the_row_just_predicted_by_the_model_as_it_is_is_shared(monkeypatch):
    clf, X, y = _fitted(average=False)
    calls = _record_steps(monkeypatch)
    clf.predict(X[200:201])
    clf.partial_fit(X[201:202], y[201:202])  # another row
    clf.predict(X[202:203])
    clf.partial_fit(X[203:204], y[203:204])  # a step in between: the model changed
    clf.partial_fit(X[202:203], y[202:203])
    clf.predict(X[204:205])
    clf.react_to_drift("shrink")  # a reaction publishes a new model too
    clf.partial_fit(X[204:205], y[204:205])
    clf.predict(X[205:207])  # two rows: not kept
    clf.partial_fit(X[205:206], y[205:206])
    clf.predict(X[206:207])
    clf.partial_fit(X[206:207], y[206:207])  # the one shared step
    clf.partial_fit(X[206:207], y[206:207])  # used once
    assert _shared(calls) == {"shared": 1, "all": 7}


def _step_arguments(clf, row, label, monkeypatch):
    """The arguments of the train_steps call of a one-row partial_fit."""
    with monkeypatch.context() as m:
        calls = _record_steps(m)
        clf.partial_fit(row, label)
    return calls[0]


def test_the_compiled_shortcut_refuses_what_it_cannot_take(monkeypatch):
    from onlinekernel.solvers.dsg import predict_raw, train_steps
    clf, X, y = _fitted()
    model, loss, xr, Y, sw, order, plan = _step_arguments(clf, X[:1], y[:1], monkeypatch)
    with pytest.raises(ValueError, match="keep must be an array"):
        predict_raw(model.blocks, xr, model.coef, model.n_blocks, 1.0, model.intercept,
                    keep=np.empty((model.n_blocks, 2, 32)))
    keep = np.empty((model.n_blocks, 1, 32))
    U = predict_raw(model.blocks, xr, model.coef, model.n_blocks, model.scale,
                    model.intercept, keep=keep)
    with pytest.raises(ValueError, match="go together"):
        train_steps(model.copy(), loss, xr, Y, sw, order, plan, U)
    with pytest.raises(ValueError, match="shaped"):
        train_steps(model.copy(), loss, xr, Y, sw, order, plan, U, keep[:-1])
    with pytest.raises(ValueError, match="shaped"):
        train_steps(model.copy(), loss, xr, Y, sw, order, plan, U[:, :0], keep)
    f32, X, y = _fitted(dtype="float32")
    model, loss, xr, Y, sw, order, plan = _step_arguments(f32, X[:1], y[:1], monkeypatch)
    with pytest.raises(ValueError, match="float64 models only"):
        train_steps(model, loss, xr, Y, sw, order, plan, np.zeros((1, 1)),
                    np.zeros((model.n_blocks, 1, 32), dtype=np.float32))
