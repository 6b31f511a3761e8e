"""Streaming readers for the command line: CSV, npz and svmlight/LIBSVM files.

A reader yields the rows of a file in :class:`Chunk` objects of at most
``chunk_size`` rows, so only one chunk is in memory at a time and files larger
than memory can be read:

* **CSV** (optionally gzipped, ``.csv.gz``) is read line by line with the
  :mod:`csv` module.  The header row is optional: with ``header="auto"`` the
  first row is a header when one of its feature fields is not a number (or
  when the target is given by name).  The target is a column name or index,
  by default the last column.
* **npz** members are read row block by row block straight from the zip
  stream (stored or deflated), never loaded whole -- except arrays saved in
  Fortran order, whose rows are not contiguous.  Arrays ``X``/``y`` or
  else ``X_train``/``y_train`` (``X_test``/``y_test`` for scoring and
  prediction: ``split="test"``); other names with ``keys``.  Nothing is
  unpickled.
* **svmlight / LIBSVM** lines (``label index:value ...``, ``#`` comments,
  ``qid:`` ignored) are parsed into dense rows of ``n_features`` columns.
  Indices are 1-based as in LIBSVM unless ``zero_based=True``.  Without
  ``n_features`` a first pass over the file finds the largest index.

Every problem is an :class:`InputError` naming the file and, for text
files, the line.

Examples
--------
>>> import os, shutil, tempfile
>>> from onlinekernel.io.readers import open_source
>>> tmp = tempfile.mkdtemp()
>>> path = os.path.join(tmp, "data.csv")
>>> with open(path, "w") as fh:
...     _ = fh.write("x1,x2,label\\n0.5,1.0,a\\n1.5,-2.0,b\\n3.0,0.0,a\\n")
>>> source = open_source(path)
>>> source.format, source.n_features, source.columns
('csv', 2, ['x1', 'x2', 'label'])
>>> [(c.X.tolist(), c.y.tolist(), c.lines.tolist()) for c in source.chunks(2)]
[([[0.5, 1.0], [1.5, -2.0]], ['a', 'b'], [2, 3]), ([[3.0, 0.0]], ['a'], [4])]
>>> shutil.rmtree(tmp)
"""
import csv
import gzip
import os
import re
import zipfile
import zlib
from typing import NamedTuple

import numpy as np

__all__ = ["InputError", "Chunk", "open_source", "detect_format", "CsvSource", "NpzSource",
           "SvmlightSource", "label_kind", "kind_of_classes", "convert_labels", "holdout_mask",
           "FORMATS"]

FORMATS = ("csv", "npz", "svmlight")
_SUFFIXES = {".csv": "csv", ".tsv": "csv", ".npz": "npz", ".svm": "svmlight",
             ".svmlight": "svmlight", ".libsvm": "svmlight"}


_QID = re.compile(r"(?<!\S)qid:\S*")


class InputError(ValueError):
    """A problem with an input file or with how it is to be read."""


class Chunk(NamedTuple):
    """Consecutive rows of a file.

    Attributes
    ----------
    X : ndarray of shape (n, n_features), float64
    y : ndarray of shape (n,) or None
        The targets as read: strings for text files (see
        :func:`convert_labels`), the stored array for npz; ``None`` when the
        file has no target.
    start : int
        Index of the first row among the data rows of the file (0-based).
    lines : ndarray of shape (n,) or None
        The 1-based line of each row (text files).
    done : float or None
        Fraction of the file read so far, when known.
    """
    X: np.ndarray
    y: object
    start: int
    lines: object
    done: object

    def where(self, i=None):
        """``"line 12"`` / ``"row 12"`` for row ``i``, or the range of the chunk."""
        if i is not None:
            if self.lines is not None:
                return f"line {self.lines[i]}"
            return f"row {self.start + i + 1}"
        n = self.X.shape[0]
        if self.lines is not None:
            return f"lines {self.lines[0]}-{self.lines[-1]}" if n else "no rows"
        return f"rows {self.start + 1}-{self.start + n}"


