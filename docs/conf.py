"""Sphinx configuration of the onlinekernel documentation.

Build with warnings as errors (as CI does, through tests/docs/test_docs.py)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html

No extension needs the network: mathjax is loaded by the reader's browser,
and there is no intersphinx.
"""
import os
import sys

_DOCS = os.path.dirname(os.path.abspath(__file__))

# (the package lives in src/, so the repository root on sys.path, where
# ``python -m sphinx`` puts it, cannot shadow the installed package)
# docs/_ext holds this documentation's own small Sphinx extension
sys.path.insert(0, os.path.join(_DOCS, "_ext"))

import onlinekernel  # noqa: E402  (autodoc documents the installed package)

project = "onlinekernel"
author = "onlinekernel developers"
copyright = "onlinekernel developers"
release = onlinekernel.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "numpydoc",
    "okdocs",
]

root_doc = "index"
# The plugin guide's example packages are code included by the pages, not
# pages themselves.
exclude_patterns = ["_build", "plugin_guide", "Thumbs.db", ".DS_Store"]

# autodoc: members in source order; the class docstring carries the
# parameters (numpydoc), __init__ has none of its own.
autodoc_member_order = "bysource"
autoclass_content = "class"
autodoc_typehints = "none"

# numpydoc: no automatic member tables; each page lists the members it
# documents.
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False

html_theme = "alabaster"
html_title = f"onlinekernel {release}"
html_theme_options = {
    "description": "Online kernel learning with doubly stochastic gradients",
    "fixed_sidebar": True,
}
