"""Speed of DSGClassifier's compiled paths against this machine's measured limits.

One run measures, with the Gaussian kernel (``gamma = 1/d``, hinge loss,
``block_size=256``) on synthetic N(0, 1) data, and with the pair limits of
``limits.py`` measured in the same run:

1. **Seeded prediction** of ``--rows`` rows (100,000) by a model of 4096
   random features (``max_blocks=16``, the budget filled by ``partial_fit``
   on 1024 rows), at ``d`` in {16, 128, 784}, for ``dtype`` float32 and
   float64, ``n_jobs=1``: pairs/s = rows x 4096 / time, and its fraction of
   the pair limit (target: >= 50 %).
2. **Regeneration against the cache**: the same prediction with
   ``cache_bytes=0`` (every block regenerated from the seed) and with the
   default cache, at ``d`` in {8, 16, 32} (target: the regenerating model
   within 2x of the cached one's time).
3. **Two threads**: the prediction of 1. with ``n_jobs=2`` against
   ``n_jobs=1``, per dtype and ``d`` (target: >= 1.7x).
4. **Single-sample partial_fit latency** at ``d = 100`` with the 4096-feature
   budget already full: one row per call over ``--latency-updates`` calls
   (6000), median and 90th percentile per window of 500 calls, the ratio of
   the last window's median to the first's and the least-squares slope.
   Each window's calls alternate with the same calls on a control model
   rebuilt as the streamed one was when its budget filled (target: in the
   last window, streamed / control <= 1.25, i.e. no cost growing with the
   samples seen; the control takes the machine's own drift out).
5. **Throughput against the number of features** (256 to 8192) at
   ``d = 128``, float32 and float64, with the pair limit as a line.

Timed prediction calls ``decision_function`` on a C-contiguous array already
in the model's dtype, after one untimed call on 256 rows (which fills the
cache); variants compared with each other (``n_jobs``, cache) alternate
within each repeat so that they share the machine's load, and each figure is
the median over ``--repeats``.

**Two clocks.**  Every call is timed on the wall clock and on the process's
CPU clock.  On a shared machine the wall time also counts the time other
processes held the cores, so the targets that compare single-thread work
are judged on CPU time, against the pair limit per CPU second measured the
same way: the fraction of the pair limit (``n_jobs=1``), regenerated against
cached, and the flatness of the latency.  The two-thread speed-up can only
be a wall-time figure; beside it the report gives the speed-up of the
machine's own kernels (the pair limit with 2 threads over 1, wall time,
measured in the same run), which says how much of a second core the run
actually had, and the speed-up the threads would give with a core each:
the ``n_jobs=1`` call's CPU time over the busiest thread's CPU time in the
``n_jobs=2`` call (per-thread times from ``/proc``, Linux only).  Wall-time
figures are in the JSON next to every CPU-time one, and each target names
its clock.

The pair limits are measured at the start of the run and, in full mode,
again at the end; the fractions use the larger of the two (so they are if
anything low).  Every target is in the JSON's ``targets`` list with the
measured figure, the threshold and ``pass``; a target that cannot be
measured with this build (an estimator parameter missing) has ``pass:
null`` and says why.

Results: ``benchmarks/results/speed.json`` and PNG plots beside it named
after it (``speed_*.png``; ``--quick`` writes ``speed_quick.json`` and
``speed_quick_*.png``).  Plots need matplotlib (``pip install ".[bench]"``);
without it the JSON says they were skipped.

Run from the repository root::

    nice -n 10 python -m benchmarks.speed            # full run
    nice -n 10 python -m benchmarks.speed --quick    # smoke run

The full run takes about 8 minutes of CPU time, most of it in the d = 784
predictions; on a 2-core machine shared with other jobs it took 25 minutes
of wall time.  The quick run (10,000 rows, one repeat) takes 1-2 minutes.
"""
import time

import numpy as np

from onlinekernel import DSGClassifier

from . import limits as limits_mod
from ._common import (add_output, argument_parser, busiest_thread_seconds, load_average,
                      make_logger, non_negative_int, parse_int_list, positive_int, report_header,
                      thread_cpu_seconds, write_json)

CLASSES = np.array([-1, 1])
BLOCK_SIZE = 256
WARMUP_ROWS = 256


# --------------------------------------------------------------------------- #
# models and data
# --------------------------------------------------------------------------- #
def capabilities():
    """Which of the estimator parameters this benchmark varies exist in this build."""
    params = DSGClassifier().get_params()
    return {"dtype": "dtype" in params, "n_jobs": "n_jobs" in params}


class Unsupported(Exception):
    """A variant this build's DSGClassifier cannot express."""