# ---------------------------------------------------------------------- #
# helpers
# ---------------------------------------------------------------------- #
def _is_number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


def _check_file(path):
    if not os.path.exists(path):
        raise InputError(f"{path}: no such file")
    if os.path.isdir(path):
        raise InputError(f"{path}: is a directory, not a data file")
    if not os.access(path, os.R_OK):
        raise InputError(f"{path}: permission denied")


def _first_bytes(path, n=4096):
    with open(path, "rb") as fh:
        head = fh.read(n)
    if head[:2] == b"\x1f\x8b":
        try:
            with gzip.open(path, "rb") as fh:
                head = fh.read(n)
        except (OSError, EOFError, zlib.error) as exc:
            raise InputError(f"{path}: not a readable gzip file ({exc})") from None
    return head


def detect_format(path):
    """The format of ``path``: from its suffix (``.gz`` aside), else from its content.

    Examples
    --------
    >>> from onlinekernel.io.readers import detect_format
    >>> detect_format("train.csv.gz"), detect_format("a9a.libsvm"), detect_format("d.npz")
    ('csv', 'svmlight', 'npz')
    """
    name = path[:-3] if path.endswith(".gz") else path
    fmt = _SUFFIXES.get(os.path.splitext(name)[1].lower())
    if fmt is not None:
        return fmt
    _check_file(path)
    head = _first_bytes(path)
    if head[:4] == b"PK\x03\x04":
        return "npz"
    for raw in head.splitlines():
        line = raw.split(b"#", 1)[0].strip()
        if not line:
            continue
        tokens = line.split()
        # "label i:v i:v ..." (or an unlabelled "i:v ..."): every token after
        # the first holds a colon, and a CSV line has commas instead
        if b"," not in line and all(b":" in t for t in tokens[1:]) and (
                len(tokens) > 1 or b":" in tokens[0]):
            return "svmlight"
        return "csv"
    return "csv"


class _TextFile:
    """Lines of a (possibly gzipped) text file, decoded, with the bytes read so far."""

    def __init__(self, path):
        self.path = path
        self.size = os.path.getsize(path)
        self.raw = open(path, "rb")
        self.stream = self.raw
        if self.raw.read(2) == b"\x1f\x8b":
            self.raw.seek(0)
            self.stream = gzip.GzipFile(fileobj=self.raw, mode="rb")
        else:
            self.raw.seek(0)
        self.line = 0

    def done(self):
        return min(1.0, self.raw.tell() / self.size) if self.size else 1.0

    def __iter__(self):
        try:
            for raw in self.stream:
                self.line += 1
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError:
                    raise InputError(f"{self.path} line {self.line}: not valid UTF-8 "
                                     f"text") from None
                if self.line == 1 and text.startswith("\ufeff"):
                    text = text[1:]  # byte-order mark of some spreadsheet exports
                yield text
        except (OSError, EOFError, zlib.error) as exc:
            raise InputError(f"{self.path}: cannot read after line {self.line}: {exc}") from None

    def close(self):
        self.stream.close()
        self.raw.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _finite_or_raise(X, chunk_where, path, names=None):
    if np.isfinite(X).all():
        return
    i, j = np.argwhere(~np.isfinite(X))[0]
    col = names[j] if names is not None else f"feature {j + 1}"
    raise InputError(f"{path} {chunk_where(i)}: {col} is {float(X[i, j])!r}, not a finite number")


