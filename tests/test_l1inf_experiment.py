"""The l1,inf paper reproduction (``experiments.l1inf``): the reduced synthetic experiment, its
step-factor and radius selection rules, the LP models, and the 10-row sparsity diagnostic.

Moved verbatim out of ``test_l1inf_models.py`` (which now tests the library only) when the core
was replaced: these tests exercise the reproduction code, which moves out of the package with
the other experiments, and follow it there.
"""

from __future__ import annotations

import numpy as np
import pytest

from multitask.data import as_multitask_data
from multitask.estimators.l1inf import L1InfClassifier, constraint_norm
from multitask.losses import get_datafit

cp = pytest.importorskip("cvxpy")

MODELS3 = ("l1inf", "l1", "l2")


def _tasks(rng, d=12, m=3, n=25, classification=True):
    W0 = np.zeros((d, m))
    W0[:3] = rng.standard_normal((3, m))
    Xs = [rng.standard_normal((n, d)) for _ in range(m)]
    if classification:
        ys = [(X @ W0[:, t] + 0.5 * rng.standard_normal(n) > 0).astype(int)
              for t, X in enumerate(Xs)]
    else:
        ys = [X @ W0[:, t] + 0.1 * rng.standard_normal(n) for t, X in enumerate(Xs)]
    return Xs, ys


def test_reduced_synthetic_experiment():
    """Paper's synthetic setup, reduced (m=30, 500 test rows, 2 seeds), sizes <= 40 per task.

    Averaged over the sizes 10, 20, 40 and the seeds, l1,inf has the lowest test error and a
    higher feature-selection precision than independent l1 balls; at 20 and 40 rows per task
    it does at every size (seed means). At 10 rows neither is sparse (the subgradient
    solutions use nearly every feature; see docs/models/l1inf.md), so only l1,inf < l1 in
    error is asserted there.
    """
    from multitask.experiments.l1inf import run_synthetic

    sizes = (10, 20, 40)
    res = run_synthetic(sizes, repeats=2, n_tasks=30, n_test=500, seed=0)
    err = {(n, m): np.mean(res[(n, m, "test_error")]) for n in sizes for m in MODELS3}
    prec = {(n, m): np.mean(res[(n, m, "precision")]) for n in sizes for m in MODELS3}
    for m in ("l1", "l2"):
        assert np.mean([err[n, "l1inf"] for n in sizes]) < np.mean([err[n, m] for n in sizes])
    assert np.mean([prec[n, "l1inf"] for n in sizes]) > np.mean([prec[n, "l1"] for n in sizes])
    for n in (20, 40):
        assert err[n, "l1inf"] < min(err[n, "l1"], err[n, "l2"])
        assert prec[n, "l1inf"] > prec[n, "l1"]
    assert err[10, "l1inf"] < err[10, "l1"]
    for n in sizes:
        assert 0.0 < err[n, "l1inf"] < 0.5
        assert np.mean(res[(n, "l1inf", "recall")]) >= 0.85
        assert prec[n, "l2"] == pytest.approx(0.1)  # l2 balls keep every feature (20 of 200)


class _Run:
    def __init__(self, f):
        self.final_objective = f


def test_choose_eta_factor_widens_the_grid_at_its_edges():
    from multitask.experiments.l1inf import choose_eta_factor

    # objective minimal at f = 1000: two widenings upwards reach it
    calls = []

    def run(f):
        calls.append(f)
        return _Run((np.log10(f) - 3.0) ** 2)

    f, res, tried = choose_eta_factor(run, (0.1, 1.0, 10.0), extend=2)
    assert f == pytest.approx(1000.0) and res.final_objective == pytest.approx(0.0)
    assert sorted(tried) == pytest.approx([0.1, 1.0, 10.0, 100.0, 1000.0])
    # at most `extend` widenings: the edge stays the choice
    f, _, tried = choose_eta_factor(run, (0.1, 1.0, 10.0), extend=1)
    assert f == pytest.approx(100.0) and len(tried) == 4
    # downwards, with the grid's own ratio
    f, _, tried = choose_eta_factor(lambda f: _Run(abs(np.log10(f) + 2.0)), (0.5, 1.0, 2.0),
                                    extend=5)
    assert min(tried) == pytest.approx(2.0 ** -6) and f == pytest.approx(2.0 ** -6)
    # an interior minimum or a flat objective: no widening; ties go to the smaller factor
    for fun in (lambda f: _Run((f - 1.0) ** 2), lambda f: _Run(3.0)):
        f, _, tried = choose_eta_factor(fun, (0.1, 1.0, 10.0), extend=2)
        assert len(tried) == 3
    assert choose_eta_factor(lambda f: _Run(3.0), (0.1, 1.0, 10.0))[0] == pytest.approx(0.1)


