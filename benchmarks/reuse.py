"""Budgeted DSG: reuse modes, averaging and preconditioning at one feature budget.

Every run trains a ``DSGClassifier`` with the same budget (``block_size=256``,
``max_blocks=16``: M = 4096 random features) and the same number of passes,
so every run takes the same number of steps; once the budget is full every
mode evaluates every block once per step, so runs of one dataset also cost
about the same time.  Configurations (hyper-parameters as in
``tests/estimators/test_learning.py``; rows subsampled as stated):

* reuse ``all`` (the default), ``none``, ``uniform`` (UDSG, schedule (1, 0):
  reuse only once full), ``uniform`` with ``reuse_schedule=(1, 1)`` (the
  paper's G = U = 1) and ``check`` (CDSG); each with ``average`` off and on;
* ``precondition`` ridges 0.1 and 1.0 with reuse ``all``, ``uniform`` and
  ``none``.

Measured: test accuracy, fit time (wall clock; the machine may be shared, so
times are indicative) and the final number of blocks.  Results go to
``benchmarks/results/reuse.json`` and a Markdown table to stdout.

Run from the repository root (about 15 minutes on 2 busy cores)::

    nice -n 10 python -m benchmarks.reuse
    nice -n 10 python -m benchmarks.reuse --quick      # smoke run
"""
import datetime
import json
import time
from pathlib import Path

import numpy as np

from onlinekernel import DSGClassifier

from ._common import RESULTS_DIR, add_data_dir, argument_parser

OUTPUT = RESULTS_DIR / "reuse.json"

# The classifier's settings when this comparison was run (plain steps,
# batches of 64, eta0=512), written out so that it survives later defaults.
SETTINGS = dict(batch_size=64, eta0=512.0, precondition=False)
# name: (constructor parameters, training rows, test rows, passes)
DATASETS = {
    "ijcnn1": (dict(SETTINGS), 20000, 20000, 3),
    "letter": (dict(SETTINGS, gamma=3.0), 15000, 5000, 3),
    "covtype_binary_sub20k": (dict(SETTINGS, gamma=4.0, alpha=1e-4, eta0=1000.0, t0=10.0,
                                   fit_intercept=False), 16000, 4000, 3),
}

CONFIGS = []
for _mode, _sched in (("all", (1, 0)), ("none", (1, 0)), ("uniform", (1, 0)),
                      ("uniform", (1, 1)), ("check", (1, 0))):
    for _avg in (False, True):
        CONFIGS.append(dict(reuse=_mode, reuse_schedule=_sched, average=_avg))
for _mode in ("all", "uniform", "none"):
    for _ridge in (0.1, 1.0):
        CONFIGS.append(dict(reuse=_mode, precondition=_ridge))


def load(data_dir, name, n_train, n_test):
    with np.load(Path(data_dir) / f"{name}.npz") as d:
        X, y = d["X_train"].astype(np.float64), d["y_train"]
        Xt, yt = d["X_test"].astype(np.float64), d["y_test"]
    # seeded subsamples (the training split of ijcnn1 is in its original order)
    rng = np.random.default_rng(0)
    i = rng.permutation(X.shape[0])[:n_train]
    j = rng.permutation(Xt.shape[0])[:n_test]
    return X[i], y[i], Xt[j], yt[j]


def label(cfg):
    parts = [cfg["reuse"]]
    if cfg.get("reuse_schedule", (1, 0)) != (1, 0):
        parts.append(f"G,U={cfg['reuse_schedule'][0]},{cfg['reuse_schedule'][1]}")
    if cfg.get("average"):
        parts.append("avg")
    if cfg.get("precondition"):
        parts.append(f"precond {cfg['precondition']}")
    return " ".join(parts)


def main(argv=None):
    ap = argument_parser(__doc__, "2000 rows, 1 pass, 3 configurations")
    add_data_dir(ap)
    ap.add_argument("--output", default=OUTPUT)
    args = ap.parse_args(argv)
    results = []
    configs = CONFIGS[:3] if args.quick else CONFIGS
    for name, (params, n_train, n_test, passes) in DATASETS.items():
        if args.quick:
            n_train, n_test, passes = 2000, 2000, 1
        X, y, Xt, yt = load(args.data_dir, name, n_train, n_test)
        for cfg in configs:
            model = DSGClassifier(random_state=0, solver="sgd", max_iter=passes, tol=None, **{**params, **cfg})
            t0 = time.perf_counter()
            model.fit(X, y)
            fit_s = time.perf_counter() - t0
            acc = float(model.score(Xt, yt))
            row = dict(dataset=name, config=label(cfg), params={k: (list(v) if isinstance(
                v, tuple) else v) for k, v in cfg.items()}, accuracy=acc, fit_seconds=fit_s,
                n_blocks=int(model.n_blocks_), steps=int(model.t_), n_train=int(X.shape[0]),
                n_test=int(Xt.shape[0]), passes=passes)
            results.append(row)
            print(f"{name:22s} {label(cfg):28s} acc {acc:.4f}  fit {fit_s:6.1f} s  "
                  f"blocks {model.n_blocks_}", flush=True)
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"date": datetime.datetime.now().isoformat(timespec="seconds"),
                               "results": results}, indent=1))
    print("\n| configuration | " + " | ".join(DATASETS) + " |")
    print("|---|" + "---|" * len(DATASETS))
    for cfg in configs:
        cells = []
        for name in DATASETS:
            r = next(r for r in results if r["dataset"] == name and r["config"] == label(cfg))
            cells.append(f"{r['accuracy']:.4f} ({r['fit_seconds']:.1f} s)")
        print(f"| {label(cfg)} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