# ---------------------------------------------------------------------- #
# CSV
# ---------------------------------------------------------------------- #
class CsvSource:
    """Rows of a CSV file (see the module docstring).

    Parameters
    ----------
    path : str
    labels : {"required", "optional"}
        ``"optional"`` (prediction): the file has a target column only if it
        has ``n_features + 1`` columns and ``target`` names it (an extra
        column is never taken for the target by guess).
    n_features : int, optional
        The number of feature columns expected (a model's).
    target : str or int, optional
        Target column: a name from the header or an index (negative counts
        from the end); default the last column.
    header : {"auto", "yes", "no"}
    delimiter : str, optional
        Default ``","`` (tab for ``.tsv``).
    """
    format = "csv"

    def __init__(self, path, *, labels="required", n_features=None, target=None, header="auto",
                 delimiter=None):
        _check_file(path)
        self.path = path
        name = path[:-3] if path.endswith(".gz") else path
        if delimiter is None:
            delimiter = "\t" if name.lower().endswith(".tsv") else ","
        if len(delimiter) != 1:
            raise InputError(f"the delimiter must be one character, got {delimiter!r}")
        self.delimiter = delimiter
        first, first_line = self._first_row()
        if first is None:
            raise InputError(f"{path}: no data (the file is empty)")
        ncols = len(first)
        names = [f.strip() for f in first]

        if labels == "required":
            if n_features is not None and ncols == n_features:
                raise InputError(f"{path}: {ncols} columns, as many as the model's features: "
                                 f"the target column is missing")
            has_target = True
        elif n_features is not None and ncols == n_features:
            has_target = False
        elif n_features is not None and ncols == n_features + 1:
            if target is None:
                # one column too many: a target, or a stray column? never guess
                raise InputError(f"{path} line {first_line}: {ncols} columns, one more than "
                                 f"the model's {n_features} features; if one is the target, "
                                 f"name it with --target (its name or index) to leave it out")
            has_target = True
        elif n_features is not None:
            raise InputError(f"{path} line {first_line}: {ncols} columns, but the model takes "
                             f"{n_features} features (plus, optionally, the target column)")
        else:
            has_target = target is not None
        if has_target and ncols < 2:
            raise InputError(f"{path} line {first_line}: a single column; expected the features "
                             f"and a target column (delimiter {delimiter!r})")

        by_name = (target is not None and not isinstance(target, (int, np.integer))
                   and not _is_int(target))
        if by_name and header == "no":
            raise InputError(f"the target column {target!r} is given by name, but the file has "
                             f"no header (--header no); give its index instead")
        if has_target:
            if by_name:
                if target not in names:
                    raise InputError(f"{path}: no column {target!r} in the header (line "
                                     f"{first_line}): {', '.join(map(repr, names))}")
                t = names.index(target)
            else:
                t = -1 if target is None else int(target)
                if not -ncols <= t < ncols:
                    raise InputError(f"{path}: target column index {t} is out of range for "
                                     f"{ncols} columns")
                t %= ncols
        else:
            t = None
        self.target_index = t

        if header == "auto":
            has_header = by_name or any(not _is_number(v) for j, v in enumerate(first) if j != t)
        elif header in ("yes", "no"):
            has_header = header == "yes"
        else:
            raise InputError(f"header must be 'auto', 'yes' or 'no', got {header!r}")
        self.has_header = has_header
        self.columns = names if has_header else None
        self.has_labels = has_target
        self.n_columns = ncols
        self.n_features = ncols - (1 if has_target else 0)
        if labels == "required" and n_features is not None and self.n_features != n_features:
            raise InputError(f"{path}: {self.n_features} feature columns (and a target), but the "
                             f"model takes {n_features} features")
        self._feature_names = [n for j, n in enumerate(names) if j != t] if has_header else None

    def _first_row(self):
        with _TextFile(self.path) as fh:
            reader = csv.reader(fh, delimiter=self.delimiter)
            try:
                for row in reader:
                    if _blank(row):
                        continue
                    return row, reader.line_num
            except csv.Error as exc:
                raise InputError(f"{self.path} line {reader.line_num}: {exc}") from None
        return None, None

    def _column_name(self, j):
        if self._feature_names is not None:
            return f"column {self._feature_names[j]!r}"
        return f"feature column {j + 1}"

    def chunks(self, chunk_size, features=True):
        """Yield :class:`Chunk` objects of at most ``chunk_size`` rows.

        With ``features=False`` only the targets are converted (``X`` has no
        columns): a cheap pass for the class labels.
        """
        t = self.target_index
        ncols = self.n_columns
        start = 0
        with _TextFile(self.path) as fh:
            reader = csv.reader(fh, delimiter=self.delimiter)
            rows, lines, labels = [], [], []
            skip_header = self.has_header
            try:
                for row in reader:
                    if _blank(row):
                        continue
                    if skip_header:
                        skip_header = False
                        continue
                    if len(row) != ncols:
                        raise InputError(f"{self.path} line {reader.line_num}: {len(row)} fields, "
                                         f"expected {ncols} (as in the first line)")
                    if t is not None:
                        labels.append(row.pop(t).strip())
                    rows.append(row)
                    lines.append(reader.line_num)
                    if len(rows) == chunk_size:
                        yield self._chunk(rows, labels, lines, start, fh.done(), features)
                        start += len(rows)
                        rows, lines, labels = [], [], []
            except csv.Error as exc:
                raise InputError(f"{self.path} line {reader.line_num}: {exc}") from None
            if rows:
                yield self._chunk(rows, labels, lines, start, 1.0, features)

    def _chunk(self, rows, labels, lines, start, done, features=True):
        lines = np.asarray(lines, dtype=np.int64)
        try:
            X = np.array(rows, dtype=np.float64) if features else np.empty((len(rows), 0))
        except ValueError:
            X = None
        if X is None:
            for row, line in zip(rows, lines):
                for j, v in enumerate(row):
                    if not _is_number(v):
                        raise InputError(f"{self.path} line {line}: {self._column_name(j)} is "
                                         f"{v.strip()!r}, not a number")
            X = np.array([[float(v) for v in row] for row in rows], dtype=np.float64)
        if X.ndim != 2:  # zero feature columns
            X = X.reshape(len(rows), -1)
        chunk = Chunk(X, None, start, lines, done)
        _finite_or_raise(X, chunk.where, self.path,
                         [self._column_name(j) for j in range(X.shape[1])])
        if self.has_labels:
            y = np.array(labels, dtype=str)
            empty = np.flatnonzero(y == "")
            if empty.size:
                raise InputError(f"{self.path} line {lines[empty[0]]}: the target is empty")
            chunk = chunk._replace(y=y)
        return chunk


