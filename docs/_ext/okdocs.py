"""Directives that build parts of the onlinekernel docs from their sources.

Text that the code or the benchmark results already hold is generated at
build time instead of being copied by hand, so it cannot go stale:

``.. ok-cli-help:: [SUBCOMMAND]``
    The ``--help`` text of the ``onlinekernel`` command line (or of one
    subcommand), as a literal block.
``.. ok-components:: losses | feature_maps``
    One section per loss or feature map that onlinekernel itself registers
    (third-party plugins installed in the build environment are left out),
    with the component's docstring through autodoc.
``.. ok-benchmark-table:: PATH``
    The results table of a ``first_benchmark`` JSON file (path relative to
    the page).
``.. ok-figures:: GLOB``
    A figure for every file matching ``GLOB`` (relative to the page), in
    name order; a one-line note when there is none.

It also keeps numpydoc types such as ``ndarray of shape (n_random_features_,
n_outputs)`` literal: in reStructuredText a word ending in ``_`` is a link,
here to a target that does not exist.
"""
import contextlib
import glob
import io
import json
import os
import re
from pathlib import Path

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles


def _parse(directive, lines):
    """Parse generated reStructuredText lines in place of the directive.

    Section titles in ``lines`` become subsections of the page's current
    section.
    """
    node = nodes.section()
    content = StringList(lines, source=directive.get_source_info()[0])
    nested_parse_with_titles(directive.state, content, node)
    return node.children


class CliHelp(SphinxDirective):
    """``--help`` of the command line or of one subcommand."""

    optional_arguments = 1

    def run(self):
        from onlinekernel import cli

        argv = list(self.arguments) + ["--help"]
        out = io.StringIO()
        old = os.environ.get("COLUMNS")
        os.environ["COLUMNS"] = "88"  # the same wrapping on every terminal
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                try:
                    cli.main(argv)
                except SystemExit:
                    pass  # argparse exits after printing the help
        finally:
            if old is None:
                del os.environ["COLUMNS"]
            else:
                os.environ["COLUMNS"] = old
        text = out.getvalue().rstrip()
        if not text.startswith("usage:"):
            raise self.error(f"'onlinekernel {' '.join(argv)}' printed no usage text: {text!r}")
        block = nodes.literal_block(text, text)
        block["language"] = "text"
        return [block]


class Components(SphinxDirective):
    """The losses or feature maps that onlinekernel registers, with their docstrings."""

    required_arguments = 1

    def run(self):
        from onlinekernel import registry

        kind = self.arguments[0]
        listing = {"losses": registry.available_losses,
                   "feature_maps": registry.available_feature_maps}.get(kind)
        if listing is None:
            raise self.error(f"ok-components takes 'losses' or 'feature_maps', got {kind!r}")
        lines = []
        for name, info in listing().items():
            if info["distribution"] != "onlinekernel":
                continue  # a third-party plugin that happens to be installed
            params = ", ".join(f"{k}={v!r}" for k, v in info["parameters"].items())
            lines += [f"``{name}``", "~" * (len(name) + 4), "",
                      f"``{name}({params})``" if params else f"``{name}`` (no parameters)", "",
                      f".. autoclass:: {info['factory']}", "   :no-index:", ""]
        if not lines:
            raise self.error(f"no {kind} registered by onlinekernel itself")
        return _parse(self, lines)


def _pct(x):
    return f"{100 * x:.2f} %"


def _rate(x):
    return f"{x:,.0f}"


