"""The plugin registry: built-ins, external plugins through real entry points,
conflicts, broken plugins, the disable switch and pure-Python losses.

External plugins are real distributions: a module plus a ``*.dist-info``
directory (``METADATA`` and ``entry_points.txt``) written to a temporary
directory that is put on ``sys.path``.  ``importlib.metadata`` finds them
exactly as it finds an installed package; nothing inside the registry is
patched.
"""
import importlib.metadata
import inspect
import os
import re
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import onlinekernel
from onlinekernel import DSGClassifier, DSGRegressor, hookspecs, registry
from onlinekernel.registry import PluginConflictWarning, PluginWarning

from conftest import PyCauchyLoss, PyLogistic, PySquared, plugin_source

# What issue 2 requires at least; the built-in plugin modules are the
# ground truth for the complete lists (more maps may be added there).
REQUIRED_LOSSES = {"hinge", "squared_hinge", "logistic", "multinomial", "squared", "huber",
                   "epsilon_insensitive", "quantile"}
REQUIRED_MAPS = {"gaussian"}

EXTERNAL_DIST = "ok-test-plugin"
EXTERNAL_MODULE = "ok_test_plugin"

# The third-party plugin: a pure-Python pseudo-Huber regression loss, a
# feature map subclassing the built-in Gaussian class under another name and
# parameterisation, and a map built by a ``**kwargs`` factory function.
EXTERNAL_SOURCE = '''
"""A third-party onlinekernel plugin, installed at test time."""
import numpy as np

from onlinekernel import Loss
from onlinekernel.hookspecs import hookimpl
from onlinekernel.featuremaps.gaussian import Gaussian


class PseudoHuber(Loss):
    """delta^2 (sqrt(1 + (r/delta)^2) - 1) with r = raw - y: smooth, robust."""
    name = "pseudo_huber"
    target_encoding = "real"
    n_gradient_calls = 0  # class level: counts calls made by the solver

    def __init__(self, delta=1.0):
        if not delta > 0:
            raise ValueError(f"pseudo_huber: delta must be > 0, got {delta}")
        self.delta = delta

    def loss(self, y, raw):
        r = (raw - y) / self.delta
        return (self.delta ** 2 * (np.sqrt(1.0 + r ** 2) - 1.0)).sum(axis=1)

    def gradient(self, y, raw):
        type(self).n_gradient_calls += 1
        r = raw - y
        return r / np.sqrt(1.0 + (r / self.delta) ** 2)


class LengthScaleRBF(Gaussian):
    """The Gaussian kernel exp(-|x - x'|^2 / (2 l^2)), parameterised by l."""
    name = "ok_length_scale_rbf"

    def __init__(self, n_components=256, length_scale=1.0):
        if not length_scale > 0:
            raise ValueError(f"length_scale must be > 0, got {length_scale}")
        self.length_scale = length_scale
        super().__init__(n_components, gamma=0.5 / length_scale ** 2)

    def get_params(self):
        return {"n_components": self.n_components, "length_scale": self.length_scale}


def paired_gaussian(**params):
    """A factory taking **kwargs: the sin/cos Gaussian map."""
    return Gaussian(pairs=True, **params)


@hookimpl
def onlinekernel_register_losses():
    return {PseudoHuber.name: PseudoHuber}


@hookimpl
def onlinekernel_register_feature_maps():
    return {LengthScaleRBF.name: LengthScaleRBF, "ok_paired_gaussian": paired_gaussian}
'''


# ---------------------------------------------------------------------- #
# fixtures and helpers
# ---------------------------------------------------------------------- #
@pytest.fixture(autouse=True)
def fresh_registry():
    """Every test starts and ends with a registry that loads afresh."""
    registry.reset()
    yield
    registry.reset()


class SiteDir:
    """A directory on ``sys.path`` into which test distributions are installed."""

    def __init__(self, path, monkeypatch):
        self.path = path
        self.modules = []
        path.mkdir()
        monkeypatch.syspath_prepend(str(path))

    def install(self, dist, modules, entry_points):
        """Install distribution ``dist`` with ``modules`` ({name: source}) and
        ``entry_points`` ({entry-point name: module}) in group ``onlinekernel``;
        reset the registry so the next lookup sees it."""
        for name, source in modules.items():
            (self.path / f"{name}.py").write_text(textwrap.dedent(source))
            self.modules.append(name)
        info = self.path / f"{dist.replace('-', '_')}-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
        (info / "entry_points.txt").write_text(
            "[onlinekernel]\n" + "".join(f"{ep} = {mod}\n" for ep, mod in entry_points.items()))
        importlib.invalidate_caches()
        registry.reset()

    def cleanup(self):
        for name in self.modules:
            sys.modules.pop(name, None)


@pytest.fixture
def site(tmp_path, monkeypatch, entry_point_plugins):
    # entry-point loading on: the suite runs on the built-ins alone (conftest.py)
    s = SiteDir(tmp_path / "site", monkeypatch)
    yield s
    s.cleanup()
    registry.reset()  # before monkeypatch restores sys.path; lookups reload anyway


@pytest.fixture
def external_plugin(site):
    """The ``ok-test-plugin`` distribution, installed; yields its module."""
    site.install(EXTERNAL_DIST, {EXTERNAL_MODULE: EXTERNAL_SOURCE},
                 {"ok_test": EXTERNAL_MODULE})
    return site