def _blank(row):
    return not row or (len(row) == 1 and not row[0].strip())


def _is_int(text):
    try:
        int(text)
    except (TypeError, ValueError):
        return False
    return True


# ---------------------------------------------------------------------- #
# svmlight / LIBSVM
# ---------------------------------------------------------------------- #
class SvmlightSource:
    """Rows of an svmlight / LIBSVM file as dense arrays (see the module docstring).

    Parameters
    ----------
    path : str
    labels : {"required", "optional"}
    n_features : int, optional
        Width of the dense rows (see :meth:`chunks` without it).
    zero_based : bool, default=False
        Feature indices start at 0 (LIBSVM's start at 1).
    """
    format = "svmlight"
    columns = None

    def __init__(self, path, *, labels="required", n_features=None, zero_based=False):
        _check_file(path)
        self.path = path
        self.labels_required = labels == "required"
        self.has_labels = True  # refined per line: an "i:v ..." line has no label
        if n_features is not None and (not _is_int(n_features) or int(n_features) < 1):
            raise InputError(f"the number of features must be a positive integer, got "
                             f"{n_features!r}")
        self.n_features = None if n_features is None else int(n_features)
        self.zero_based = bool(zero_based)

    def chunks(self, chunk_size):
        """Yield :class:`Chunk` objects of at most ``chunk_size`` dense rows.

        Without ``n_features``, each chunk is only as wide as its largest
        feature index (for a first pass that finds the width; missing
        columns of an svmlight row are zeros, so narrower chunks pad).
        """
        yield from self._parse(chunk_size, self.n_features)

    def _parse(self, chunk_size, width):
        start = 0
        with _TextFile(self.path) as fh:
            labels, lines, rests = [], [], []
            for text in fh:
                if "#" in text:
                    text = text.split("#", 1)[0]
                parts = text.split(None, 1)
                if not parts:
                    continue
                head = parts[0]
                if ":" in head:  # no label: "i:v i:v ..."
                    if self.labels_required:
                        raise InputError(f"{self.path} line {fh.line}: no label (the line starts "
                                         f"with {head!r})")
                    labels.append("")
                    rests.append(text)
                else:
                    labels.append(head)
                    rests.append(parts[1] if len(parts) > 1 else "")
                lines.append(fh.line)
                if len(lines) == chunk_size:
                    yield self._chunk(labels, lines, rests, width, start, fh.done())
                    start += len(lines)
                    labels, lines, rests = [], [], []
            if lines:
                yield self._chunk(labels, lines, rests, width, start, 1.0)

    def _chunk(self, labels, lines, rests, width, start, done):
        lines = np.asarray(lines, dtype=np.int64)
        r, c, v = self._features(rests, lines, width)
        if width is None:
            width = int(c.max()) + 1 if c.size else 0
        X = np.zeros((lines.shape[0], width))
        X[r, c] = v
        y = np.array(labels, dtype=str)
        return Chunk(X, y if self.labels_required or (y != "").any() else None, start, lines,
                     done)

    def _features(self, rests, lines, width):
        """Row, column and value of every ``index:value`` of a chunk, parsed at once.

        The features of all lines are joined into one string, colons become
        spaces, and numpy converts the lot; any irregularity sends the chunk
        to the line-by-line parser, which names the line.
        """
        if any("qid:" in t for t in rests):
            rests = [_QID.sub(" ", t) for t in rests]
        counts = np.fromiter((t.count(":") for t in rests), dtype=np.int64, count=len(rests))
        try:
            flat = np.array(" ".join(rests).replace(":", " ").split(), dtype=np.float64)
        except ValueError:
            flat = None
        if flat is None or flat.shape[0] != 2 * counts.sum():
            return self._features_slowly(rests, lines, width)
        idx, v = flat[0::2], flat[1::2]
        offset = 0 if self.zero_based else 1
        bad = (idx != np.floor(idx)) | (idx - offset < 0) | ~np.isfinite(v)
        if width is not None:
            bad |= idx - offset >= width
        if bad.any():
            return self._features_slowly(rests, lines, width)
        return np.repeat(np.arange(len(rests)), counts), (idx - offset).astype(np.int64), v

    def _features_slowly(self, rests, lines, width):
        offset = 0 if self.zero_based else 1
        r_idx, c_idx, vals = [], [], []
        for row, (text, line) in enumerate(zip(rests, lines)):
            for tok in text.split():
                idx, sep, val = tok.partition(":")
                try:
                    j = int(idx) - offset
                    x = float(val)
                except ValueError:
                    j = None
                if not sep or j is None:
                    raise InputError(f"{self.path} line {line}: {tok!r} is not a feature "
                                     f"'index:value'")
                if j < 0:
                    base = "0-based" if self.zero_based else (
                        "1-based as in LIBSVM; pass --zero-based for 0-based files")
                    raise InputError(f"{self.path} line {line}: feature index {idx} is out of "
                                     f"range (indices are {base})")
                if width is not None and j >= width:
                    raise InputError(f"{self.path} line {line}: feature index {idx} is beyond "
                                     f"the {width} features expected")
                if not np.isfinite(x):
                    raise InputError(f"{self.path} line {line}: feature {idx} is {val!r}, "
                                     f"not a finite number")
                r_idx.append(row)
                c_idx.append(j)
                vals.append(x)
        return (np.asarray(r_idx, dtype=np.int64), np.asarray(c_idx, dtype=np.int64),
                np.asarray(vals, dtype=np.float64))


