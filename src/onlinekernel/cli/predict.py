"""``onlinekernel predict``: write a model's predictions (or probabilities) for a file."""
import contextlib
import csv

from onlinekernel.cli import options
from onlinekernel.cli.modelfiles import load_model, load_scaling, scaled
from onlinekernel.cli.options import UsageError
from onlinekernel.cli.progress import progress_from
from onlinekernel.io.files import replacing
from onlinekernel.io.readers import InputError


def add_parser(subparsers):
    """The ``predict`` command's options."""
    predict = subparsers.add_parser("predict", help="write the predictions of a model for a file",
                             description="Write one prediction per input row.")
    predict.add_argument("model", metavar="MODEL", help="a model file")
    predict.add_argument("input", metavar="INPUT", 
                         help="data (a CSV target column only with --target naming it)")
    predict.add_argument("-o", "--output", metavar="OUT", help="output file (default stdout)")
    predict.add_argument("--proba", action="store_true",
                         help="class probabilities as CSV, one column per class")
    options.add_input_options(predict)
    return predict


def run(args, out, err):
    """Write the predictions; return the exit status."""
    model = load_model(args.model)
    progress = progress_from(args, err)
    if args.proba and not hasattr(model, "predict_proba"):
        name = getattr(model.loss_, "name", "?")
        raise UsageError(f"{args.model}: the model's loss ({name}) gives no probabilities; "
                         f"train with --loss logistic for --proba")
    scaling = load_scaling(args.model, model, progress)
    source = options.open_input(args, args.input, "optional", n_features=model.n_features_in_,
                                split="test")
    if source.n_features != model.n_features_in_:
        raise InputError(f"{args.input}: {source.n_features} features, but the model takes "
                         f"{model.n_features_in_}")
    progress.start("predict")
    rows = 0
    with _output(args.output, out) as fh:
        writer = None
        if args.proba:
            writer = csv.writer(fh, lineterminator="\n")
            writer.writerow([str(c) for c in model.classes_])
        for chunk in source.chunks(args.chunk_size):
            X = scaled(chunk.X, scaling)
            if args.proba:
                writer.writerows(model.predict_proba(X).tolist())
            else:
                pred = model.predict(X)
                if pred.ndim == 2:  # several outputs per row (e.g. quantiles): CSV rows
                    csv.writer(fh, lineterminator="\n").writerows(pred.tolist())
                elif pred.size:
                    fh.write("\n".join(map(str, pred.tolist())) + "\n")
            rows += chunk.X.shape[0]
            progress.update(rows, chunk.done)
    progress.finish()
    return 0


@contextlib.contextmanager
def _output(path, out):
    """``out`` for ``None`` or ``"-"``; else a file that appears at ``path`` only when complete."""
    if path is None or path == "-":
        yield out
        return
    with replacing(path, text=True) as fh:
        yield fh
