"""Helpers shared by the benchmark scripts: machine description, timing, results.

The benchmark modules import it as ``from ._common import ...`` (they run as
``python -m benchmarks.<name>`` from the repository root; the tests import
them as ``from benchmarks import <name>``).

* :func:`machine_info`, :func:`build_info` and :func:`report_header` describe
  where and on which build a benchmark ran;
* :func:`time_call` times a call over repeats and keeps every sample and
  their median (the figure the scripts report: on a shared machine the median
  is steadier than the mean and less flattering than the minimum);
* :func:`write_json` writes a report atomically;
* :func:`load_dataset` reads ``<data-dir>/<name>.npz`` (``X_train``,
  ``y_train``, ``X_test``, ``y_test``), by default from ``../shared/data``
  beside the repository (``$ONLINEKERNEL_DATA`` where set);
* :func:`argument_parser` and the ``add_*`` helpers declare the options the
  scripts share (``--quick``, ``--data-dir``, ``--output-dir``, ``--seed``,
  ``--blas-threads``), :func:`fill_quick_defaults` the settings that differ
  in quick mode (:meth:`BenchmarkParser.add_quick_option` declares such an
  option with both its defaults); :func:`positive_int` and
  :func:`non_negative_int` are the ``type=`` of counts;
* :func:`timed_compiled_steps` is the one diagnostic that reaches below
  onlinekernel's public API (see there).

Examples
--------
>>> t = time_call(lambda: sum(range(1000)), repeats=3)
>>> len(t["samples_s"]), t["median_s"] > 0
(3, True)
>>> summarize([3.0, 1.0, 2.0, 10.0])["median"]
2.5
"""
import argparse
import contextlib
import datetime
import importlib
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
RESULTS_DIR = BENCH_DIR / "results"
# ../shared/data beside the repository, as for the tests; ONLINEKERNEL_DATA overrides
DEFAULT_DATA_DIR = Path(os.environ.get("ONLINEKERNEL_DATA", REPO.parent / "shared" / "data"))


# --------------------------------------------------------------------------- #
# where and what was measured
# --------------------------------------------------------------------------- #
def _versions():
    import scipy
    import sklearn

    import onlinekernel
    return {"python": platform.python_version(), "numpy": np.__version__,
            "scipy": scipy.__version__, "scikit-learn": sklearn.__version__,
            "onlinekernel": onlinekernel.__version__}