class BenchmarkTable(SphinxDirective):
    """The table of a ``first_benchmark`` results file."""

    required_arguments = 1

    def run(self):
        rel, path = self.env.relfn2path(self.arguments[0], self.env.docname)
        self.env.note_dependency(rel)
        try:
            data = json.loads(Path(path).read_text())
            lines = self._table(data)
        except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
            raise self.error(f"cannot read benchmark results {self.arguments[0]}: "
                             f"{type(exc).__name__}: {exc}")
        return _parse(self, lines)

    @staticmethod
    def _table(data):
        m = data["machine"]
        head = ["dataset", "n_train", "M", "accuracy, 1 pass: ok / sk",
                "accuracy, last pass: ok / sk", "linear, 1 pass",
                "train samples/s: ok / sk (ratio)", "predict samples/s: ok / sk (ratio)"]
        rows = []
        for name, r in data["results"].items():
            ok, sk, ratio = r["onlinekernel"], r["sklearn"], r["ratios_onlinekernel_over_sklearn"]
            rows.append([
                name, f"{r['n_train']:,}", f"{ok['n_random_features']:,}",
                f"{_pct(ok['accuracy_by_pass'][0])} / {_pct(sk['accuracy_by_pass'][0])}",
                f"{_pct(ok['accuracy_by_pass'][-1])} / {_pct(sk['accuracy_by_pass'][-1])}",
                _pct(r["linear_baseline_accuracy_1pass"]),
                f"{_rate(ok['train_samples_per_s'])} / {_rate(sk['train_samples_per_s'])} "
                f"({ratio['train_samples_per_s']:.2f}x)",
                f"{_rate(ok['predict_samples_per_s'])} / {_rate(sk['predict_samples_per_s'])} "
                f"({ratio['predict_samples_per_s']:.2f}x)",
            ])
        s = data["settings"]
        caption = (f"{data['benchmark']} ({s['mode']} mode, {s['passes']} passes, "
                   f"{s['repeats']} repeats, BLAS threads: {s['blas_threads']}), "
                   f"{data['created'][:10]}, {m['processor']} with {m['cpu_count']} cores, "
                   f"Python {m['python']}, numpy {m['numpy']}, scikit-learn "
                   f"{m['scikit-learn']}, onlinekernel {m['onlinekernel']}; "
                   f"{data['wall_time_s']:.0f} s wall time")
        lines = [f".. list-table:: {caption}", "   :header-rows: 1", ""]
        for row in [head] + rows:
            lines.append(f"   * - {row[0]}")
            lines += [f"     - {cell}" for cell in row[1:]]
        return lines + [""]


class Figures(SphinxDirective):
    """A figure for every file matching a glob pattern."""

    required_arguments = 1

    def run(self):
        pattern = self.arguments[0]
        _, abs_pattern = self.env.relfn2path(pattern, self.env.docname)
        here = os.path.dirname(self.env.doc2path(self.env.docname))
        found = sorted(glob.glob(abs_pattern))
        if not found:
            return [nodes.paragraph(text=f"(No files match {pattern} in this build.)")]
        lines = []
        for path in found:
            rel = os.path.relpath(path, here).replace(os.sep, "/")
            self.env.note_dependency(path)
            lines += [f".. figure:: {rel}", "   :width: 90%", "",
                      f"   ``{os.path.basename(path)}``", ""]
        return _parse(self, lines)


# "name : type" lines of numpydoc sections, and fitted-attribute names
# (identifiers with one trailing underscore) inside the type
_PARAM_LINE = re.compile(r"^(\s*\S[^:]*? : )(.+)$")
_TRAILING_UNDERSCORE = re.compile(r"\b([A-Za-z]\w*?)_(?=[\s,)\]]|$)")


def escape_attribute_names_in_types(app, what, name, obj, options, lines):
    """Escape ``word_`` in the type part of numpydoc parameter lines.

    Runs before numpydoc turns the sections into reStructuredText.
    """
    for i, line in enumerate(lines):
        m = _PARAM_LINE.match(line)
        if m and "`" not in m.group(2):
            lines[i] = m.group(1) + _TRAILING_UNDERSCORE.sub(r"\1\\_", m.group(2))


def setup(app):
    # numpydoc mangles docstrings at the default priority (500): go first
    app.connect("autodoc-process-docstring", escape_attribute_names_in_types, priority=400)
    app.add_directive("ok-cli-help", CliHelp)
    app.add_directive("ok-components", Components)
    app.add_directive("ok-benchmark-table", BenchmarkTable)
    app.add_directive("ok-figures", Figures)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
