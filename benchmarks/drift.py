"""Drift benchmark: how fast the River adapter recovers from an abrupt concept change.

The drift question of the streaming issue (14): on a stream whose labelling
function changes at once, how many rows after the change does the
prequential (test-then-train) accuracy take to come back to what it was
before, with each drift mechanism of the library?

* **abrupt stream**: 4 standard normal features, label
  ``sin(1.5 x0) + x1 x2 > 0`` (the ``streams.py`` concept) for the first
  ``--change`` rows (5,000), then its opposite (every label flips: the old
  model is as wrong as it can be).  Seeds 0, 1, 2 of the rows; the model's
  seed is 0.
* **systems**: ``RiverClassifier(seed=0)`` with the adapter's defaults but
  no detector (``none``); with ``drift_detector=river.drift.ADWIN()`` and
  each ``drift_reaction`` (``reset_step``, ``shrink``, ``regrow``; the
  classifier's defaults since this measurement are ADWIN and ``regrow``);
  and without a detector but with a step floor (``eta_min``) or forgetting.
* **recovery**: the pre-change accuracy is the prequential accuracy over the
  ``--before`` rows (1,000) before the change; the rows to recover are the
  rows after the change until the accuracy over the trailing window of
  ``--window`` rows (250) is first back within ``--tolerance`` (0.05) of it
  (``None``: not within the stream).  Also reported: the accuracy over the
  rows after the change, and the detections.
* **drifting River streams** (skipped with ``--no-river``): prequential
  accuracy of the same systems on the first ``--river-rows`` (20,000) rows
  of ``RandomRBFDrift`` and ``Hyperplane`` (``streams.py``'s settings,
  gradual drift) and on the bundled ``Phishing`` set (stationary), to see
  what each mechanism costs where the change is not abrupt.

Run from the repository root::

    python -m benchmarks.drift            # a few minutes
    python -m benchmarks.drift --quick    # seconds

Writes ``benchmarks/results/drift.json`` and ``drift.md`` (``drift_quick.*``
with ``--quick``) and the figure ``drift.png`` (windowed prequential
accuracy around the change, seed 0).
"""
import itertools
import warnings

import numpy as np
from threadpoolctl import threadpool_limits

from ._common import add_output_dir, argument_parser, make_logger, report_header, write_results

D = 4