# ---------------------------------------------------------------------- #
# npz
# ---------------------------------------------------------------------- #
class _NpyStream:
    """Row blocks of one ``.npy`` member of a zip archive, read from its stream."""

    def __init__(self, zf, member, path):
        self.path = path
        self.key = member[:-4]
        self.fh = zf.open(member)
        try:
            version = np.lib.format.read_magic(self.fh)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(self.fh)
            else:
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(self.fh)
        except (ValueError, OSError, EOFError, zlib.error) as exc:
            raise InputError(f"{path}: array {self.key!r} is not a readable .npy array "
                             f"({exc})") from None
        if dtype.hasobject:
            raise InputError(f"{path}: array {self.key!r} holds Python objects; they are not "
                             f"read (nothing is unpickled)")
        self.shape, self.dtype = shape, dtype
        self.row_bytes = dtype.itemsize * int(np.prod(shape[1:], dtype=np.int64))
        self.whole = None
        if fortran and len(shape) > 1 and shape[0] > 1 and self.row_bytes > dtype.itemsize:
            # columns are contiguous, rows are not: this one is read whole
            self.whole = self._read(int(np.prod(shape, dtype=np.int64)) * dtype.itemsize)
            self.whole = self.whole.reshape(shape, order="F")
        self.pos = 0

    def _read(self, nbytes):
        try:
            buf = self.fh.read(nbytes)
        except (OSError, EOFError, zlib.error, zipfile.BadZipFile) as exc:
            raise InputError(f"{self.path}: array {self.key!r} cannot be read: {exc}") from None
        if len(buf) != nbytes:
            raise InputError(f"{self.path}: array {self.key!r} is truncated")
        return np.frombuffer(buf, dtype=self.dtype)

    def rows(self, n):
        n = min(n, self.shape[0] - self.pos)
        if self.whole is not None:
            out = self.whole[self.pos:self.pos + n]
        else:
            out = self._read(n * self.row_bytes).reshape((n,) + tuple(self.shape[1:]))
        self.pos += n
        return out

    def close(self):
        self.fh.close()


