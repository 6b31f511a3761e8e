"""Good defaults: candidate default configurations of DSGClassifier / DSGRegressor.

A default cannot be tuned to the data, so this script measures a small grid
of *whole* configurations (each a dict of estimator parameters, ``gamma``
kept at ``"scale"``) on every benchmark data set of its task and ranks them
by accuracy per second.

Protocol, per data set:

* X is standardised with the mean and standard deviation of the training
  split (and y too, for regression), as a user would before calling a
  kernel method with ``gamma="scale"``;
* 20 % of the training split (seeded permutation, seed 0) is held out for
  validation; the rest, subsampled to at most ``--max-train`` rows (and the
  validation part to ``--max-val``), is fitted.  The official test sets are
  not touched: this is model selection;
* every candidate is fitted once (``random_state=0``, ``dtype="float64"``,
  ``n_jobs=1``, BLAS limited to one thread) and measured: validation error
  (% misclassified, or RMSE / std(y_val) for regression) and fit time.

Ranking (see ``rank``): for each data set the candidates are ranked by
validation error (a candidate within ``--tie`` of the best error shares its
rank: 0.25 pp, or 1 % of the relative RMSE, is below the seed-to-seed noise
of one fit); the *score* is the mean rank over data sets, ties broken by the
total fit time.  The *recommendation* is the candidate with the best score
among those whose total fit time is at most ``--time-factor`` (1.5) times
that of the current default, so that a better default is not bought with a
much slower one; the Pareto front of (mean rank, total time) and each
candidate's worst data set (largest gap to the best candidate there) are
reported too.

Results go to ``benchmarks/results/defaults.json`` (every measurement, the
settings, machine and build) and ``benchmarks/results/defaults.md`` (tables
and the recommendation).  Each finished measurement is written at once, so a
run can be split across processes (``--task``, ``--datasets``, ``--output``)
and merged (``--merge-from``).

Run from the repository root (about 25 minutes on 2 busy cores; the two
tasks may run side by side)::

    nice -n 10 python -m benchmarks.defaults --task classification
    nice -n 10 python -m benchmarks.defaults --task regression --merge
    python -m benchmarks.defaults --report-only       # redo the tables
    nice -n 10 python -m benchmarks.defaults --quick  # smoke run

Examples
--------
>>> rows = [dict(dataset="a", config="x", error=1.0, fit_seconds=1.0),
...         dict(dataset="a", config="y", error=2.0, fit_seconds=0.5),
...         dict(dataset="b", config="x", error=5.0, fit_seconds=1.0),
...         dict(dataset="b", config="y", error=5.1, fit_seconds=0.5)]
>>> s = rank(rows, tie=0.25)
>>> [(c["config"], c["mean_rank"]) for c in s]
[('x', 1.0), ('y', 1.5)]
>>> s[1]["worst"]["dataset"], round(s[1]["worst"]["gap"], 2)
('a', 1.0)
"""
import json
import time
from pathlib import Path

import numpy as np

from ._common import (RESULTS_DIR, add_data_dir, argument_parser, load_average, load_dataset,
                      report_header, write_json)

CLASSIFICATION = ["ijcnn1", "covtype_binary_sub20k", "magic04", "a9a", "w8a", "letter",
                  "pendigits", "usps"]
REGRESSION = ["cadata", "cpusmall", "kin8nm"]

# The current defaults (DSGClassifier / DSGRegressor at the time of the sweep),
# written out so that the comparison survives a change of the defaults.
CLS_BASE = dict(loss="hinge", learning_rate="inverse", eta0=512.0, t0=100.0, alpha=1e-5,
                batch_size=64, block_size=256, max_blocks=16, solver="sgd", max_iter=5, tol=None, average=False,
                precondition=False)
REG_BASE = dict(loss="squared", learning_rate="constant", eta0=1.0, t0=100.0, alpha=1e-6,
                batch_size=64, block_size=256, max_blocks=16, solver="sgd", max_iter=5, tol=None, average=False,
                precondition=False)