def cpu_model():
    """The CPU's model name (``/proc/cpuinfo`` on Linux, ``platform`` elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def load_average():
    """The 1, 5 and 15 minute load averages, or None where the OS has none."""
    return [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None


def machine_info():
    """Platform, CPU, core count, package versions and the BLAS libraries loaded.

    Examples
    --------
    >>> info = machine_info()
    >>> info["cpu_count"] >= 1 and "numpy" in info
    True
    """
    from threadpoolctl import threadpool_info
    info = {"platform": platform.platform(), "machine": platform.machine(),
            "processor": cpu_model(), "cpu_count": os.cpu_count()}
    info.update(_versions())
    info["blas"] = [dict({k: i.get(k) for k in ("internal_api", "version", "num_threads",
                                                  "architecture")},
                         library=Path(i.get("filepath", "")).name)
                    for i in threadpool_info() if i.get("user_api") == "blas"]
    return info


def compiled_extension():
    """The compiled solver's file in the onlinekernel being measured (its build time).

    Found by file name under the package's folder, not imported: the
    extension named ``dsg`` (the doubly stochastic loop) where there is one,
    else the newest compiled extension; None in a build without any.
    """
    import onlinekernel
    root = Path(onlinekernel.__file__).resolve().parent
    found = [p for pattern in ("*.so", "*.pyd") for p in root.rglob(pattern)]
    solver = [p for p in found if p.name.split(".")[0] == "dsg"]
    return max(solver or found, key=lambda p: p.stat().st_mtime, default=None)


def build_info():
    """Which onlinekernel was measured: git commit, local changes, compiled extension time.

    Read-only git queries (``--no-optional-locks``: never touches the index);
    None where git or the repository is absent.  Call it when the script
    starts: the extension in memory is the one loaded then, even if a rebuild
    replaces the file during the run.
    """
    def git(*cmd):
        try:
            out = subprocess.run(["git", "--no-optional-locks", "-C", str(REPO), *cmd],
                                 capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    status = git("status", "--porcelain", "--", "src", "setup.py")
    solver = compiled_extension()
    return {
        "git_commit": git("rev-parse", "HEAD") or None,
        "uncommitted_changes_in_package": None if status is None else bool(status),
        "solver_extension": solver and solver.name,
        "solver_extension_mtime_utc": solver and datetime.datetime.fromtimestamp(
            solver.stat().st_mtime, datetime.timezone.utc).isoformat(timespec="seconds"),
    }


def report_header(benchmark, mode, argv=None):
    """The fields every benchmark report starts with (load average at start included).

    ``argv``: the arguments ``main`` was given, when not the command line's.
    """
    command = ([Path(sys.argv[0]).name] + sys.argv[1:] if argv is None
               else [f"{benchmark}.py", *argv])
    return {
        "benchmark": benchmark,
        "mode": mode,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(command),
        "machine": machine_info(),
        "onlinekernel_build": build_info(),
        "load_average_at_start": load_average(),
    }


def make_logger(started=None, stream=None):
    """A ``log(msg)`` printing the seconds elapsed since ``started``.

    Examples
    --------
    >>> import io
    >>> out = io.StringIO()
    >>> make_logger(stream=out)("hello")
    >>> out.getvalue().endswith("hello\\n")
    True
    """
    t0 = time.perf_counter() if started is None else started

    def log(msg):
        print(f"[{time.perf_counter() - t0:6.1f}s] {msg}", file=stream or sys.stdout,
              flush=True)
    return log


# --------------------------------------------------------------------------- #
# timing
# --------------------------------------------------------------------------- #
def thread_cpu_seconds():
    """CPU seconds (user + system) of every thread of this process, by thread id.

    Read from ``/proc/self/task`` (clock-tick resolution, 10 ms on most
    Linux systems); None where there is no such directory.  The difference
    of two readings gives each thread's share of a call, so the busiest
    thread's time estimates the call's duration had every thread a core.

    Examples
    --------
    >>> times = thread_cpu_seconds()
    >>> times is None or all(t >= 0 for t in times.values())
    True
    """
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return None
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                # fields after the ")" closing the command name: state, ppid,
                # ... utime and stime are the 12th and 13th
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:  # the thread ended meanwhile
            continue
        out[tid] = (int(fields[11]) + int(fields[12])) / tick
    return out


def busiest_thread_seconds(before, after):
    """Largest per-thread CPU time between two :func:`thread_cpu_seconds` readings."""
    if before is None or after is None:
        return None
    return max((after[t] - before.get(t, 0.0) for t in after), default=0.0)


@contextlib.contextmanager
def timed_compiled_steps():
    """Seconds spent in the DSG estimators' compiled training steps within the block.

    Yields a one-element list that accumulates them, or None when this build
    has no module-level ``train_steps`` to time.  A diagnostic only (it splits
    a ``partial_fit`` into the compiled steps and the Python around them):
    onlinekernel has no public hook for it, so it wraps the private
    ``onlinekernel.estimators._base.train_steps`` for the duration of the
    block -- the one place the benchmarks reach a private name.
    """
    try:
        module = importlib.import_module("onlinekernel.estimators._base")
    except ImportError:
        module = None
    original = getattr(module, "train_steps", None)
    if original is None:
        yield None
        return
    spent = [0.0]

    def timed(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - t0

    module.train_steps = timed
    try:
        yield spent
    finally:
        module.train_steps = original


def onlinekernel_cos_tile():
    """onlinekernel's compiled cosine kernel ``cos_tile``, or None where this build has none.

    ``limits.py`` measures it beside the machine's reference cosine
    (:func:`onlinekernel.core.streams.cos_tile`; builds before the package
    layout of issue 11 had it elsewhere).
    """
    try:
        from onlinekernel.core.streams import cos_tile
    except ImportError:
        return None
    return cos_tile


def summarize(samples):
    """Median, minimum, maximum and count of a list of measurements."""
    a = np.asarray(samples, dtype=np.float64)
    return {"median": float(np.median(a)), "min": float(a.min()), "max": float(a.max()),
            "n": int(a.size)}


def time_call(fn, repeats, warmup=0):
    """Wall time of ``fn()`` over ``repeats`` calls after ``warmup`` untimed ones.

    Returns ``{"median_s", "samples_s"}``.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return {"median_s": float(np.median(samples)), "samples_s": samples}