class NpzSource:
    """Rows of an ``.npz`` archive, read in row blocks (see the module docstring).

    Parameters
    ----------
    path : str
    labels : {"required", "optional"}
    n_features : int, optional
        The number of features expected.
    keys : str, optional
        ``"XNAME,YNAME"`` (or ``"XNAME"`` without targets).
    split : {"train", "test"}, default="train"
        Without ``keys``: the arrays ``X``/``y``, else ``X_<split>`` /
        ``y_<split>``.  Scoring and prediction read ``"test"``, and refuse a
        file that has only a training split rather than score on it.
    """
    format = "npz"
    columns = None

    def __init__(self, path, *, labels="required", n_features=None, keys=None, split="train"):
        _check_file(path)
        if split not in ("train", "test"):
            raise ValueError(f"split must be 'train' or 'test', got {split!r}")
        self.path = path
        try:
            with zipfile.ZipFile(path) as zf:
                names = [n[:-4] for n in zf.namelist() if n.endswith(".npy")]
                if keys is not None:
                    parts = [k.strip() for k in str(keys).split(",")]
                    if not 1 <= len(parts) <= 2 or not all(parts):
                        raise InputError(f"npz keys must be 'X' or 'X,y' (array names), got "
                                         f"{keys!r}")
                    xkey, ykey = parts[0], (parts[1] if len(parts) == 2 else None)
                    for k in parts:
                        if k not in names:
                            raise InputError(f"{path}: no array {k!r}; the arrays are "
                                             f"{', '.join(names) or '(none)'}")
                elif "X" in names:
                    xkey, ykey = "X", ("y" if "y" in names else None)
                elif f"X_{split}" in names:
                    xkey = f"X_{split}"
                    ykey = f"y_{split}" if f"y_{split}" in names else None
                elif split == "test" and "X_train" in names:
                    # scoring the training rows by default would flatter the model
                    raise InputError(f"{path}: no array 'X' or 'X_test', only the training "
                                     f"split 'X_train'; to use it anyway, name it with "
                                     f"--npz-keys X_train,y_train")
                else:
                    raise InputError(f"{path}: no array 'X' or 'X_{split}' (the arrays are "
                                     f"{', '.join(names) or '(none)'}); name them with --npz-keys")
                if labels == "required" and ykey is None:
                    raise InputError(f"{path}: no target array beside {xkey!r} (expected "
                                     f"{'y' if xkey == 'X' else 'y_' + split}); name it with "
                                     f"--npz-keys X,y")
                X = _NpyStream(zf, xkey + ".npy", path)
                X.close()
                y = None
                if ykey is not None:
                    y = _NpyStream(zf, ykey + ".npy", path)
                    y.close()
        except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
            raise InputError(f"{path}: not a readable npz file ({exc})") from None
        if len(X.shape) != 2:
            raise InputError(f"{path}: array {xkey!r} has shape {X.shape}; expected 2 dimensions "
                             f"(rows, features)")
        if not (np.issubdtype(X.dtype, np.number) or X.dtype == np.bool_):
            raise InputError(f"{path}: array {xkey!r} has dtype {X.dtype}, not numbers")
        if y is not None:
            if not (len(y.shape) == 1 or (len(y.shape) == 2 and y.shape[1] == 1)):
                raise InputError(f"{path}: array {ykey!r} has shape {y.shape}; expected one "
                                 f"target per row")
            if y.shape[0] != X.shape[0]:
                raise InputError(f"{path}: {X.shape[0]} rows in {xkey!r} but {y.shape[0]} targets "
                                 f"in {ykey!r}")
        if n_features is not None and X.shape[1] != n_features:
            raise InputError(f"{path}: array {xkey!r} has {X.shape[1]} features, but the model "
                             f"takes {n_features}")
        self.keys = (xkey, ykey)
        self.y_dtype = y.dtype if y is not None else None
        self.n_rows, self.n_features = X.shape
        self.has_labels = ykey is not None

    def chunks(self, chunk_size):
        """Yield :class:`Chunk` objects of at most ``chunk_size`` rows."""
        xkey, ykey = self.keys
        try:
            with zipfile.ZipFile(self.path) as zf:
                X = _NpyStream(zf, xkey + ".npy", self.path)
                y = _NpyStream(zf, ykey + ".npy", self.path) if ykey is not None else None
                start = 0
                while start < self.n_rows:
                    Xc = X.rows(chunk_size).astype(np.float64)
                    n = Xc.shape[0]
                    chunk = Chunk(Xc, None, start, None, (start + n) / self.n_rows)
                    _finite_or_raise(Xc, chunk.where, self.path)
                    if y is not None:
                        chunk = chunk._replace(y=np.array(y.rows(n)).reshape(n))
                    yield chunk
                    start += n
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as exc:
            raise InputError(f"{self.path}: cannot read: {exc}") from None


