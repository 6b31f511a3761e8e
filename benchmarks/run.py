"""Run every benchmark in one process and summarise every target.

Runs, in this order and in one Python process, the ``main(argv)`` of
``limits.py`` (the machine's GEMM and cosine rates, the pair limit),
``speed.py`` (prediction and update speed against those limits) and
``peers.py`` (onlinekernel against scikit-learn and River); with ``--all``
also ``quality.py`` (accuracy against exact kernel machines), ``iln.py``
(infinite layer networks), ``fixed_features.py`` and ``reuse.py`` (the
variants of issue 5), ``one_pass.py``, ``scale.py`` (covtype and MNIST
streams and batch fits) and ``concurrency.py``, which take much longer (a
few hours in all).
A script that is not there is reported as missing and the run goes on; one
that fails is reported with its error and the run goes on too.

Each script writes its own JSON (and PNG) files under
``benchmarks/results/``.  Then every target any of them reports is gathered
into one table, printed, and written to ``benchmarks/results/summary.json``
and ``benchmarks/results/summary.md``; a full run also copies the table into
``benchmarks/README.md`` (between the ``summary:start`` / ``summary:end``
markers).  ``--quick`` runs every script in its quick mode and writes
``summary_quick.json`` / ``summary_quick.md`` instead, leaving the README
alone.

Run from the repository root::

    python -m benchmarks.run            # full run
    python -m benchmarks.run --quick    # every script's smoke mode
    python -m benchmarks.run --all      # also quality, iln, fixed_features, reuse, one_pass,
                                        # scale, concurrency

The exit status is 0 when every script present ran to its end, whatever
its targets say (a failed target is a measurement, not an error), and 1
when a script raised an error.
"""
import argparse
import datetime
import importlib
import json
import os
import sys
import time
import traceback
from pathlib import Path

from ._common import cpu_model

HERE = Path(__file__).resolve().parent
#: the package the scripts are imported from (``benchmarks``; None: top-level modules)
PACKAGE = __package__ or None

RESULTS = HERE / "results"
README = HERE / "README.md"
START, END = "<!-- summary:start -->", "<!-- summary:end -->"
# (name, what it measures); the default run and the --all extras
CORE = (("limits", "machine limits: GEMM and cosine rates, pair limit"),
        ("speed", "prediction and update speed against the limits"),
        ("peers", "onlinekernel against scikit-learn and River"))
EXTRA = (("quality", "accuracy against exact kernel machines"),
         ("iln", "infinite layer networks (Shrinking Gradient)"),
         ("fixed_features", "SGD on fixed random features"),
         ("reuse", "reuse of old blocks at a full budget"),
         ("one_pass", "one pass of partial_fit against a tuned pipeline"),
         ("scale", "big streams and large batch fits against their peers"),
         ("concurrency", "one trainer and four predictors on one model"))
PASS_WORDS = {"pass", "passed", "ok", "true", "yes"}
FAIL_WORDS = {"fail", "failed", "false", "no"}


# --------------------------------------------------------------------------- #
# reading the targets a script reports
# --------------------------------------------------------------------------- #
def _status(value):
    """``"pass"``, ``"fail"`` or ``"not available"`` from a bool, a word or None."""
    if isinstance(value, bool):
        return "pass" if value else "fail"
    if value is None:
        return "not available"
    word = str(value).strip().lower()
    if word in PASS_WORDS:
        return "pass"
    if word in FAIL_WORDS:
        return "fail"
    return word


def _first(d, *keys):
    for k in keys:
        if k in d:
            return d[k]
    return None


_KNOWN = {"id", "name", "target", "status", "passed", "pass", "ok", "met", "value", "measured",
          "ratio", "fraction", "threshold", "required", "goal", "unit", "description", "what",
          "comparison", "reason"}


def _normalise(tid, spec):
    if "status" in spec:
        status = _status(spec["status"])
    else:
        status = _status(_first(spec, "passed", "pass", "ok", "met"))
    value = _first(spec, "value", "measured", "ratio", "fraction")
    threshold = _first(spec, "threshold", "required", "goal")
    if threshold is None and not isinstance(spec.get("target"), str):
        threshold = spec.get("target")
    name = spec.get("id")
    if name is None:
        name = _first(spec, "name", "target")
        name = name if isinstance(name, str) else tid
        # a named target measured at several points: "name[d=16, dtype=float32]"
        where = [f"{k}={v}" for k, v in spec.items() if k not in _KNOWN and isinstance(
            v, (str, int, float, bool)) and len(str(v)) <= 24]
        if where:
            name += f"[{', '.join(where)}]"
    unit = spec.get("unit", "")
    return {"id": str(name), "status": status,
            "value": value if isinstance(value, (int, float)) and not isinstance(value, bool)
            else None,
            "threshold": threshold if isinstance(threshold, (int, float, str)) else None,
            "comparison": spec.get("comparison", ">=") if isinstance(
                spec.get("comparison", ">="), str) else ">=",
            "unit": unit if isinstance(unit, str) else "",
            "description": str(_first(spec, "description", "what") or ""),
            "reason": spec.get("reason") if isinstance(spec.get("reason"), str) else None}


