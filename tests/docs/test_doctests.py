"""Run the docstring examples of every module of the installed package."""
import doctest
import importlib
import pkgutil

import numpy as np
import pytest

import onlinekernel


def _modules():
    names = []
    for pkg in (onlinekernel,):
        names.append(pkg.__name__)
        for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
            if info.name.endswith("__main__"):
                continue  # running it would start the command line
            names.append(info.name)
    return sorted(names)


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples(name):
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    # numpydoc convention: examples may assume ``import numpy as np``.
    globs = {"np": np, **vars(module)}
    for test in finder.find(module, name, globs=globs):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"


def test_examples_are_found_in_compiled_modules():
    # Compiled classes carry their examples in class docstrings; make sure
    # the finder sees them (otherwise the test above would pass vacuously).
    finder = doctest.DocTestFinder(exclude_empty=True)
    module = importlib.import_module("onlinekernel.losses.builtin")
    found = [t for t in finder.find(module) if t.examples]
    assert len(found) >= 8
