"""Hook implementations registering the built-in feature maps."""
from onlinekernel.hookspecs import hookimpl
from onlinekernel.featuremaps.arccos import ArcCosine
from onlinekernel.featuremaps.binning import RandomBinning
from onlinekernel.featuremaps.gaussian import Gaussian
from onlinekernel.featuremaps.iln import InfiniteLayerUnits
from onlinekernel.featuremaps.laplacian import Laplacian
from onlinekernel.featuremaps.matern import IsotropicCauchy, Matern
from onlinekernel.featuremaps.nystrom import Nystrom
from onlinekernel.featuremaps.orf import OrthogonalRandomFeatures
from onlinekernel.featuremaps.poly_sketch import PolySketch
from onlinekernel.featuremaps.structured import Fastfood, StructuredOrthogonalRandomFeatures


@hookimpl
def onlinekernel_register_feature_maps():
    return {cls.name: cls for cls in (Gaussian, Laplacian, Matern, IsotropicCauchy,
                                      OrthogonalRandomFeatures,
                                      StructuredOrthogonalRandomFeatures, Fastfood, ArcCosine,
                                      PolySketch, InfiniteLayerUnits, Nystrom, RandomBinning)}
