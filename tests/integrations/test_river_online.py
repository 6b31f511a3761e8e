"""The River adapters' one-row path and their online preprocessing.

``standardize="running"`` (River's StandardScaler inside the adapter) and
``refresh_gamma`` (the bandwidth re-fitted to the recent samples' variance).
"""
import pickle
import random

import numpy as np
import pytest
from conftest import learn_then_pickle

pytest.importorskip("river")

from onlinekernel.integrations.river import RiverClassifier, RiverRegressor  # noqa: E402


def _rows(n, d=4, scale=1.0, seed=0):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        x = {f"f{j}": rng.gauss(0.5, 1.0) * scale for j in range(d)}
        out.append((x, x["f0"] * x["f1"] > 0))
    return out


def test_a_row_of_plain_numbers_reads_as_the_checked_conversion():
    model = RiverClassifier(seed=0, warm_up=8)
    for x, y in _rows(20):
        model.learn_one(x, y)
    view = model._view
    x = {"f0": 1, "f1": 2.5, "f2": np.float32(0.25), "f3": -3}  # ints and floats: fast path
    checked = {"f0": True, "f1": 2.5, "f2": 0.25, "f3": -3, "other": "ignored"}
    checked["f0"] = 1.0
    assert model._raw_row(x, view).tolist() == [1.0, 2.5, 0.25, -3.0]
    assert model._raw_row(checked, view).tolist() == [1.0, 2.5, 0.25, -3.0]
    # missing keys, None and NaN count as 0.0; bools as 0/1
    assert model._raw_row({"f1": None, "f2": float("nan"), "f3": True}, view).tolist() == \
        [0.0, 0.0, 0.0, 1.0]


def test_a_bad_value_is_refused_by_name_and_leaves_the_adapter_unchanged():
    model = RiverClassifier(seed=0, warm_up=8, standardize="running", refresh_gamma=5)
    for x, y in _rows(20):
        model.learn_one(x, y)
    before = pickle.dumps(model)
    with pytest.raises(TypeError, match="'f2'"):
        model.learn_one({"f0": 1.0, "f1": 1.0, "f2": "a", "f3": 0.0}, True)
    with pytest.raises(ValueError, match="'f1' is infinite"):
        model.learn_one({"f0": 1.0, "f1": float("inf")}, True)
    with pytest.raises(ValueError, match="NaN"):
        model.learn_one({"f0": 1.0}, float("nan"))
    assert pickle.dumps(model) == before


def test_running_standardisation_follows_every_learned_sample():
    stream = _rows(60, seed=1) + _rows(200, scale=10.0, seed=2)
    model = RiverRegressor(seed=0, warm_up=16, standardize="running")
    for x, _ in stream:
        model.learn_one(x, x["f0"])
    X = np.array([[x[f"f{j}"] for j in range(4)] for x, _ in stream])
    view = model._view
    np.testing.assert_allclose(view.center, X.mean(axis=0), rtol=1e-10)
    np.testing.assert_allclose(1.0 / view.inv_scale, X.std(axis=0), rtol=1e-10)
    # learn_many updates the same statistics
    import pandas as pd
    many = RiverRegressor(seed=0, warm_up=16, standardize="running")
    for x, _ in stream[:16]:
        many.learn_one(x, x["f0"])
    df = pd.DataFrame([x for x, _ in stream[16:]])
    many.learn_many(df, df["f0"])
    np.testing.assert_allclose(many._view.center, view.center, rtol=1e-10)
    np.testing.assert_allclose(many._view.inv_scale, view.inv_scale, rtol=1e-10)


def test_frozen_standardisation_keeps_the_warm_up_statistics():
    model = RiverClassifier(seed=0, warm_up=16)
    stream = _rows(16, seed=1) + _rows(100, scale=10.0, seed=2)
    for x, y in stream[:16]:
        model.learn_one(x, y)
    center = model._view.center.copy()
    for x, y in stream[16:]:
        model.learn_one(x, y)
    assert model._view.center.tobytes() == center.tobytes()


def test_refresh_gamma_rescales_the_inputs_to_the_variance_gamma_was_chosen_for():
    # unstandardised inputs whose scale doubles: after a refresh the model
    # sees them at the warm-up's variance again (factor 1/2, within sampling)
    model = RiverClassifier(seed=0, warm_up=64, standardize=False, refresh_gamma=400)
    stream = _rows(64, seed=3) + _rows(400, scale=2.0, seed=4)
    for x, y in stream[:64]:
        model.learn_one(x, y)
    gamma = model.model_.gamma_
    for x, y in stream[64:]:
        model.learn_one(x, y)
    assert model._online["factor"] == pytest.approx(0.5, rel=0.15)
    assert model.model_.gamma_ == gamma  # the features stay: the inputs are rescaled
    assert model._view.inv_scale == pytest.approx(np.full(4, model._online["factor"]))
    # predictions use the published scaling
    x = stream[-1][0]
    row = np.array([[x[f"f{j}"] for j in range(4)]]) * model._online["factor"]
    assert model.predict_proba_one(x)[True] == pytest.approx(
        float(model.model_.predict_proba(row)[0, model.classes_.index(True)]))


def test_online_preprocessing_survives_pickling():
    stream = _rows(50)
    model, copy = learn_then_pickle(
        RiverClassifier(seed=0, warm_up=8, standardize="running", refresh_gamma=10), stream, 30)
    assert copy.predict_proba_one(stream[0][0]) == model.predict_proba_one(stream[0][0])


@pytest.mark.parametrize("bad", [dict(standardize="sometimes"), dict(refresh_gamma=0),
                                 dict(refresh_gamma=True), dict(refresh_gamma=2.5)])
def test_bad_preprocessing_options_are_refused(bad):
    with pytest.raises(ValueError):
        RiverClassifier(**bad)
