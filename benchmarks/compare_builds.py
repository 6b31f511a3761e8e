"""Two builds of onlinekernel side by side: is a change any slower?

Runs the same workloads in two Python environments (``--before`` and
``--after``, each an interpreter with its own onlinekernel installed),
alternating them round by round so that both share the machine's load, and
reports per workload the median CPU time of each and their ratio
(after / before; below 1 is faster).  Each workload runs in a fresh
subprocess with one BLAS thread and ``n_jobs=1`` (with ``--blas-threads
default``, the BLAS libraries' own thread count, and wall-clock time: what a
user with default settings waits):

* ``fit_sgd``: ``DSGClassifier(solver="sgd")`` on 4,000 rows x 20 features;
* ``fit_auto``: ``DSGRegressor()`` (batch solver, ``alpha="auto"``) on the
  same rows;
* ``partial_fit_row``: 2,000 single-row ``partial_fit`` calls on a model
  whose 4,096-feature budget is full (the streaming path);
* ``predict``: ``decision_function`` of 20,000 rows by a 4,096-feature model;
* ``fixed_sgd``: ``FixedFeatureRegressor`` (fixed-feature SGD) on 4,000 rows;
* ``fit_squared`` and ``fit_logistic``: ``DSGClassifier`` with 1,024 features
  and the squared (Cholesky) or logistic (Newton-CG) loss on 8,000 rows x 16
  features of 10 classes, the batch solvers' BLAS products and factorisations.

The two environments also must agree on what they compute: every workload
returns a checksum of its model's outputs, and the report says whether the
checksums of the two builds are equal (seeded models bit for bit).

Usage::

    python -m benchmarks.compare_builds --before /path/to/old/python \\
        --after "$(which python)" --rounds 5
"""
import json
import statistics
import subprocess
import sys
import textwrap

from benchmarks._common import (add_output_dir, argument_parser, make_logger, report_header,
                                write_results)

WORKLOAD = textwrap.dedent("""
    import hashlib, json, os, sys, time
    one_thread = sys.argv[2] == "1"
    if one_thread:
        os.environ["OMP_NUM_THREADS"] = "1"
        from threadpoolctl import threadpool_limits
        threadpool_limits(1)
    # CPU time on one thread (robust to a shared machine); wall time on several
    clock = time.process_time if one_thread else time.perf_counter
    import numpy as np
    import onlinekernel as ok

    rng = np.random.default_rng(0)
    X = rng.normal(size=(4000, 20))
    y = (np.sin(X[:, 0]) + X[:, 1] * X[:, 2] > 0).astype(int)
    t = np.sin(X[:, 0]) + 0.5 * X[:, 1] ** 2
    Xp = rng.normal(size=(20000, 20))

    def digest(a):
        return hashlib.sha256(np.ascontiguousarray(a, dtype=np.float64).tobytes()).hexdigest()[:16]

    def fit_sgd():
        m = ok.DSGClassifier(solver="sgd", random_state=0).fit(X, y)
        return m.decision_function(X[:500])

    def fit_auto():
        m = ok.DSGRegressor(random_state=0).fit(X, t)
        return m.predict(X[:500])

    def partial_fit_row():
        m = ok.DSGRegressor(random_state=0, max_blocks=16, block_size=256)
        m.partial_fit(X[:16 * 256], t[:16 * 256])
        for i in range(2000):
            m.partial_fit(X[i:i + 1], t[i:i + 1])
        return m.predict(X[:500])

    def predict():
        m = ok.DSGClassifier(random_state=0, max_blocks=16, block_size=256)
        m.partial_fit(X[:16 * 256], y[:16 * 256], classes=[0, 1])
        m.decision_function(Xp[:256])
        start = clock()
        out = m.decision_function(Xp)
        return out, clock() - start

    def fixed_sgd():
        m = ok.FixedFeatureRegressor(random_state=0).fit(X, t)
        return m.predict(X[:500])

    Xc = rng.normal(size=(8000, 16))
    yc = np.digitize(np.sin(Xc[:, 0]) + Xc[:, 1] * Xc[:, 2], np.linspace(-2, 2, 9))

    def fit_squared():
        m = ok.DSGClassifier(loss="squared", max_blocks=4, random_state=0).fit(Xc, yc)
        return m.decision_function(Xc[:500])

    def fit_logistic():
        m = ok.DSGClassifier(loss="logistic", max_blocks=4, random_state=0).fit(Xc, yc)
        return m.decision_function(Xc[:500])

    name = sys.argv[1]
    fn = globals()[name]
    start = clock()
    out = fn()
    seconds = clock() - start
    if isinstance(out, tuple):
        out, seconds = out
    print(json.dumps({"seconds": seconds, "checksum": digest(out)}))
""")