def _looks_like_target(d):
    if "status" in d and isinstance(d["status"], str):
        return _status(d["status"]) in ("pass", "fail", "not available")
    return any(isinstance(d.get(k), bool) for k in ("passed", "pass", "met"))


def collect_targets(report):
    """Every target of a script's report, normalised.

    Takes a ``targets`` list (of dicts with ``id`` or ``target``, a verdict
    ``status`` / ``pass`` / ``passed``, ``value`` or ``measured``,
    ``threshold``) or dict (``{id: spec}``) when the report has one;
    otherwise every nested dict that carries a verdict (``status``,
    ``passed``, ``pass`` or ``met``) is a target named by its path, and so is
    every ``..._ok`` field holding True, False or None.  A verdict of None
    means "not available".

    >>> collect_targets({"targets": [{"id": "a", "status": "pass", "value": 6.0,
    ...                               "threshold": 5.0, "unit": "x"}]})[0]["status"]
    'pass'
    >>> t = collect_targets({"targets": [{"target": "speedup", "d": 16, "measured": 1.2,
    ...                                   "threshold": 1.7, "pass": False}]})[0]
    >>> t["id"], t["status"], t["value"]
    ('speedup[d=16]', 'fail', 1.2)
    >>> for t in collect_targets({"a9a": {"accuracy_ok": True, "vs_exact_ok": None}}):
    ...     print(t["id"], t["status"])
    a9a.accuracy_ok pass
    a9a.vs_exact_ok not available
    """
    if not isinstance(report, dict):
        return []
    targets = report.get("targets")
    if isinstance(targets, list):
        return [_normalise(f"target{i}", t) for i, t in enumerate(targets)
                if isinstance(t, dict)]
    if isinstance(targets, dict):
        return [_normalise(k, v if isinstance(v, dict) else {"passed": v})
                for k, v in targets.items() if isinstance(v, (dict, bool))]
    found = []

    def walk(node, path):
        if isinstance(node, dict):
            if path and _looks_like_target(node):
                found.append(_normalise(".".join(path), node))
                return
            for k, v in node.items():
                if str(k).endswith("_ok") and (v is None or isinstance(v, bool)):
                    found.append(_normalise(".".join(path + [str(k)]), {"passed": v}))
                else:
                    walk(v, path + [str(k)])
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, path + [str(i)])

    walk(report, [])
    return found


# --------------------------------------------------------------------------- #
# running the scripts
# --------------------------------------------------------------------------- #
def _script_argv(module, args):
    argv = ["--quick"] if args.quick else []
    if args.data_dir is not None:
        # only to scripts that take it (the micro-benchmarks read no data): those
        # that declare it, themselves or through the harness's add_data_dir
        try:
            text = Path(module.__file__).read_text(encoding="utf-8")
        except OSError:
            text = ""
        takes = "--data-dir" in text or "add_data_dir(" in text
        if takes:
            argv += ["--data-dir", str(args.data_dir)]
    return argv


def _default_output(name, quick):
    return RESULTS / (f"{name}_quick.json" if quick else f"{name}.json")


def run_script(name, args, log):
    """Import ``benchmarks/NAME.py`` and run its ``main``; never raises."""
    entry = {"script": f"{name}.py", "status": "missing", "wall_time_s": None,
             "output": None, "error": None}
    if not (HERE / f"{name}.py").is_file():
        log(f"{name}.py: not found in {HERE}, skipped")
        return entry, []
    started = time.perf_counter()
    report = None
    try:
        module = importlib.import_module(f"{PACKAGE}.{name}" if PACKAGE else name)
        main = getattr(module, "main", None)
        if main is None:
            raise AttributeError(f"{name}.py has no main(argv) function")
        argv = _script_argv(module, args)
        log(f"{name}.py {' '.join(argv)}".rstrip())
        report = main(argv)
        entry["status"] = "ran"
    except SystemExit as exc:  # argparse errors and the scripts' own clean exits
        if exc.code in (None, 0):
            entry["status"] = "ran"
        else:
            entry["status"] = "error"
            entry["error"] = f"exited: {exc.code}"
    except Exception as exc:
        entry["status"] = "error"
        entry["error"] = f"{type(exc).__name__}: {exc}"
        entry["traceback"] = traceback.format_exc(limit=8)
    entry["wall_time_s"] = time.perf_counter() - started
    if entry["status"] == "error":
        log(f"{name}.py failed after {entry['wall_time_s']:.0f} s: {entry['error']}")
    # The script's own JSON holds its targets when main returned none.
    out = _default_output(name, args.quick)
    if out.is_file():
        entry["output"] = str(out.relative_to(HERE.parent))
    if not isinstance(report, dict) and entry["status"] == "ran" and out.is_file():
        try:
            report = json.loads(out.read_text())
        except (OSError, ValueError) as exc:
            entry["error"] = f"cannot read {out.name}: {exc}"
    targets = [dict(t, script=name) for t in collect_targets(report)] \
        if entry["status"] == "ran" else []
    entry["targets"] = len(targets)
    return entry, targets


