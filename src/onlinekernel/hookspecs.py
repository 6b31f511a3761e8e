"""Hook specifications: what an onlinekernel plugin may provide.

A plugin is a module (or object) with functions marked by :data:`hookimpl`,
declared in its distribution's metadata under the ``onlinekernel`` entry-point
group::

    [project.entry-points.onlinekernel]
    my_plugin = "my_package.my_plugin_module"

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
           "onlinekernel_register_feature_maps"]

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
