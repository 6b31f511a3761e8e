"""The plugin registry: losses and feature maps by name.

The plugin manager is created on first use.  It registers onlinekernel's
own hook modules directly (:mod:`onlinekernel.losses.hooks` and
:mod:`onlinekernel.featuremaps.hooks`, handed over by the package's
``__init__`` as pytest registers its default plugins), then loads every
third-party module declared under the ``onlinekernel`` entry-point group,
and collects what their hooks register.  The registry itself knows no
particular loss or map, so a map built on another kernel (Nystrom) can look
its base kernel up here.

* An unknown name raises :class:`ValueError` listing what is registered.
* A name registered twice keeps onlinekernel's own registration (a plugin
  cannot replace a built-in); two third-party plugins claiming one name both
  lose it.  Either way a :class:`PluginConflictWarning` names both.
* A plugin that fails to import, a hook that raises or returns something
  other than a dict, a name that is not a string and a factory that is not
  callable emit a :class:`PluginWarning` naming the plugin and are skipped;
  the others keep working.
* Setting the environment variable ``ONLINEKERNEL_DISABLE_PLUGINS``
  (:data:`DISABLE_ENV`) to anything but empty, ``0``, ``false`` or ``no``
  loads only the plugins that ship with onlinekernel itself: third-party
  distributions are not even imported, as with pytest's
  ``PYTEST_DISABLE_PLUGIN_AUTOLOAD``.  It is read when the registry is built,
  on the first lookup after import or :func:`reset`.  This isolates tests
  from whatever else is installed: onlinekernel's own test suite runs with it
  set (``tests/conftest.py``) and unsets it, then calls :func:`reset`, in the
  tests of third-party plugins.

Examples
--------
>>> import onlinekernel
>>> "logistic" in onlinekernel.available_losses()
True
>>> onlinekernel.available_feature_maps()["gaussian"]["distribution"]
'onlinekernel'
>>> onlinekernel.get_loss("huber", delta=2.0)
Huber(delta=2.0)
"""
from dataclasses import dataclass
import functools
import importlib.metadata
import inspect
import os
import threading
import warnings

import pluggy

from onlinekernel import hookspecs

__all__ = ["available_losses", "available_feature_maps", "get_loss", "get_feature_map",
           "PluginConflictWarning", "PluginWarning", "reset", "ENTRY_POINT_GROUP",
           "DISABLE_ENV"]

ENTRY_POINT_GROUP = "onlinekernel"
#: The environment variable that, set, restricts the registry to onlinekernel's own plugins.
DISABLE_ENV = "ONLINEKERNEL_DISABLE_PLUGINS"
_OWN_DISTRIBUTION = "onlinekernel"
# onlinekernel's own hook modules, registered without entry points (see _register_builtin)
_BUILTINS = {}


class PluginWarning(UserWarning):
    """A plugin, or one of its names, could not be used and is skipped; the others still work."""


class PluginConflictWarning(PluginWarning):
    """Two plugins registered the same name: the built-in one is kept, or neither."""


@dataclass(frozen=True)
class _Entry:
    name: str
    kind: str
    factory: object
    plugin: str
    distribution: str

    def info(self):
        return {"distribution": self.distribution, "plugin": self.plugin,
                "factory": f"{self.factory.__module__}.{self.factory.__qualname__}",
                "parameters": self.parameters()}

    def takes_any_keyword(self):
        """Whether the factory accepts ``**kwargs`` (then it checks its own parameters)."""
        try:
            sig = inspect.signature(self.factory)
        except (TypeError, ValueError):
            return False
        return any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())

    def parameters(self):
        """Parameter names and defaults of the factory (a new dict)."""
        return dict(self._parameters)

    @functools.cached_property
    def _parameters(self):
        # introspected once per entry: an estimator's fit validates its kernel's
        # parameters three times (inspect.signature each: 1.4 ms of a 22 ms fit)
        try:
            sig = inspect.signature(self.factory)
        except (TypeError, ValueError):
            # compiled classes have no introspectable signature: their
            # get_params() on a default instance lists the parameters
            try:
                return dict(self.factory().get_params())
            except Exception:
                return {}
        return {p.name: (None if p.default is inspect.Parameter.empty else p.default)
                for p in sig.parameters.values()
                if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}