def build_model(d, n_features=4096, dtype="float64", n_jobs=1, cache_bytes=None, seed=0,
                caps=None):
    """A DSGClassifier with a full budget of ``n_features`` Gaussian features.

    The budget is filled by one ``partial_fit`` on ``64 x max_blocks`` rows
    (one block per 64-row step).  Raises :class:`Unsupported` for a
    ``dtype`` or ``n_jobs`` this build's estimator has no parameter for.
    """
    caps = caps or capabilities()
    if n_features % BLOCK_SIZE:
        raise ValueError(f"n_features must be a multiple of {BLOCK_SIZE}, got {n_features}")
    max_blocks = n_features // BLOCK_SIZE
    kw = dict(loss="hinge", kernel="gaussian", gamma=1.0 / d, block_size=BLOCK_SIZE,
              max_blocks=max_blocks, batch_size=64, random_state=seed)
    if cache_bytes is not None:
        kw["cache_bytes"] = cache_bytes
    for name, value, default in (("dtype", dtype, "float64"), ("n_jobs", n_jobs, 1)):
        if caps[name]:
            kw[name] = value
        elif value != default:
            raise Unsupported(f"DSGClassifier has no {name} parameter in this build "
                              f"({name}={value!r} not measured)")
    clf = DSGClassifier(**kw)
    rng = np.random.default_rng(seed + 1)
    X = rng.standard_normal((64 * max_blocks, d))
    y = np.where(X[:, 0] * X[:, 1] > 0, 1, -1)
    clf.partial_fit(np.ascontiguousarray(X, dtype=dtype), y, classes=CLASSES)
    if clf.n_random_features_ != n_features:
        raise RuntimeError(f"the model has {clf.n_random_features_} features after filling "
                           f"the budget, expected {n_features}")
    return clf


def synthetic(rows, d, seed):
    return np.random.default_rng(seed).standard_normal((rows, d))


def time_variants(variants, X_by_dtype, repeats):
    """Time ``decision_function`` of each model, alternating order per repeat.

    ``variants`` maps a name to ``(model, dtype)``.  Returns, per name, the
    wall and process-CPU seconds of every call, their medians and the last
    output (to check that the variants agree).
    """
    names = list(variants)
    for name in names:
        clf, dt = variants[name]
        clf.decision_function(X_by_dtype[dt][:WARMUP_ROWS])  # fills the cache
    out = {n: {"samples_s": [], "cpu_samples_s": [], "busiest_thread_cpu_samples_s": []}
           for n in names}
    for rep in range(repeats):
        for name in (names if rep % 2 == 0 else names[::-1]):
            clf, dt = variants[name]
            threads0 = thread_cpu_seconds()
            t0, c0 = time.perf_counter(), time.process_time()
            scores = clf.decision_function(X_by_dtype[dt])
            cpu = time.process_time() - c0
            wall = time.perf_counter() - t0
            busiest = busiest_thread_seconds(threads0, thread_cpu_seconds())
            out[name]["samples_s"].append(wall)
            out[name]["cpu_samples_s"].append(cpu)
            out[name]["busiest_thread_cpu_samples_s"].append(busiest)
            out[name]["scores"] = scores
    for name in names:
        r = out[name]
        r["median_s"] = float(np.median(r["samples_s"]))
        r["cpu_median_s"] = float(np.median(r["cpu_samples_s"]))
        busy = r["busiest_thread_cpu_samples_s"]
        r["busiest_thread_cpu_median_s"] = (None if None in busy
                                            else float(np.median(busy)))
    return out


def _n_cached(clf):
    """Blocks held in the model's cache (None if this build does not say)."""
    n = getattr(getattr(clf, "_blocks", None), "n_cached", None)
    return int(n) if n is not None else None


def _max_diff(a, b):
    return float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))


