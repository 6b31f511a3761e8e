"""Hook implementations registering the built-in feature maps."""
from onlinekernel.hookspecs import hookimpl
from onlinekernel_plugins._gaussian import Gaussian


@hookimpl
def onlinekernel_register_feature_maps():
    return {cls.name: cls for cls in (Gaussian,)}