def _plugin_module():
    onlinekernel.available_losses()  # the registry imports plugins on first use
    return sys.modules[EXTERNAL_MODULE]


def _builtin_names():
    from onlinekernel.featuremaps import hooks as feature_maps
    from onlinekernel.losses import hooks as losses
    return (set(losses.onlinekernel_register_losses()),
            set(feature_maps.onlinekernel_register_feature_maps()))


def _assert_builtins_listed():
    loss_names, map_names = _builtin_names()
    losses = onlinekernel.available_losses()
    maps = onlinekernel.available_feature_maps()
    for name in loss_names:
        assert losses[name]["distribution"] == "onlinekernel", name
    for name in map_names:
        assert maps[name]["distribution"] == "onlinekernel", name
    return losses, maps


def _regression_data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, size=(n, 1))
    y = np.sin(X[:, 0]) + 0.05 * rng.normal(size=n)
    return X, y


def _circle_data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = np.where(np.hypot(X[:, 0], X[:, 1]) < 1.1, 1, 0)
    return X, y


# ---------------------------------------------------------------------- #
# 1. built-ins
# ---------------------------------------------------------------------- #
def test_builtins_are_registered_directly():
    # as pytest does its default plugins: the built-in hook modules are
    # registered by the registry itself, third parties through entry points
    eps = importlib.metadata.distribution("onlinekernel").entry_points.select(
        group=registry.ENTRY_POINT_GROUP)
    assert list(eps) == []
    from onlinekernel.featuremaps import hooks as map_hooks
    from onlinekernel.losses import hooks as loss_hooks
    pm = registry._get().pm
    assert pm.get_plugin("builtin_losses") is loss_hooks
    assert pm.get_plugin("builtin_feature_maps") is map_hooks
    targets = {"builtin_losses": "onlinekernel.losses.hooks",
               "builtin_feature_maps": "onlinekernel.featuremaps.hooks"}
    losses, maps = _assert_builtins_listed()
    loss_names, map_names = _builtin_names()
    assert REQUIRED_LOSSES <= loss_names
    assert REQUIRED_MAPS <= map_names
    for name in loss_names:
        assert losses[name]["plugin"] in targets
        assert targets[losses[name]["plugin"]] == "onlinekernel.losses.hooks"
    for name in map_names:
        assert targets[maps[name]["plugin"]] == "onlinekernel.featuremaps.hooks"
    # the listing gives parameters with their defaults
    assert losses["huber"]["parameters"] == {"delta": None}
    assert losses["quantile"]["parameters"] == {"quantile": 0.5}
    assert losses["hinge"]["parameters"] == {}
    assert {"n_components", "gamma", "pairs"} <= set(maps["gaussian"]["parameters"])


def test_every_builtin_builds_by_name_with_its_default_parameters():
    losses, maps = _assert_builtins_listed()
    loss_names, map_names = _builtin_names()
    for name in loss_names:
        loss = onlinekernel.get_loss(name, **losses[name]["parameters"])
        assert loss.name == name
        assert loss.get_params() == losses[name]["parameters"]
        assert loss == onlinekernel.get_loss(name)
    for name in map_names:
        params = dict(maps[name]["parameters"], n_components=32)
        fmap = onlinekernel.get_feature_map(name, **params)
        assert fmap.name == name
        assert fmap.n_components == 32
        assert fmap.get_params() == params


def test_get_loss_and_get_feature_map_pass_parameters():
    huber = onlinekernel.get_loss("huber", delta=2.0)
    assert huber.get_params() == {"delta": 2.0}
    # the parameter takes effect: residual 3 is in the linear zone of delta=2
    np.testing.assert_allclose(huber.loss([[0.0]], [[3.0]]), [2.0 * 3.0 - 0.5 * 4.0])
    np.testing.assert_allclose(huber.gradient([[0.0]], [[3.0]]), [[2.0]])
    assert onlinekernel.get_loss("quantile", quantile=0.25).get_params() == {"quantile": 0.25}
    assert onlinekernel.get_loss("epsilon_insensitive", epsilon=0.0).get_params() == {
        "epsilon": 0.0}

    fmap = onlinekernel.get_feature_map("gaussian", n_components=64, gamma=0.25, pairs=True)
    assert fmap.get_params() == {"n_components": 64, "gamma": 0.25, "pairs": True}
    Z = fmap.bind(3).transform_block(seed=1, block=0, X=np.ones((2, 3)))
    assert Z.shape == (2, 64)


@pytest.mark.parametrize("lookup, listing", [
    (onlinekernel.get_loss, onlinekernel.available_losses),
    (onlinekernel.get_feature_map, onlinekernel.available_feature_maps),
])
def test_unknown_name_lists_the_registered_names(lookup, listing):
    with pytest.raises(ValueError, match="no_such_thing") as exc:
        lookup("no_such_thing")
    names = listing()
    assert names
    for name in names:  # whole words: "hinge" must not pass as part of "squared_hinge"
        assert re.search(rf"(?<!\w){re.escape(name)}(?!\w)", str(exc.value)), name
    with pytest.raises(TypeError):
        lookup(3)