# --------------------------------------------------------------------------- #
# the measurements
# --------------------------------------------------------------------------- #
def measure_prediction(dims, dtypes, rows, repeats, caps, log, n_features=4096, seed=0):
    """Items 1 and 3: n_jobs=1 and n_jobs=2 prediction at each d and dtype."""
    records, skipped = [], []
    for d in dims:
        X64 = synthetic(rows, d, seed + d)
        for dt in dtypes:
            try:
                variants = {"n_jobs=1": (build_model(d, n_features, dt, 1, caps=caps), dt)}
            except Unsupported as exc:
                skipped.append({"d": d, "dtype": dt, "n_jobs": 1, "reason": str(exc)})
                continue
            try:
                variants["n_jobs=2"] = (build_model(d, n_features, dt, 2, caps=caps), dt)
            except Unsupported as exc:
                skipped.append({"d": d, "dtype": dt, "n_jobs": 2, "reason": str(exc)})
            X = {dt: np.ascontiguousarray(X64, dtype=dt)}
            res = time_variants(variants, X, repeats)
            ref = res["n_jobs=1"]["scores"]
            for name, r in res.items():
                n_jobs = int(name.split("=")[1])
                rec = {"d": d, "dtype": dt, "n_jobs": n_jobs, "rows": rows,
                       "n_features": n_features, "seconds_median": r["median_s"],
                       "seconds_samples": r["samples_s"],
                       "cpu_seconds_median": r["cpu_median_s"],
                       "cpu_seconds_samples": r["cpu_samples_s"],
                       "busiest_thread_cpu_seconds_median": r["busiest_thread_cpu_median_s"],
                       "busiest_thread_cpu_seconds_samples":
                           r["busiest_thread_cpu_samples_s"],
                       "pairs_per_s": rows * n_features / r["median_s"],
                       "pairs_per_cpu_s": rows * n_features / r["cpu_median_s"],
                       "max_abs_difference_to_n_jobs_1": _max_diff(r["scores"], ref)}
                records.append(rec)
                log(f"  predict d={d} {dt} n_jobs={n_jobs}: {r['median_s']:.3f} s "
                    f"({r['cpu_median_s']:.3f} CPU s), {rec['pairs_per_s'] / 1e6:,.1f} M pairs/s "
                    f"({rec['pairs_per_cpu_s'] / 1e6:,.1f} per CPU s)")
            del X
    return records, skipped


def measure_cache(dims, dtypes, rows, repeats, caps, log, n_features=4096, seed=0):
    """Item 2: cache_bytes=0 (regenerate every block) against the default cache."""
    records, skipped = [], []
    for d in dims:
        X64 = synthetic(rows, d, seed + 1000 + d)
        for dt in dtypes:
            try:
                variants = {"cached": (build_model(d, n_features, dt, caps=caps), dt),
                            "regenerated": (build_model(d, n_features, dt, cache_bytes=0,
                                                        caps=caps), dt)}
            except Unsupported as exc:
                skipped.append({"d": d, "dtype": dt, "reason": str(exc)})
                continue
            res = time_variants(variants, {dt: np.ascontiguousarray(X64, dtype=dt)}, repeats)
            c, g = res["cached"], res["regenerated"]
            rec = {"d": d, "dtype": dt, "rows": rows, "n_features": n_features,
                   "cached_seconds_median": c["median_s"], "cached_seconds_samples":
                       c["samples_s"],
                   "regenerated_seconds_median": g["median_s"],
                   "regenerated_seconds_samples": g["samples_s"],
                   "cached_cpu_seconds_median": c["cpu_median_s"],
                   "regenerated_cpu_seconds_median": g["cpu_median_s"],
                   "regenerated_over_cached": g["cpu_median_s"] / c["cpu_median_s"],
                   "regenerated_over_cached_wall": g["median_s"] / c["median_s"],
                   "blocks_in_cache": {k: _n_cached(v[0]) for k, v in variants.items()},
                   "max_abs_difference": _max_diff(g["scores"], c["scores"])}
            records.append(rec)
            log(f"  cache d={d} {dt}: CPU s cached {c['cpu_median_s']:.3f}, regenerated "
                f"{g['cpu_median_s']:.3f} ({rec['regenerated_over_cached']:.2f}x; wall "
                f"{rec['regenerated_over_cached_wall']:.2f}x)")
    return records, skipped


def _window_stats(lat, control, window):
    out = []
    for s in range(0, lat.size - window + 1, window):
        w, c = lat[s:s + window], control[s:s + window]
        out.append({"first_update": int(s), "updates": int(w.size),
                    "median_us": float(np.median(w)), "p90_us": float(np.percentile(w, 90)),
                    "control_median_us": float(np.median(c)),
                    "over_control": float(np.median(w) / np.median(c))})
    return out


