"""The hook implementations of the compiled plugin."""
from onlinekernel.hookspecs import hookimpl

from okguide_cython._plugin import ExponentialFeatures, PseudoHuber


@hookimpl
def onlinekernel_register_losses():
    return {PseudoHuber.name: PseudoHuber}


@hookimpl
def onlinekernel_register_feature_maps():
    return {ExponentialFeatures.name: ExponentialFeatures}
