"""The package's architecture, checked over its import graph.

Every import of every module of ``onlinekernel`` is read from the source
(``.py`` through :mod:`ast`, ``.pyx``/``.pxd`` through their ``import`` and
``cimport`` lines), function-local imports included, so that an import
circle cannot hide inside a function.
"""
import ast
import re
from pathlib import Path

import pytest

# the sources of the repository (an installed package has no .pyx files)
ROOT = Path(__file__).resolve().parents[2] / "src"
PACKAGE = ROOT / "onlinekernel"
SOURCES = [p for p in PACKAGE.rglob("*") if p.suffix in (".py", ".pyx", ".pxd")]

# What each part of the package may import (besides itself and the top-level
# ``onlinekernel._version``): the layers of the README's layout section, lowest
# first.  ``integrations.dask`` is the one integration the estimators call:
# they hand dask collections to it.
ALLOWED = {
    "core": set(),
    "hookspecs": set(),
    "registry": {"core", "hookspecs"},
    "losses": {"core", "hookspecs", "registry"},
    "featuremaps": {"core", "hookspecs", "registry"},
    "solvers": {"core", "losses", "featuremaps", "registry"},
    "io": {"core", "losses", "featuremaps", "registry", "solvers"},
    "estimators": {"core", "losses", "featuremaps", "registry", "solvers", "io",
                   "integrations.dask"},
    "integrations.dask": {"core", "losses", "featuremaps", "registry", "solvers"},
    "integrations.river": {"estimators", "core"},
    "datasets": set(),
    "_version": set(),
    "integrations": set(),
    "cli": {"core", "registry", "solvers", "io", "estimators", "datasets", "onlinekernel"},
    "__main__": {"cli"},
    "onlinekernel": {"registry", "featuremaps", "losses", "estimators", "io"},
}

_FROM = re.compile(r"^\s*from\s+([\w.]+)\s+c?import\s+(.+)$")
_IMPORT = re.compile(r"^\s*c?import\s+([\w., ]+)$")


def module_name(path):
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p) for p in SOURCES}
PACKAGES = {module_name(p) for p in SOURCES if p.stem == "__init__"}


def _imports(path):
    """``(imported module, imported name or None)`` for each import in ``path``."""
    text = path.read_text()
    if path.suffix == ".py":
        out = []
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Import):
                out += [(a.name, None) for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                out += [(node.module, a.name) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                raise AssertionError(f"{path}: relative import")
        return out
    out = []
    text = re.sub(r"\\\n", " ", text)  # continued lines
    text = re.sub(r"import\s*\(([^)]*)\)", lambda m: "import " + " ".join(m.group(1).split()),
                  text)  # parenthesised names on one line
    for line in text.splitlines():
        m = _FROM.match(line)
        if m:
            out += [(m.group(1), n.split(" as ")[0].strip())
                    for n in m.group(2).split("#")[0].split(",") if n.strip()]
            continue
        m = _IMPORT.match(line)
        if m:
            out += [(n.split(" as ")[0].strip(), None) for n in m.group(1).split(",")]
    return out


def _targets(path):
    """The modules of onlinekernel that ``path`` imports, with the private names it uses."""
    for mod, name in _imports(path):
        if not (mod == "onlinekernel" or mod.startswith("onlinekernel.")):
            continue
        full = f"{mod}.{name}" if name else mod
        if full in MODULES:   # `from package import submodule`
            yield full, None
        else:
            yield mod, name


def _part(module):
    """The layer a module belongs to (a key of ALLOWED)."""
    rest = module.split(".")[1:]
    if not rest:
        return "onlinekernel"
    if rest[0] == "integrations" and len(rest) > 1:
        return "integrations." + rest[1]
    return rest[0]


def _graph():
    graph = {}
    for path in SOURCES:
        src = module_name(path)
        graph.setdefault(src, set()).update(t for t, _ in _targets(path) if t != src)
    return graph


def test_the_graph_sees_every_kind_of_import():
    # the reader must see function-local, compiled and cimported imports, or
    # the checks below would pass vacuously
    graph = _graph()
    assert "onlinekernel.solvers.dsg" in graph["onlinekernel.estimators._base"]
    assert "onlinekernel.featuremaps.base" in graph["onlinekernel.featuremaps.gaussian"]
    assert "onlinekernel.core.linalg" in graph["onlinekernel.featuremaps.base"]
    assert len(graph) == len(MODULES) > 60


def test_no_import_circle():
    graph = _graph()
    index, low, stack, on_stack, circles = {}, {}, [], set(), []

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert circles == []


@pytest.mark.parametrize("path", sorted(SOURCES), ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_follow_the_layers(path):
    src = module_name(path)
    part = _part(src)
    allowed = ALLOWED[part] | {part}
    wrong = sorted({t for t, _ in _targets(path)
                    if t != "onlinekernel._version" and _part(t) not in allowed})
    assert wrong == [], f"{src} ({part}) imports {wrong}; {part} may import {sorted(allowed)}"


def _private_owner(module, name):
    """The package that owns the first private component of ``module.name``, or None.

    A private module or subpackage belongs to the package that holds it; a
    private name defined in a module belongs to that module's package.
    """
    parts = module.split(".") + ([name] if name else [])
    for i, p in enumerate(parts):
        if p.startswith("_") and not (p.startswith("__") and p.endswith("__")):
            owner = ".".join(parts[:i])
            while owner not in PACKAGES and "." in owner:
                owner = owner.rpartition(".")[0]
            return owner
    return None


@pytest.mark.parametrize("path", sorted(SOURCES), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_private_name_across_packages(path):
    # a name with a leading underscore is private to the package it is in:
    # only that package (and its subpackages) may import it
    src = module_name(path)
    package = src if path.stem == "__init__" else src.rpartition(".")[0]
    wrong = []
    for mod, name in _targets(path):
        owner = _private_owner(mod, name)
        if owner is not None and not (package == owner or package.startswith(owner + ".")):
            wrong.append(f"{mod}.{name}" if name else mod)
    assert wrong == [], f"{src} imports private names of other packages: {wrong}"