def test_fit_constrained_reports_the_chosen_step_and_objective():
    from multitask.experiments.l1inf import fit_constrained, make_paper_synthetic

    data = make_paper_synthetic(30, 5, n_features=40, n_tasks=6, rng=0)
    for model in ("l1inf", "l1", "l2"):
        radius = constraint_norm(data["W"], model)
        W, secs, info = fit_constrained(data["Xtr"], data["ytr"], model, radius, max_iter=60)
        assert secs > 0 and info["eta_factor"] in info["tried"]
        assert info["objective"] == pytest.approx(min(info["tried"].values()))
        assert np.all(np.atleast_1d(constraint_norm(W, model))
                      <= np.atleast_1d(radius) * (1 + 1e-9))
        ds, _ = as_multitask_data(data["Xtr"], data["ytr"], classification=True)
        assert get_datafit("hinge", ds, False).value(W, None) == pytest.approx(info["objective"])


def test_cv_radius_widens_an_edge_choice_and_warns_when_still_there():
    from multitask.experiments.l1inf import cv_radius

    rng = np.random.default_rng(7)
    Xs, ys = _tasks(rng, d=10, m=3, n=30)
    est = L1InfClassifier(max_iter=60, tol=0.0)
    # a grid of tiny radii: the best radius lies above it, the grid is widened upwards
    cv, grid, at_edge = cv_radius(est, Xs, ys, [1e-3, 1e-2], extend=3, n_folds=3)
    assert len(grid) in (4, 6, 8) and grid[:2] == [1e-3, 1e-2]
    assert np.allclose(np.diff(np.log10(grid)), 1.0)  # the grid's own spacing
    assert not at_edge and grid[0] < cv.best_params_["radius"] < grid[-1]
    assert cv.best_params_["radius"] > 1e-2
    scores = cv.cv_results_["mean_test_score"]
    assert scores[grid.index(cv.best_params_["radius"])] == pytest.approx(np.nanmax(scores))
    # no widening allowed: the edge choice is reported and warned about
    with pytest.warns(UserWarning, match="edge"):
        _, grid0, at_edge0 = cv_radius(est, Xs, ys, [1e-3, 1e-2], extend=0, n_folds=3)
    assert at_edge0 and grid0 == [1e-3, 1e-2]


def test_lp_solution_is_sparser_than_subgradient_at_10_rows():
    """Reduced synthetic setup (d = 200, m = 30, 10 rows per task, seed 0).

    The exact l1,inf solution (LP vertex) selects fewer features with a higher precision than
    the exact l1 solution, and fewer features than the 200-step subgradient solution.
    """
    from multitask.experiments.l1inf import run_synthetic

    res = run_synthetic((10,), repeats=1, n_tasks=30, n_test=200, seed=0,
                        models=("l1inf", "l1inf_lp", "l1_lp"))
    prec = {mo: res[(10, mo, "precision")][0] for mo in ("l1inf", "l1inf_lp", "l1_lp")}
    nsel = {mo: res[(10, mo, "n_selected")][0] for mo in ("l1inf", "l1inf_lp", "l1_lp")}
    obj = {mo: res[(10, mo, "train_objective")][0] for mo in ("l1inf", "l1inf_lp")}
    assert prec["l1inf_lp"] > prec["l1_lp"] + 0.02
    assert nsel["l1inf_lp"] < nsel["l1_lp"]
    assert nsel["l1inf_lp"] < nsel["l1inf"] - 20
    assert obj["l1inf_lp"] <= obj["l1inf"] + 1e-9  # exact: no higher than the subgradient


def test_experiment_lp_models_on_real_data_path_and_unknown_model():
    """``run_real`` fits ``l1inf_lp`` / ``l1_lp`` with ``solver="lp"`` inside the CV."""
    from multitask.experiments.l1inf import run_real, run_synthetic

    rng = np.random.default_rng(14)
    Xs, ys = _tasks(rng, d=12, m=3, n=60)
    res = run_real(Xs, ys, (20,), repeats=1, grid=[0.3, 1.0, 3.0, 10.0],
                   models=("l1inf_lp", "l1_lp", "l2"))
    for mo in ("l1inf_lp", "l1_lp", "l2"):
        assert 0.0 <= res[(20, mo, "test_error")][0] < 0.4
        assert res[(20, mo, "mean_auc")][0] > 0.7
        assert 1 <= res[(20, mo, "n_selected")][0] <= 12
    with pytest.raises(ValueError, match="Unknown models"):
        run_synthetic((10,), models=("l2_lp",))


