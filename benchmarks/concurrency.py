"""Concurrency under load: one thread training while four threads predict on the same model.

The service pattern of the streaming issue (14, item 5): a
``DSGClassifier`` (4,096 random features, ``d = 32``, the River adapter's
stream settings) is warmed up, then for ``--seconds`` seconds one thread
calls ``partial_fit`` on mini-batches of ``--train-rows`` rows while
``--predictors`` threads call ``decision_function`` on batches of
``--predict-rows`` rows of a fixed probe set, all on the same estimator
object.  Measured, in the same run:

* rows per second of the trainer alone, of the predictors alone (all of
  them together, no trainer), and of each side while both run;
* **published-model semantics**: after each of its calls the trainer (the
  only writer) records the decision values of the model it has just
  published on the first ``PROBE_ROWS`` rows of the predictors' batch (a
  few rows, so that recording costs little next to the training step);
  every prediction any predictor made must give those rows, bit for bit,
  the values of one of those models (or of the model before the first
  call), never a mix of two.  Predictions of these models do not depend on
  the other rows of the batch (the seeded prediction is batch-invariant).
  The report counts the predictions checked, the distinct models they saw,
  and any torn one (expected: none).

Every thread runs compiled code that releases the GIL (see
``docs/streaming.rst``); BLAS is limited to one thread, ``n_jobs=1``.  On
this 2-core machine five busy threads share two cores, so the figures say
how the work divides, not how it would scale on more cores.

Run from the repository root::

    python -m benchmarks.concurrency             # about 40 seconds
    python -m benchmarks.concurrency --quick     # a few seconds

Writes ``benchmarks/results/concurrency.json`` and ``.md``
(``concurrency_quick.*`` with ``--quick``).
"""
import threading
import time

import numpy as np
from threadpoolctl import threadpool_limits

from onlinekernel import DSGClassifier

from ._common import (add_output_dir, argument_parser, make_logger, report_header,
                      write_results)

N_COMPONENTS = 4096
D = 32
STREAM_SETTINGS = {"batch_size": 8, "eta0": 16.0, "t0": 400.0}  # RiverClassifier's defaults
PROBE_ROWS = 4


def _data(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, D))
    y = (np.sin(X[:, 0] * 1.5) + X[:, 1] * X[:, 2] > 0).astype(np.int64)
    return X, y


def _model(X, y, warm):
    model = DSGClassifier(random_state=0, n_components=N_COMPONENTS, n_jobs=1,
                          **STREAM_SETTINGS)
    return model.partial_fit(X[:warm], y[:warm], classes=[0, 1])


def run(seconds, predictors, train_rows, predict_rows, train=True, predict=True, warm=2000):
    """One timed phase: ``(trainer rows/s or None, [rows/s per predictor], semantics)``."""
    X, y = _data(warm + 100_000)  # the trainer cycles through them
    probe = _data(predict_rows, seed=1)[0]
    model = _model(X, y, warm)
    head = probe[:PROBE_ROWS]
    published = {model.decision_function(head).tobytes()}  # before the first call
    seen = [[] for _ in range(predictors)]
    counts = [0] * predictors
    trained = [0]
    stop = threading.Event()

    def trainer():
        at = warm
        while not stop.is_set():
            model.partial_fit(X[at:at + train_rows], y[at:at + train_rows])
            at = warm + (at - warm + train_rows) % (X.shape[0] - warm - train_rows)
            trained[0] += train_rows
            # the only writer: the model it has just published
            published.add(model.decision_function(head).tobytes())

    def predictor(k):
        while not stop.is_set():
            seen[k].append(model.decision_function(probe)[:PROBE_ROWS].tobytes())
            counts[k] += predict_rows

    threads = ([threading.Thread(target=trainer)] if train else []) + (
        [threading.Thread(target=predictor, args=(k,)) for k in range(predictors)]
        if predict else [])
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    predictions = [v for s in seen for v in s]
    semantics = {"predictions_checked": len(predictions),
                 "models_published": len(published),
                 "models_seen_by_predictors": len(set(predictions)),
                 "torn_predictions": sum(v not in published for v in predictions)}
    return (trained[0] / elapsed if train else None,
            [c / elapsed for c in counts] if predict else [], semantics)


