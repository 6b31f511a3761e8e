"""How the model files in this folder were made: by onlinekernel at commit 828729f
(model-file format version 1), before the batch solvers.

Run with that version installed (``pip install .`` of commit 828729f), from
this folder.  ``expected.npz`` holds the predictions the models gave then, on
the rows ``X`` it also holds; the test suite checks that today's
``onlinekernel.load`` reproduces them bit for bit.
"""
import numpy as np

import onlinekernel
from onlinekernel import DSGClassifier, DSGQuantileRegressor, DSGRegressor

rng = np.random.default_rng(20261124)
X = rng.normal(size=(120, 3))
y_bin = (X[:, 0] * X[:, 1] > 0).astype(int)
y_3 = np.digitize(X[:, 0], [-0.5, 0.5])
y_reg = np.sin(X[:, 0]) + 0.1 * X[:, 1]
small = dict(block_size=16, max_blocks=4, random_state=0)
models = {
    "classifier_hinge": DSGClassifier(**small).fit(X, y_bin),
    "classifier_logistic_3": DSGClassifier(loss="logistic", **small).fit(X, y_3),
    "classifier_float32": DSGClassifier(dtype="float32", **small).fit(X, y_bin),
    "regressor_huber": DSGRegressor(loss="huber", **small).fit(X, 1000 * y_reg),
    "quantiles": DSGQuantileRegressor(quantiles=(0.2, 0.8), **small).fit(X, y_reg),
}
expected = {"X": X}
for name, model in models.items():
    model.save(f"{name}.okm")
    out = model.decision_function(X) if hasattr(model, "decision_function") else model.predict(X)
    expected[name] = np.asarray(out)
    assert onlinekernel.__version__ == "0.1.0"
np.savez("expected.npz", **expected)