WORKLOADS = ["fit_sgd", "fit_auto", "partial_fit_row", "predict", "fixed_sgd", "fit_squared",
             "fit_logistic"]


def run(python, name, blas_threads="1"):
    proc = subprocess.run([python, "-c", WORKLOAD, name, blas_threads], capture_output=True,
                          text=True, cwd="/", timeout=1800)
    if proc.returncode:
        raise RuntimeError(f"{python} {name}: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argument_parser(__doc__, quick_help="one round of the fastest workload (predict)")
    ap.add_argument("--before", required=True, help="Python of the build before the change")
    ap.add_argument("--after", default=sys.executable, help="Python of the build after it")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--workloads", nargs="+", default=WORKLOADS, choices=WORKLOADS)
    ap.add_argument("--blas-threads", choices=("1", "default"), default="1",
                    help="one BLAS thread and CPU time (default), or the libraries' own "
                         "thread count and wall time")
    add_output_dir(ap)
    args = ap.parse_args(argv)
    if args.quick:
        args.rounds, args.workloads = 1, ["predict"]
    log = make_logger()
    report = report_header("compare_builds", "quick" if args.quick else "full", argv)
    times = {w: {"before": [], "after": []} for w in args.workloads}
    sums = {w: {} for w in args.workloads}
    for r in range(args.rounds):
        for w in args.workloads:
            # alternate which build goes first, so neither always meets a warmer machine
            order = ("before", "after") if r % 2 == 0 else ("after", "before")
            for side in order:
                res = run(getattr(args, side), w, args.blas_threads)
                times[w][side].append(res["seconds"])
                sums[w][side] = res["checksum"]
        log(f"round {r + 1}/{args.rounds} done")
    rows = {}
    for w in args.workloads:
        b, a = statistics.median(times[w]["before"]), statistics.median(times[w]["after"])
        rows[w] = {"before_s": b, "after_s": a, "ratio": a / b,
                   "same_outputs": sums[w]["before"] == sums[w]["after"],
                   "before_all": times[w]["before"], "after_all": times[w]["after"]}
    report.update(rounds=args.rounds, before=args.before, after=args.after,
                  blas_threads=args.blas_threads,
                  clock="cpu" if args.blas_threads == "1" else "wall", workloads=rows)
    print(markdown(report))
    write_results(report, args.output_dir, args.quick, markdown, log)
    return 0


def markdown(report):
    threads = report.get("blas_threads", "1")
    unit = "CPU seconds, one BLAS thread" if threads == "1" else \
        "wall seconds, the BLAS libraries' default threads"
    lines = [f"# Two builds side by side ({report['rounds']} rounds, median {unit})", "",
             f"before: `{report['before']}`, after: `{report['after']}`", "",
             "| workload | before | after | after / before | same outputs |",
             "|---|---|---|---|---|"]
    lines += [f"| {w} | {r['before_s']:.3f} | {r['after_s']:.3f} | {r['ratio']:.3f} | "
              f"{'yes' if r['same_outputs'] else 'NO'} |" for w, r in report["workloads"].items()]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
