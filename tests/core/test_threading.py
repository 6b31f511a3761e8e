"""Threads: predictions during training see whole models, training calls are
serialised, and the compiled loops release the GIL.

The guarantees are documented in ``onlinekernel/integrations/river.py`` and
``docs/streaming.rst``.
"""
import math
import random
import threading
import time

import numpy as np
import pytest

from onlinekernel import DSGClassifier, DSGRegressor, Loss

TIMEOUT = 120  # seconds; a deadlock fails the test instead of hanging the suite


def _stream(n_batches, rows, d, seed):
    rng = np.random.default_rng(seed)
    for _ in range(n_batches):
        X = rng.normal(size=(rows, d))
        yield X, (np.hypot(X[:, 0], X[:, 1]) < 1.1).astype(int), np.sin(X[:, 0]) + X[:, 1] ** 2


def _run(threads):
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
        assert not t.is_alive(), "a thread did not finish (deadlock?)"


# ---------------------------------------------------------------------- #
# predict while another thread trains
# ---------------------------------------------------------------------- #
@pytest.mark.parametrize("kind, params", [
    ("classifier", {"loss": "logistic"}),
    ("regressor", {"average": True}),  # predictions read the averaged arrays
    ("classifier", {"max_blocks": None, "block_size": 64}),  # the model keeps growing
])
def test_predictions_during_partial_fit_are_whole_models(kind, params):
    batches = list(_stream(41, 64, 5, seed=1))
    P = np.random.default_rng(2).normal(size=(40, 5))
    cls = DSGClassifier if kind == "classifier" else DSGRegressor
    est = cls(random_state=0, batch_size=16, **params)

    def fit(X, yc, yr):
        if kind == "classifier":
            est.partial_fit(X, yc, classes=[0, 1])
        else:
            est.partial_fit(X, yr)

    fit(*batches[0])
    # the trainer records the model's outputs on P after each of its calls;
    # as only it trains, these are exactly the successive models
    snapshots = [est.decision_function(P) if kind == "classifier" else est.predict(P)]
    done = threading.Event()
    errors, reads = [], [[] for _ in range(3)]

    def trainer():
        try:
            for b in batches[1:]:
                fit(*b)
                snapshots.append(est.decision_function(P) if kind == "classifier"
                                 else est.predict(P))
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            done.set()

    def reader(out):
        try:
            while not done.is_set():
                out.append(est.decision_function(P) if kind == "classifier"
                           else est.predict(P))
        except BaseException as exc:
            errors.append(exc)

    _run([threading.Thread(target=trainer)]
         + [threading.Thread(target=reader, args=(r,)) for r in reads])
    assert not errors, errors
    index = {s.tobytes(): i for i, s in enumerate(snapshots)}
    assert len(index) == len(snapshots)  # every call changed the model
    seen = [index.get(r.tobytes()) for out in reads for r in out]
    torn = sum(i is None for i in seen)
    assert torn == 0, f"{torn} of {len(seen)} concurrent predictions match no model"
    # the readers did run during training (a weak check: they saw 2+ models)
    assert len(set(seen)) >= 2, f"readers saw only models {set(seen)}"


class _LoggedSquared(Loss):
    """Squared loss that logs the first target of every batch it is given."""

    name = "logged_squared"
    target_encoding = "real"
    link = "identity"
    seen = []  # class level: the estimator works on a deep copy of the loss

    def loss(self, y, raw):
        return 0.5 * ((raw - y) ** 2).sum(axis=1)

    def gradient(self, y, raw):
        _LoggedSquared.seen.append(float(y[0, 0]))
        return raw - y