def measure_latency(d, n_updates, window, dtype, caps, n_features=4096, seed=0):
    """Item 4: one-row partial_fit latencies on a model whose budget is full.

    The streamed model takes ``n_updates`` one-row calls.  Alongside, each
    window of calls is also given to a *control*: a fresh copy of the
    streamed model as it was when its budget filled (rebuilt from the same
    seed for every window), the two alternating call by call.  A cost that
    grew with the samples seen would make the streamed model slower than its
    control; a change in the machine's speed slows both.

    Each call is timed on the wall clock and on the process's CPU clock.
    For both, returns the per-window median and 90th percentile
    (microseconds) of the streamed model and its ratio to the control, the
    ratio of the last window's median to the first's, and the least-squares
    slope of the per-call latencies against the number of calls
    (microseconds per 1000 calls).

    Examples
    --------
    >>> r = measure_latency(d=3, n_updates=20, window=10, dtype="float64",
    ...                     caps=capabilities(), n_features=256)
    >>> len(r["cpu"]["windows"]), r["wall"]["windows"][0]["updates"]
    (2, 10)
    """
    if n_updates < 2 * window or window < 1:
        raise ValueError("need window >= 1 and n_updates >= 2 windows")
    clf = build_model(d, n_features, dtype, caps=caps, seed=seed)
    rng = np.random.default_rng(seed + 7)
    X = np.ascontiguousarray(rng.standard_normal((n_updates, d)), dtype=dtype)
    y = np.where(X[:, 0] * X[:, 1] > 0, 1, -1)
    times = np.empty((2, 2, n_updates))  # [streamed, control] x [wall, cpu]
    clock, cpu_clock = time.perf_counter, time.process_time
    control = None
    for i in range(n_updates):
        if i % window == 0:
            control = build_model(d, n_features, dtype, caps=caps, seed=seed)
        for k in ((0, 1) if i % 2 == 0 else (1, 0)):
            model = clf if k == 0 else control
            t0, c0 = clock(), cpu_clock()
            model.partial_fit(X[i:i + 1], y[i:i + 1])
            times[k, 1, i] = cpu_clock() - c0
            times[k, 0, i] = clock() - t0
    times *= 1e6
    out = {"d": d, "dtype": dtype, "n_features": n_features,
           "samples_seen_at_end": int(clf.samples_seen_), "n_updates": n_updates,
           "window": window}
    for c, name in enumerate(("wall", "cpu")):
        lat = times[0, c]
        windows = _window_stats(lat, times[1, c], window)
        slope = float(np.polyfit(np.arange(n_updates), lat, 1)[0]) * 1000
        out[name] = {"median_us": float(np.median(lat)), "p90_us": float(np.percentile(lat, 90)),
                     "windows": windows,
                     "last_over_first_window_median":
                         windows[-1]["median_us"] / windows[0]["median_us"],
                     "last_window_over_control": windows[-1]["over_control"],
                     "slope_us_per_1000_updates": slope,
                     "slope_relative_growth_over_stream":
                         slope * n_updates / 1000 / windows[0]["median_us"]}
    return out


def measure_sweep(d, features, dtypes, rows, repeats, caps, log, seed=0):
    """Item 5: prediction pairs/s against the number of random features."""
    records, skipped = [], []
    X64 = synthetic(rows, d, seed + 2000)
    for dt in dtypes:
        X = {dt: np.ascontiguousarray(X64, dtype=dt)}
        for m in features:
            try:
                clf = build_model(d, m, dt, caps=caps, seed=seed)
            except Unsupported as exc:
                skipped.append({"dtype": dt, "n_features": m, "reason": str(exc)})
                break
            r = time_variants({"m": (clf, dt)}, X, repeats)["m"]
            records.append({"d": d, "dtype": dt, "n_features": m, "rows": rows,
                            "seconds_median": r["median_s"], "seconds_samples": r["samples_s"],
                            "cpu_seconds_median": r["cpu_median_s"],
                            "pairs_per_s": rows * m / r["median_s"],
                            "pairs_per_cpu_s": rows * m / r["cpu_median_s"]})
            log(f"  sweep d={d} {dt} {m} features: "
                f"{records[-1]['pairs_per_cpu_s'] / 1e6:,.1f} M pairs per CPU s "
                f"({records[-1]['pairs_per_s'] / 1e6:,.1f} M/s wall)")
    return records, skipped


# --------------------------------------------------------------------------- #
# targets and plots
# --------------------------------------------------------------------------- #
def _target(name, measured, op, threshold, **where):
    ok = measured >= threshold if op == ">=" else measured <= threshold
    return dict({"target": name}, **where, measured=measured, comparison=op,
                threshold=threshold, **{"pass": bool(ok)})


# the clock each target is judged on (see the module docstring)
CLOCKS = {"prediction_fraction_of_pair_limit": "cpu", "n_jobs_2_speedup": "wall",
          "regenerated_within_2x_of_cached": "cpu", "partial_fit_latency_flat": "cpu"}


def _skipped_target(name, reason, **where):
    return dict({"target": name}, **where, measured=None, threshold=None,
                reason=reason, **{"pass": None})