def markdown(report):
    r = report["result"]
    lines = ["# Concurrency under load\n",
             f"`{report['command']}`, {report['created']}; load average "
             f"{report['load_average_at_start']} at the start.  {r['predictors']} predictor "
             f"threads on batches of {r['predict_rows']} rows, one trainer on batches of "
             f"{r['train_rows']} rows, {r['seconds']} s a phase, 4,096 features, d = {D}.\n",
             "| phase | trainer rows/s | predictor rows/s (each) | predictors' total |",
             "|---|---|---|---|"]
    for key in ("trainer alone", "predictors alone", "both"):
        p = r[key]
        each = ", ".join(f"{v:,.0f}" for v in p["predictor_rows_per_s"]) or "-"
        train = "-" if p["trainer_rows_per_s"] is None else f"{p['trainer_rows_per_s']:,.0f}"
        lines.append(f"| {key} | {train} | {each} | {sum(p['predictor_rows_per_s']):,.0f} |")
    s = r["both"]["semantics"]
    lines.append(f"\nWhile both ran: {s['predictions_checked']:,d} predictions checked against "
                 f"{s['models_published']:,d} published models "
                 f"({s['models_seen_by_predictors']:,d} distinct ones seen), "
                 f"**{s['torn_predictions']} torn**.")
    return "\n".join(lines)


def main(argv=None):
    parser = argument_parser(__doc__, "1 s a phase: seconds")
    parser.add_quick_option("--seconds", 10.0, 1.0, "seconds of each phase", type=float)
    parser.add_argument("--predictors", type=int, default=4,
                        help="predicting threads (default: %(default)s)")
    parser.add_argument("--train-rows", type=int, default=64,
                        help="rows per partial_fit call (default: %(default)s)")
    parser.add_argument("--predict-rows", type=int, default=100,
                        help="rows per decision_function call (default: %(default)s)")
    add_output_dir(parser)
    args = parser.parse_args(argv)
    log = make_logger()
    report = report_header("concurrency", "quick" if args.quick else "full", argv)
    result = {"seconds": args.seconds, "predictors": args.predictors,
              "train_rows": args.train_rows, "predict_rows": args.predict_rows}
    with threadpool_limits(1, user_api="blas"):
        for key, train, predict in (("trainer alone", True, False),
                                    ("predictors alone", False, True),
                                    ("both", True, True)):
            trainer, each, semantics = run(args.seconds, args.predictors, args.train_rows,
                                           args.predict_rows, train, predict)
            result[key] = {"trainer_rows_per_s": trainer, "predictor_rows_per_s": each,
                           "semantics": semantics}
            log(f"{key}: trainer {trainer or 0:,.0f} rows/s, predictors "
                f"{sum(each):,.0f} rows/s, {semantics['torn_predictions']} torn")
    both = result["both"]
    report["result"] = result
    report["targets"] = [
        {"target": "no_torn_prediction", "value": both["semantics"]["torn_predictions"],
         "threshold": 0, "passed": both["semantics"]["torn_predictions"] == 0},
        {"target": "trainer_share_while_predicting",
         "value": both["trainer_rows_per_s"] / result["trainer alone"]["trainer_rows_per_s"],
         "threshold": None, "passed": None},
        {"target": "predictor_share_while_training",
         "value": sum(both["predictor_rows_per_s"])
         / sum(result["predictors alone"]["predictor_rows_per_s"]),
         "threshold": None, "passed": None},
    ]
    write_results(report, args.output_dir, args.quick, markdown, log)
    return report


if __name__ == "__main__":
    main()