def test_concurrent_partial_fit_calls_are_serialised():
    # two threads train the same model; the result must be the model of the
    # calls run one after the other, in the order they took the lock
    rng = np.random.default_rng(3)
    B, n_calls = 16, 25
    work = {t: [(rng.normal(size=(B, 4)), rng.normal(size=B)) for _ in range(n_calls)]
            for t in range(2)}
    by_first_target = {float(y[0]): (X, y) for t in work for X, y in work[t]}
    assert len(by_first_target) == 2 * n_calls

    def make():
        return DSGRegressor(loss=_LoggedSquared(), random_state=0, batch_size=B, normalize_y=False,
                            block_size=64, max_blocks=8, eta0=0.5)

    est = make()
    X0, y0 = rng.normal(size=(B, 4)), rng.normal(size=B)
    est.partial_fit(X0, y0)
    _LoggedSquared.seen.clear()
    errors = []
    start = threading.Barrier(2)

    def worker(t):
        try:
            start.wait()
            for X, y in work[t]:
                est.partial_fit(X, y)
        except BaseException as exc:
            errors.append(exc)

    _run([threading.Thread(target=worker, args=(t,)) for t in range(2)])
    assert not errors, errors
    assert est.t_ == 1 + 2 * n_calls  # no step lost: one step per call
    assert est.samples_seen_ == B * (1 + 2 * n_calls)
    order = list(_LoggedSquared.seen)
    assert sorted(order) == sorted(by_first_target)  # each batch trained once

    replay = make()
    replay.partial_fit(X0, y0)
    for first in order:
        replay.partial_fit(*by_first_target[first])
    np.testing.assert_array_equal(replay.coef_, est.coef_)
    np.testing.assert_array_equal(replay.intercept_, est.intercept_)


def test_fit_and_partial_fit_concurrently_leave_a_sequential_model():
    rng = np.random.default_rng(4)
    X, y = rng.normal(size=(256, 3)), rng.normal(size=256)
    est = DSGRegressor(random_state=0, batch_size=32, solver="sgd", max_iter=2, tol=None).fit(X, y)
    errors = []

    def refit():
        try:
            for _ in range(5):
                est.fit(X, y)
        except BaseException as exc:
            errors.append(exc)

    def more():
        try:
            for i in range(20):
                est.partial_fit(X[i * 8:(i + 1) * 8], y[i * 8:(i + 1) * 8])
        except BaseException as exc:
            errors.append(exc)

    _run([threading.Thread(target=refit), threading.Thread(target=more)])
    assert not errors, errors
    # the model is a fit followed by some of the partial_fit calls: t_ says how many
    steps_of_fit = 2 * 256 // 32
    k = est.t_ - steps_of_fit
    assert 0 <= k <= 20 and est.samples_seen_ == 2 * 256 + 8 * k
    ref = DSGRegressor(random_state=0, batch_size=32, solver="sgd", max_iter=2, tol=None).fit(X, y)
    for i in range(20 - k, 20):
        ref.partial_fit(X[i * 8:(i + 1) * 8], y[i * 8:(i + 1) * 8])
    np.testing.assert_array_equal(ref.coef_, est.coef_)


# ---------------------------------------------------------------------- #
# the GIL
# ---------------------------------------------------------------------- #
def _spinner_rate_during(fn):
    """Iterations per second of a pure-Python loop in another thread while ``fn`` runs,
    relative to its rate while this thread sleeps as long."""
    count = [0]
    stop = threading.Event()

    def spin():
        c = count
        while not stop.is_set():
            c[0] += 1

    t = threading.Thread(target=spin)
    t.start()
    try:
        time.sleep(0.05)  # let it start
        c0, t0 = count[0], time.perf_counter()
        fn()
        c1, t1 = count[0], time.perf_counter()
        time.sleep(t1 - t0)
        c2, t2 = count[0], time.perf_counter()
    finally:
        stop.set()
        t.join(TIMEOUT)
    during = (c1 - c0) / (t1 - t0)
    alone = (c2 - c1) / (t2 - t1)
    return during / alone, t1 - t0


@pytest.fixture(scope="module")
def big_model():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(20000, 8))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    est = DSGClassifier(random_state=0, batch_size=16).partial_fit(X[:512], y[:512],
                                                                  classes=[0, 1])
    assert est.n_random_features_ == 4096
    return est, X, y


def test_harness_detects_a_call_holding_the_gil():
    # the control: a long C loop that holds the GIL starves the spinner
    ratio, seconds = _spinner_rate_during(lambda: sum(range(2 * 10 ** 7)))
    assert seconds > 0.2
    assert ratio < 0.1, ratio


def test_predict_releases_the_gil(big_model):
    est, X, _ = big_model
    ratio, seconds = _spinner_rate_during(lambda: est.decision_function(X))
    assert seconds > 0.2
    # with the GIL held the spinner would stop (ratio ~0.02 at most, see the
    # control); released, it runs at a good fraction of its own speed even
    # on a loaded machine
    assert ratio > 0.2, f"a Python thread ran at {ratio:.0%} of its speed during predict"