# --------------------------------------------------------------------------- #
# the summary
# --------------------------------------------------------------------------- #
def _fmt(value, unit):
    if value is None:
        return "n/a"
    if isinstance(value, str):
        return value
    text = f"{value:,.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    return f"{text}{unit if unit in ('x', '%') else (' ' + unit if unit else '')}"


def summary_markdown(summary):
    lines = [f"Run of {summary['created'][:16].replace('T', ' ')} UTC "
             f"({summary['mode']} mode, {summary['machine']}): "
             f"{summary['counts'].get('pass', 0)} targets passed, "
             f"{summary['counts'].get('fail', 0)} failed, "
             f"{summary['counts'].get('not available', 0)} not available.", "",
             "| script | target | value | threshold | status |", "|---|---|---|---|---|"]
    for t in summary["targets"]:
        status = {"pass": "pass", "fail": "**FAIL**"}.get(t["status"], t["status"])
        threshold = _fmt(t["threshold"], t["unit"])
        if t["threshold"] is not None:
            threshold = f"{t['comparison']} {threshold}"
        if t["status"] == "not available" and t.get("reason"):
            status += f" ({t['reason']})"
        lines.append(f"| {t['script']} | {t['id']} | {_fmt(t['value'], t['unit'])} | "
                     f"{threshold} | {status} |")
    lines += ["", "| script | status | wall time | results |", "|---|---|---|---|"]
    for s in summary["scripts"]:
        wall = "" if s["wall_time_s"] is None else f"{s['wall_time_s']:.0f} s"
        status = s["status"] + (f" ({s['error']})" if s.get("error") else "")
        lines.append(f"| {s['script']} | {status} | {wall} | {s['output'] or ''} |")
    return "\n".join(lines) + "\n"


def update_readme(markdown, path=README):
    """Put the summary table between the README's markers; False when they are absent."""
    text = path.read_text(encoding="utf-8")
    i, j = text.find(START), text.find(END)
    if i < 0 or j < i:
        return False
    path.write_text(text[:i + len(START)] + "\n" + markdown + text[j:], encoding="utf-8")
    return True


def _machine():
    return f"{cpu_model() or 'unknown CPU'}, {os.cpu_count()} cores"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true",
                   help="run every script in its quick (smoke) mode")
    p.add_argument("--all", action="store_true",
                   help="also run " + " and ".join(f"{n}.py" for n, _ in EXTRA))
    p.add_argument("--only", nargs="+", metavar="NAME",
                   choices=[n for n, _ in CORE + EXTRA],
                   help="run only these scripts (names without .py)")
    p.add_argument("--data-dir", type=Path, default=None,
                   help="folder of the datasets, passed to the scripts that read data "
                        "(default: each script's own, ../shared/data)")
    p.add_argument("--no-readme", action="store_true",
                   help="do not copy the summary table into benchmarks/README.md")
    return p.parse_args(argv)


def main(argv=None):
    """Run the benchmarks; write and return the summary."""
    args = parse_args(argv)
    started = time.perf_counter()

    def log(msg):
        print(f"[run {time.perf_counter() - started:7.1f}s] {msg}", flush=True)

    names = [n for n, _ in CORE] + ([n for n, _ in EXTRA] if args.all else [])
    if args.only:
        names = [n for n in names + [e for e, _ in EXTRA] if n in args.only]
        names = list(dict.fromkeys(names))
    scripts, targets = [], []
    for name in names:
        entry, found = run_script(name, args, log)
        scripts.append(entry)
        targets += found
    counts = {}
    for t in targets:
        counts[t["status"]] = counts.get(t["status"], 0) + 1
    summary = {
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "mode": "quick" if args.quick else "full",
        "command": " ".join(["run.py"] + (list(argv) if argv is not None else sys.argv[1:])),
        "machine": _machine(),
        "scripts": scripts,
        "targets": targets,
        "counts": counts,
        "wall_time_s": time.perf_counter() - started,
    }
    markdown = summary_markdown(summary)
    RESULTS.mkdir(parents=True, exist_ok=True)
    stem = "summary_quick" if args.quick else "summary"
    (RESULTS / f"{stem}.json").write_text(json.dumps(summary, indent=2) + "\n")
    (RESULTS / f"{stem}.md").write_text(markdown)
    print()
    print(markdown)
    if not args.quick and not args.no_readme:
        if update_readme(markdown):
            log(f"summary copied into {README.relative_to(HERE.parent)}")
        else:
            log(f"{README.name} has no {START} / {END} markers: not updated")
    log(f"wrote {RESULTS / (stem + '.json')} and {stem}.md")
    return summary


if __name__ == "__main__":
    summary = main()
    sys.exit(1 if any(s["status"] == "error" for s in summary["scripts"]) else 0)