# ---------------------------------------------------------------------- #
# entry point, labels, holdout
# ---------------------------------------------------------------------- #
def open_source(path, fmt="auto", *, labels="required", n_features=None, target=None,
                header="auto", delimiter=None, zero_based=False, keys=None, split="train"):
    """Open ``path`` for reading in chunks; ``fmt="auto"`` detects the format.

    Options that do not apply to the format are rejected (``target``,
    ``header`` and ``delimiter`` are CSV options, ``zero_based`` an svmlight
    one, ``keys`` an npz one) rather than silently ignored.  ``split`` picks
    an npz file's ``X_train`` or ``X_test`` (see :class:`NpzSource`).
    """
    _check_file(path)
    if fmt in (None, "auto"):
        fmt = detect_format(path)
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    wrong = [name for name, given, owner in (
        ("--target", target is not None, "csv"), ("--header", header != "auto", "csv"),
        ("--delimiter", delimiter is not None, "csv"), ("--zero-based", zero_based, "svmlight"),
        ("--npz-keys", keys is not None, "npz")) if given and owner != fmt]
    if wrong:
        raise InputError(f"{path} is read as {fmt}; {', '.join(wrong)} "
                         f"{'does' if len(wrong) == 1 else 'do'} not apply to it")
    if fmt == "csv":
        return CsvSource(path, labels=labels, n_features=n_features, target=target,
                         header=header, delimiter=delimiter)
    if fmt == "svmlight":
        return SvmlightSource(path, labels=labels, n_features=n_features, zero_based=zero_based)
    return NpzSource(path, labels=labels, n_features=n_features, keys=keys, split=split)


