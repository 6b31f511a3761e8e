"""Loss and feature-map objects as scikit-learn parameters, and ``loss_params``."""
import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

from onlinekernel import (DSGClassifier, DSGDensityRatio, DSGGaussianProcessRegressor,
                          DSGOneClassSVM, DSGQuantileRegressor, DSGRegressor,
                          FixedFeatureClassifier, FixedFeatureRegressor, Loss,
                          ShrinkingGradientRegressor, get_feature_map, get_loss)

FAST = {"max_blocks": 2, "block_size": 32, "random_state": 0}


class TiltedSquared(Loss):
    """A pure-Python loss with one parameter, ``tilt``."""
    name = "tilted_squared"
    target_encoding = "real"

    def __init__(self, tilt=1.0):
        if not tilt > 0:
            raise ValueError(f"tilt must be > 0, got {tilt}")
        self.tilt = tilt

    def loss(self, y, raw):
        r = raw[:, 0] - y[:, 0]
        return 0.5 * np.where(r > 0, self.tilt, 1.0) * r * r

    def gradient(self, y, raw):
        r = raw - y
        return np.where(r > 0, self.tilt, 1.0) * r


def _data(n=120, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X, X[:, 0] + 0.3 * np.sin(3 * X[:, 1]) + 0.1 * rng.normal(size=n)


@pytest.mark.parametrize("obj", [get_loss("quantile", quantile=0.9), get_loss("huber"),
                                 get_loss("multi_quantile", quantiles=(0.2, 0.8)),
                                 get_feature_map("gaussian", gamma=0.5),
                                 get_feature_map("poly_sketch", degree=2),
                                 TiltedSquared(tilt=2.0)],
                         ids=repr)
def test_objects_clone_get_and_set_params(obj):
    copy = clone(obj, safe=False)
    assert copy is not obj and copy == obj
    assert obj.get_params(deep=False) == obj.get_params(deep=True) == obj.get_params()
    name, value = next(iter(obj.get_params().items()))
    before = obj.get_params()
    with pytest.raises(ValueError, match=r"invalid parameter \['nope'\].*it takes"):
        obj.set_params(nope=1)
    assert obj.get_params() == before
    assert obj.set_params(**{name: value}) is obj and obj == copy


def test_a_bad_value_raises_and_leaves_the_object_unchanged():
    q = get_loss("quantile", quantile=0.9)
    with pytest.raises(ValueError, match="quantile"):
        q.set_params(quantile=1.5)
    assert q == get_loss("quantile", quantile=0.9)
    m = get_feature_map("gaussian", gamma=0.5).bind(3)
    with pytest.raises(ValueError, match="gamma"):
        m.set_params(gamma=-1.0)
    assert m.gamma == 0.5 and m.n_features_in == 3


def test_a_bound_map_stays_bound_and_pickles_with_its_new_parameters():
    m = get_feature_map("gaussian", gamma=0.5).bind(3)
    m.set_params(gamma=2.0)
    assert m.gamma == 2.0 and m.n_features_in == 3
    back = pickle.loads(pickle.dumps(m))
    assert back == m
    X = np.random.default_rng(1).normal(size=(4, 3))
    np.testing.assert_array_equal(back.transform_block(7, 1, X), m.transform_block(7, 1, X))


def test_estimator_with_a_loss_object_clones_and_sets_nested_parameters():
    reg = DSGRegressor(loss=get_loss("quantile", quantile=0.9))
    copy = clone(reg)
    assert copy.loss is not reg.loss and copy.loss == reg.loss
    assert reg.get_params(deep=True)["loss__quantile"] == 0.9
    reg.set_params(loss__quantile=0.25)
    assert reg.loss.quantile == 0.25
    with pytest.raises(ValueError, match="invalid parameter"):
        reg.set_params(loss__delta=1.0)


def test_grid_search_over_a_loss_parameter_and_gamma():
    X, y = _data()
    grid = GridSearchCV(DSGRegressor(loss=get_loss("quantile", quantile=0.5), alpha=1e-3,
                                     **FAST),
                        {"loss__quantile": [0.1, 0.5], "gamma": [0.1, 1.0]}, cv=2)
    grid.fit(X, y)
    assert set(grid.best_params_) == {"loss__quantile", "gamma"}
    # the median is the better fit of a symmetric noise under the default R^2
    assert grid.best_params_["loss__quantile"] == 0.5
    assert grid.best_estimator_.loss_.quantile == 0.5


def test_grid_search_over_alpha_and_kernel_objects():
    X, y = _data()
    kernels = [get_feature_map("gaussian", gamma=0.3), get_feature_map("laplacian", gamma=0.3)]
    grid = GridSearchCV(DSGClassifier(**FAST), {"alpha": [1e-5, 1e-3], "kernel": kernels},
                        cv=2).fit(X, y > 0)
    assert grid.best_params_["kernel"] in kernels
    assert grid.best_estimator_.feature_map_.name == grid.best_params_["kernel"].name
    # the estimator fits a copy: the grid's objects stay unbound
    assert all(k.n_features_in == 0 for k in kernels)


def test_loss_params_builds_the_named_loss():
    X, y = _data()
    reg = DSGRegressor(loss="huber", loss_params={"delta": 2.0}, normalize_y=False,
                       **FAST).fit(X, y)
    assert reg.loss_.delta == 2.0
    assert reg.get_params()["loss_params"] == {"delta": 2.0}
    grid = GridSearchCV(DSGRegressor(loss="quantile", alpha=1e-3, **FAST),
                        {"loss_params": [{"quantile": 0.1}, {"quantile": 0.5}]}, cv=2).fit(X, y)
    assert grid.best_params_ == {"loss_params": {"quantile": 0.5}}


@pytest.mark.parametrize("params, match", [
    ({"loss": "huber", "loss_params": {"quantile": 0.5}},
     r"invalid parameters for loss 'huber': \['quantile'\]"),
    ({"loss": "huber", "loss_params": {"delta": -1.0}}, "delta must be None or a finite number > 0"),
    ({"loss": "huber", "loss_params": [("delta", 1.0)]}, "loss_params must be a dict"),
    ({"loss": get_loss("huber"), "loss_params": {"delta": 1.0}},
     "loss_params applies to a loss given by name"),
])
def test_bad_loss_params_raise_and_leave_the_model_unchanged(params, match):
    X, y = _data()
    reg = DSGRegressor(**FAST).fit(X, y)
    before = reg.predict(X)
    reg.set_params(**params)
    with pytest.raises(ValueError, match=match):
        reg.fit(X, y)
    np.testing.assert_array_equal(reg.predict(X), before)


def _partial(model, X, y):
    if isinstance(model, DSGDensityRatio):
        return model.partial_fit(X, X + 0.5)
    if isinstance(model, DSGOneClassSVM):
        return model.partial_fit(X)
    if isinstance(model, (DSGClassifier, FixedFeatureClassifier)):
        return model.partial_fit(X, y > 0, classes=[False, True])
    return model.partial_fit(X, y)


@pytest.mark.parametrize("make, change", [
    (lambda: DSGClassifier(**FAST), {"gamma": 2.0}),
    (lambda: DSGRegressor(**FAST), {"block_size": 64}),
    (lambda: DSGRegressor(loss=get_loss("quantile", quantile=0.9), **FAST),
     {"loss__quantile": 0.5}),
    (lambda: DSGRegressor(loss="huber", **FAST), {"loss_params": {"delta": 3.0}}),
    (lambda: DSGQuantileRegressor(max_blocks=2, block_size=32, random_state=0),
     {"quantiles": (0.2, 0.8)}),
    (lambda: DSGOneClassSVM(max_blocks=2, block_size=32, random_state=0), {"gamma": 0.3}),
    (lambda: DSGDensityRatio(max_blocks=2, block_size=32, random_state=0), {"gamma": 1.0}),
    (lambda: DSGGaussianProcessRegressor(max_blocks=2, variance_blocks=2, block_size=32,
                                         random_state=0),
     {"normalize_y": False}),
    (lambda: FixedFeatureRegressor(n_components=64, random_state=0), {"kernel": "laplacian"}),
    (lambda: ShrinkingGradientRegressor(random_state=0), {"gamma": 3.0}),
], ids=lambda v: repr(v) if isinstance(v, dict) else "")
def test_partial_fit_refuses_a_changed_build_parameter_and_keeps_the_model(make, change):
    X, y = _data()
    model = _partial(make(), X, y)
    before = {k: np.copy(v) for k, v in vars(model).items() if isinstance(v, np.ndarray)}
    model.set_params(**change)
    name = next(iter(change)).split("__")[0]
    with pytest.raises(ValueError, match=rf"{name}=.* from the fitted model's {name}=.*Call fit"):
        _partial(model, X, y)
    assert all(np.array_equal(v, getattr(model, k)) for k, v in before.items())
    model.fit(*((X, X + 0.5) if isinstance(model, DSGDensityRatio) else
                (X,) if isinstance(model, DSGOneClassSVM) else
                (X, y > 0) if isinstance(model, DSGClassifier) else (X, y)))
    _partial(model, X, y)  # fit built a new model with the new value


def test_other_parameters_take_effect_on_the_next_partial_fit():
    X, y = _data()
    model = DSGRegressor(**FAST).partial_fit(X, y)
    model.set_params(alpha=1e-2, eta0=0.5, max_blocks=4)
    model.partial_fit(X, y)
    assert model.n_blocks_ == 4


def test_a_loaded_model_remembers_what_it_was_built_with(tmp_path):
    X, y = _data()
    DSGRegressor(**{**FAST, "gamma": 0.5}).fit(X, y).save(tmp_path / "m.okm")
    from onlinekernel import load
    model = load(tmp_path / "m.okm")
    model.partial_fit(X, y)
    model.set_params(gamma=0.7)
    with pytest.raises(ValueError, match="gamma=0.7 differs from the fitted model's gamma=0.5"):
        model.partial_fit(X, y)


def test_input_scaling_is_part_of_the_model():
    X, y = _data()
    Xs = X * [100.0, 0.01, 1.0] + [5.0, 0.0, -2.0]
    scaling = (np.array([5.0, 0.0, -2.0]), np.array([100.0, 0.01, 1.0]))
    scaled = DSGRegressor(input_scaling=scaling, **FAST).fit(Xs, y)
    plain = DSGRegressor(**FAST).fit(X, y)
    np.testing.assert_allclose(scaled.predict(Xs), plain.predict(X), rtol=1e-10, atol=1e-12)
    # a set_params after fit does not change what the fitted model predicts ...
    before = scaled.predict(Xs)
    scaled.set_params(input_scaling=(np.zeros(3), np.ones(3)))
    np.testing.assert_array_equal(scaled.predict(Xs), before)
    # ... and continuing it with another scaling is refused
    with pytest.raises(ValueError, match="input_scaling=.* from the fitted model's"):
        scaled.partial_fit(Xs, y)


@pytest.mark.parametrize("scaling, match", [
    ((np.zeros(3), np.zeros(3)), "scale > 0"),
    ((np.zeros(3), np.ones(2)), "equal-length"),
    ((np.zeros(3), np.full(3, np.nan)), "finite"),
    ("standard", "pair"),
    ((np.zeros(2), np.ones(2)), "X has 3 features, input_scaling has 2 columns"),
])
def test_bad_input_scaling_raises(scaling, match):
    X, y = _data()
    with pytest.raises(ValueError, match=match):
        DSGRegressor(input_scaling=scaling, **FAST).fit(X, y)
