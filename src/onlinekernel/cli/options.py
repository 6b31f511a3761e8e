"""What the commands share on their command lines: argparse types and the input options.

The types turn an option's text into its value or refuse it with
"expected ..." (which argparse reports as a usage error, exit status 2);
:func:`add_input_options` adds the options that say how to read a data file
(``train``, ``predict``, ``evaluate``), and :func:`open_input` opens a file
with them.
"""
import argparse

from onlinekernel.io.readers import open_source


class UsageError(ValueError):
    """Bad command-line usage (exit status 2)."""


class Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(f"{message} (see '{self.prog} --help')")


def _value(text):
    """A ``NAME=VALUE`` value: bool, None, int, float or else the string."""
    low = text.strip().lower()
    if low in ("true", "yes"):
        return True
    if low in ("false", "no"):
        return False
    if low == "none":
        return None
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def assignment(text):
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name.strip(), _value(value)


def _number_or(word):
    """An argument type taking a number, or ``word`` as it is."""
    def parse(text):
        if text == word:
            return text
        try:
            return float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected {word!r} or a number, got {text!r}") from None
    parse.__name__ = f"number or {word!r}"
    return parse


gamma = _number_or("scale")
alpha = _number_or("auto")


def max_blocks(text):
    if text.lower() == "none":
        return None
    return positive_int(text)  # 0 is refused, as the estimators refuse it


def _ranged(convert, ok, expected):
    """An argparse type: ``convert(text)`` if ``ok`` holds for it, else "expected ..." as the error."""
    def parse(text):
        try:
            v = convert(text)
        except ValueError:
            v = None
        if v is None or not ok(v):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        return v
    return parse


nonnegative_int = _ranged(int, lambda v: v >= 0, "an integer >= 0")
positive_int = _ranged(int, lambda v: v >= 1, "a positive integer")
fraction = _ranged(float, lambda v: 0.0 <= v < 1.0, "a fraction in [0, 1)")
unit = _ranged(float, lambda v: 0.0 <= v <= 1.0, "a fraction in [0, 1]")
seed = _ranged(int, lambda v: 0 <= v < 2 ** 32, "an integer in [0, 2**32)")
_tol_number = _ranged(float, lambda v: 0.0 <= v < float("inf"), "a number >= 0 or 'none'")


def tol(text):
    return None if text.lower() == "none" else _tol_number(text)


def add_input_options(p, train=False):
    g = p.add_argument_group("input")
    g.add_argument("--format", choices=("auto", "csv", "npz", "svmlight"), default="auto",
                   help="input format (default: from the suffix, else the content)")
    g.add_argument("--chunk-size", type=positive_int, default=10000, metavar="ROWS",
                   help="rows read at a time (default 10000)")
    g.add_argument("--target", metavar="COLUMN",
                   help="CSV target column: name or index (default: the last column)")
    g.add_argument("--header", choices=("auto", "yes", "no"), default="auto",
                   help="whether the CSV's first row is a header (default: auto)")
    g.add_argument("--delimiter", metavar="CHAR",
                   help="CSV field delimiter (default ',', tab for .tsv)")
    if train:
        g.add_argument("--n-features", type=positive_int, metavar="N",
                       help="svmlight: number of features (default: largest index in the file)")
    g.add_argument("--zero-based", action="store_true",
                   help="svmlight feature indices start at 0 (LIBSVM's start at 1)")
    g.add_argument("--npz-keys", metavar="X,Y",
                   help="npz array names (default X,y, else X_train,y_train for train and "
                        "X_test,y_test for predict and evaluate)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    p.add_argument("--progress-every", type=positive_int, default=10, metavar="CHUNKS",
                   help="when stderr is not a terminal, a progress line every CHUNKS chunks "
                        "(default 10)")


def open_input(args, path, labels, n_features=None, split="train"):
    return open_source(path, args.format, labels=labels, n_features=n_features,
                       target=args.target, header=args.header, delimiter=args.delimiter,
                       zero_based=args.zero_based, keys=args.npz_keys, split=split)
