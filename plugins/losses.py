"""Hook implementations registering the built-in losses."""
from onlinekernel.hookspecs import hookimpl
from onlinekernel_plugins._density_ratio import KLDensityRatio
from onlinekernel_plugins._gp_variance import GPVariance
from onlinekernel_plugins._novelty import Novelty
from onlinekernel_plugins._quantile import MultiQuantile
from onlinekernel_plugins._losses import (
    EpsilonInsensitive, Hinge, Huber, Logistic, Multinomial, Quantile, Squared,
    SquaredHinge)


@hookimpl
def onlinekernel_register_losses():
    return {cls.name: cls for cls in (Hinge, SquaredHinge, Logistic, Multinomial, Squared,
                                      Huber, EpsilonInsensitive, Quantile, KLDensityRatio,
                                      Novelty, MultiQuantile, GPVariance)}
