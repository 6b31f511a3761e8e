"""Stream experts benchmark: how RiverMultiKernelClassifier's default experts were chosen.

The accuracy question of the streaming issue (14): one model, one setting,
at least as accurate as River's best model on each stream.  No single
kernel is: the Gaussian NORMA model wins on drifting clusters and loses on a
hyperplane, the linear model the reverse, and the Phishing data favour the
Laplacian kernel.  ``RiverMultiKernelClassifier`` runs several experts and
follows the one with the fewest recent mistakes (Hedge over discounted
mistakes).  This benchmark measures, on the six streams of
``stream_defaults.py`` (``RandomRBFDrift``, ``Hyperplane``, ``Phishing``,
``SEA``, ``Agrawal``, an imbalanced stream):

* **experts alone**: the prequential accuracy of each candidate expert
  (``RiverNormaClassifier`` with the Gaussian defaults, the Laplacian at
  ``gamma=2, alpha=0, eta0=0.5``; linear logistic models at steps 0.01,
  0.003 and 0.001), each row's guess recorded;
* **mixtures**: the accuracy of Hedge over sets of those experts, for
  learning rates 0.3 / 1 / 3 and decays 0.995 / 0.999 / 1, computed from
  the recorded guesses (the experts learn independently of the vote, so a
  mixture's guesses follow from theirs);
* **check**: ``RiverMultiKernelClassifier()`` itself run on every stream,
  whose accuracy must equal the computed one for its defaults (so the
  computation is the class's rule).

Run from the repository root::

    python -m benchmarks.stream_experts                     # 20,000 rows a stream
    python -m benchmarks.stream_experts --stream-rows 100000
    python -m benchmarks.stream_experts --quick             # seconds

Writes ``benchmarks/results/stream_experts.json`` and ``.md``
(``stream_experts_quick.*`` with ``--quick``).
"""
import itertools
import warnings

from threadpoolctl import threadpool_limits

from ._common import add_output_dir, argument_parser, make_logger, report_header, write_results
from .stream_defaults import streams

#: Candidate experts: RiverMultiKernelClassifier's expert dicts.
EXPERTS = {
    "gaussian": {"kernel": "gaussian"},
    "laplacian": {"kernel": "laplacian", "gamma": 2.0, "alpha": 0.0, "eta0": 0.5},
    "linear 0.01": {"kernel": "linear", "eta0": 0.01},
    "linear 0.003": {"kernel": "linear", "eta0": 0.003},
    "linear 0.001": {"kernel": "linear", "eta0": 0.001},
}
#: Sets of experts the mixtures are computed for ("defaults": DEFAULT_EXPERTS).
SETS = {
    "gaussian + laplacian + linear 0.01": ["gaussian", "laplacian", "linear 0.01"],
    "gaussian + laplacian + linear 0.003": ["gaussian", "laplacian", "linear 0.003"],
    "defaults": ["gaussian", "laplacian", "linear 0.01", "linear 0.001"],
    "all five": list(EXPERTS),
}
LEARNING_RATES = (0.3, 1.0, 3.0)
DECAYS = (0.995, 0.999, 1.0)


def guesses(model, rows):
    """Each row's guess by ``model`` before it learns the row (test-then-train)."""
    out = []
    for x, y in rows:
        out.append(model.predict_one(x))
        model.learn_one(x, y)
    return out


def accuracy(guessed, rows):
    return sum(g == y for g, (_, y) in zip(guessed, rows)) / len(rows)


