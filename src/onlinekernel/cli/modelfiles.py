"""What ``predict`` and ``evaluate`` share: loading a model file and an older version's scaling.

Models are written with ``model.save(path)`` and read with
:func:`onlinekernel.load`; a model stores its feature scaling (its
``input_scaling`` parameter) itself.  Older versions wrote the scaling beside
the model as ``MODEL`` + :data:`SCALING_SUFFIX`, which is still applied to a
model without a scaling of its own (and removed by ``train -o MODEL``).
"""
import hashlib
import os

import numpy as np

from onlinekernel.io.readers import InputError

SCALING_SUFFIX = ".scaling.npz"


def load_model(path):
    """The model in the file ``path`` (:func:`onlinekernel.load`)."""
    import onlinekernel

    if not os.path.exists(path):
        raise InputError(f"{path}: no such model file")
    return onlinekernel.load(path)


def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def load_scaling(model_path, model, progress):
    """An older version's ``MODEL.scaling.npz``, for a model without a scaling of its own.

    ``(mean, scale)``, said on ``progress``, or None when there is none to apply.
    """
    path = model_path + SCALING_SUFFIX
    if model.get_params().get("input_scaling") is not None or not os.path.exists(path):
        return None
    n_features = model.n_features_in_
    try:
        with np.load(path, allow_pickle=False) as d:
            mean, scale, sha = d["mean"], d["scale"], str(d["model_sha256"])
    except (OSError, ValueError, KeyError, EOFError) as exc:
        raise InputError(f"{path}: not a readable scaling file ({exc})") from None
    if sha != _sha256(model_path):
        raise InputError(f"{path} belongs to another model file than {model_path} (it was "
                         f"written for an earlier model); delete it, or retrain with "
                         f"--standardize")
    if mean.shape != (n_features,) or scale.shape != (n_features,) or not (scale > 0).all():
        raise InputError(f"{path}: the scaling does not fit the model's {n_features} features")
    progress.note(f"onlinekernel: applying the feature scaling in {path}")
    return mean, scale


def scaled(X, scaling):
    """``X`` scaled by ``load_scaling``'s ``(mean, scale)``, or ``X`` for None."""
    return X if scaling is None else (X - scaling[0]) / scaling[1]