def test_unknown_name_in_an_estimator_lists_the_registered_names():
    X, y = _regression_data(n=50)
    with pytest.raises(ValueError, match="pseudo_huber") as exc:
        DSGRegressor(loss="pseudo_huber").fit(X, y)
    for name in REQUIRED_LOSSES:
        assert name in str(exc.value)
    with pytest.raises(ValueError, match="gaussian"):
        DSGRegressor(kernel="no_such_map").fit(X, y)


@pytest.mark.parametrize("lookup, name, params, bad", [
    (onlinekernel.get_loss, "huber", {"delat": 1.0}, "delat"),
    (onlinekernel.get_loss, "hinge", {"delta": 1.0}, "delta"),
    (onlinekernel.get_loss, "quantile", {"quantile": 0.5, "alpha": 0.1}, "alpha"),
    (onlinekernel.get_feature_map, "gaussian", {"sigma": 1.0}, "sigma"),
    (onlinekernel.get_feature_map, "gaussian", {"n_components": 8, "degree": 2}, "degree"),
])
def test_unknown_parameter_raises_value_error(lookup, name, params, bad):
    with pytest.raises(ValueError, match=f"invalid parameters .*'{bad}'"):
        lookup(name, **params)


# ---------------------------------------------------------------------- #
# 2. an external plugin through a real entry point
# ---------------------------------------------------------------------- #
def test_external_plugin_is_listed_with_its_distribution(external_plugin):
    losses, maps = _assert_builtins_listed()
    assert losses["pseudo_huber"]["distribution"] == EXTERNAL_DIST
    assert losses["pseudo_huber"]["plugin"] == "ok_test"
    assert losses["pseudo_huber"]["factory"] == f"{EXTERNAL_MODULE}.PseudoHuber"
    assert losses["pseudo_huber"]["parameters"] == {"delta": 1.0}
    assert maps["ok_length_scale_rbf"]["distribution"] == EXTERNAL_DIST
    assert maps["ok_length_scale_rbf"]["parameters"] == {"n_components": 256,
                                                        "length_scale": 1.0}
    assert maps["ok_paired_gaussian"]["distribution"] == EXTERNAL_DIST

    loss = onlinekernel.get_loss("pseudo_huber", delta=0.5)
    assert isinstance(loss, _plugin_module().PseudoHuber)
    assert loss.delta == 0.5
    with pytest.raises(ValueError, match="scale"):
        onlinekernel.get_loss("pseudo_huber", scale=2.0)
    with pytest.raises(ValueError, match="delta must be > 0"):
        onlinekernel.get_loss("pseudo_huber", delta=-1.0)


def test_external_feature_maps_build_by_name(external_plugin):
    from onlinekernel.featuremaps.gaussian import Gaussian
    fmap = onlinekernel.get_feature_map("ok_length_scale_rbf", n_components=64,
                                        length_scale=2.0).bind(3)
    assert isinstance(fmap, Gaussian) and fmap.gamma == pytest.approx(0.125)
    X = np.random.default_rng(0).normal(size=(5, 3))
    ref = onlinekernel.get_feature_map("gaussian", n_components=64, gamma=0.125).bind(3)
    np.testing.assert_array_equal(fmap.transform_block(7, 3, X), ref.transform_block(7, 3, X))

    # a factory taking **kwargs receives the parameters and checks them itself
    paired = onlinekernel.get_feature_map("ok_paired_gaussian", n_components=16, gamma=0.5)
    assert paired.get_params() == {"n_components": 16, "gamma": 0.5, "pairs": True}
    with pytest.raises(ValueError, match="sigma"):
        onlinekernel.get_feature_map("ok_paired_gaussian", sigma=1.0)


def test_external_loss_by_name_in_dsg_regressor(external_plugin):
    X, y = _regression_data()
    rng = np.random.default_rng(1)
    y_train = y.copy()
    outliers = rng.choice(len(y), size=30, replace=False)
    y_train[outliers] += rng.choice([-20.0, 20.0], size=30)  # the robust loss shrugs
    cls = _plugin_module().PseudoHuber
    calls = cls.n_gradient_calls
    # normalize_y=False: the count below is of the training steps' calls only (the
    # target scaling would add the calls that find the intercept's start)
    model = DSGRegressor(loss="pseudo_huber", random_state=0, learning_rate="invsqrt",
                         normalize_y=False,
                         eta0=2.0, t0=1.0, solver="sgd", max_iter=10, tol=None)
    model.fit(X, y_train)
    assert isinstance(model.loss_, cls)
    assert cls.n_gradient_calls - calls == model.t_ > 0  # the solver ran the Python loss
    X_test, y_test = _regression_data(n=300, seed=5)
    assert model.score(X_test, y_test) > 0.9
    # the same data under the squared loss is wrecked by the outliers
    squared = DSGRegressor(loss="squared", random_state=0, learning_rate="invsqrt",
                           eta0=2.0, t0=1.0, solver="sgd", max_iter=10, tol=None)
    assert squared.fit(X, y_train).score(X_test, y_test) < model.score(X_test, y_test)


