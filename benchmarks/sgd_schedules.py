"""SGD schedules benchmark: the classifier's step defaults under ``fit(solver="sgd")``.

The defaults question of the solvers issue (12, item 5) for the stochastic
``fit``: ``DSGClassifier``'s defaults moved on 2026-12-04 from the last
iterate of the 1/t schedule (``learning_rate="inverse", average=False``) to
``"invsqrt"`` steps with polynomial-decay averaging, chosen by one pass of
``partial_fit`` (``one_pass.py``).  This script checks the same choice
where the steps run in epochs under the stopping rule: on each data set
(inputs standardised, at most ``--max-train`` training rows, the official
test rows), ``DSGClassifier(solver="sgd", random_state=0, n_jobs=1)`` with
each schedule, the defaults otherwise (``max_iter=1000, tol=1e-4,
n_iter_no_change=5``); BLAS limited to one thread.  Reported: test error,
fit time and epochs run.

Run from the repository root::

    python -m benchmarks.sgd_schedules --data-dir ../shared/data   # about 6 minutes
    python -m benchmarks.sgd_schedules --quick                     # 2,000 rows: seconds

Writes ``benchmarks/results/sgd_schedules.json`` and ``.md``
(``sgd_schedules_quick.*`` with ``--quick``).
"""
import time
import warnings

import numpy as np
from threadpoolctl import threadpool_limits

from onlinekernel import DSGClassifier

from ._common import (add_data_dir, add_output_dir, argument_parser, load_dataset, make_logger,
                      report_header, scale_inputs, write_results)
from .one_pass import INVERSE

DATASETS = ("ijcnn1", "letter", "magic04", "pendigits")
SCHEDULES = {
    "defaults (invsqrt, polynomial average)": {},
    "before 2026-12-04 (inverse, last iterate)": INVERSE,
}


def run_dataset(name, data_dir, max_train):
    X, y, Xt, yt = load_dataset(name, data_dir)
    X, Xt = scale_inputs(name, X, Xt)
    X, y = X[:max_train], y[:max_train]
    out = {"n_train": int(X.shape[0]), "n_test": int(Xt.shape[0]), "schedules": {}}
    for label, params in SCHEDULES.items():
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a small --quick run may hit max_iter
            clf = DSGClassifier(solver="sgd", random_state=0, n_jobs=1, **params).fit(X, y)
        seconds = time.perf_counter() - t0
        out["schedules"][label] = {"params": params, "fit_time_s": seconds,
                                   "n_iter": int(clf.n_iter_),
                                   "test_error": float(np.mean(clf.predict(Xt) != yt))}
    return out


def markdown(report):
    lines = ["# SGD schedules benchmark\n", f"`{report['command']}` — {report['created']}\n",
             "| data set | schedule | test error % | fit s | epochs |", "|---|---|---|---|---|"]
    for name, entry in report["results"].items():
        for label, r in entry["schedules"].items():
            lines.append(f"| {name} | {label} | {100 * r['test_error']:.2f} | "
                         f"{r['fit_time_s']:.1f} | {r['n_iter']} |")
    return "\n".join(lines)


def main(argv=None):
    ap = argument_parser(__doc__, "2,000 training rows")
    add_data_dir(ap)
    add_output_dir(ap)
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS))
    ap.add_quick_option("--max-train", 50_000, 2_000, "training rows at most")
    args = ap.parse_args(argv)
    log = make_logger()
    report = report_header("sgd_schedules", "quick" if args.quick else "full", argv)
    report["settings"] = {"max_train": args.max_train, "blas_threads": 1}
    report["results"] = {}
    with threadpool_limits(1, user_api="blas"):
        for name in args.datasets:
            entry = report["results"][name] = run_dataset(name, args.data_dir, args.max_train)
            for label, r in entry["schedules"].items():
                log(f"{name}: {label}: {100 * r['test_error']:.2f} % in "
                    f"{r['fit_time_s']:.1f} s, {r['n_iter']} epochs")
    write_results(report, args.output_dir, args.quick, markdown, log)
    return report


if __name__ == "__main__":
    main()