# --------------------------------------------------------------------------- #
# files
# --------------------------------------------------------------------------- #
def write_json(path, report):
    """Write ``report`` as indented JSON; the file is replaced in one step."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(report, indent=2) + "\n")
    os.replace(tmp, path)
    return path


def write_results(report, output_dir, quick, markdown_text, log):
    """Finish ``report`` and write its JSON and Markdown.

    The end-of-run load average is added unless the report has one (a report
    written again from its JSON keeps its own).  The files are
    ``<benchmark>.json`` and ``.md`` in ``output_dir`` (``<benchmark>_quick.*``
    with ``quick``); returns their common stem path.
    """
    report.setdefault("load_average_at_end", load_average())  # kept when re-written
    stem = Path(output_dir) / (report["benchmark"] + ("_quick" if quick else ""))
    write_json(stem.with_name(stem.name + ".json"), report)
    stem.with_name(stem.name + ".md").write_text(markdown_text(report) + "\n")
    log(f"wrote {stem}.json and .md")
    return stem


def load_dataset(name, data_dir=DEFAULT_DATA_DIR, dtype=np.float64):
    """``X_train, y_train, X_test, y_test`` of ``<data_dir>/<name>.npz``.

    X comes back C-contiguous in ``dtype``.  A missing file raises
    FileNotFoundError naming the file and the ``--data-dir`` option.
    """
    path = Path(data_dir) / f"{name}.npz"
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: pass --data-dir pointing to the folder "
                                f"that holds {name}.npz (default: {DEFAULT_DATA_DIR})")
    with np.load(path) as d:
        return (np.ascontiguousarray(d["X_train"], dtype=dtype), d["y_train"],
                np.ascontiguousarray(d["X_test"], dtype=dtype), d["y_test"])


#: data sets of pixels, scaled to [0, 1] rather than standardised
PIXEL_DATASETS = ("mnist", "fashion_mnist")


def scale_inputs(name, X, Xt):
    """``(X, Xt)`` scaled as the issues' figures are: pixels to [0, 1], others standardised.

    Standardised with the training rows' mean and standard deviation
    (columns of zero spread are left as they are).

    Examples
    --------
    >>> X, Xt = scale_inputs("letter", np.array([[0.0], [2.0]]), np.array([[4.0]]))
    >>> X.ravel().tolist(), Xt.ravel().tolist()
    ([-1.0, 1.0], [3.0])
    """
    if name in PIXEL_DATASETS:
        return X / 255.0, Xt / 255.0
    mu, sd = X.mean(axis=0), X.std(axis=0)
    sd[sd == 0] = 1.0
    return (X - mu) / sd, (Xt - mu) / sd


# --------------------------------------------------------------------------- #
# command lines
# --------------------------------------------------------------------------- #
def _int_at_least(minimum, name):
    """An argparse ``type=``: an integer, refused below ``minimum``."""
    def convert(text):
        value = int(text)
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value
    convert.__name__ = name  # argparse names it in "invalid <name> value: ..."
    return convert


positive_int = _int_at_least(1, "positive_int")
non_negative_int = _int_at_least(0, "non_negative_int")


class BenchmarkParser(argparse.ArgumentParser):
    """An ArgumentParser for options whose default depends on ``--quick``.

    Examples
    --------
    >>> p = argument_parser("demo")
    >>> p.add_quick_option("--rows", 1000, 100, "rows used")
    >>> p.parse_args(["--quick"]).rows, p.parse_args([]).rows, p.parse_args(["--rows=7"]).rows
    (100, 1000, 7)
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.quick_defaults = {}  # dest: (full, quick), for fill_quick_defaults

    def add_quick_option(self, flag, full, quick, what, type=positive_int, shown=None):
        """``flag``: ``full`` by default, ``quick`` with ``--quick``.

        ``what`` begins the help, which ends with both defaults (``shown``: how
        they read there, where ``str`` of them would not do).
        """
        full_text, quick_text = shown or (full, quick)
        action = self.add_argument(
            flag, type=type, default=None,
            help=f"{what} (default {full_text}, {quick_text} with --quick)")
        self.quick_defaults[action.dest] = (full, quick)

    def parse_args(self, args=None, namespace=None):
        """The parsed options, each quick option left unset at its default for the mode."""
        return fill_quick_defaults(super().parse_args(args, namespace), **self.quick_defaults)