def label_kind(values):
    """How class labels read from a file are typed: ``"int"``, ``"float"``, ``"str"``, ``"native"``.

    Text labels that are all integers become integers, all numbers floats,
    anything else strings; labels stored as an array (npz) keep their dtype.

    Examples
    --------
    >>> from onlinekernel.io.readers import label_kind
    >>> [label_kind(np.array(v)) for v in (["1", "-1"], ["0.5", "2"], ["a", "1"])]
    ['int', 'float', 'str']
    """
    values = np.asarray(values)
    if values.dtype.kind not in "US":
        return "native"
    try:
        f = values.astype(np.float64)
    except ValueError:
        return "str"
    if not np.isfinite(f).all():
        return "str"
    return "int" if np.array_equal(f, np.round(f)) else "float"


def kind_of_classes(classes):
    """The label kind matching a model's ``classes_`` (see :func:`label_kind`)."""
    kind = np.asarray(classes).dtype.kind
    if kind in "iu":
        return "int"
    if kind == "f":
        return "float"
    if kind in "US":
        return "str"
    return "native"


def convert_labels(y, kind, chunk, path, what="label"):
    """Labels of ``chunk`` (raw ``y``) as ``kind``; a bad one raises naming its line."""
    y = np.asarray(y)
    if kind == "native" or (kind == "str" and y.dtype.kind in "US"):
        return y
    if kind == "str":
        return y.astype(str)
    try:
        f = y.astype(np.float64)
    except ValueError:
        f = None
    if f is None or not np.isfinite(f).all():
        for i, v in enumerate(y):
            ok = _is_number(v) and np.isfinite(float(v))
            if not ok:
                raise InputError(f"{path} {chunk.where(i)}: {what} {str(v)!r} is not a "
                                 f"finite number")
    if kind == "float":
        return f
    bad = np.flatnonzero(f != np.round(f))
    if bad.size:
        raise InputError(f"{path} {chunk.where(int(bad[0]))}: {what} {str(y[bad[0]])!r} is not "
                         f"an integer, but the classes are")
    return f.astype(np.int64)


_M64 = (1 << 64) - 1


def holdout_mask(start, n, fraction, seed):
    """Which of rows ``start .. start+n-1`` are held out: a hash of the row index and ``seed``.

    The same rows are held out on every pass and in every chunking of the
    file: row ``i`` is held out when ``splitmix64(i + mix(seed)) / 2**64 <
    fraction``.

    Examples
    --------
    >>> from onlinekernel.io.readers import holdout_mask
    >>> m = holdout_mask(0, 100000, 0.2, seed=0)
    >>> round(float(m.mean()), 2), bool((holdout_mask(500, 10, 0.2, 0) == m[500:510]).all())
    (0.2, True)
    """
    if fraction <= 0:
        return np.zeros(n, dtype=bool)
    key = ((int(seed) + 1) * 0x9E3779B97F4A7C15) & _M64
    with np.errstate(over="ignore"):
        z = np.arange(start, start + n, dtype=np.uint64) + np.uint64(key)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) * 2.0 ** -53 < fraction
