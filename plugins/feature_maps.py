"""Hook implementations registering the built-in feature maps."""
from onlinekernel.hookspecs import hookimpl
from onlinekernel_plugins._arccos import ArcCosine
from onlinekernel_plugins._gaussian import Gaussian
from onlinekernel_plugins._iln import InfiniteLayerUnits
from onlinekernel_plugins._laplacian import Laplacian
from onlinekernel_plugins._matern import IsotropicCauchy, Matern
from onlinekernel_plugins._nystrom import Nystrom
from onlinekernel_plugins._orf import OrthogonalRandomFeatures
from onlinekernel_plugins._poly_sketch import PolySketch
from onlinekernel_plugins._structured import Fastfood, StructuredOrthogonalRandomFeatures


@hookimpl
def onlinekernel_register_feature_maps():
    return {cls.name: cls for cls in (Gaussian, Laplacian, Matern, IsotropicCauchy,
                                      OrthogonalRandomFeatures,
                                      StructuredOrthogonalRandomFeatures, Fastfood, ArcCosine,
                                      PolySketch, InfiniteLayerUnits, Nystrom)}