def test_external_feature_map_by_name_in_dsg_classifier(external_plugin):
    X, y = _circle_data()
    clf = DSGClassifier(loss="logistic", kernel="ok_length_scale_rbf",
                        kernel_params={"length_scale": 0.7}, random_state=0)
    clf.fit(X, y)
    assert type(clf.feature_map_).__name__ == "LengthScaleRBF"
    assert clf.feature_map_.length_scale == 0.7
    assert clf.feature_map_.gamma == pytest.approx(0.5 / 0.7 ** 2)
    X_test, y_test = _circle_data(n=400, seed=3)
    assert clf.score(X_test, y_test) > 0.9
    # a loss for real targets (the plugin's, by name) also classifies, on +-1 targets
    # (a smooth loss on real targets wants steps of about 1, not the margin
    # losses' default)
    reg_as_clf = DSGClassifier(loss="pseudo_huber", kernel="ok_length_scale_rbf",
                               learning_rate="invsqrt", eta0=1.0, t0=1.0,
                               random_state=0).fit(X, y)
    assert reg_as_clf.score(X_test, y_test) > 0.8


def test_external_plugin_is_forgotten_after_reset_and_removal(external_plugin, monkeypatch):
    assert "pseudo_huber" in onlinekernel.available_losses()
    sys.path.remove(str(external_plugin.path))
    # still cached until reset
    assert "pseudo_huber" in onlinekernel.available_losses()
    registry.reset()
    assert "pseudo_huber" not in onlinekernel.available_losses()
    _assert_builtins_listed()


# ---------------------------------------------------------------------- #
# 3. conflicts
# ---------------------------------------------------------------------- #
_SHARED_LOSS_PLUGIN = '''
from onlinekernel.hookspecs import hookimpl
from onlinekernel.losses.builtin import Squared

@hookimpl
def onlinekernel_register_losses():
    return {"ok_shared": Squared}
'''


@pytest.mark.parametrize("ep_a, ep_b", [("alpha_losses", "beta_losses"),
                                        ("losses", "losses")])  # same entry-point name
def test_two_plugins_claiming_one_name_lose_it_with_a_warning_naming_both(site, ep_a, ep_b):
    site.install("ok-conflict-a", {"ok_conflict_a": _SHARED_LOSS_PLUGIN},
                 {ep_a: "ok_conflict_a"})
    site.install("ok-conflict-b", {"ok_conflict_b": _SHARED_LOSS_PLUGIN},
                 {ep_b: "ok_conflict_b"})
    with pytest.warns(PluginConflictWarning) as record:
        losses = onlinekernel.available_losses()
    msg = " ".join(str(w.message) for w in record)
    assert "'ok_shared'" in msg and "neither is used" in msg
    assert "ok-conflict-a" in msg and "ok-conflict-b" in msg
    assert ep_a in msg and ep_b in msg
    # neither plugin wins by load order; everything else keeps working
    assert "ok_shared" not in losses
    with pytest.raises(ValueError, match="unknown loss 'ok_shared'"):
        onlinekernel.get_loss("ok_shared")
    assert onlinekernel.get_loss("squared").name == "squared"


def test_distinct_plugins_sharing_an_entry_point_name_are_both_loaded(site):
    for dist, mod, loss in [("ok-same-ep-a", "ok_same_ep_a", "ok_loss_a"),
                            ("ok-same-ep-b", "ok_same_ep_b", "ok_loss_b")]:
        site.install(dist, {mod: f'''
            from onlinekernel.hookspecs import hookimpl
            from onlinekernel.losses.builtin import Squared

            @hookimpl
            def onlinekernel_register_losses():
                return {{"{loss}": Squared}}
            '''}, {"losses": mod})
    losses = onlinekernel.available_losses()
    assert losses["ok_loss_a"]["distribution"] == "ok-same-ep-a"
    assert losses["ok_loss_b"]["distribution"] == "ok-same-ep-b"
    assert losses["ok_loss_a"]["plugin"] != losses["ok_loss_b"]["plugin"]


def test_a_plugin_object_named_by_its_entry_point_registers_its_classes(site):
    site.install("ok-plugin-object", {"ok_plugin_object": '''
        from onlinekernel.hookspecs import Plugin
        from onlinekernel.featuremaps.gaussian import Gaussian
        from onlinekernel.losses.builtin import Squared

        class Renamed(Squared):
            name = "ok_object_loss"

        plugin = Plugin(losses=[Renamed], feature_maps={"ok_object_map": Gaussian})
        '''}, {"objects": "ok_plugin_object:plugin"})
    losses, maps = onlinekernel.available_losses(), onlinekernel.available_feature_maps()
    assert losses["ok_object_loss"]["distribution"] == "ok-plugin-object"
    assert losses["ok_object_loss"]["plugin"] == "objects"
    assert maps["ok_object_map"]["distribution"] == "ok-plugin-object"
    assert type(onlinekernel.get_loss("ok_object_loss")).__name__ == "Renamed"
    assert "ok_object_map" not in losses and "ok_object_loss" not in maps


