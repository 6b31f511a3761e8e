"""``onlinekernel evaluate``: score a model on a labelled file (accuracy, or R² and RMSE)."""
import json

from onlinekernel.cli import options
from onlinekernel.cli.modelfiles import load_model, load_scaling, scaled
from onlinekernel.cli.options import UsageError
from onlinekernel.cli.progress import Score, progress_from
from onlinekernel.io.readers import InputError, convert_labels, kind_of_classes


def add_parser(subparsers):
    """The ``evaluate`` command's options."""
    evaluate = subparsers.add_parser("evaluate", help="score a model on a labelled file",
                                     description="Print accuracy (classifiers) or R2 and RMSE "
                                                 "(regressors) on a labelled file.")
    evaluate.add_argument("model", metavar="MODEL", help="a model file")
    evaluate.add_argument("input", metavar="INPUT", help="labelled data")
    evaluate.add_argument("--json", action="store_true", help="print the metrics as JSON")
    options.add_input_options(evaluate)
    return evaluate


def run(args, out, err):
    """Print the model's scores on the file; return the exit status."""
    model = load_model(args.model)
    progress = progress_from(args, err)
    task = _task_of(model, args.model)
    scaling = load_scaling(args.model, model, progress)
    source = options.open_input(args, args.input, "required", n_features=model.n_features_in_,
                                split="test")
    kind = kind_of_classes(model.classes_) if task == "classify" else "float"
    what = "label" if task == "classify" else "target"
    score = Score(task)
    progress.start("evaluate")
    rows = 0
    for chunk in source.chunks(args.chunk_size):
        y = convert_labels(chunk.y, kind, chunk, args.input, what)
        score.add(y, model.predict(scaled(chunk.X, scaling)))
        rows += chunk.X.shape[0]
        progress.update(rows, chunk.done, score.primary())
    progress.finish()
    if score.n == 0:
        raise InputError(f"{args.input}: no data rows")
    if args.json:
        print(json.dumps(score.as_dict()), file=out)
    else:
        print(score.describe(), file=out)
    return 0


def _task_of(model, path):
    from sklearn.base import is_classifier, is_regressor

    if is_classifier(model):
        return "classify"
    if is_regressor(model) and model.__dict__.get("_n_outputs", 1) == 1:
        return "regress"
    raise UsageError(f"{path}: evaluate scores classifiers and single-output regressors; this "
                     f"is a {type(model).__name__} (use predict)")