def evaluate_targets(report, dims, cache_dims, dtypes, thresholds):
    """One record per target, with the measured figure, threshold and verdict."""
    targets = []
    pred = report["prediction"]["records"]

    def find(records, **keys):
        return [r for r in records if all(r.get(k) == v for k, v in keys.items())]

    def why(section, **keys):
        found = find(report[section]["skipped"], **keys)
        return found[0]["reason"] if found else "not measured"
    def target(name, records, field, op, threshold, reason, **where):
        """The target from the first of ``records``; skipped, with ``reason()``, when none."""
        if records:
            return _target(name, records[0][field], op, threshold, **where)
        return _skipped_target(name, reason(), **where)

    for dt in dtypes:
        for d in dims:
            r1 = find(pred, d=d, dtype=dt, n_jobs=1)
            r2 = find(pred, d=d, dtype=dt, n_jobs=2) if r1 else []
            targets.append(target("prediction_fraction_of_pair_limit", r1,
                                  "fraction_of_pair_limit", ">=", thresholds["fraction"],
                                  lambda: why("prediction", d=d, dtype=dt, n_jobs=1),
                                  d=d, dtype=dt))
            targets.append(target("n_jobs_2_speedup", r2, "speedup_over_n_jobs_1", ">=",
                                  thresholds["speedup"],
                                  lambda: why("prediction", d=d, dtype=dt, n_jobs=2 if r1 else 1),
                                  d=d, dtype=dt))
        for d in cache_dims:
            targets.append(target("regenerated_within_2x_of_cached",
                                  find(report["cache"]["records"], d=d, dtype=dt),
                                  "regenerated_over_cached", "<=", thresholds["regen"],
                                  lambda: why("cache", d=d, dtype=dt), d=d, dtype=dt))
    for lat in report["latency"]["records"]:
        targets.append(_target("partial_fit_latency_flat",
                               lat["cpu"]["last_window_over_control"], "<=",
                               thresholds["latency"], d=lat["d"], dtype=lat["dtype"]))
    for lat in report["latency"]["skipped"]:
        targets.append(_skipped_target("partial_fit_latency_flat", lat["reason"],
                                       d=report["settings"]["latency_d"], dtype=lat["dtype"]))
    for t in targets:
        t["clock"] = CLOCKS[t["target"]]
    return targets