def test_a_plugin_object_refuses_a_factory_without_a_name():
    def paired_gaussian(**params):
        return onlinekernel.get_feature_map("gaussian", pairs=True, **params)

    with pytest.raises(TypeError, match="no string attribute 'name'.*dict of name"):
        hookspecs.Plugin(feature_maps=[paired_gaussian])
    plugin = hookspecs.Plugin(feature_maps={"ok_paired": paired_gaussian})
    assert plugin.onlinekernel_register_feature_maps() == {"ok_paired": paired_gaussian}
    assert plugin.onlinekernel_register_losses() == {}
    # the object hands out copies: what a caller does to them is not registered
    plugin.onlinekernel_register_feature_maps().clear()
    assert list(plugin.onlinekernel_register_feature_maps()) == ["ok_paired"]


@pytest.mark.parametrize("hook, name, builtin_plugin", [
    ("onlinekernel_register_losses", "hinge", "onlinekernel.losses.hooks"),
    ("onlinekernel_register_feature_maps", "gaussian", "onlinekernel.featuremaps.hooks"),
])
def test_a_plugin_claiming_a_builtin_name_cannot_replace_it(site, hook, name, builtin_plugin,
                                                            tmp_path):
    site.install("ok-usurper", {"ok_usurper": f'''
        from onlinekernel.hookspecs import hookimpl

        @hookimpl
        def {hook}():
            return {{"{name}": object, "ok_usurper_own": object}}
        '''}, {"usurper": "ok_usurper"})
    # the name the built-in hook module is registered under (without an entry point)
    builtin_ep = next(n for n, p in registry._BUILTINS.items() if p.__name__ == builtin_plugin)
    listing = (onlinekernel.available_losses if "losses" in hook
               else onlinekernel.available_feature_maps)
    with pytest.warns(PluginConflictWarning) as record:
        entries = listing()
    msg = " ".join(str(w.message) for w in record)
    assert f"'{name}'" in msg and "the built-in one is kept" in msg
    assert "'usurper'" in msg and "'ok-usurper'" in msg
    assert f"'{builtin_ep}'" in msg and "'onlinekernel'" in msg
    assert entries[name]["distribution"] == "onlinekernel"
    assert entries["ok_usurper_own"]["distribution"] == "ok-usurper"  # its other names stay
    # estimators, model files and the CLI keep working with the built-in
    X = np.random.default_rng(0).normal(size=(60, 2))
    model = DSGClassifier(loss="hinge", kernel="gaussian", max_blocks=1, block_size=8,
                          random_state=0).fit(X, X[:, 0] > 0)
    model.save(tmp_path / "m.okm")
    assert onlinekernel.load(tmp_path / "m.okm").loss_.name == "hinge"


_BROKEN_HOOKS = {
    "raises": ('raise RuntimeError("boom")', r"failed in its loss hook and is skipped.*boom"),
    "not a dict": ("return [1, 2]", r"returned list from its loss hook, not a dict"),
    "bad name": ('return {3: Squared, "ok_fine": Squared}', r"registered a loss under 3, not"),
    "not callable": ('return {"ok_inert": 42, "ok_fine": Squared}',
                     r"registered loss 'ok_inert' as int, which is not callable"),
}


@pytest.mark.parametrize("case", list(_BROKEN_HOOKS))
def test_a_broken_hook_is_skipped_with_a_warning_naming_its_plugin(site, case):
    body, message = _BROKEN_HOOKS[case]
    site.install("ok-broken-hook", {"ok_broken_hook": f'''
        from onlinekernel.hookspecs import hookimpl
        from onlinekernel.losses.builtin import Squared

        @hookimpl
        def onlinekernel_register_losses():
            {body}
        '''}, {"broken": "ok_broken_hook"})
    with pytest.warns(PluginWarning, match=message) as record:
        losses = onlinekernel.available_losses()
    assert any("'broken'" in str(w.message) and "'ok-broken-hook'" in str(w.message)
               for w in record)
    assert "squared" in losses and ("ok_fine" in losses) == (case in ("bad name",
                                                                      "not callable"))
    assert "ok_inert" not in losses


# ---------------------------------------------------------------------- #
# 4. a plugin that fails to import
# ---------------------------------------------------------------------- #
def test_broken_plugin_warns_and_the_rest_keep_working(external_plugin):
    external_plugin.install("ok-broken-plugin", {"ok_broken_plugin": '''
        raise RuntimeError("ok_broken_plugin is broken on purpose")
        '''}, {"ok_broken": "ok_broken_plugin"})
    external_plugin.install("ok-missing-plugin", {},
                            {"ok_missing": "ok_module_that_does_not_exist"})
    with pytest.warns(PluginWarning) as record:
        losses, _ = _assert_builtins_listed()
    messages = [str(w.message) for w in record if issubclass(w.category, PluginWarning)]
    broken = [m for m in messages if "'ok_broken'" in m]
    missing = [m for m in messages if "'ok_missing'" in m]
    assert len(broken) == 1 and len(missing) == 1, messages
    assert "ok-broken-plugin" in broken[0] and "broken on purpose" in broken[0]
    assert "ok-missing-plugin" in missing[0] and "ModuleNotFoundError" in missing[0]
    # the external plugin that does import still works, and so do the built-ins
    assert losses["pseudo_huber"]["distribution"] == EXTERNAL_DIST
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the warning is given once, not per lookup
        X, y = _regression_data(n=200)
        assert DSGRegressor(loss="huber", random_state=0).fit(X, y).score(X, y) > 0.8
        assert DSGRegressor(loss="pseudo_huber", random_state=0).fit(X, y).score(X, y) > 0.8


