"""onlinekernel: online and large-scale kernel learning with doubly stochastic gradients.

Examples
--------
>>> import numpy as np
>>> from onlinekernel import DSGClassifier
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(400, 2))
>>> y = (X[:, 0] ** 2 + X[:, 1] ** 2 < 1.0).astype(int)  # not linearly separable
>>> clf = DSGClassifier(random_state=0)
>>> for start in range(0, 400, 50):  # an online loop
...     _ = clf.partial_fit(X[start:start + 50], y[start:start + 50], classes=[0, 1])
>>> clf.n_random_features_
4096
"""
from onlinekernel._version import __version__
from onlinekernel import registry
from onlinekernel.featuremaps import FeatureMap, hooks as _feature_map_hooks
from onlinekernel.losses import Loss, hooks as _loss_hooks
from onlinekernel.registry import (
    available_feature_maps, available_losses, get_feature_map, get_loss)

# the built-in losses and maps, registered directly (third parties: entry points)
registry._register_builtin("builtin_losses", _loss_hooks)
registry._register_builtin("builtin_feature_maps", _feature_map_hooks)
from onlinekernel.estimators import (
    DSGClassifier, DSGDensityRatio, DSGGaussianProcessRegressor, DSGOneClassSVM,
    DSGQuantileRegressor, DSGRegressor, EigenProClassifier, EigenProRegressor,
    ExtremeLearningMachineClassifier,
    ExtremeLearningMachineRegressor, FixedFeatureClassifier, FixedFeatureRegressor,
    NormaClassifier, ShrinkingGradientRegressor, WeightedKitchenSinksClassifier, WeightedKitchenSinksRegressor)
from onlinekernel.io.modelfile import ModelFileError, load

__all__ = ["__version__", "Loss", "FeatureMap", "available_losses", "available_feature_maps", "get_loss",
           "get_feature_map", "DSGClassifier", "DSGRegressor", "DSGDensityRatio",
           "DSGOneClassSVM", "DSGQuantileRegressor", "DSGGaussianProcessRegressor",
           "EigenProClassifier", "EigenProRegressor", "NormaClassifier",
           "FixedFeatureClassifier", "FixedFeatureRegressor", "ShrinkingGradientRegressor",
           "ExtremeLearningMachineRegressor", "ExtremeLearningMachineClassifier",
           "WeightedKitchenSinksRegressor", "WeightedKitchenSinksClassifier",
           "load", "ModelFileError"]