# Candidates: name -> changes to the current default.  Each tests one idea
# (the schedule, averaging, preconditioning, the loss, the budget, the batch,
# the number of passes) or a combination of the ideas that help alone.
CLS_CANDIDATES = {
    "current": {},
    "precond": dict(precondition=True),
    "eta128": dict(eta0=128.0),
    "t0=1000": dict(t0=1000.0),
    "invsqrt+avg": dict(learning_rate="invsqrt", average=True),
    "invsqrt+avg+precond": dict(learning_rate="invsqrt", average=True, precondition=True),
    "const64+avg": dict(learning_rate="constant", eta0=64.0, average=True),
    "logistic": dict(loss="logistic"),
    "logistic+precond": dict(loss="logistic", precondition=True),
    "logistic+invsqrt+avg+precond": dict(loss="logistic", learning_rate="invsqrt",
                                         average=True, precondition=True),
    "invsqrt+avg+precond mb32": dict(learning_rate="invsqrt", average=True,
                                     precondition=True, max_blocks=32),
    "invsqrt+avg+precond b256": dict(learning_rate="invsqrt", average=True,
                                     precondition=True, batch_size=256, eta0=2048.0),
    "invsqrt+avg+precond 3ep": dict(learning_rate="invsqrt", average=True,
                                    precondition=True, solver="sgd", max_iter=3, tol=None),
    # second round: variations of the best first-round candidate
    "logistic+precond t0=1000": dict(loss="logistic", precondition=True, t0=1000.0),
    "logistic+precond eta256": dict(loss="logistic", precondition=True, eta0=256.0),
    "logistic+precond mb32": dict(loss="logistic", precondition=True, max_blocks=32),
    "logistic+precond 3ep": dict(loss="logistic", precondition=True, solver="sgd", max_iter=3, tol=None),
}
REG_CANDIDATES = {
    "current": {},
    "precond": dict(precondition=True),
    "avg": dict(average=True),
    "eta0.5": dict(eta0=0.5),
    "eta2+avg": dict(eta0=2.0, average=True),
    "invsqrt eta4+avg": dict(learning_rate="invsqrt", eta0=4.0, average=True),
    "precond+avg": dict(precondition=True, average=True),
    "b16": dict(batch_size=16),
    "mb32": dict(max_blocks=32),
    "10ep": dict(solver="sgd", max_iter=10, tol=None),
    # second round: more, smaller steps (a larger eta0 diverges: eta0=2 and
    # every larger step tried, preconditioned ones included, blew up at once)
    "b32": dict(batch_size=32),
    "b16 10ep": dict(batch_size=16, solver="sgd", max_iter=10, tol=None),
    "precond b16": dict(precondition=True, batch_size=16),
    "precond 10ep": dict(precondition=True, solver="sgd", max_iter=10, tol=None),
}
QUICK_CONFIGS = ("current", "precond")


def prepare(name, task, data_dir, max_train, max_val, seed=0):
    """Standardised fit and validation splits of ``name``'s training set."""
    X, y, _, _ = load_dataset(name, data_dir)
    mu, sd = X.mean(axis=0), X.std(axis=0)
    X = (X - mu) / np.where(sd > 0, sd, 1.0)  # constant columns stay constant
    if task == "regression":
        y = (y - y.mean()) / y.std()
    perm = np.random.default_rng(seed).permutation(X.shape[0])
    n_val = int(round(0.2 * X.shape[0]))
    val, fit = perm[:n_val][:max_val], perm[n_val:][:max_train]
    return (np.ascontiguousarray(X[fit]), y[fit], np.ascontiguousarray(X[val]), y[val],
            X.shape[0])


