"""Stream defaults benchmark: the River classifier adapter's defaults against alternatives.

The defaults question of the streaming issue (14): which settings should
``RiverClassifier()`` have when nothing is known about the stream?  Each
candidate runs test-then-train (prequential accuracy) on six streams:

* the three of ``streams.py``: River's ``RandomRBFDrift`` (10 features, 50
  centroids moving 0.001 a row), ``Hyperplane`` (10 features; River's
  default ``mag_change=0`` keeps it stationary, 5 % label noise) and the
  bundled ``Phishing`` set (1,250 rows);
* three stationary ones: River's ``SEA`` (variant 0, 10 % noise, 3
  features), ``Agrawal`` (classification function 2, 9 features) and an
  imbalanced stream (5 standard normal features, label
  ``x0 + x1^2 / 2 > 1.9``: 12 % positives).

Candidates (``seed=0``; each the defaults with one change):

* ``defaults``: ``RiverClassifier(seed=0)`` as it is now;
* ``with intercept``: ``fit_intercept=True``, the default before 2026-11-28;
* ``gamma 2x``: twice the ``"scale"`` bandwidth, ``gamma=2 / d``;
* ``forgetting 5e-4``: ``forgetting=5e-4`` (the coefficients fade by that
  fraction a row);
* ``polynomial averaging``: ``learning_rate="invsqrt",
  average="polynomial"``, ``DSGClassifier``'s own default since 2026-12-04.

Run from the repository root::

    python -m benchmarks.stream_defaults                    # 20,000 rows a stream, minutes
    python -m benchmarks.stream_defaults --stream-rows 100000
    python -m benchmarks.stream_defaults --quick            # seconds

Writes ``benchmarks/results/stream_defaults.json`` and ``.md``
(``stream_defaults_quick.*`` with ``--quick``).
"""
import itertools
import random
import time
import warnings

from threadpoolctl import threadpool_limits

from ._common import add_output_dir, argument_parser, make_logger, report_header, write_results
from .drift import prequential_hits
from .streams import _streams

CANDIDATES = {
    "defaults": {},
    "with intercept": {"fit_intercept": True},
    "gamma 2x": {"gamma_per_feature": 2.0},
    "forgetting 5e-4": {"forgetting": 5e-4},
    "polynomial averaging": {"learning_rate": "invsqrt", "average": "polynomial"},
}


def imbalanced_stream(n, seed=0):
    """``n`` rows of 5 standard normal features, 12 % of them positive."""
    rng = random.Random(seed)
    for _ in range(n):
        x = {f"x{i}": rng.gauss(0.0, 1.0) for i in range(5)}
        yield x, x["x0"] + 0.5 * x["x1"] ** 2 > 1.9


def streams(n_rows):
    """name -> (rows, number of features)."""
    from river.datasets import synth
    out = {name: list(itertools.islice(iter(data), limit))
           for name, (data, limit, _) in _streams(n_rows).items()}
    out["SEA"] = list(itertools.islice(synth.SEA(variant=0, seed=1, noise=0.1), n_rows))
    out["Agrawal"] = list(itertools.islice(synth.Agrawal(classification_function=2, seed=1),
                                           n_rows))
    out["imbalanced"] = list(imbalanced_stream(n_rows))
    return {name: (rows, len(rows[0][0])) for name, rows in out.items()}


def model(params, d):
    from onlinekernel.integrations.river import RiverClassifier
    params = dict(params)
    if "gamma_per_feature" in params:
        params["gamma"] = params.pop("gamma_per_feature") / d
    return RiverClassifier(seed=0, **params)


def markdown(report):
    names = list(report["streams"])
    lines = ["# Stream defaults: RiverClassifier's candidates", "",
             f"Prequential accuracy (test-then-train) on the first "
             f"{report['settings']['stream_rows']:,d} rows of each stream (Phishing: its "
             f"{report['streams']['Phishing']['rows']:,d}); `{report['command']}`.", "",
             "| candidate | " + " | ".join(names) + " |",
             "|---|" + "---|" * len(names)]
    for cand in report["candidates"]:
        lines.append(f"| {cand} | " + " | ".join(
            f"{report['streams'][s]['accuracy'][cand]:.4f}" for s in names) + " |")
    return "\n".join(lines)


def main(argv=None):
    ap = argument_parser(__doc__, "500 rows a stream")
    ap.add_argument("--stream-rows", type=int, help="rows of each stream (20,000)")
    add_output_dir(ap, "--out-dir")
    args = ap.parse_args(argv)
    if args.stream_rows is None:
        args.stream_rows = 500 if args.quick else 20_000
    log = make_logger()
    report = report_header("stream_defaults", "quick" if args.quick else "full")
    report["settings"] = {"stream_rows": args.stream_rows}
    report["candidates"] = CANDIDATES
    report["streams"] = {}
    with threadpool_limits(1, user_api="blas"):
        for name, (rows, d) in streams(args.stream_rows).items():
            entry = report["streams"][name] = {"rows": len(rows), "features": d,
                                               "accuracy": {}, "seconds": {}}
            for cand, params in CANDIDATES.items():
                t0 = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    acc = float(prequential_hits(model(params, d), rows).mean())
                entry["accuracy"][cand] = acc
                entry["seconds"][cand] = time.perf_counter() - t0
                log(f"{name}: {cand}: accuracy {acc:.4f}")
    write_results(report, args.out_dir, args.quick, markdown, log)
    print(markdown(report))
    return report


if __name__ == "__main__":
    main()