# ---------------------------------------------------------------------- #
# 5. the disable switch
# ---------------------------------------------------------------------- #
@pytest.mark.parametrize("value", ["1", "true", "YES"])
def test_disable_plugins_loads_only_the_builtins(external_plugin, monkeypatch, value):
    external_plugin.install("ok-broken-plugin", {"ok_broken_plugin": '''
        raise RuntimeError("ok_broken_plugin is broken on purpose")
        '''}, {"ok_broken": "ok_broken_plugin"})
    monkeypatch.setenv(registry.DISABLE_ENV, value)
    registry.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the broken plugin is not even imported
        losses, maps = _assert_builtins_listed()
    assert "pseudo_huber" not in losses
    assert "ok_length_scale_rbf" not in maps
    assert {e["distribution"] for e in losses.values()} == {"onlinekernel"}
    assert {e["distribution"] for e in maps.values()} == {"onlinekernel"}
    assert "ok_broken_plugin" not in sys.modules
    X, y = _regression_data(n=100)
    with pytest.raises(ValueError, match="unknown loss 'pseudo_huber'"):
        DSGRegressor(loss="pseudo_huber").fit(X, y)
    assert DSGRegressor(loss="squared", random_state=0).fit(X, y).score(X, y) > 0.8


@pytest.mark.parametrize("value", ["0", "", "false"])
def test_plugins_load_when_the_switch_is_off(external_plugin, monkeypatch, value):
    monkeypatch.setenv(registry.DISABLE_ENV, value)
    registry.reset()
    assert onlinekernel.available_losses()["pseudo_huber"]["distribution"] == EXTERNAL_DIST


# A third-party distribution as users install them: a robust loss that is
# legitimately not convex, a loss and a map that cannot be built without a
# parameter, and a second module that fails to import.  Each breaks a test
# that iterates over every registered component.
_THIRD_PARTY_SOURCE = '''
import numpy as np

from onlinekernel import Loss
from onlinekernel.hookspecs import hookimpl
from onlinekernel.featuremaps.gaussian import Gaussian
''' + plugin_source(PyCauchyLoss) + '''

class CauchyLoss(PyCauchyLoss):
    name = "ok_cauchy_loss"


class ScaledCauchy(CauchyLoss):
    name = "ok_needs_scale"

    def __init__(self, scale):  # no default: get_loss(name) alone fails
        self.scale = scale


class WidthGaussian(Gaussian):
    name = "ok_needs_width"

    def __init__(self, width, n_components=256):
        super().__init__(n_components, gamma=0.5 / width ** 2)


@hookimpl
def onlinekernel_register_losses():
    return {CauchyLoss.name: CauchyLoss, ScaledCauchy.name: ScaledCauchy}


@hookimpl
def onlinekernel_register_feature_maps():
    return {WidthGaussian.name: WidthGaussian}
'''

# The tests that list, count or iterate over the registered components, and
# one of the example plugin's (it switches entry-point loading on).
_REGISTRY_DEPENDENT = [
    "losses/test_losses.py",
    "featuremaps/test_feature_maps.py::test_protocol",
    "cli/test_cli.py::test_plugins_lists_builtins_with_parameters_and_distribution",
    "plugins/test_registry.py::test_every_builtin_builds_by_name_with_its_default_parameters",
    "plugins/test_registry.py::test_unknown_name_lists_the_registered_names",
    "plugins/test_example_plugin.py::test_both_components_are_listed_with_their_distribution"]


def _run_tests_beside(site_dir, tmp_path, disable=None):
    """Run ``_REGISTRY_DEPENDENT`` in a fresh pytest with ``site_dir`` on the path."""
    tests = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [str(site_dir), os.environ.get("PYTHONPATH")])))
    env.pop(registry.DISABLE_ENV, None)  # the new run's conftest.py decides
    if disable is not None:
        env[registry.DISABLE_ENV] = disable
    # cwd: a directory without the source tree, which would shadow the installed package
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:xdist",
                           "-p", "no:cacheprovider", *(str(tests / t) for t in _REGISTRY_DEPENDENT)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)


def test_the_test_suite_ignores_installed_third_party_plugins(site, tmp_path):
    site.install("ok-third-party", {"ok_third_party": _THIRD_PARTY_SOURCE,
                                    "ok_third_party_broken": "raise ImportError('broken')"},
                 {"components": "ok_third_party", "broken": "ok_third_party_broken"})
    # the distribution is seen where entry points load (as in a user's process)
    with pytest.warns(PluginWarning, match="ok-third-party.*ImportError: broken"):
        losses = onlinekernel.available_losses()
    assert losses["ok_cauchy_loss"]["distribution"] == "ok-third-party"
    assert "ok_needs_width" in onlinekernel.available_feature_maps()

    isolated = _run_tests_beside(site.path, tmp_path)
    assert isolated.returncode == 0, isolated.stdout[-4000:] + isolated.stderr[-2000:]
    assert re.search(r"\b\d{3,} passed", isolated.stdout), isolated.stdout[-2000:]
    # the control: loading every installed plugin, the same tests fail on it
    exposed = _run_tests_beside(site.path, tmp_path, disable="0")
    assert exposed.returncode != 0, exposed.stdout[-2000:]
    assert re.search(r"'ok_needs_(scale|width)'", exposed.stdout), exposed.stdout[-4000:]


