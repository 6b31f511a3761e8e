"""Hook implementations registering the built-in losses."""
from onlinekernel.hookspecs import hookimpl
from onlinekernel_plugins._losses import (
    EpsilonInsensitive, Hinge, Huber, Logistic, Multinomial, Quantile, Squared,
    SquaredHinge)


@hookimpl
def onlinekernel_register_losses():
    return {cls.name: cls for cls in (Hinge, SquaredHinge, Logistic, Multinomial, Squared,
                                      Huber, EpsilonInsensitive, Quantile)}
