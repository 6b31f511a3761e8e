"""Scikit-learn compatible estimators."""
from onlinekernel.estimators._classifier import DSGClassifier
from onlinekernel.estimators._regressor import DSGRegressor

__all__ = ["DSGClassifier", "DSGRegressor"]