def measure(name, task, cname, params, splits):
    """Fit one candidate on one data set; its validation error and fit time."""
    from onlinekernel import DSGClassifier, DSGRegressor
    X, y, Xv, yv, n_total = splits
    est = (DSGClassifier if task == "classification" else DSGRegressor)(
        random_state=0, dtype="float64", n_jobs=1, **params)
    t = time.perf_counter()
    est.fit(X, y)
    fit_s = time.perf_counter() - t
    pred = est.predict(Xv)
    if task == "classification":
        err = 100.0 * float(np.mean(pred != yv))
    else:
        with np.errstate(over="ignore", invalid="ignore"):
            err = float(np.sqrt(np.mean((pred - yv) ** 2)) / yv.std())
    # predicting the mean scores 1.0; far above it the fit diverged (JSON has
    # no infinity, so a diverged fit is stored as error None)
    diverged = not np.isfinite(err) or (task == "regression" and err > 10.0)
    return dict(dataset=name, task=task, config=cname, params=params,
                error=None if diverged else err, diverged=bool(diverged),
                fit_seconds=fit_s, n_fit=int(X.shape[0]), n_val=int(Xv.shape[0]),
                n_train_total=int(n_total), d=int(X.shape[1]), steps=int(est.t_),
                n_random_features=int(est.n_random_features_),
                gamma=float(est.gamma_), load_average=load_average())


def rank(rows, tie):
    """Mean rank of validation error, total time and worst data set per configuration.

    Ranks are competition ranks with a tolerance: a configuration whose error
    is within ``tie`` of the best error on a data set ranks 1, and in general
    one's rank is 1 + the number of configurations better than it by more
    than ``tie``.  Sorted by mean rank, then total fit time.
    """
    datasets = sorted({r["dataset"] for r in rows})
    configs = list(dict.fromkeys(r["config"] for r in rows))
    by = {(r["dataset"], r["config"]): dict(r, error=np.inf if r["error"] is None
                                            else r["error"]) for r in rows}
    out = []
    for c in configs:
        # a configuration measured on only some data sets (an interrupted
        # run) is scored on those; n_datasets says so
        ranks, gaps, total, ref = [], {}, 0.0, 0.0
        for ds in datasets:
            if (ds, c) not in by:
                continue
            errs = [by[ds, o]["error"] for o in configs if (ds, o) in by]
            e = by[ds, c]["error"]
            ranks.append(1 + sum(o < e - tie for o in errs))
            gaps[ds] = e - min(errs)
            total += by[ds, c]["fit_seconds"]
            ref += by[ds, "current"]["fit_seconds"] if (ds, "current") in by else np.nan
        worst = max(gaps, key=gaps.get)
        finite = np.isfinite(gaps[worst])
        out.append(dict(config=c, mean_rank=float(np.mean(ranks)), total_seconds=total,
                        time_vs_current=float(total / ref) if ref else None,
                        n_datasets=len(ranks), diverged=not finite,
                        worst=dict(dataset=worst, gap=float(gaps[worst]) if finite else None),
                        mean_gap=float(np.mean(list(gaps.values()))) if finite else None))
    out.sort(key=lambda s: (s["mean_rank"], s["total_seconds"]))
    return out


def recommend(scores, time_factor):
    """Best-ranked configuration no slower than ``time_factor`` x the current one."""
    full = max(s["n_datasets"] for s in scores)
    cur = next((s for s in scores if s["config"] == "current"), None)
    limit = None if cur is None else time_factor * cur["total_seconds"]
    ok = [s for s in scores if s["n_datasets"] == full and not s["diverged"]
          and (s["time_vs_current"] is None or s["time_vs_current"] <= time_factor)]
    pareto = [s["config"] for s in scores if not s["diverged"] and
              not any(o["mean_rank"] < s["mean_rank"] and o["total_seconds"] <=
                         s["total_seconds"] for o in scores)]
    return dict(config=ok[0]["config"] if ok else None, time_limit_s=limit, pareto=pareto)


