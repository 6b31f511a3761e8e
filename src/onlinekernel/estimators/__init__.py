"""Scikit-learn compatible estimators."""
from onlinekernel.estimators._base import DRIFT_REACTIONS
from onlinekernel.estimators._classifier import DSGClassifier, probabilities
from onlinekernel.estimators._density_ratio import DSGDensityRatio
from onlinekernel.estimators._eigenpro import EigenProClassifier, EigenProRegressor
from onlinekernel.estimators._elm import (
    ExtremeLearningMachineClassifier, ExtremeLearningMachineRegressor,
    WeightedKitchenSinksClassifier, WeightedKitchenSinksRegressor)
from onlinekernel.estimators._fixed import FixedFeatureClassifier, FixedFeatureRegressor
from onlinekernel.estimators._gp import DSGGaussianProcessRegressor
from onlinekernel.estimators._norma import LinearStream, NormaClassifier, NormaStream
from onlinekernel.estimators._novelty import DSGOneClassSVM
from onlinekernel.estimators._quantile import DSGQuantileRegressor
from onlinekernel.estimators._regressor import DSGRegressor
from onlinekernel.estimators._shrinking import ShrinkingGradientRegressor

__all__ = ["DRIFT_REACTIONS", "DSGClassifier", "DSGDensityRatio", "DSGGaussianProcessRegressor",
           "DSGOneClassSVM", "DSGQuantileRegressor", "DSGRegressor", "EigenProClassifier",
           "EigenProRegressor",
           "ExtremeLearningMachineClassifier", "ExtremeLearningMachineRegressor",
           "FixedFeatureClassifier", "FixedFeatureRegressor", "LinearStream", "NormaClassifier",
           "NormaStream",
           "ShrinkingGradientRegressor",
           "WeightedKitchenSinksClassifier", "WeightedKitchenSinksRegressor", "probabilities"]
