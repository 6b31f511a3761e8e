"""The time axis of benchmarks/quality.py's error-versus-time figure (issue 16, item 10).

Every panel gets at least two readable time labels, and no two labels
overlap, whatever span of fit times the panel has.
"""
import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from benchmarks import quality  # noqa: E402


def _labels(ax):
    """The x tick labels shown inside the panel, with their extents on the canvas."""
    lo, hi = ax.get_xlim()
    ticks = ax.xaxis.get_major_ticks() + ax.xaxis.get_minor_ticks()
    shown = [t for t in ticks if t.label1.get_visible() and t.label1.get_text()
             and lo <= t.get_loc() <= hi]
    renderer = ax.figure.canvas.get_renderer()
    return sorted((t.get_loc(), t.label1.get_text(), t.label1.get_window_extent(renderer))
                  for t in shown)


# the spans of the published figure's panels (ijcnn1 had a lone "10"), and harder ones
@pytest.mark.parametrize("lo, hi", [(1.28, 52.0), (0.0066, 0.55), (1.44, 256.0), (0.4, 20.3),
                                    (3.0, 9.0), (150.0, 900.0), (1e-3, 1e3), (0.31, 0.48)])
def test_time_axis_labels_are_several_and_never_overlap(lo, hi):
    fig, ax = plt.subplots(figsize=(3.6, 2.8))  # one panel of the figure
    ax.plot(np.geomspace(lo, hi, 9), np.linspace(5.0, 2.0, 9), "o-")
    quality.log_time_axis(ax)
    ax.tick_params(which="both", labelsize=7)
    fig.tight_layout()
    fig.canvas.draw()
    labels = _labels(ax)
    plt.close(fig)
    assert len(labels) >= 2, labels
    for (_, a, box_a), (_, b, box_b) in zip(labels, labels[1:]):
        assert box_a.x1 < box_b.x0, f"labels {a!r} and {b!r} overlap"
