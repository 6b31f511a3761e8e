"""Hook specifications: what an onlinekernel plugin may provide.

A plugin is a module (or object) with functions marked by :data:`hookimpl`,
declared in its distribution's metadata under the ``onlinekernel`` entry-point
group::

    [project.entry-points.onlinekernel]
    my_plugin = "my_package.my_plugin_module"

A plugin that only registers classes by their ``name`` need not write the
hooks: a :class:`Plugin` object implements both, and the entry point names
it (``my_plugin = "my_package:plugin"``).

The built-in losses and feature maps implement the same hooks
(:mod:`onlinekernel.losses.hooks`, :mod:`onlinekernel.featuremaps.hooks`); the
registry registers those two modules directly instead of through entry points.

Examples
--------
>>> from onlinekernel.hookspecs import hookimpl
>>> @hookimpl
... def onlinekernel_register_losses():
...     return {}
"""
import pluggy

__all__ = ["hookspec", "hookimpl", "onlinekernel_register_losses",
           "onlinekernel_register_feature_maps", "Plugin"]

#: Marker for hook specifications of the ``onlinekernel`` project.
hookspec = pluggy.HookspecMarker("onlinekernel")
#: Marker for hook implementations; decorate your plugin's functions with it.
hookimpl = pluggy.HookimplMarker("onlinekernel")


@hookspec
def onlinekernel_register_losses():
    """Register losses.

    Called once, when the registry is first used (the plugin manager is
    created lazily).  Return a dict mapping each loss name to a factory: a
    class or callable taking the loss's parameters as keyword arguments and
    returning either a compiled loss (a subclass of
    ``onlinekernel.losses.base.CyLoss``) or a pure-Python :class:`onlinekernel.Loss`
    -- or an operator objective, whose coefficients are a matrix over pairs
    of random features (a subclass of
    ``onlinekernel.losses.operator.CyOperatorObjective``, such as ``gp_variance``),
    which the estimators built for operators look up by name.
    Names must be unique across all installed plugins.
    """


@hookspec
def onlinekernel_register_feature_maps():
    """Register random-feature maps.

    Called once, when the registry is first used.  Return a dict mapping each
    feature-map name to a factory: a class or callable taking
    ``n_components`` and the map's kernel parameters as keyword arguments and
    returning either a compiled map (a subclass of
    ``onlinekernel.featuremaps.base.CyFeatureMap``) or a pure-Python
    :class:`onlinekernel.FeatureMap`.
    Names must be unique across all installed plugins.
    """


class Plugin:
    """A plugin object that registers the given losses and feature maps.

    It implements both hooks, so a plugin module needs one line instead of a
    hook function per kind; declare the object under the ``onlinekernel``
    entry-point group (``my_plugin = "my_package:plugin"``).

    Parameters
    ----------
    losses, feature_maps : iterable of factories, or dict of name -> factory
        An iterable registers each factory under its ``name`` attribute (the
        classes derived from :class:`onlinekernel.Loss` and
        :class:`onlinekernel.FeatureMap` have one); a dict gives the names.

    Examples
    --------
    >>> import onlinekernel
    >>> from onlinekernel.hookspecs import Plugin
    >>> class Absolute(onlinekernel.Loss):
    ...     name = "absolute_example"
    ...     target_encoding = "real"
    ...     def loss(self, y, raw):
    ...         return np.abs(raw - y).sum(axis=1)
    ...     def gradient(self, y, raw):
    ...         return np.sign(raw - y)
    >>> plugin = Plugin(losses=[Absolute])
    >>> plugin
    Plugin(losses=['absolute_example'], feature_maps=[])
    >>> plugin.onlinekernel_register_losses() == {"absolute_example": Absolute}
    True
    """

    def __init__(self, losses=(), feature_maps=()):
        self._losses = self._by_name(losses, "loss")
        self._feature_maps = self._by_name(feature_maps, "feature map")

    @staticmethod
    def _by_name(factories, kind):
        if isinstance(factories, dict):
            return dict(factories)
        table = {}
        for factory in factories:
            name = getattr(factory, "name", None)
            if not isinstance(name, str) or not name:
                raise TypeError(f"{factory!r} has no string attribute 'name' to register the "
                                f"{kind} under; pass a dict of name -> factory instead")
            table[name] = factory
        return table

    @hookimpl
    def onlinekernel_register_losses(self):
        """The losses: ``{name: factory}``."""
        return dict(self._losses)

    @hookimpl
    def onlinekernel_register_feature_maps(self):
        """The feature maps: ``{name: factory}``."""
        return dict(self._feature_maps)

    def __repr__(self):
        return (f"Plugin(losses={list(self._losses)}, "
                f"feature_maps={list(self._feature_maps)})")
