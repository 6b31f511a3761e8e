"""Hook implementations registering the built-in losses."""
from onlinekernel.hookspecs import hookimpl
from onlinekernel.losses.density_ratio import KLDensityRatio
from onlinekernel.losses.gp_variance import GPVariance
from onlinekernel.losses.novelty import Novelty
from onlinekernel.losses.quantile import MultiQuantile
from onlinekernel.losses.builtin import (
    EpsilonInsensitive, Hinge, Huber, Logistic, Multinomial, Quantile, Squared,
    SquaredHinge)


@hookimpl
def onlinekernel_register_losses():
    return {cls.name: cls for cls in (Hinge, SquaredHinge, Logistic, Multinomial, Squared,
                                      Huber, EpsilonInsensitive, Quantile, KLDensityRatio,
                                      Novelty, MultiQuantile, GPVariance)}
