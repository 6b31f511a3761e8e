"""The benchmarks of onlinekernel: one module a benchmark, run from the repository root.

``python -m benchmarks.<name> [--quick] [--data-dir DIR]`` runs one
(``python -m benchmarks.run`` the usual set, then a summary of every
target); ``benchmarks/README.md`` describes each.  The shared harness is
:mod:`benchmarks._common` (machine and build description, timing, data
loading, result files).  The scripts use onlinekernel's public API only,
except the diagnostics :mod:`benchmarks._common` names as such.
"""