def markdown(report):
    lines = ["# Default configurations of DSGClassifier and DSGRegressor", "",
             f"`{report['command']}` — {report['created']}, onlinekernel "
             f"{report['machine'].get('onlinekernel')}, {report['machine'].get('cpu_count')} "
             f"cores shared with other jobs (load {report.get('load_average_at_start')} at "
             f"start), BLAS 1 thread, `dtype=\"float64\"`, `n_jobs=1`, `random_state=0`.", "",
             "Validation error on 20 % of each training split (X standardised; fit rows "
             f"capped at {report['settings']['max_train']}, validation rows at "
             f"{report['settings']['max_val']}); classification in % misclassified, "
             "regression as RMSE / std(y). Rank: 1 + the number of candidates better by "
             f"more than the tie tolerance ({report['settings']['tie_pp']} pp, "
             f"{report['settings']['tie_rel']} relative RMSE). Recommendation: the best mean "
             f"rank among candidates at most {report['settings']['time_factor']}x the current "
             "default's total fit time.", ""]
    for task in ("classification", "regression"):
        rows = [r for r in report["results"] if r["task"] == task]
        if not rows:
            continue
        cands = CLS_CANDIDATES if task == "classification" else REG_CANDIDATES
        base = CLS_BASE if task == "classification" else REG_BASE
        info = report["ranking"].get(task, {})
        datasets = [d for d in (CLASSIFICATION if task == "classification" else REGRESSION)
                    if any(r["dataset"] == d for r in rows)]
        by = {(r["dataset"], r["config"]): dict(r, error=np.inf if r["error"] is None
                                                else r["error"]) for r in rows}
        fmt = "{:.2f}" if task == "classification" else "{:.3f}"
        lines += [f"## {task.capitalize()}", "",
                  "Current default: " + ", ".join(f"{k}={v!r}" for k, v in base.items()), "",
                  "| candidate (changes) | mean rank | total fit s (x current) | worst data set "
                  "(gap) | " + " | ".join(datasets) + " |",
                  "|---|---|---|---|" + "---|" * len(datasets)]
        for s in info.get("scores", []):
            c = s["config"]
            ch = ", ".join(f"{k}={v!r}" for k, v in cands.get(c, {}).items()) or "—"
            best = {d: min(by[d, o]["error"] for o in cands if (d, o) in by) for d in datasets}
            cells = []
            for d in datasets:
                r = by.get((d, c))
                if r is None:
                    cells.append("")
                    continue
                cell = ("diverged" if not np.isfinite(r["error"]) else fmt.format(r["error"])) \
                    + f" ({r['fit_seconds']:.1f} s)"
                cells.append(f"**{cell}**" if r["error"] == best[d] else cell)
            tv = "" if s["time_vs_current"] is None else f" ({s['time_vs_current']:.2f}x)"
            lines.append(f"| {c} ({ch}) | {s['mean_rank']:.2f} | {s['total_seconds']:.0f}{tv} | "
                         f"{s['worst']['dataset']} ("
                         + ("diverged" if s["worst"]["gap"] is None
                            else "+" + fmt.format(s["worst"]["gap"])) + ") | "
                         + " | ".join(cells) + " |")
        rec = info.get("recommendation")
        if rec and rec["config"]:
            params = dict(base, **cands.get(rec["config"], {}))
            lines += ["", f"Pareto front (mean rank vs total time): {', '.join(rec['pareto'])}.",
                      "", f"**Measured best default** ({rec['config']}): "
                      + ", ".join(f"{k}={v!r}" for k, v in params.items()), ""]
    lines += report.get("notes", [])
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argument_parser(__doc__, "2 candidates, 1 data set per task, 1000 rows, 1 pass")
    ap.add_argument("--task", choices=("classification", "regression", "both"), default="both")
    ap.add_argument("--datasets", nargs="*", help="a subset of the task's data sets")
    ap.add_argument("--configs", nargs="*", help="a subset of the candidates, by name")
    add_data_dir(ap)
    ap.add_argument("--max-train", type=int, default=10000)
    ap.add_argument("--max-val", type=int, default=4000)
    ap.add_argument("--tie", type=float, default=0.25, help="pp of error that count as a tie")
    ap.add_argument("--tie-rel", type=float, default=0.01,
                    help="relative RMSE that counts as a tie (regression)")
    ap.add_argument("--time-factor", type=float, default=1.5)
    ap.add_argument("--merge", action="store_true",
                    help="keep the measurements already in the output file")
    ap.add_argument("--report-only", action="store_true",
                    help="only redo the ranking and the tables of the output file")
    ap.add_argument("--merge-from", nargs="*", default=[],
                    help="also take the measurements of these result files (parallel runs)")
    ap.add_argument("--output", default=None)
    args = ap.parse_args(argv)
    from threadpoolctl import threadpool_limits
    threadpool_limits(1)

    out = Path(args.output or RESULTS_DIR / ("defaults_quick.json" if args.quick
                                             else "defaults.json"))
    report = report_header("defaults", "quick" if args.quick else "full")
    report["settings"] = dict(max_train=args.max_train, max_val=args.max_val,
                              validation_fraction=0.2, seed=0, tie_pp=args.tie,
                              tie_rel=args.tie_rel, time_factor=args.time_factor,
                              base=dict(classification=CLS_BASE, regression=REG_BASE),
                              candidates=dict(classification=CLS_CANDIDATES,
                                              regression=REG_CANDIDATES))
    results = []
    if (args.merge or args.report_only) and out.is_file():
        old = json.loads(out.read_text())
        results = old.get("results", [])
        if args.report_only:
            report = {k: v for k, v in old.items() if k not in ("results", "ranking")}
    for extra in args.merge_from:
        new = json.loads(Path(extra).read_text()).get("results", [])
        keys = {(r["dataset"], r["config"]) for r in new}
        results = [r for r in results if (r["dataset"], r["config"]) not in keys] + new
    tasks = ["classification", "regression"] if args.task == "both" else [args.task]
    if not args.report_only:
        for task in tasks:
            cands = CLS_CANDIDATES if task == "classification" else REG_CANDIDATES
            base = CLS_BASE if task == "classification" else REG_BASE
            names = list(args.configs or (QUICK_CONFIGS if args.quick else cands))
            unknown = [c for c in names if c not in cands]
            if unknown:
                ap.error(f"unknown {task} candidates {unknown}; choose from {list(cands)}")
            datasets = CLASSIFICATION if task == "classification" else REGRESSION
            datasets = [d for d in datasets if not args.datasets or d in args.datasets]
            if args.quick:
                datasets = datasets[-1:]
            for ds in datasets:
                mt, mv = (1000, 500) if args.quick else (args.max_train, args.max_val)
                splits = prepare(ds, task, args.data_dir, mt, mv)
                for c in names:
                    params = dict(base, **cands[c])
                    if args.quick:
                        params.update(solver="sgd", max_iter=1, tol=None)
                    row = measure(ds, task, c, params, splits)
                    results = [r for r in results if (r["dataset"], r["config"]) != (ds, c)]
                    results.append(row)
                    print(f"{ds:22s} {c:34s} error {row['error']:8.3f}  fit "
                          f"{row['fit_seconds']:6.1f} s", flush=True)
                    report["results"] = results
                    write_json(out, report)
    report["results"] = results
    report["ranking"] = {}
    for task in ("classification", "regression"):
        rows = [r for r in results if r["task"] == task]
        if rows:
            scores = rank(rows, args.tie if task == "classification" else args.tie_rel)
            report["ranking"][task] = dict(scores=scores,
                                           recommendation=recommend(scores, args.time_factor))
    report["load_average_at_end"] = load_average()
    write_json(out, report)
    md = out.with_suffix(".md")
    md.write_text(markdown(report))
    print(md.read_text())
    return report


if __name__ == "__main__":
    main()
