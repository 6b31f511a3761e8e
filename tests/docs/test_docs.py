"""The documentation: it builds, it is complete, and its examples run.

* ``docs/`` builds with Sphinx, warnings as errors (as CI requires);
* every hook specification and every public estimator is documented;
* the ``>>>`` examples of every page run, and so do the ``$ onlinekernel``
  commands of its ``console`` blocks (after the page's examples, in the
  same directory); the plugin guide's examples run with the guide's two
  example plugins built (the Cython one is compiled) and registered through
  their ``pyproject.toml`` entry points.
"""
import doctest
import inspect
import io
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from sklearn.base import BaseEstimator

import onlinekernel
from onlinekernel import cli, hookspecs, registry

DOCS = Path(__file__).resolve().parents[2] / "docs"
GUIDE = DOCS / "plugin_guide"
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _pages():
    return sorted(p for p in DOCS.rglob("*.rst") if "_build" not in p.parts)


def _all_sources():
    return "\n".join(p.read_text(encoding="utf-8") for p in _pages())


def _run_doctests(path, globs=None):
    """Run the ``>>>`` examples of a page; returns (attempted, failure report)."""
    text = path.read_text(encoding="utf-8")
    test = doctest.DocTestParser().get_doctest(text, dict(globs or {}), path.name, str(path), 0)
    out = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    runner.run(test, out=out.write)
    result = runner.summarize(verbose=False)
    return result.attempted, (out.getvalue() if result.failed else "")


def _console_commands(path):
    """The ``$ onlinekernel ...`` lines of the page's ``console`` code blocks."""
    commands, in_console = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith(".. code-block::"):
            in_console = line.split("::")[1].strip() == "console"
        elif line and not line[0].isspace():
            in_console = False
        elif in_console and line.strip().startswith("$ "):
            commands.append(line.strip()[2:])
    return commands


# --------------------------------------------------------------------------- #
# the build
# --------------------------------------------------------------------------- #
def _readme_docs_command():
    readme = (DOCS.parent / "README.md").read_text()
    line = next(ln for ln in readme.splitlines() if "python -m sphinx" in ln)
    return shlex.split(line.split("&&")[-1].strip())


