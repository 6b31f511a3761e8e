"""Extreme but finite inputs, targets and settings: an error that says so, never a NaN model.

A fuzz test (hypothesis) over values up to the float range, shapes and
dtypes, for every registered built-in map: each call either succeeds with
finite coefficients and predictions, or raises a ValueError or
FloatingPointError and leaves the model exactly as it was.
"""
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onlinekernel import DSGClassifier, DSGRegressor

MAPS = ["gaussian", "laplacian", "matern", "isotropic_cauchy", "orf", "sorf", "fastfood",
        "arccos", "iln", "poly_sketch"]
SMALL = {"max_blocks": 2, "block_size": 16, "gamma": 0.3, "random_state": 0}
EXTREMES = [1.7e308, -1.7e308, 1e307, 1e200, 1e100, 1e30, 1e-300, 0.0]


def _state(model):
    return {k: np.copy(v) for k, v in vars(model).items() if isinstance(v, np.ndarray)}


def _same(a, b):
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k], equal_nan=True) for k in a)


def _finite_model(model):
    return all(np.isfinite(v).all() for v in vars(model).values()
               if isinstance(v, np.ndarray) and v.dtype.kind == "f")


def _base(kind, kernel, dtype):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    if kind == "classify":
        model = DSGClassifier(kernel=kernel, dtype=dtype, **SMALL)
        return model.partial_fit(X, X[:, 0] > 0, classes=[False, True]), X
    return DSGRegressor(kernel=kernel, dtype=dtype, **SMALL).partial_fit(X, X[:, 0]), X


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(["classify", "regress"]), kernel=st.sampled_from(MAPS),
       dtype=st.sampled_from(["float64", "float32"]), value=st.sampled_from(EXTREMES),
       rows=st.integers(1, 4), where=st.sampled_from(["row", "cell", "target"]),
       call=st.sampled_from(["partial_fit", "fit", "predict"]))
def test_extreme_finite_values_never_leave_nan(kind, kernel, dtype, value, rows, where, call):
    model, X = _base(kind, kernel, dtype)
    Xb = X[:rows].copy()
    y = X[:rows, 0].copy()
    if where == "row":
        Xb[:] = value
    elif where == "cell":
        Xb[0, 1] = value
    elif kind == "regress":
        y[:] = value
    if dtype == "float32" and abs(value) > float(np.finfo(np.float32).max):
        return  # not representable: validation refuses it (tested below)
    before = _state(model)
    yb = y > 0 if kind == "classify" else y
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if call == "partial_fit":
                model.partial_fit(Xb, yb)
            elif call == "fit":
                model.fit(np.vstack([X, Xb]), np.concatenate([X[:, 0] > 0 if kind == "classify"
                                                              else X[:, 0], yb]))
            else:
                out = model.predict(Xb)
                assert np.all(np.isfinite(np.asarray(out, dtype=float)))
        except (ValueError, FloatingPointError) as exc:
            assert str(exc)  # a message that says what happened
            assert _same(_state(model), before), "a failed call changed the model"
            return
    assert _finite_model(model)
    assert np.all(np.isfinite(model.predict(X)))


def test_float32_model_refuses_values_beyond_its_range():
    model, X = _base("regress", "gaussian", "float32")
    with pytest.raises(ValueError, match="infinity|too large"):
        model.partial_fit(np.full((1, 3), 1e300), [0.0])


@pytest.mark.parametrize("kernel", MAPS)
def test_a_huge_row_is_refused_with_the_map_named(kernel):
    model, X = _base("regress", kernel, "float64")
    before = _state(model)
    with pytest.raises((ValueError, FloatingPointError), match=kernel):
        model.partial_fit(np.full((1, 3), 1.7e308), [1.0])
    assert _same(_state(model), before)


def test_a_row_whose_features_overflow_is_named_at_predict():
    model, X = _base("regress", "gaussian", "float64")
    Xb = X[:3].copy()
    Xb[2] = 1.7e308
    with pytest.raises(ValueError, match=r"row 2 of X gives a non-finite output .*1\.7e\+308"
                                         r".*gaussian"):
        model.predict(Xb)


def test_diverging_steps_raise_and_keep_the_model():
    model, X = _base("regress", "gaussian", "float64")
    before = _state(model)
    model.set_params(eta0=1e300)
    with pytest.raises(FloatingPointError, match="non-finite values in _coef.*lower eta0"):
        model.partial_fit(np.tile(X, (10, 1)), np.tile(X[:, 0], 10))
    assert _same(_state(model), before)


def test_gamma_scale_on_overflowing_inputs_says_so():
    X = np.full((4, 2), 1.7e308)
    X[::2] *= -1
    with pytest.raises(ValueError, match="gamma='scale' needs the variance of X, which "
                                         "overflows"):
        DSGRegressor(random_state=0).fit(X, [0.0, 1.0, 2.0, 3.0])