class _Registry:
    def __init__(self):
        self.pm = pluggy.PluginManager(ENTRY_POINT_GROUP)
        self.pm.add_hookspecs(hookspecs)
        self.distributions = {}
        for name, plugin in _BUILTINS.items():
            self.pm.register(plugin, name=name)
            self.distributions[name] = _OWN_DISTRIBUTION
        self._load_entry_points()
        self.losses = self._collect("loss", self.pm.hook.onlinekernel_register_losses)
        self.feature_maps = self._collect("feature map",
                                          self.pm.hook.onlinekernel_register_feature_maps)

    def _load_entry_points(self):
        only_own = os.environ.get(DISABLE_ENV, "").strip().lower() not in ("", "0", "false", "no")
        seen = set()
        for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            dist = ep.dist.name if ep.dist is not None else "<unknown>"
            if only_own and dist != _OWN_DISTRIBUTION:
                continue
            if (dist, ep.name) in seen:
                continue  # the same distribution seen twice on sys.path
            seen.add((dist, ep.name))
            # Entry-point names are only unique within a distribution: qualify
            # a name another distribution already uses instead of dropping it.
            name = ep.name
            if name in self.distributions or self.pm.has_plugin(name):
                name = f"{dist}:{ep.name}"
            try:
                plugin = ep.load()
                self.pm.register(plugin, name=name)
            except Exception as exc:  # any failure of a plugin must not break the rest
                warnings.warn(f"onlinekernel plugin {ep.name!r} from distribution {dist!r} "
                              f"could not be loaded and is skipped: "
                              f"{type(exc).__name__}: {exc}", PluginWarning, stacklevel=3)
                continue
            self.distributions[name] = dist

    def _collect(self, kind, hook):
        """Every plugin's names for ``kind``; what cannot be used is skipped with a warning.

        A hook that raises or returns something other than a dict, a name that
        is not a string and a factory that is not callable are skipped.  A
        name claimed twice keeps onlinekernel's own registration when one of
        the two is it (a plugin cannot replace a built-in), and otherwise is
        dropped for both: the library never picks one of two third-party
        plugins by load order.
        """
        entries, claims = {}, {}
        for impl in reversed(hook.get_hookimpls()):  # in registration order
            plugin_name = self.pm.get_name(impl.plugin)
            dist = self.distributions.get(plugin_name, "<registered at runtime>")
            who = f"plugin {plugin_name!r} (distribution {dist!r})"
            try:
                result = impl.function()
            except Exception as exc:
                _warn(f"{who} failed in its {kind} hook and is skipped: "
                      f"{type(exc).__name__}: {exc}")
                continue
            if not isinstance(result, dict):
                _warn(f"{who} returned {type(result).__name__} from its {kind} hook, not a "
                      f"dict of name -> factory; it is skipped")
                continue
            for name, factory in result.items():
                if not isinstance(name, str) or not name:
                    _warn(f"{who} registered a {kind} under {name!r}, not a name; skipped")
                elif not callable(factory):
                    _warn(f"{who} registered {kind} {name!r} as {type(factory).__name__}, "
                          f"which is not callable; skipped")
                else:
                    claims.setdefault(name, []).append(
                        _Entry(name, kind, factory, plugin_name, dist))
        for name, claimants in claims.items():
            if len(claimants) == 1:
                entries[name] = claimants[0]
                continue
            own = [e for e in claimants if e.distribution == _OWN_DISTRIBUTION]
            listed = " and ".join(f"plugin {e.plugin!r} (distribution {e.distribution!r})"
                                  for e in claimants)
            if len(own) == 1:
                entries[name] = own[0]
                _warn(f"{kind} name {name!r} is registered by {listed}: the built-in one is "
                      f"kept, the other is skipped", PluginConflictWarning)
            else:
                _warn(f"{kind} name {name!r} is registered by {listed}: neither is used "
                      f"(uninstall one of them)", PluginConflictWarning)
        return dict(sorted(entries.items()))


def _warn(message, category=PluginWarning):
    warnings.warn(message, category, stacklevel=4)


_lock = threading.Lock()
_registry = None


def _get():
    global _registry
    if _registry is None:
        with _lock:
            if _registry is None:
                _registry = _Registry()
    return _registry


def _register_builtin(name, plugin):
    """Register one of onlinekernel's own hook modules (the package's ``__init__`` does)."""
    with _lock:
        _BUILTINS[name] = plugin
        global _registry
        _registry = None


def reset():
    """Forget the loaded plugins; the next lookup loads the entry points again."""
    global _registry
    with _lock:
        _registry = None


def available_losses():
    """Registered losses: ``{name: {"distribution", "plugin", "factory", "parameters"}}``."""
    return {name: e.info() for name, e in _get().losses.items()}


def available_feature_maps():
    """Registered feature maps: ``{name: {"distribution", "plugin", "factory", "parameters"}}``."""
    return {name: e.info() for name, e in _get().feature_maps.items()}


def _build(table, kind, name, params):
    if not isinstance(name, str):
        raise TypeError(f"a {kind} name must be a string, got {type(name).__name__}")
    if name not in table:
        raise ValueError(f"unknown {kind} {name!r}; registered {kind}{'es' if kind.endswith('s') else 's'}: "
                         f"{', '.join(table) or '(none)'}")
    entry = table[name]
    unknown = set(params) - set(entry.parameters())
    if unknown and not entry.takes_any_keyword():
        raise ValueError(f"invalid parameters for {kind} {name!r}: {sorted(unknown)}; "
                         f"it takes {sorted(entry.parameters())}")
    try:
        return entry.factory(**params)
    except TypeError as exc:
        raise ValueError(f"invalid parameters for {kind} {name!r}: {exc}") from None


def get_loss(name, **params):
    """Build the loss registered as ``name`` with ``params``.

    Raises
    ------
    ValueError
        If no loss is registered under ``name`` (the message lists those that
        are) or the parameters are invalid.
    """
    return _build(_get().losses, "loss", name, params)


def get_feature_map(name, **params):
    """Build the feature map registered as ``name`` with ``params``.

    Raises
    ------
    ValueError
        If no feature map is registered under ``name`` (the message lists
        those that are) or the parameters are invalid.
    """
    return _build(_get().feature_maps, "feature map", name, params)