@pytest.mark.slow
def test_exact_optimum_at_10_rows_is_sparser_than_the_subgradient_solution():
    """Diagnostic of the precision tie at 10 rows per task (full synthetic size, seed 0).

    The training set is the one of ``run_synthetic``'s first repetition at ``n = 10``. The
    interior-point solution (cvxpy, Clarabel) lies in the relative interior of the set of
    optima, so its support is the largest support of any optimum: every l1,inf optimum uses at
    most that many features, fewer than the l1 optimum. The LP vertex (``fit_exact``) is an
    optimum too, with at most that support. The projected subgradient solutions (200 and 2000
    steps) are close in objective but use nearly all features. Run with ``-s``
    to see the numbers quoted in docs/models/l1inf.md.
    """
    from multitask.experiments.l1inf import (
        fit_constrained,
        fit_exact,
        make_paper_synthetic,
        task_error,
    )

    rng = np.random.default_rng(0)
    base = make_paper_synthetic(1, 1000, rng=rng)
    W_true = base["W"]
    tr = make_paper_synthetic(10, 1, W=W_true, rng=rng)
    Xs, ys = tr["Xtr"], tr["ytr"]
    d, m = W_true.shape
    relevant = base["relevant"]
    rows = {}
    for model in ("l1inf", "l1"):
        C = constraint_norm(W_true, model)
        W = cp.Variable((d, m))
        loss = sum(cp.sum(cp.pos(1 - cp.multiply(2.0 * ys[t] - 1.0, Xs[t] @ W[:, t]))) / 10
                   for t in range(m))
        cons = ([cp.sum(cp.max(cp.abs(W), axis=1)) <= C] if model == "l1inf"
                else [cp.sum(cp.abs(W), axis=0) <= C])
        prob = cp.Problem(cp.Minimize(loss), cons)
        prob.solve(solver="CLARABEL")
        rmax = np.abs(W.value).max(axis=1)
        sel = np.flatnonzero(rmax > 1e-6 * rmax.max())
        rows[model, "optimum"] = (prob.value, sel.size,
                                  np.intersect1d(sel, relevant).size / sel.size,
                                  task_error(W.value, base["Xte"], base["yte"]))
        Wl, _, info = fit_exact(Xs, ys, model, C)
        sel = np.flatnonzero(np.any(Wl != 0, axis=1))
        rows[model, "LP vertex"] = (info["objective"], sel.size,
                                    np.intersect1d(sel, relevant).size / sel.size,
                                    task_error(Wl, base["Xte"], base["yte"]))
        assert abs(info["objective"] - prob.value) <= 1e-6 * prob.value
        for T in (200, 2000) if model == "l1inf" else (200,):
            Ws, _, info = fit_constrained(Xs, ys, model, C, max_iter=T)
            sel = np.flatnonzero(np.any(Ws != 0, axis=1))
            rows[model, f"subgradient {T}"] = (info["objective"], sel.size,
                                               np.intersect1d(sel, relevant).size / sel.size,
                                               task_error(Ws, base["Xte"], base["yte"]))
            assert info["objective"] >= prob.value * (1 - 1e-6)
    print("\nmodel  solution          objective  features  precision  test error")
    for (model, how), (f, k, p, e) in rows.items():
        print(f"{model:6s} {how:16s} {f:9.4f}  {k:8d}  {p:9.3f}  {e:10.3f}")
    assert rows["l1inf", "optimum"][1] < rows["l1", "optimum"][1] - 30
    assert rows["l1inf", "optimum"][2] > rows["l1", "optimum"][2]
    assert rows["l1inf", "subgradient 200"][1] > rows["l1inf", "optimum"][1] + 30
    assert rows["l1inf", "subgradient 2000"][1] > rows["l1inf", "optimum"][1] + 30
    # the LP vertex is an optimum, so its support is within the interior-point one's
    assert rows["l1inf", "LP vertex"][1] <= rows["l1inf", "optimum"][1]
    assert rows["l1inf", "LP vertex"][2] > rows["l1", "LP vertex"][2]
    # more steps bring the objective closer to the optimum, not the support
    assert rows["l1inf", "subgradient 2000"][0] < rows["l1inf", "subgradient 200"][0]
