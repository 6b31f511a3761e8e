"""The plugin object of the compiled plugin: what it registers."""
from onlinekernel.hookspecs import Plugin

from okguide_cython._plugin import ExponentialFeatures, PseudoHuber

plugin = Plugin(losses=[PseudoHuber], feature_maps=[ExponentialFeatures])
