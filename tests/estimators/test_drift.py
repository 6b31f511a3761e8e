"""Non-stationary learning: the step floor, forgetting and drift reactions (issue 14, item 2)."""
import copy
import doctest
import json
import pickle

import numpy as np
import pytest
from conftest import learn_then_pickle
from sklearn.base import clone

import onlinekernel
from onlinekernel import DSGClassifier, DSGRegressor

pytest.importorskip("river")
from river import drift  # noqa: E402

from onlinekernel.integrations.river import RiverClassifier, RiverRegressor  # noqa: E402

from benchmarks import drift as bench  # noqa: E402
from benchmarks.drift import abrupt_stream, prequential_hits, rows_to_recover  # noqa: E402


def _data(n=256, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X, (np.sin(2 * X[:, 0]) + X[:, 1] > 0).astype(int)


# --------------------------------------------------------------------------- #
# parameters
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("cls", [DSGClassifier, DSGRegressor])
def test_new_parameters_clone_and_default_to_the_stationary_model(cls):
    est = cls(eta_min=0.5, forgetting=1e-3)
    params = clone(est).get_params()
    assert params["eta_min"] == 0.5 and params["forgetting"] == 1e-3
    assert cls().get_params()["eta_min"] == 0.0 and cls().get_params()["forgetting"] == 0.0


@pytest.mark.parametrize("params, match", [
    ({"eta_min": -1.0}, "eta_min must be a finite number >= 0"),
    ({"eta_min": np.inf}, "eta_min must be a finite number"),
    ({"forgetting": 1.0}, r"forgetting must be a number in \[0, 1\)"),
    ({"forgetting": -0.1}, r"forgetting must be a number in \[0, 1\)"),
    ({"forgetting": True}, r"forgetting must be a number in \[0, 1\)"),
    ({"forgetting": 0.01, "precondition": "eigenpro", "max_blocks": 2},
     "forgetting cannot be combined with precondition='eigenpro'"),
])
def test_bad_values_raise_in_partial_fit(params, match):
    X, y = _data()
    with pytest.raises(ValueError, match=match):
        DSGClassifier(**params).partial_fit(X, y, classes=[0, 1])


def test_a_floor_at_eta0_is_the_constant_schedule():
    X, y = _data(512)
    floor = DSGClassifier(learning_rate="inverse", eta_min=64.0, t0=1.0, random_state=0)
    const = DSGClassifier(learning_rate="constant", random_state=0)
    for est in (floor, const):
        for i in range(0, 512, 64):
            est.partial_fit(X[i:i + 64], y[i:i + 64], classes=[0, 1])
    assert np.array_equal(floor.coef_, const.coef_)
    plain = DSGClassifier(learning_rate="inverse", t0=1.0, random_state=0)
    for i in range(0, 512, 64):
        plain.partial_fit(X[i:i + 64], y[i:i + 64], classes=[0, 1])
    assert not np.allclose(plain.coef_, const.coef_)  # the floor did something


@pytest.mark.parametrize("batch", [32, 7])
def test_forgetting_shrinks_old_blocks_by_one_factor_per_row(batch):
    # plain update, no penalty: a growth step leaves the old blocks alone
    # except for the forgetting, (1 - f) ** rows
    X, y = _data()
    f = 0.01
    est = DSGClassifier(alpha=0.0, forgetting=f, precondition=False, batch_size=32,
                        average=False, random_state=0)
    est.partial_fit(X[:32], y[:32], classes=[0, 1])
    first = est.coef_.copy()
    est.partial_fit(X[32:32 + batch], y[32:32 + batch])
    assert est.n_blocks_ == 2
    np.testing.assert_allclose(est.coef_[:first.shape[0]], first * (1 - f) ** batch,
                               rtol=1e-12)


def test_forgetting_fades_under_the_reuse_rules_and_preconditioning():
    X, y = _data(1024)
    kept = DSGClassifier(max_blocks=2, random_state=0)
    faded = DSGClassifier(max_blocks=2, forgetting=0.01, random_state=0)
    for est in (kept, faded):
        for i in range(0, 1024, 32):
            est.partial_fit(X[i:i + 32], y[i:i + 32], classes=[0, 1])
    # forgetting 1 % a row keeps only the last few hundred rows' steps
    assert np.linalg.norm(faded.coef_) < 0.5 * np.linalg.norm(kept.coef_)


# --------------------------------------------------------------------------- #
# reactions
# --------------------------------------------------------------------------- #
def _fitted(**params):
    X, y = _data(512)
    # the last iterate on the inverse schedule, whose steps the tests work out
    params = {"learning_rate": "inverse", "average": False, **params}
    est = DSGClassifier(random_state=0, **params)
    for i in range(0, 512, 32):
        est.partial_fit(X[i:i + 32], y[i:i + 32], classes=[0, 1])
    return est, X, y


def test_reset_step_restarts_the_schedule_and_keeps_the_coefficients():
    # room in the budget and the plain update: a step scales the old blocks
    # by exactly (1 - step * alpha), which shows the step taken
    alpha = 1e-3
    est, X, y = _fitted(precondition=False, max_blocks=32, alpha=alpha)
    coef = est.coef_.copy()
    est.react_to_drift("reset_step")
    assert np.array_equal(est.coef_, coef) and est._clock_start == est.samples_seen_
    plain = copy.deepcopy(est)
    del plain._clock_start  # the same model without the reaction
    for model in (est, plain):
        model.partial_fit(X[:32], y[:32])
    rows = coef.shape[0]
    np.testing.assert_allclose(est.coef_[:rows], coef * (1 - est.eta0 * alpha), rtol=1e-12)
    decayed = est.eta0 / (1 + 16 / est.t0)  # the schedule at its 17th step
    np.testing.assert_allclose(plain.coef_[:rows], coef * (1 - decayed * alpha), rtol=1e-12)


def test_shrink_halves_the_coefficients_and_regrow_drops_the_blocks():
    est, X, y = _fitted()
    coef, b = est.coef_.copy(), est.intercept_.copy()
    np.testing.assert_allclose(copy.deepcopy(est).react_to_drift("shrink").coef_, 0.5 * coef)
    est.react_to_drift("regrow")
    assert est.n_blocks_ == 0 and est.coef_.shape[0] == 0
    np.testing.assert_array_equal(est.decision_function(X), np.full(len(X), b[0]))
    est.partial_fit(X[:32], y[:32])  # grows again
    assert est.n_blocks_ == 1


@pytest.mark.parametrize("average", [True, "polynomial"])
def test_a_reaction_restarts_averaging(average):
    est, X, y = _fitted(average=average)
    est.react_to_drift("reset_step")
    assert est.n_averaged_ == 0
    est.partial_fit(X[:32], y[:32])
    np.testing.assert_allclose(est.coef_, est._scale * est._coef[:est.n_random_features_])


def test_unknown_reaction_raises():
    est, _, _ = _fitted()
    with pytest.raises(ValueError, match="unknown drift_reaction 'forget'"):
        est.react_to_drift("forget")


def test_the_restarted_clock_survives_model_files_and_pickles(tmp_path):
    est, X, y = _fitted()
    est.react_to_drift("reset_step")
    est.partial_fit(X[:64], y[:64])
    path = tmp_path / "m.okm"
    est.save(path)
    loaded = onlinekernel.load(path)
    unpickled = pickle.loads(pickle.dumps(est))
    assert loaded._clock_start == unpickled._clock_start == est._clock_start
    for model in (est, loaded, unpickled):
        model.partial_fit(X[64:128], y[64:128])
    assert np.array_equal(loaded.coef_, est.coef_)
    assert np.array_equal(unpickled.coef_, est.coef_)


def test_a_model_file_without_the_clock_loads_as_never_reset(tmp_path):
    est, X, y = _fitted()
    path = tmp_path / "m.okm"
    est.save(path)  # no reaction: no _clock_start, as in files of earlier versions
    loaded = onlinekernel.load(path)
    assert "_clock_start" not in loaded.__dict__
    for model in (est, loaded):
        model.partial_fit(X[:64], y[:64])
    assert np.array_equal(loaded.coef_, est.coef_)


# --------------------------------------------------------------------------- #
# the River adapter's detector
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("params, error, match", [
    ({"drift_detector": object()}, TypeError,
     "drift_detector must be None, .adwin. or a drift detector with"),
    ({"drift_reaction": "restart"}, ValueError, "unknown drift_reaction 'restart'"),
])
def test_adapter_rejects_bad_drift_parameters(params, error, match):
    with pytest.raises(error, match=match):
        RiverClassifier(**params)


def test_adapter_keeps_the_detector_as_given_and_clones():
    det = drift.ADWIN(delta=0.01)
    model = RiverClassifier(drift_detector=det, drift_reaction="shrink", seed=0)
    for x, y in abrupt_stream(300, 300, 0):
        model.learn_one(x, y)
    assert det.n_detections == 0 and det.width == 0  # the adapter updates its own copy
    c = model.clone()
    assert c.drift_detector.delta == 0.01 and c.drift_reaction == "shrink"


class _Always:
    """A detector that fires at every update (River's interface)."""

    def __init__(self):
        self.drift_detected = False

    def update(self, x):
        self.drift_detected = True


def test_a_detection_of_falling_errors_is_ignored():
    # a model learning a fixed concept: its errors only fall
    model = RiverClassifier(drift_detector=_Always(), drift_reaction="regrow", seed=0)
    for x, y in abrupt_stream(600, 600, 0):
        model.learn_one(x, y)
    assert len(model.drifts_) < 10 and model.model_.n_blocks_ > 0


def test_learn_many_feeds_the_detector_and_reacts_once():
    import pandas as pd
    stream = abrupt_stream(1600, 800, 0)
    X = pd.DataFrame([x for x, _ in stream])
    y = pd.Series([t for _, t in stream])
    model = RiverClassifier(drift_detector=drift.ADWIN(), drift_reaction="regrow", seed=0)
    for i in range(0, 1600, 100):
        model.learn_many(X.iloc[i:i + 100], y.iloc[i:i + 100])
    assert any(800 <= d < 1000 for d in model.drifts_), model.drifts_


def test_adapter_with_a_detector_pickles_and_continues_identically():
    model, other = learn_then_pickle(
        RiverClassifier(drift_detector=drift.ADWIN(), drift_reaction="regrow", seed=0),
        abrupt_stream(1200, 600, 0), 700)
    assert model.drifts_ == other.drifts_ and model.drifts_
    assert np.array_equal(model.model_.coef_, other.model_.coef_)


@pytest.mark.parametrize("make", [
    lambda: RiverClassifier(drift_detector=drift.ADWIN(), seed=0),
    lambda: RiverRegressor(drift_detector=drift.ADWIN(), seed=0)])
def test_test_then_train_reuses_the_prediction_exactly(make):
    # predict_one before learn_one lets the detector reuse that prediction:
    # the same errors, reactions and model as learn_one alone
    stream = abrupt_stream(1000, 500, 0)
    if isinstance(make(), RiverRegressor):
        stream = [(x, float(y) + x["x0"]) for x, y in stream]
    alone, both = make(), make()
    for x, y in stream:
        alone.learn_one(x, y)
        both.predict_one(x)
        both.learn_one(x, y)
    assert alone.drifts_ == both.drifts_ and alone.drifts_
    assert np.array_equal(alone.model_.coef_, both.model_.coef_)


def test_an_adapter_pickled_without_drift_state_still_learns():
    model = RiverClassifier(seed=0)
    for x, y in abrupt_stream(100, 100, 0):
        model.learn_one(x, y)
    state = model.__getstate__()
    for key in ("drift_detector", "drift_reaction", "_detector", "_drifts", "_n_learned",
                "_error_means", "_last"):
        del state[key]  # as pickled by an earlier version
    old = RiverClassifier.__new__(RiverClassifier)
    old.__setstate__(state)
    x, y = abrupt_stream(1, 1, 1)[0]
    old.predict_one(x)
    old.learn_one(x, y)
    assert old.drifts_ == ()


def test_regressor_detects_a_flipped_target_and_regrows():
    # (its constant step makes "reset_step" a no-op: regrow is the reaction)
    rng = np.random.default_rng(0)
    u = rng.uniform(-3, 3, size=2000)
    t = np.where(np.arange(2000) < 1000, np.sin(u), -np.sin(u))
    errors = {}
    for name, det in (("none", None), ("regrow", drift.ADWIN())):
        model = RiverRegressor(drift_detector=det, drift_reaction="regrow", seed=0)
        e = []
        for ui, ti in zip(u, t):
            e.append(abs(model.predict_one({"u": ui}) - ti))
            model.learn_one({"u": ui}, ti)
        errors[name] = np.mean(e[1100:1500])  # after the detection
        if det is not None:
            assert any(1000 <= d < 1100 for d in model.drifts_), model.drifts_
    assert errors["regrow"] < 0.7 * errors["none"], errors


# --------------------------------------------------------------------------- #
# the acceptance test: recovery after an abrupt change
# --------------------------------------------------------------------------- #
# The figure of docs/streaming.rst: benchmarks/drift.py's stream (seed 0),
# labels flipping at row 5,000 of 10,000; recovery: the trailing 250-row
# prequential accuracy back within 0.05 of the 1,000 rows before the change.
# Measured with the adapter's defaults (no intercept since the stream
# defaults of 2026-11-28; seeds 0, 1, 2): ADWIN + regrow 468, 617 and 561
# rows (one detection each, 23 rows after the change), no reaction 1,990,
# 2,258 and 1,587 rows.  (This test ran a 3,000-row version of the stream
# before: with the intercept, the 1,500 rows before the change reached 0.928
# and regrow recovered in 545 rows; without it they reach 0.964, whose
# 0.05 band a model regrown 1,500 rows into the stream only re-learns in 828
# rows, although it is the more accurate one after the change too.)
CHANGE, ROWS, BEFORE = 5000, 10000, 1000
RECOVERY_ROWS = 600


def test_regrow_recovers_from_an_abrupt_change_within_the_stated_rows():
    stream = abrupt_stream(ROWS, CHANGE, 0)
    rows = {}
    for name, params in (("none", {"drift_detector": None}),
                         ("regrow", {"drift_detector": drift.ADWIN(),
                                     "drift_reaction": "regrow"})):
        model = RiverClassifier(seed=0, **params)
        hits = prequential_hits(model, stream)
        rows[name] = rows_to_recover(hits, CHANGE, before=BEFORE, window=250, tolerance=0.05)
        if name == "regrow":
            # one detection, shortly after the change, none before it
            assert len(model.drifts_) == 1 and CHANGE <= model.drifts_[0] < CHANGE + 100
    assert rows["regrow"] is not None and rows["regrow"] <= RECOVERY_ROWS, rows
    # without a reaction the model recovers much later (or not in the stream)
    assert rows["none"] is None or rows["none"] > 1.5 * rows["regrow"], rows


def test_benchmark_quick_run_writes_results_and_figure(tmp_path):
    report = bench.main(["--quick", "--rows", "400", "--change", "200", "--before", "100",
                         "--window", "50", "--no-river", "--out-dir", str(tmp_path)])
    saved = json.loads((tmp_path / "drift_quick.json").read_text())
    assert saved["benchmark"] == "drift" and set(saved["abrupt"]["systems"]) == set(
        report["abrupt"]["systems"])
    assert (tmp_path / "drift_quick.md").read_text().startswith("# Drift")
    assert (tmp_path / "drift_quick.png").stat().st_size > 0


def test_benchmark_docstring_examples():
    runner = doctest.DocTestRunner()
    for test in doctest.DocTestFinder().find(bench, bench.__name__, globs=vars(bench).copy()):
        runner.run(test)
    assert runner.summarize(verbose=False).attempted and not runner.summarize(
        verbose=False).failed


def test_the_classifier_adapter_detects_by_default_and_the_regressor_does_not():
    assert RiverClassifier().drift_detector == "adwin"
    assert RiverClassifier().drift_reaction == "regrow"
    assert RiverRegressor().drift_detector is None
    assert type(RiverClassifier()._detector).__name__ == "ADWIN"
    with pytest.raises(ValueError, match="drift_detector must be None, 'adwin' or"):
        RiverClassifier(drift_detector="kswin")
