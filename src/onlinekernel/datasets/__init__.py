"""A small real dataset bundled with the package (see README.md beside this file).

Examples
--------
>>> from onlinekernel.datasets import load_letter
>>> X_train, y_train, X_test, y_test = load_letter()
>>> X_train.shape, X_test.shape, int(y_train.max()) + 1
((15000, 16), (5000, 16), 26)
"""
from importlib import resources

import numpy as np

__all__ = ["load_letter", "LETTER_CITATION"]

LETTER_CITATION = (
    "P. W. Frey and D. J. Slate (1991), Letter recognition using Holland-style adaptive "
    "classifiers, Machine Learning 6(2):161-182; UCI Letter Recognition, CC BY 4.0")


def load_letter():
    """UCI Letter Recognition (26 classes, 16 features scaled to [-1, 1]).

    Returns
    -------
    X_train, y_train, X_test, y_test : ndarray
        15000 training and 5000 test rows; labels 0..25 for A..Z.
    """
    with resources.files(__name__).joinpath("letter.npz").open("rb") as fh:
        with np.load(fh) as d:
            return (d["X_train"].astype(np.float64), d["y_train"],
                    d["X_test"].astype(np.float64), d["y_test"])
