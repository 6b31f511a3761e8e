# cython: language_level=3
"""The parameter protocol of the compiled losses, maps and operator objectives (declarations)."""

cdef class CyParams:
    pass
