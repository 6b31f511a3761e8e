"""An example third-party onlinekernel plugin: a loss and a feature map.

This package is a template for plugin authors.  It provides

* ``"smooth_hinge"`` -- :class:`~onlinekernel_example_plugin.smooth_hinge.SmoothHinge`,
  a quadratically smoothed hinge loss for classification;
* ``"cauchy"`` -- :class:`~onlinekernel_example_plugin.cauchy.CauchyFeatures`,
  random Fourier features of the Cauchy kernel.

Both are pure Python (subclasses of :class:`onlinekernel.Loss` and
:class:`onlinekernel.FeatureMap`), so the distribution needs no compiler.
The object ``plugin`` below implements the plugin's hooks: the
distribution declares it under the ``onlinekernel`` entry-point group (see
``pyproject.toml``) and onlinekernel's registry calls its hooks once, the
first time a loss or feature map is looked up.  The names they return
are how users, model files and the command line refer to the components.

Examples
--------
>>> import onlinekernel
>>> onlinekernel.available_losses()["smooth_hinge"]["distribution"]
'onlinekernel-example-plugin'
>>> onlinekernel.available_feature_maps()["cauchy"]["parameters"]
{'n_components': 256, 'gamma': 1.0}
>>> onlinekernel.get_loss("smooth_hinge", smoothing=0.5)
SmoothHinge(smoothing=0.5)
"""
from onlinekernel.hookspecs import Plugin

from onlinekernel_example_plugin.cauchy import CauchyFeatures
from onlinekernel_example_plugin.smooth_hinge import SmoothHinge

__version__ = "0.1.0"
__all__ = ["CauchyFeatures", "SmoothHinge", "plugin"]

#: The plugin: registers ``smooth_hinge`` and ``cauchy`` (both hooks).
plugin = Plugin(losses=[SmoothHinge], feature_maps=[CauchyFeatures])