def hedge_accuracy(expert_guesses, rows, learning_rate, decay):
    """Prequential accuracy of Hedge's weighted vote over the experts' guesses.

    RiverMultiKernelClassifier's rule: the vote goes to the labels in the
    order they were met, each expert's weight its ``hedge_weights`` share
    of ``L``, its mistakes discounted by ``decay`` a row (a label met for
    the first time is everyone's mistake).
    """
    from onlinekernel.integrations.river import hedge_weights
    labels, mistakes, hits = [], [0.0] * len(expert_guesses), 0
    for t, (_, y) in enumerate(rows):
        if len(labels) >= 2:
            votes = dict.fromkeys(labels, 0.0)
            for g, wj in zip(expert_guesses, hedge_weights(mistakes, learning_rate)):
                votes[g[t]] += wj
            guess = max(votes, key=votes.get)
        else:
            guess = labels[0] if labels else None
        hits += guess == y
        new = y not in labels
        mistakes = [decay * m + (new or g[t] != y) for m, g in zip(mistakes, expert_guesses)]
        if new:
            labels.append(y)
    return hits / len(rows)


def markdown(report):
    names = list(report["streams"])
    lines = ["# Stream experts: RiverMultiKernelClassifier's candidates", "",
             f"Prequential accuracy on the first {report['settings']['stream_rows']:,d} rows "
             f"of each stream (Phishing: its {report['streams']['Phishing']['rows']:,d}); "
             f"`{report['command']}`.", "", "## Experts alone", "",
             "| expert | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for e in EXPERTS:
        lines.append(f"| {e} | " + " | ".join(
            f"{report['streams'][s]['experts'][e]:.4f}" for s in names) + " |")
    lines += ["", "## Mixtures (set, learning rate, decay)", "",
              "| set | rate | decay | " + " | ".join(names) + " |",
              "|---|---|---|" + "---|" * len(names)]
    for key in report["streams"][names[0]]["mixtures"]:
        st, rate, decay = key.split(" | ")
        lines.append(f"| {st} | {rate} | {decay} | " + " | ".join(
            f"{report['streams'][s]['mixtures'][key]:.4f}" for s in names) + " |")
    lines += ["", "RiverMultiKernelClassifier() run itself: " + ", ".join(
        f"{s} {report['streams'][s]['class_defaults']:.4f}" for s in names) + "."]
    return "\n".join(lines)


def main(argv=None):
    ap = argument_parser(__doc__, "300 rows a stream")
    ap.add_argument("--stream-rows", type=int, help="rows of each stream (20,000)")
    add_output_dir(ap, "--out-dir")
    args = ap.parse_args(argv)
    if args.stream_rows is None:
        args.stream_rows = 300 if args.quick else 20_000
    from onlinekernel.integrations.river import RiverMultiKernelClassifier
    log = make_logger()
    report = report_header("stream_experts", "quick" if args.quick else "full")
    report["settings"] = {"stream_rows": args.stream_rows, "experts": EXPERTS, "sets": SETS}
    report["streams"] = {}
    with threadpool_limits(1, user_api="blas"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, (rows, d) in streams(args.stream_rows).items():
            entry = report["streams"][name] = {"rows": len(rows), "features": d,
                                               "experts": {}, "mixtures": {}}
            guessed = {}
            for e, spec in EXPERTS.items():
                # a mixture of one expert guesses as the expert alone
                guessed[e] = guesses(RiverMultiKernelClassifier(experts=(spec,)), rows)
                entry["experts"][e] = accuracy(guessed[e], rows)
                log(f"{name}: {e}: {entry['experts'][e]:.4f}")
            for (st, members), rate, decay in itertools.product(SETS.items(), LEARNING_RATES,
                                                                DECAYS):
                entry["mixtures"][f"{st} | {rate:g} | {decay:g}"] = hedge_accuracy(
                    [guessed[e] for e in members], rows, rate, decay)
            entry["class_defaults"] = accuracy(guesses(RiverMultiKernelClassifier(), rows), rows)
            entry["computed_equals_class"] = (
                entry["class_defaults"] == entry["mixtures"]["defaults | 1 | 0.999"])
            log(f"{name}: RiverMultiKernelClassifier() {entry['class_defaults']:.4f}, "
                f"computed {entry['mixtures']['defaults | 1 | 0.999']:.4f}")
    write_results(report, args.out_dir, args.quick, markdown, log)
    print(markdown(report))
    return report


if __name__ == "__main__":
    main()
