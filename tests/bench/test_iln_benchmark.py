"""benchmarks/iln.py keeps working: budgets, data and one tiny comparison."""
import numpy as np

from benchmarks import iln


def test_budgets_spend_the_same_number_of_evaluations():
    T = 200
    for factor in (0.25, 0.5, 1.0, 2.0, 4.0):
        b = iln.budgets(factor * T * T, T)
        costs = b["cost"]
        assert costs["fixed"] == b["r"] * T and costs["shrinking"] == 2 * b["m"] * T
        for cost in costs.values():  # equal up to the rounding of r, k/b and m
            assert abs(cost / (factor * T * T) - 1.0) < 0.05, (factor, costs)


def test_problems():
    (X, y), val, test = iln.coordinates_problem(50, 40, 10, 20, seed=0)
    assert X.shape == (40, 50) and (X >= 0).all() and abs(y.std() - 0.5) < 1e-12
    assert val[0].shape == (10, 50) and test[0].shape == (20, 50)
    (X, y), _, _ = iln.iln_problem("sigmoid", 5, 40, 10, 20, seed=0)
    assert X.shape == (40, 5) and abs(y.mean()) < 1e-12 and abs(y.std() - 0.5) < 1e-12


def test_a_tiny_comparison_runs():
    data = iln.coordinates_problem(30, 40, 20, 20, seed=1)
    res = iln.run_config("coordinates", lambda F: iln.Coordinates(n_components=F), data,
                         40 * 40, 40, seed=0,
                         grids={"fixed": [0.25], "dsg": [(0.25, True)], "shrinking": [1.0]})
    assert set(res["test"]) == set(iln.METHODS) | set(iln.REFERENCES)
    assert all(np.isfinite(v) for v in res["test"].values())
    res.update(D=30, budget_factor=1.0)
    summary = iln.summarize([res])
    assert summary[0]["winner_one_pass"] in ("fixed_sgd", "dsg", "shrinking")