def abrupt_stream(n, change, seed):
    """``n`` rows of dicts and bools whose labelling flips at row ``change``."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, D))
    y = np.sin(1.5 * X[:, 0]) + X[:, 1] * X[:, 2] > 0
    y[change:] = ~y[change:]
    names = [f"x{j}" for j in range(D)]
    return [(dict(zip(names, map(float, row))), bool(t)) for row, t in zip(X, y)]


def systems():
    """name -> a function making the River model (seed 0)."""
    from river import drift

    from onlinekernel.integrations.river import RiverClassifier
    out = {"none": lambda: RiverClassifier(drift_detector=None, seed=0)}
    for reaction in ("reset_step", "shrink", "regrow"):
        out[f"ADWIN + {reaction}"] = (lambda r=reaction: RiverClassifier(
            drift_detector=drift.ADWIN(), drift_reaction=r, seed=0))
    # the classifier adapter's steps: eta0=16 per batch of 8, decaying after
    # 3,200 rows (6.2 at row 5,000); a floor of 8 holds half of eta0
    out["eta_min=8"] = lambda: RiverClassifier(drift_detector=None, eta_min=8.0, seed=0)
    out["forgetting=3e-4"] = lambda: RiverClassifier(drift_detector=None, forgetting=3e-4,
                                                     seed=0)
    return out


def prequential_hits(model, stream):
    """1 for each row the model predicted right before learning it, else 0."""
    hits = np.empty(len(stream))
    for i, (x, y) in enumerate(stream):
        hits[i] = model.predict_one(x) == y
        model.learn_one(x, y)
    return hits


def rows_to_recover(hits, change, before, window, tolerance):
    """Rows after ``change`` until the trailing-``window`` accuracy is within ``tolerance``
    of the accuracy over the ``before`` rows before the change (None: never).

    Examples
    --------
    >>> hits = np.r_[np.ones(100), np.zeros(30), np.ones(70)]
    >>> rows_to_recover(hits, 100, before=50, window=10, tolerance=0.05)
    40
    """
    pre = hits[change - before:change].mean()
    csum = np.r_[0.0, np.cumsum(hits)]
    for end in range(change + window, len(hits) + 1):
        if (csum[end] - csum[end - window]) / window >= pre - tolerance:
            return end - change
    return None


def abrupt(args, log):
    out = {"settings": {"rows": args.rows, "change": args.change, "before": args.before,
                        "window": args.window, "tolerance": args.tolerance,
                        "seeds": list(range(args.seeds)), "features": D},
           "systems": {}}
    curves = {}
    for name, make in systems().items():
        runs = []
        for seed in range(args.seeds):
            stream = abrupt_stream(args.rows, args.change, seed)
            model = make()
            hits = prequential_hits(model, stream)
            rec = rows_to_recover(hits, args.change, args.before, args.window, args.tolerance)
            runs.append({"seed": seed,
                         "pre_change_accuracy": float(hits[args.change - args.before:
                                                           args.change].mean()),
                         "rows_to_recover": rec,
                         "accuracy_after_change": float(hits[args.change:].mean()),
                         "accuracy": float(hits.mean()),
                         "detections": list(model.drifts_)})
            if seed == 0:
                curves[name] = hits
            log(f"abrupt: {name}, seed {seed}: recovered after {rec} rows, accuracy after "
                f"the change {runs[-1]['accuracy_after_change']:.3f}, detections "
                f"{list(model.drifts_)[:6]}")
        recs = [r["rows_to_recover"] for r in runs]
        out["systems"][name] = {
            "runs": runs,
            "worst_rows_to_recover": None if None in recs else max(recs),
            "median_rows_to_recover": None if None in recs else float(np.median(recs)),
            "mean_accuracy_after_change": float(np.mean([r["accuracy_after_change"]
                                                         for r in runs])),
            "mean_accuracy": float(np.mean([r["accuracy"] for r in runs]))}
    return out, curves


def river_streams(n_rows, log):
    from river import datasets
    from river.datasets import synth
    streams = {
        "RandomRBFDrift": (synth.RandomRBFDrift(seed_model=42, seed_sample=42, n_classes=2,
                                                n_features=10, n_centroids=50,
                                                change_speed=0.001, n_drift_centroids=50),
                           n_rows),
        "Hyperplane": (synth.Hyperplane(seed=42, n_features=10, n_drift_features=3), n_rows),
        "Phishing": (datasets.Phishing(), None),
    }
    out = {}
    for stream, (data, limit) in streams.items():
        rows = list(itertools.islice(iter(data), limit))
        out[stream] = {"rows": len(rows), "accuracy": {}}
        for name, make in systems().items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                acc = float(prequential_hits(make(), rows).mean())
            out[stream]["accuracy"][name] = acc
            log(f"{stream}: {name}: accuracy {acc:.4f}")
    return out


def figure(curves, args, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 4.5))
    w = args.window
    for name, hits in curves.items():
        csum = np.r_[0.0, np.cumsum(hits)]
        ends = np.arange(w, len(hits) + 1, 25)
        ax.plot(ends, (csum[ends] - csum[ends - w]) / w, label=name, lw=1.2)
    ax.axvline(args.change, color="k", ls=":", lw=1)
    ax.set_xlabel("rows")
    ax.set_ylabel(f"prequential accuracy, trailing {w} rows")
    ax.set_title(f"Labels flip at row {args.change:,d} (seed 0)")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def markdown(report):
    a = report["abrupt"]
    s = a["settings"]
    lines = [f"# Drift: recovery from an abrupt concept change",
             "",
             f"Labels flip at row {s['change']:,d} of {s['rows']:,d} (seeds "
             f"{s['seeds']}); rows to recover: until the trailing {s['window']}-row "
             f"prequential accuracy is within {s['tolerance']} of the {s['before']} rows "
             f"before the change.",
             "",
             "| system | rows to recover (per seed) | worst | accuracy after the change |",
             "|---|---|---|---|"]
    for name, e in a["systems"].items():
        per = ", ".join(str(r["rows_to_recover"]) for r in e["runs"])
        lines.append(f"| {name} | {per} | {e['worst_rows_to_recover']} | "
                     f"{e['mean_accuracy_after_change']:.3f} |")
    if "river" in report:
        names = list(a["systems"])
        lines += ["", "Prequential accuracy on River streams:", "",
                  "| system | " + " | ".join(report["river"]) + " |",
                  "|---|" + "---|" * len(report["river"])]
        for name in names:
            lines.append(f"| {name} | " + " | ".join(
                f"{report['river'][st]['accuracy'][name]:.4f}" for st in report["river"]) + " |")
    return "\n".join(lines)


def main(argv=None):
    ap = argument_parser(__doc__, "2,000 rows, change at 1,000, one seed, 500-row River streams")
    ap.add_argument("--rows", type=int, help="rows of the abrupt stream (10,000)")
    ap.add_argument("--change", type=int, help="the row where the labels flip (5,000)")
    ap.add_argument("--before", type=int, default=1000)
    ap.add_argument("--window", type=int, default=250)
    ap.add_argument("--tolerance", type=float, default=0.05)
    ap.add_argument("--seeds", type=int, help="seeds of the abrupt stream (3)")
    ap.add_argument("--river-rows", type=int, help="(20,000)")
    ap.add_argument("--no-river", action="store_true")
    add_output_dir(ap, "--out-dir")
    args = ap.parse_args(argv)
    defaults = (2000, 1000, 1, 500) if args.quick else (10_000, 5000, 3, 20_000)
    for name, value in zip(("rows", "change", "seeds", "river_rows"), defaults):
        if getattr(args, name) is None:
            setattr(args, name, value)
    if args.quick:
        args.before = min(args.before, 500)
    log = make_logger()
    report = report_header("drift", "quick" if args.quick else "full")
    with threadpool_limits(1, user_api="blas"):
        report["abrupt"], curves = abrupt(args, log)
        if not args.no_river:
            report["river"] = river_streams(args.river_rows, log)
    stem = write_results(report, args.out_dir, args.quick, markdown, log)
    figure(curves, args, f"{stem}.png")
    print(markdown(report))
    return report


if __name__ == "__main__":
    main()