def make_plots(report, stem, out_dir):
    """Write the PNG plots; returns their paths (none without matplotlib)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker
    except ImportError:
        return [], "matplotlib is not installed (pip install '.[bench]'): no plots"
    colors = {"float32": "tab:orange", "float64": "tab:blue"}
    files = []
    title = (f"{report['machine']['processor']}, {report['machine']['cpu_count']} cores, "
             f"{report['created'][:10]}")

    # 1. throughput against the number of features, pair limit as a line
    sweep = report["sweep"]
    if sweep["records"]:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for dt in sorted({r["dtype"] for r in sweep["records"]}):
            rs = [r for r in sweep["records"] if r["dtype"] == dt]
            m = [r["n_features"] for r in rs]
            ax.plot(m, [r["pairs_per_cpu_s"] / 1e6 for r in rs], "o-", color=colors.get(dt),
                    label=f"{dt} prediction, per CPU second")
            ax.plot(m, [r["pairs_per_s"] / 1e6 for r in rs], "o:", color=colors.get(dt),
                    alpha=0.45, mfc="none", label=f"{dt} prediction, wall clock")
            lim = sweep["pair_limit_cpu"].get(dt)
            if lim:
                ax.axhline(lim / 1e6, color=colors.get(dt), ls="--",
                           label=f"{dt} pair limit ({lim / 1e6:,.0f} M per CPU s)")
        ax.set_xscale("log", base=2)
        ms = sorted({r["n_features"] for r in sweep["records"]})
        ax.set_xticks(ms, [str(m) for m in ms])
        ax.minorticks_off()
        ax.set_xlabel("random features")
        ax.set_ylabel("(sample, feature) pairs per second, millions")
        ax.set_ylim(bottom=0)
        ax.set_title(f"Seeded prediction, d = {sweep['d']}, {sweep['rows']:,} rows, "
                     f"n_jobs=1\n{title}", fontsize=9)
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
        files.append(_save(fig, out_dir / f"{stem}_throughput_vs_features.png", plt))

    # 2. the three prediction targets side by side
    panels = [
        ("prediction", "fraction_of_pair_limit", "fraction of the pair limit (CPU time)", 0.5,
         dict(n_jobs=1)),
        ("prediction", "speedup_over_n_jobs_1", "n_jobs=2 speed-up over n_jobs=1 (wall)", 1.7,
         dict(n_jobs=2)),
        ("cache", "regenerated_over_cached", "CPU time regenerated / cached", 2.0, {}),
    ]
    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    for ax, (section, key, label, line, keys) in zip(axes, panels):
        recs = [r for r in report[section]["records"] if key in r
                and all(r[k] == v for k, v in keys.items())]
        dims = sorted({r["d"] for r in recs})
        dts = sorted({r["dtype"] for r in recs})
        if not recs:
            reasons = sorted({x["reason"] for x in report[section]["skipped"]})
            ax.text(0.5, 0.5, "not measured:\n" + "\n".join(reasons or ["no data"]),
                    ha="center", va="center", wrap=True, fontsize=8, transform=ax.transAxes)
        width = 0.8 / max(1, len(dts))
        for i, dt in enumerate(dts):
            xs, ys = [], []
            for j, d in enumerate(dims):
                r = [x for x in recs if x["d"] == d and x["dtype"] == dt]
                if r:
                    xs.append(j + (i - (len(dts) - 1) / 2) * width)
                    ys.append(r[0][key])
            ax.bar(xs, ys, width, color=colors.get(dt), label=dt)
            if key == "speedup_over_n_jobs_1":
                # how far the machine's own kernels scaled to 2 threads meanwhile,
                # and the speed-up the threads' CPU times promise with a core each
                mine = [x for d in dims for x in recs if x["d"] == d and x["dtype"] == dt]
                ax.plot(xs, [x["limit_speedup_2_threads_wall"] for x in mine], "kx",
                        label="pair limit, 2 / 1 threads (wall)" if i == 0 else None)
                est = [(x0, x["speedup_with_a_core_per_thread"]) for x0, x in zip(xs, mine)
                       if x["speedup_with_a_core_per_thread"] is not None]
                if est:
                    ax.plot(*zip(*est), "ko", mfc="none",
                            label="with a core per thread (CPU times)" if i == 0 else None)
        ax.axhline(line, color="k", ls="--", lw=1, label=f"target {line:g}")
        ax.set_xticks(range(len(dims)), [f"d={d}" for d in dims])
        ax.set_ylabel(label)
        top = max([line] + [r[key] for r in recs] + [
            r.get("speedup_with_a_core_per_thread") or 0 for r in recs])
        ax.set_ylim(0, 1.45 * top)  # room for the legend above the bars
        ax.legend(fontsize=7, loc="upper left", ncol=2)
        ax.grid(alpha=0.3, axis="y")
    axes[0].set_title("Prediction: fraction of the pair limit", fontsize=9)
    axes[1].set_title("Prediction: two threads", fontsize=9)
    axes[2].set_title("Prediction: regenerating blocks vs the cache", fontsize=9)
    fig.suptitle(f"DSGClassifier seeded prediction, {report['settings']['rows']:,} rows, "
                 f"4096 features - {title}", fontsize=10)
    files.append(_save(fig, out_dir / f"{stem}_prediction_targets.png", plt))

    # 3. latency of one-row partial_fit as the stream grows
    lats = report["latency"]["records"]
    if lats:
        fig, ax = plt.subplots(figsize=(7.5, 6))
        for lat in lats:
            c = colors.get(lat["dtype"])
            for clock, style, what in (("cpu", "-", "CPU"), ("wall", ":", "wall")):
                ws = lat[clock]["windows"]
                x = [w["first_update"] + w["updates"] / 2 for w in ws]
                ax.plot(x, [w["median_us"] for w in ws], "o" + style, color=c,
                        label=f"{lat['dtype']} {what} median")
                ax.plot(x, [w["p90_us"] for w in ws], "^" + style, color=c, alpha=0.5,
                        label=f"{lat['dtype']} {what} 90th percentile")
                if clock == "cpu":
                    ax.plot(x, [w["control_median_us"] for w in ws], "x", color=c, ms=8,
                            label=f"{lat['dtype']} CPU median, fresh control")
        ax.set_xlabel("single-row partial_fit calls since the budget filled")
        ax.set_ylabel("latency per call, microseconds")
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1, 2, 5)))
        ax.yaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_title(f"partial_fit latency, d = {lats[0]['d']}, 4096 features (full budget), "
                     f"windows of {lats[0]['window']}\n{title}", fontsize=9)
        ax.legend(fontsize=7, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.12))
        ax.grid(alpha=0.3)
        files.append(_save(fig, out_dir / f"{stem}_partial_fit_latency.png", plt))
    return files, None


def _save(fig, path, plt):
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# --------------------------------------------------------------------------- #
# main
# --------------------------------------------------------------------------- #
def parse_args(argv=None):
    p = argument_parser(__doc__, "smoke run: 10,000 rows, 1 repeat, 1000 updates, smaller sweep")
    add_output(p, "speed", "; plots are written beside it, named after it")
    p.add_quick_option("--rows", 100_000, 10_000, "rows predicted")
    p.add_quick_option("--repeats", 3, 1, "timed calls per figure, median reported")
    p.add_argument("--dims", type=parse_int_list, default=[16, 128, 784],
                   help="d of the prediction and n_jobs measurements (default: 16,128,784)")
    p.add_argument("--cache-dims", type=parse_int_list, default=[8, 16, 32],
                   help="d of the cache measurement (default: 8,16,32)")
    p.add_argument("--sweep-d", type=positive_int, default=128,
                   help="d of the throughput-vs-features sweep (default: %(default)s)")
    p.add_quick_option("--sweep-features", [256, 512, 1024, 2048, 4096, 8192],
                       [256, 512, 1024, 2048, 4096],
                       "feature counts of the sweep, comma-separated multiples of 256",
                       type=parse_int_list, shown=("256,...,8192", "up to 4096"))
    p.add_quick_option("--sweep-rows", 20_000, 4_000, "rows predicted in the sweep")
    p.add_argument("--latency-d", type=positive_int, default=100,
                   help="d of the partial_fit latency measurement (default: %(default)s)")
    p.add_quick_option("--latency-updates", 6000, 1000, "single-row partial_fit calls")
    p.add_quick_option("--latency-window", 500, 200, "calls per latency window")
    p.add_quick_option("--square", 2048, 1024,
                       "reference square GEMM size of the limits, 0 for none",
                       type=non_negative_int)
    p.add_quick_option("--limits-seconds", 0.04, 0.01,
                       "duration of one measurement of the limits", type=float)
    p.add_argument("--no-plots", action="store_true", help="write the JSON only")
    args = p.parse_args(argv)
    if not args.limits_seconds > 0:
        p.error("--limits-seconds must be > 0")
    if args.rows < WARMUP_ROWS:
        p.error(f"--rows must be >= {WARMUP_ROWS}")
    if args.latency_updates < 2 * args.latency_window:
        p.error("--latency-updates must cover at least two --latency-window windows")
    if any(m % BLOCK_SIZE for m in args.sweep_features):
        p.error(f"--sweep-features must be multiples of {BLOCK_SIZE}")
    return args


def main(argv=None):
    args = parse_args(argv)
    started = time.perf_counter()
    log = make_logger(started)
    caps = capabilities()
    dtypes = ["float32", "float64"]
    report = report_header("speed", "quick" if args.quick else "full")
    thresholds = {"fraction": 0.5, "speedup": 1.7, "regen": 2.0, "latency": 1.25}
    report["settings"] = {
        "estimator": "DSGClassifier(loss='hinge', kernel='gaussian', gamma=1/d, "
                     "block_size=256, batch_size=64, random_state=0)",
        "estimator_parameters_available": caps,
        "rows": args.rows, "repeats": args.repeats, "n_features": 4096, "dims": args.dims,
        "cache_dims": args.cache_dims, "sweep_d": args.sweep_d,
        "sweep_features": args.sweep_features, "sweep_rows": args.sweep_rows,
        "latency_d": args.latency_d, "latency_updates": args.latency_updates,
        "latency_window": args.latency_window, "thresholds": thresholds,
        "data": "synthetic N(0, 1) rows, C-contiguous, already in the model's dtype",
        "timing": "decision_function wall time, median over repeats; compared variants "
                  "alternate within each repeat; one untimed call on 256 rows first",
    }
    notes = [f"DSGClassifier has no {k} parameter in this build: variants that need it are "
             f"skipped" for k, v in caps.items() if not v]
    for n in notes:
        log(n)

    limit_dims = sorted(set(args.dims) | {args.sweep_d})
    lim_kw = dict(dims=limit_dims, repeats=3 if args.quick else 5,
                  target_seconds=args.limits_seconds, square_n=args.square)
    log("limits (start of run)")
    limit_runs = [limits_mod.measure_limits(log=log, **lim_kw)]

    log("1 + 3. seeded prediction, n_jobs=1 and n_jobs=2")
    pred, pred_skipped = measure_prediction(args.dims, dtypes, args.rows, args.repeats,
                                            caps, log)
    log("2. regenerated blocks against the cache")
    cache, cache_skipped = measure_cache(args.cache_dims, dtypes, args.rows, args.repeats,
                                         caps, log)
    log("4. single-row partial_fit latency")
    lats, lat_skipped = [], []
    for dt in dtypes:
        try:
            lats.append(measure_latency(args.latency_d, args.latency_updates,
                                        args.latency_window, dt, caps))
            r = lats[-1]
            c, w = r["cpu"], r["wall"]
            log(f"  latency {dt}: CPU median {c['median_us']:.0f} us, p90 {c['p90_us']:.0f} us, "
                f"last/first window {c['last_over_first_window_median']:.2f}, last window / "
                f"control {c['last_window_over_control']:.2f}; wall median "
                f"{w['median_us']:.0f} us, p90 {w['p90_us']:.0f} us")
        except Unsupported as exc:
            lat_skipped.append({"dtype": dt, "reason": str(exc)})
    log("5. throughput against the number of features")
    sweep, sweep_skipped = measure_sweep(args.sweep_d, args.sweep_features, dtypes,
                                         args.sweep_rows, args.repeats, caps, log)
    if not args.quick:
        log("limits (end of run)")
        limit_runs.append(limits_mod.measure_limits(log=log, **lim_kw))

    def limit(dt, d, threads=1, clock="cpu"):
        return max(limits_mod.pair_limit(lr, dt, d, threads, clock) for lr in limit_runs)

    for r in pred:
        dt, d, n_jobs = r["dtype"], r["d"], r["n_jobs"]
        # per CPU second against one core's limit (for n_jobs=2 the CPU time
        # of both threads: the rate per core), and over the wall time
        # against the limit of as many threads
        r["pair_limit_cpu"] = limit(dt, d, 1, "cpu")
        r["fraction_of_pair_limit"] = r["pairs_per_cpu_s"] / r["pair_limit_cpu"]
        r["pair_limit_wall"] = limit(dt, d, n_jobs, "wall")
        r["fraction_of_pair_limit_wall"] = r["pairs_per_s"] / r["pair_limit_wall"]
        if n_jobs == 2:
            one = [x for x in pred if x["d"] == d and x["dtype"] == dt and x["n_jobs"] == 1][0]
            r["speedup_over_n_jobs_1"] = one["seconds_median"] / r["seconds_median"]
            r["cpu_seconds_over_n_jobs_1"] = r["cpu_seconds_median"] / one["cpu_seconds_median"]
            # had each thread a core: n_jobs=1's CPU time over the busiest
            # thread's (clock ticks: meaningless for calls of a few ticks)
            busy = r["busiest_thread_cpu_seconds_median"]
            r["speedup_with_a_core_per_thread"] = (
                one["cpu_seconds_median"] / busy if busy and busy >= 0.2 else None)
            r["limit_speedup_2_threads_wall"] = r["pair_limit_wall"] / limit(dt, d, 1, "wall")
    report["limits"] = {
        "used": "for each dtype, d, thread count and clock, the larger pair limit of the "
                "measurements below (start of run, and end of run in full mode): if "
                "anything, the fractions are low",
        "runs": limit_runs,
    }
    report["prediction"] = {"records": pred, "skipped": pred_skipped}
    report["cache"] = {"records": cache, "skipped": cache_skipped}
    report["latency"] = {"records": lats, "skipped": lat_skipped}
    report["sweep"] = {"d": args.sweep_d, "rows": args.sweep_rows, "records": sweep,
                       "skipped": sweep_skipped,
                       "pair_limit_cpu": {dt: limit(dt, args.sweep_d) for dt in dtypes},
                       "pair_limit_wall": {dt: limit(dt, args.sweep_d, 1, "wall")
                                           for dt in dtypes}}
    report["targets"] = evaluate_targets(report, args.dims, args.cache_dims, dtypes,
                                         thresholds)
    report["targets_summary"] = {
        "passed": sum(t["pass"] is True for t in report["targets"]),
        "failed": sum(t["pass"] is False for t in report["targets"]),
        "not_measured": sum(t["pass"] is None for t in report["targets"]),
    }
    report["notes"] = notes
    report["load_average_at_end"] = load_average()
    if args.no_plots:
        report["plots"], why = [], "--no-plots"
    else:
        files, why = make_plots(report, args.output.stem, args.output.parent)
        report["plots"] = [p.name for p in files]
    if why:
        report["plots_skipped"] = why
    report["wall_time_s"] = time.perf_counter() - started
    write_json(args.output, report)

    print()
    print(format_summary(report))
    print(f"wrote {args.output}" + (f" and {len(report['plots'])} plot(s)" if report["plots"]
                                    else "") + f" in {report['wall_time_s']:.0f} s")
    return report


def format_summary(report):
    """The targets, one line each, and the pair-limit table."""
    lines = ["| target | d | dtype | clock | measured | threshold | pass |",
             "|---|---|---|---|---|---|---|"]
    for t in report["targets"]:
        measured = "-" if t["measured"] is None else f"{t['measured']:.3g}"
        threshold = "-" if t["threshold"] is None else f"{t['comparison']} {t['threshold']:g}"
        verdict = {True: "yes", False: "NO", None: f"not measured ({t.get('reason')})"}
        lines.append(f"| {t['target']} | {t['d']} | {t['dtype']} | {t['clock']} | {measured} | "
                     f"{threshold} | {verdict[t['pass']]} |")
    s = report["targets_summary"]
    lines.append(f"\ntargets: {s['passed']} passed, {s['failed']} failed, "
                 f"{s['not_measured']} not measured")
    lines.append("\npair limits at the start of the run (wall / CPU time):")
    lines.append(limits_mod.format_table(report["limits"]["runs"][0]))
    return "\n".join(lines)


if __name__ == "__main__":
    main()