def test_partial_fit_releases_the_gil(big_model):
    est, X, y = big_model
    model = DSGClassifier(**est.get_params())
    model.partial_fit(X[:512], y[:512], classes=[0, 1])
    model.set_params(batch_size=256)  # long steps: the GIL is dropped per step
    ratio, seconds = _spinner_rate_during(lambda: model.partial_fit(X[512:8704], y[512:8704]))
    assert seconds > 0.2
    assert ratio > 0.2, f"a Python thread ran at {ratio:.0%} of its speed during partial_fit"


# ---------------------------------------------------------------------- #
# the River adapter
# ---------------------------------------------------------------------- #
def test_river_adapter_predicts_while_learning_new_labels():
    from onlinekernel.integrations.river import RiverClassifier

    rng = random.Random(0)
    labels = ["a", "b", "c", "d", "e"]
    stream = []
    for i in range(600):
        k = rng.randrange(min(2 + i // 100, len(labels)))  # labels appear over time
        angle = 2 * math.pi * k / len(labels)
        stream.append(({"p": 3 * math.cos(angle) + rng.gauss(0, 0.5),
                        "q": 3 * math.sin(angle) + rng.gauss(0, 0.5)}, labels[k]))
    model = RiverClassifier(warm_up=8, seed=0)
    done = threading.Event()
    errors, results = [], []

    def learner():
        try:
            for x, y in stream:
                model.learn_one(x, y)
        except BaseException as exc:
            errors.append(exc)
        finally:
            done.set()

    def predictor():
        try:
            while not done.is_set():
                proba = model.predict_proba_one({"p": 0.5, "q": -0.5})
                if proba:
                    results.append(proba)
        except BaseException as exc:
            errors.append(exc)

    _run([threading.Thread(target=learner), threading.Thread(target=predictor)])
    assert not errors, errors
    assert set(model.classes_) == set(labels)
    for proba in results:  # a whole view: labels in index order, probabilities
        assert list(proba) == list(model.classes_[:len(proba)])
        assert math.isclose(sum(proba.values()), 1.0, rel_tol=1e-9)
    assert len({len(p) for p in results}) >= 2  # it ran while labels were added


def test_predictions_while_fit_changes_the_class_set_are_never_torn():
    # two models with disjoint labels and opposite rules: a prediction of the
    # old coefficients with the new labels (or the reverse) gives a label that
    # neither model predicts for that row
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2))
    pos = X[:, 0] > 0
    y_a = pos.astype(int)           # A: 1 where x0 > 0
    y_b = np.where(pos, 10, 11)     # B: 10 where x0 > 0
    model = DSGClassifier(max_blocks=2, block_size=32, random_state=0).fit(X, y_a)
    Xq = X[:64]
    # what a whole model predicts: A gives 1 or 0, B 10 or 11, for x0 > 0 and not
    whole = {(True, 1), (False, 0), (True, 10), (False, 11)}
    # allow each model's own mistakes on the training rows it predicts
    for y in (y_a, y_b):
        fitted = DSGClassifier(max_blocks=2, block_size=32, random_state=0).fit(X, y)
        whole |= set(zip(pos[:64].tolist(), fitted.predict(Xq).tolist()))
    stop, seen, errors = threading.Event(), set(), []

    def reader():
        while not stop.is_set():
            try:
                seen.update(zip(pos[:64].tolist(), model.predict(Xq).tolist()))
            except Exception as exc:  # noqa: BLE001 - any error is a failure here
                errors.append(exc)
                return

    t = threading.Thread(target=reader)
    t.start()
    try:
        for i in range(12):
            model.fit(X, y_b if i % 2 == 0 else y_a)
    finally:
        stop.set()
        t.join()
    assert not errors, errors
    assert seen <= whole, f"torn predictions: {sorted(seen - whole)}"


def test_each_estimator_has_one_training_lock_which_leaves_with_it():
    import gc

    from onlinekernel.core import threads
    a, b = DSGClassifier(), DSGClassifier()
    assert threads.train_lock(a) is threads.train_lock(a)
    assert threads.train_lock(a) is not threads.train_lock(b)
    key = id(a)
    del a
    gc.collect()
    assert key not in threads._train_locks  # no stale lock for a later object at that id
    assert id(b) in threads._train_locks