def test_docs_build_without_warnings_from_a_fresh_checkout(tmp_path):
    # the README's command, from the root of a source tree without compiled
    # modules (a fresh clone after `pip install .`): the tree must not shadow
    # the installed package
    root = tmp_path / "checkout"
    ignore = shutil.ignore_patterns("*.so", "*.pyd", "*.c", "_build", "__pycache__", "build")
    shutil.copytree(DOCS, root / "docs", ignore=ignore)
    for tree in ("src", "benchmarks"):  # the pages read sources and results
        shutil.copytree(DOCS.parent / tree, root / tree, ignore=ignore)
    command = _readme_docs_command()
    assert command[:3] == ["python", "-m", "sphinx"] and "-W" in command, command
    result = subprocess.run([sys.executable] + command[1:], cwd=root, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, (f"'{' '.join(command)}' failed (warnings are errors):\n"
                                    f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    html = root / command[-1]
    for page in ("index", "getting_started", "concepts", "plugins", "model_files",
                 "benchmarks", "references", "api", "streaming", "estimators/index"):
        assert (html / f"{page}.html").is_file(), f"{page}.html was not built"


# --------------------------------------------------------------------------- #
# completeness
# --------------------------------------------------------------------------- #
def _hookspecs():
    marker = f"{hookspecs.hookspec.project_name}_spec"  # set by pluggy's HookspecMarker
    return sorted(name for name, obj in vars(hookspecs).items()
                  if name.startswith("onlinekernel_") and callable(obj) and hasattr(obj, marker))


def test_every_hookspec_is_documented():
    specs = _hookspecs()
    assert {"onlinekernel_register_losses", "onlinekernel_register_feature_maps"} <= set(specs)
    guide = (DOCS / "plugins.rst").read_text(encoding="utf-8")
    missing = [s for s in specs
               if f".. autofunction:: onlinekernel.hookspecs.{s}\n" not in guide]
    assert not missing, (f"hook specifications missing from the hook reference of "
                         f"docs/plugins.rst: {missing}")
    undocumented = [s for s in specs if not inspect.getdoc(getattr(hookspecs, s))]
    assert not undocumented, f"hook specifications without a docstring: {undocumented}"


def test_every_public_estimator_has_a_page():
    estimators = [name for name in onlinekernel.__all__
                  if inspect.isclass(getattr(onlinekernel, name))
                  and issubclass(getattr(onlinekernel, name), BaseEstimator)]
    assert {"DSGClassifier", "DSGRegressor"} <= set(estimators)
    sources = _all_sources()
    missing = [name for name in estimators if f".. autoclass:: onlinekernel.{name}\n" not in sources]
    assert not missing, f"estimators without an autoclass in docs/estimators/: {missing}"


def test_the_hook_check_sees_undocumented_hooks(monkeypatch):
    # the completeness check must be able to fail: a new hookspec with no
    # entry in the guide is reported
    @hookspecs.hookspec
    def onlinekernel_register_something():
        """A hook that the guide does not know."""
    monkeypatch.setattr(hookspecs, "onlinekernel_register_something",
                        onlinekernel_register_something, raising=False)
    assert "onlinekernel_register_something" in _hookspecs()
    with pytest.raises(AssertionError, match="onlinekernel_register_something"):
        test_every_hookspec_is_documented()


# --------------------------------------------------------------------------- #
# examples
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("page", [p.relative_to(DOCS).as_posix() for p in _pages()
                                  if p.name != "plugins.rst" and (">>>" in p.read_text()
                                                                  or _console_commands(p))])
def test_page_examples_run(page, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # examples may write files
    attempted, failures = _run_doctests(DOCS / page)
    assert not failures, f"examples of docs/{page} failed:\n{failures}"
    commands = _console_commands(DOCS / page)
    assert attempted or commands
    for command in commands:
        argv = shlex.split(command)
        assert argv[0] == "onlinekernel", f"docs/{page}: not an onlinekernel command: {command}"
        capsys.readouterr()
        try:
            status = cli.main(argv[1:])
        except SystemExit as exc:  # argparse rejected the command line
            status = exc.code
        assert status == 0, (f"docs/{page}: '{command}' exited with {status}:\n"
                             f"{capsys.readouterr().err}")


def test_console_commands_are_found():
    commands = _console_commands(DOCS / "getting_started.rst")
    assert any(c.startswith("onlinekernel train ") for c in commands)
    assert any(c.startswith("onlinekernel evaluate ") for c in commands)


def _pyproject(path):
    """Name, version and ``onlinekernel`` entry points of a guide package."""
    text = path.read_text(encoding="utf-8")
    try:
        import tomllib
    except ImportError:  # Python 3.10: the two guide files are simple enough
        section = re.search(r"^\[project\.entry-points\.onlinekernel\]\n(.*?)(?:^\[|\Z)",
                            text, re.M | re.S).group(1)
        project = re.search(r"^\[project\]\n(.*?)(?:^\[|\Z)", text, re.M | re.S).group(1)
        pairs = dict(re.findall(r'^(\w+)\s*=\s*"([^"]*)"', section, re.M))
        meta = dict(re.findall(r'^(\w+)\s*=\s*"([^"]*)"', project, re.M))
        return meta["name"], meta["version"], pairs
    data = tomllib.loads(text)
    return (data["project"]["name"], data["project"]["version"],
            data["project"]["entry-points"]["onlinekernel"])


def _fake_install(source, target):
    """Copy a guide package to ``target`` with the metadata pip would write.

    The ``.dist-info`` holds the entry points declared in the package's
    ``pyproject.toml``: putting ``target`` on ``sys.path`` then registers
    the plugin exactly as ``pip install`` would.
    """
    shutil.copytree(source, target)
    name, version, entry_points = _pyproject(target / "pyproject.toml")
    info = target / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(
        "[onlinekernel]\n" + "".join(f"{k} = {v}\n" for k, v in entry_points.items()))
    return name


@pytest.fixture
def guide_plugins(tmp_path, entry_point_plugins):
    """Both example plugins of the guide, built and registered (entry-point
    loading on: the suite runs on the built-ins alone, see ``conftest.py``)."""
    python_dir, cython_dir = tmp_path / "python", tmp_path / "cython"
    names = [_fake_install(GUIDE / "python", python_dir),
             _fake_install(GUIDE / "cython", cython_dir)]
    build = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"],
                           cwd=cython_dir, capture_output=True, text=True)
    assert build.returncode == 0, (f"building the Cython plugin of the guide failed:\n"
                                   f"{build.stdout[-3000:]}\n{build.stderr[-3000:]}")
    sys.path[:0] = [str(python_dir), str(cython_dir)]
    registry.reset()
    try:
        yield names
    finally:
        for path in (str(python_dir), str(cython_dir)):
            sys.path.remove(path)
        for module in [m for m in sys.modules if m.split(".")[0] in ("okguide_python",
                                                                      "okguide_cython")]:
            del sys.modules[module]
        registry.reset()


def test_plugin_guide_examples_run(guide_plugins):
    assert guide_plugins == ["okguide-python", "okguide-cython"]
    losses, maps = onlinekernel.available_losses(), onlinekernel.available_feature_maps()
    for name, dist in [("pseudo_huber_py", "okguide-python"), ("pseudo_huber", "okguide-cython")]:
        assert losses[name]["distribution"] == dist
    for name, dist in [("exponential_py", "okguide-python"), ("exponential", "okguide-cython")]:
        assert maps[name]["distribution"] == dist
    attempted, failures = _run_doctests(DOCS / "plugins.rst")
    assert attempted >= 20
    assert not failures, f"examples of docs/plugins.rst failed:\n{failures}"
