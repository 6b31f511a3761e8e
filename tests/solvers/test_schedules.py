"""Step-size schedules: a stream's one-row calls take the same steps as a batch's."""
import numpy as np
import pytest

from onlinekernel.solvers.schedules import SCHEDULES, schedule, step_sizes


@pytest.mark.parametrize("name", SCHEDULES)
@pytest.mark.parametrize("eta_min", [0.0, 0.3])
def test_one_batch_at_a_time_gives_the_steps_of_one_call(name, eta_min):
    # the float path of a single batch and the array path of many: the same bits
    rows = np.array([8, 8, 3, 8, 1, 8, 8, 5] * 40)
    kw = dict(eta0=4.0, t0=50.0, alpha=1e-3, eta_min=eta_min)
    whole = step_sizes(name, 17, rows, 8, **kw)
    seen, one = 17, []
    for r in rows:
        one.append(step_sizes(name, seen, rows[len(one):len(one) + 1], 8, **kw))
        seen += int(r)
    one = np.concatenate(one)
    assert one.dtype == whole.dtype == np.float64
    assert one.tobytes() == whole.tobytes()
    # the floor holds for a full batch; a shorter one takes its share of it
    assert (whole >= eta_min * rows / 8).all() and np.isfinite(whole).all()


def test_a_float_clock_gives_the_arrays_value():
    for name in SCHEDULES:
        tau = np.array([0.5, 1.0, 7.25, 1e6])
        arr = schedule(name, tau, eta0=2.0, t0=10.0, alpha=1e-2)
        assert [schedule(name, float(t), eta0=2.0, t0=10.0, alpha=1e-2) for t in tau] \
            == arr.tolist()
    with pytest.raises(ValueError, match="unknown learning_rate"):
        schedule("adaptive", 1.0, eta0=1.0, t0=1.0, alpha=0.0)