def argument_parser(doc, quick_help=None):
    """A :class:`BenchmarkParser` described by ``doc``'s first paragraph, with ``--quick``
    (help: ``quick_help``)."""
    parser = BenchmarkParser(description=doc.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=quick_help)
    return parser


def add_data_dir(parser, what="folder of the NAME.npz datasets"):
    """``--data-dir``: where :func:`load_dataset` reads (default ``../shared/data``)."""
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR,
                        help=f"{what} (default: %(default)s)")


def add_output_dir(parser, flag="--output-dir", default=RESULTS_DIR):
    """The folder the result files go to (``flag``: the script's own option name)."""
    parser.add_argument(flag, type=Path, default=default,
                        help="folder of the result files (default: %(default)s)")


def add_output(parser, name, beside=""):
    """``--output``: the JSON file, by default ``RESULTS_DIR/NAME.json`` (``NAME_quick.json``
    with ``--quick``); ``beside`` continues the help (what else goes beside it).

    ``parser``: a :class:`BenchmarkParser`.
    """
    parser.add_quick_option("--output", RESULTS_DIR / f"{name}.json",
                            RESULTS_DIR / f"{name}_quick.json", f"JSON file to write{beside}",
                            type=Path,
                            shown=(f"benchmarks/results/{name}.json", f"{name}_quick.json"))


def add_budget(parser):
    """``--block-size`` and ``--max-blocks``: onlinekernel's feature budget."""
    parser.add_argument("--block-size", type=positive_int, default=256,
                        help="onlinekernel features per block (default: %(default)s)")
    parser.add_argument("--max-blocks", type=positive_int, default=16,
                        help="onlinekernel budget in blocks; M = block size x max blocks is "
                             "also RBFSampler's n_components (default: %(default)s)")


def add_seed(parser, what="models and data"):
    parser.add_argument("--seed", type=int, default=0,
                        help=f"seed of the {what} (default: %(default)s)")


def add_blas_threads(parser, what="every contender"):
    parser.add_argument("--blas-threads", type=int, default=1,
                        help=f"BLAS threads for {what}, 0 for the libraries' default "
                             "(default: %(default)s)")


def fill_quick_defaults(args, **settings):
    """Set each ``name=(full, quick)`` left None on the command line, by ``args.quick``.

    Examples
    --------
    >>> args = argparse.Namespace(quick=True, repeats=None, rows=50)
    >>> vars(fill_quick_defaults(args, repeats=(3, 1), rows=(1000, 100)))
    {'quick': True, 'repeats': 1, 'rows': 50}
    """
    for name, (full, quick) in settings.items():
        if getattr(args, name) is None:
            setattr(args, name, quick if args.quick else full)
    return args


def parse_int_list(text):
    """``"16,128,784"`` -> ``[16, 128, 784]`` (for argparse ``type=``).

    Examples
    --------
    >>> parse_int_list("16, 128,784")
    [16, 128, 784]
    """
    try:
        values = [int(v) for v in str(text).split(",") if v.strip()]
    except ValueError:
        raise ValueError(f"expected comma-separated integers, got {text!r}") from None
    if not values or min(values) < 1:
        raise ValueError(f"expected comma-separated positive integers, got {text!r}")
    return values