# ---------------------------------------------------------------------- #
# 6. pure-Python losses as instances
# ---------------------------------------------------------------------- #
# PyLogistic and PySquared (conftest.py): the logistic and squared losses in Python
class FaultyLoss(PySquared):
    """Squared loss that turns faulty once ``calls`` reaches ``fail_at``."""
    name = "faulty"

    def __init__(self, fault="nan", fail_at=0):
        self.fault = fault
        self.fail_at = fail_at
        self.calls = 0

    def gradient(self, y, raw):
        self.calls += 1
        g = raw - y
        if self.calls <= self.fail_at:
            return g
        if self.fault == "nan":
            g = g.copy()
            g[-1, 0] = np.nan
            return g
        if self.fault == "inf":
            return np.full_like(g, np.inf)
        if self.fault == "shape":
            return np.hstack([g, g])
        if self.fault == "rows":
            return g[:-1]
        raise AssertionError(self.fault)


class FaultyMargin(FaultyLoss):
    name = "faulty_margin"
    target_encoding = "margin"


def test_python_margin_loss_in_classifier_matches_the_compiled_one():
    X, y = _circle_data()
    py = DSGClassifier(loss=PyLogistic(), random_state=0, solver="sgd", max_iter=2, tol=None).fit(X, y)
    cy = DSGClassifier(loss="logistic", random_state=0, solver="sgd", max_iter=2, tol=None).fit(X, y)
    assert isinstance(py.loss_, PyLogistic)
    np.testing.assert_allclose(py.coef_, cy.coef_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(py.intercept_, cy.intercept_, rtol=1e-9, atol=1e-12)
    X_test, y_test = _circle_data(n=400, seed=3)
    assert py.score(X_test, y_test) > 0.9
    proba = py.predict_proba(X_test)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(py.classes_[proba.argmax(axis=1)], py.predict(X_test))


def test_python_margin_loss_one_vs_rest_on_three_classes():
    rng = np.random.default_rng(0)
    centres = np.array([[0.0, 3.0], [-3.0, -2.0], [3.0, -2.0]])
    labels = rng.integers(0, 3, size=450)
    X = centres[labels] + rng.normal(size=(450, 2))
    y = np.array(["a", "b", "c"])[labels]
    clf = DSGClassifier(loss=PyLogistic(), random_state=0).fit(X, y)
    assert clf.intercept_.shape == (3,)  # one output per class
    assert clf.score(X, y) > 0.9


def test_python_real_loss_in_regressor_matches_the_compiled_one():
    X, y = _regression_data()
    py = DSGRegressor(loss=PySquared(), random_state=0, solver="sgd", max_iter=2, tol=None).fit(X, y)
    cy = DSGRegressor(loss="squared", random_state=0, solver="sgd", max_iter=2, tol=None).fit(X, y)
    np.testing.assert_allclose(py.coef_, cy.coef_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(py.intercept_, cy.intercept_, rtol=1e-9, atol=1e-12)
    assert py.score(X, y) > 0.9
    # partial_fit in single samples goes through the Python loss too
    online = DSGRegressor(loss=PySquared(), random_state=0, batch_size=1)
    for i in range(50):
        online.partial_fit(X[i:i + 1], y[i:i + 1])
    assert online.t_ == 50


def test_python_loss_of_the_wrong_kind_is_refused_by_the_regressor():
    X, y = _regression_data(n=50)
    with pytest.raises(ValueError, match="target_encoding='margin'"):
        DSGRegressor(loss=PyLogistic()).fit(X, y)


def _snapshot(model):
    return {"coef_": model.coef_.copy(), "intercept_": model.intercept_.copy(),
            "n_blocks_": model.n_blocks_, "t_": model.t_, "loss_": model.loss_}


def _assert_unchanged(model, before, X):
    after = _snapshot(model)
    np.testing.assert_array_equal(after["coef_"], before["coef_"])
    np.testing.assert_array_equal(after["intercept_"], before["intercept_"])
    assert (after["n_blocks_"], after["t_"]) == (before["n_blocks_"], before["t_"])
    assert after["loss_"] is before["loss_"]
    return model.predict(X)


FAULTS = [("nan", FloatingPointError, r"FaultyLoss\.gradient returned non-finite"),
          ("inf", FloatingPointError, r"FaultyLoss\.gradient returned non-finite"),
          ("shape", ValueError, r"FaultyLoss\.gradient returned shape \(64, 2\), "
                                r"expected \(64, 1\)"),
          ("rows", ValueError, r"FaultyLoss\.gradient returned shape \(63, 1\)")]


@pytest.mark.parametrize("fault, error, message", FAULTS)
def test_faulty_python_loss_in_fit_leaves_the_fitted_model_unchanged(fault, error, message):
    X, y = _regression_data(n=640)
    # normalize_y=False: the fault is counted in training steps (the target scaling
    # would call the loss first to find the intercept's start)
    model = DSGRegressor(loss=PySquared(), random_state=0, solver="sgd", max_iter=1, tol=None,
                         normalize_y=False).fit(X, y)
    before = _snapshot(model)
    pred = model.predict(X)
    # fails on the 4th mini-batch of a new fit: steps were taken before the fault
    model.set_params(loss=FaultyLoss(fault, fail_at=3))
    with pytest.raises(error, match=message):
        model.fit(X, y)
    np.testing.assert_array_equal(_assert_unchanged(model, before, X), pred)


@pytest.mark.parametrize("fault, error, message", FAULTS)
def test_faulty_python_loss_in_warm_start_fit_leaves_the_model_unchanged(fault, error,
                                                                          message):
    X, y = _regression_data(n=640)
    model = DSGRegressor(loss=FaultyLoss(fault, fail_at=10 ** 9), random_state=0,
                         solver="sgd", max_iter=1, tol=None, warm_start=True,
                         normalize_y=False).fit(X, y)
    before = _snapshot(model)
    pred = model.predict(X)
    # training continues from the fitted state with the fitted loss, and fails
    # on its 4th mini-batch (the parameter itself must stay as built: changing
    # it would be refused before any training)
    model.loss_.fail_at = model.loss_.calls + 3
    with pytest.raises(error, match=message):
        model.fit(X, y)
    np.testing.assert_array_equal(_assert_unchanged(model, before, X), pred)


@pytest.mark.parametrize("fault, error, message", FAULTS)
def test_faulty_python_loss_in_partial_fit_leaves_the_model_unchanged(fault, error, message):
    X, y = _regression_data(n=640)
    model = DSGRegressor(loss=FaultyLoss(fault, fail_at=10 ** 9), random_state=0)
    model.partial_fit(X, y)
    before = _snapshot(model)
    pred = model.predict(X)
    model.loss_.fail_at = model.loss_.calls + 2  # two more good batches, then the fault
    with pytest.raises(error, match=message):
        model.partial_fit(X, y)
    np.testing.assert_array_equal(_assert_unchanged(model, before, X), pred)
    model.loss_.fail_at = 10 ** 9  # healed: training resumes from the old state
    model.partial_fit(X, y)
    assert model.t_ == before["t_"] + 10


@pytest.mark.parametrize("fault", ["nan", "shape"])
def test_faulty_python_loss_in_classifier_leaves_the_model_unchanged(fault):
    X, y = _circle_data(n=640)
    clf = DSGClassifier(loss=PyLogistic(), random_state=0, solver="sgd", max_iter=1, tol=None).fit(X, y)
    before = _snapshot(clf)
    pred = clf.predict(X)
    clf.set_params(loss=FaultyMargin(fault, fail_at=2))
    with pytest.raises((FloatingPointError, ValueError), match="FaultyMargin.gradient returned"):
        clf.fit(X, y)
    np.testing.assert_array_equal(_assert_unchanged(clf, before, X), pred)


# ---------------------------------------------------------------------- #
# 7. hookspecs
# ---------------------------------------------------------------------- #
def _hookspec_functions():
    marker = f"{hookspecs.hookspec.project_name}_spec"
    return {name: f for name, f in inspect.getmembers(hookspecs, inspect.isfunction)
            if hasattr(f, marker)}


def test_hookspecs_are_documented_and_prefixed():
    specs = _hookspec_functions()
    assert {"onlinekernel_register_losses", "onlinekernel_register_feature_maps"} <= set(specs)
    for name, func in specs.items():
        assert name.startswith("onlinekernel_"), name
        assert func.__doc__ and func.__doc__.strip(), name
        assert len(inspect.getdoc(func).split()) >= 10, name
    # every onlinekernel_* function of the module is a hookspec
    prefixed = {name for name, _ in inspect.getmembers(hookspecs, inspect.isfunction)
                if name.startswith("onlinekernel_")}
    assert prefixed == set(specs)
    assert hookspecs.hookspec.project_name == hookspecs.hookimpl.project_name == "onlinekernel"


def test_builtin_hookimpls_match_the_hookspecs():
    import pluggy
    from onlinekernel.featuremaps import hooks as feature_maps
    from onlinekernel.losses import hooks as losses
    pm = pluggy.PluginManager("onlinekernel")
    pm.add_hookspecs(hookspecs)
    pm.register(losses)
    pm.register(feature_maps)
    pm.check_pending()  # no hookimpl without a spec (e.g. a misspelt hook name)
    assert len(pm.hook.onlinekernel_register_losses.get_hookimpls()) == 1
    assert len(pm.hook.onlinekernel_register_feature_maps.get_hookimpls()) == 1


def test_listed_parameters_are_introspected_once_and_handed_out_as_copies(monkeypatch):
    # an estimator's fit reads its kernel's parameters from the listing several times:
    # the factory's signature is read once per registry, and no caller can change it
    calls = []
    real = inspect.signature
    monkeypatch.setattr(inspect, "signature", lambda f, *a, **k: calls.append(f) or real(f, *a, **k))
    registry.reset()
    first = registry.available_feature_maps()["gaussian"]["parameters"]
    first["gamma"] = "changed"
    again = registry.available_feature_maps()["gaussian"]["parameters"]
    assert again["gamma"] == 1.0 and again["n_components"] == 256
    factory = registry._get().feature_maps["gaussian"].factory
    assert calls.count(factory) <= 1
    registry.reset()
