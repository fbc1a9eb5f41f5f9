"""New tasks after fit without silent wrong answers (issue 33, items 1, 7 and 10).

* Task ids: the fitted ids and the new ones are held by one array of a type that keeps every
  id's value (``uint64`` ids of ``2**63`` or more beside ``int64`` ones, float ids beside
  ``int64`` ids beyond ``2**53``), or the new ids are refused naming them: two ids never
  become one, a fitted id never changes, and each task predicts with its own model. Every
  estimator with ``fit_new_tasks`` (and :class:`multitask.MultiTaskCV`) is covered.
* Extreme strengths: ``strength=1e-30`` gives the limit of small strengths (the fit of the
  task's rows closest to the prior), ``1e30`` that of large ones, for every prior; never
  numpy's "Singular matrix".
* ``strength="auto"`` with too few rows for cross-validation compares ``"scaled"`` with the
  population model by leave-one-out on the new rows, and every added task records its
  strength and how it was chosen (``new_task_strength_``, ``new_task_strength_rule_``).
"""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest

import multitask
import multitask.data.new_rows as new_rows
import multitask.estimators.new_tasks as new_tasks
from multitask.estimators.fitted_state import check_fitted_state
from multitask.metrics import nmse
from multitask.persistence import load_model, save_model
from multitask.solvers.new_tasks import GaussianSystem, closed_form

#: Models whose penalty gives a new task no place (they refuse fit_new_tasks, with the reason).
NO_NEW_TASKS = ("FusedSparseGroupLassoClassifier", "FusedSparseGroupLassoRegressor",
                "MultiTaskKernelClassifier", "MultitaskKernelClassifier",
                "TemporalGroupLassoClassifier", "TemporalGroupLassoRegressor")
WITH_NEW_TASKS = sorted(
    n for n in multitask.__all__ if isinstance(getattr(multitask, n), type)
    and hasattr(getattr(multitask, n), "fit_new_tasks") and n not in NO_NEW_TASKS)
REGRESSORS = [n for n in WITH_NEW_TASKS if n.endswith("Regressor")]


def _model(name):
    if name == "MultiTaskCV":
        return multitask.MultiTaskCV(multitask.TraceNormRegressor(), n_alphas=2, cv=2)
    return getattr(multitask, name)()


def _rows(rng, ids, n, d=3, classify=False):
    task = np.repeat(ids, n)
    X = rng.standard_normal((len(task), d))
    y = X @ rng.standard_normal(d) + rng.standard_normal(len(task))
    if classify:
        y = np.tile([0, 1], len(task) // 2 + 1)[: len(task)]
    return X, y, task


def _fit(est, X, y, t):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(X, y, t)


def _inner(est):
    return getattr(est, "best_estimator_", est)


# ----------------------------------------------------------------------------- item 1: ids
@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_every_estimator_with_new_tasks_is_listed():
    """The list below covers every public estimator with fit_new_tasks; the others refuse."""
    rng = np.random.default_rng(0)
    X, y, t = _rows(rng, np.arange(3), 6)
    for name in NO_NEW_TASKS:
        est = _fit(getattr(multitask, name)(), X, (y > 0).astype(int) if "Classifier" in name
                   else y, t)
        with pytest.raises(NotImplementedError):
            est.fit_new_tasks(X[:4], ((y > 0).astype(int) if "Classifier" in name else y)[:4],
                              np.full(4, 99))
    assert "MultiTaskCV" in WITH_NEW_TASKS and len(WITH_NEW_TASKS) >= 30


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", WITH_NEW_TASKS)
def test_large_uint64_ids_beside_int64_ids_stay_distinct(name):
    """int64 ids [2**62, 2**62 + 1] and new uint64 ids [2**63, 2**63 + 1]: concatenated by
    numpy they become float64 and collapse (two new tasks one id, the fitted ids rewritten);
    here every id keeps its value and each task predicts with its own model."""
    rng = np.random.default_rng(1)
    classify = "Classifier" in name
    fitted_ids = np.array([2**62, 2**62 + 1], dtype=np.int64)
    X, y, t = _rows(rng, fitted_ids, 8, classify=classify)
    est = _fit(_model(name), X, y, t)
    before = _inner(est).tasks_.tolist()
    coef = _inner(est).coef_.copy()
    new_ids = np.array([2**63, 2**63 + 1], dtype=np.uint64)
    Xn, yn, tn = _rows(rng, new_ids, 4, classify=classify)
    yn = yn if classify else yn + np.repeat([-50.0, 50.0], 4)  # two very different tasks
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit_new_tasks(Xn, yn, tn, strength="scaled")
    inner = _inner(est)
    assert inner.tasks_.tolist() == before + new_ids.tolist()
    assert len(set(inner.tasks_.tolist())) == 4
    np.testing.assert_array_equal(inner.coef_[:2], coef)
    # each new task is scored by its own row of coef_ (not by the other task's)
    scores = est.decision_function(Xn, tn) if classify else est.predict(Xn, tn)
    expected = np.einsum("nd,nd->n", Xn, inner.coef_[2 + np.repeat([0, 1], 4)]) + \
        inner.intercept_[2 + np.repeat([0, 1], 4)]
    np.testing.assert_allclose(scores, expected, rtol=1e-12, atol=1e-12)
    if not classify:
        assert np.mean(est.predict(Xn[4:], tn[4:])) > np.mean(est.predict(Xn[:4], tn[:4]))
    np.testing.assert_allclose(est.predict(X, t), _fit(copy.deepcopy(_model(name)), X, y,
                                                       t).predict(X, t), rtol=1e-12)


@pytest.mark.parametrize(("fitted", "new", "refused"), [
    (np.array([2**53 + 1, 2**53 + 3]), np.array([0.5, 1.5]), [2**53 + 1]),
    (np.array([-1, 3]), np.array([2**63, 2**63 + 1], dtype=np.uint64), [2**63 + 1]),
])
def test_ids_no_type_holds_are_refused_naming_them(fitted, new, refused):
    """No numeric type holds both id sets exactly: a ValueError naming the ids that would
    change, and the model as it was."""
    rng = np.random.default_rng(2)
    est = _fit(multitask.MeanRegularizedRegressor(), *_rows(rng, fitted, 5))
    state = copy.deepcopy(vars(est))
    with pytest.raises(ValueError, match="no numeric type") as err:
        est.fit_new_tasks(*_rows(rng, new, 3))
    assert all(str(v) in str(err.value) for v in refused)
    assert est.tasks_.tolist() == state["tasks_"].tolist()
    np.testing.assert_array_equal(est.coef_, state["coef_"])
    assert not hasattr(est, "new_task_strength_")


@pytest.mark.parametrize(("fitted", "new", "dtype"), [
    (np.array([1, 2], dtype=np.int8), np.array([300, 301]), np.int64),
    (np.array([1, 2], dtype=np.uint8), np.array([-5, 7], dtype=np.int8), np.int16),
    (np.array([2**62, 5]), np.array([0.5, 2.5]), np.float64),
    (np.array([0.5, 1.5]), np.array([2**62, 3]), np.float64),
    (np.array([3, 4], dtype=np.uint64), np.array([2**63 + 5], dtype=np.uint64), np.uint64),
])
def test_ids_are_held_exactly(fitted, new, dtype):
    out = new_rows.append_task_ids(fitted, new)
    assert out.dtype == dtype
    assert out.tolist() == fitted.tolist() + new.tolist()


def test_fractional_floats_and_large_int64_ids_cannot_share_float64():
    with pytest.raises(ValueError, match="float64 cannot hold"):
        new_rows.append_task_ids(np.array([0.5, 1.5]), np.array([2**62 + 1, 7]))


def test_new_ids_equal_to_fitted_ids_are_still_refused():
    rng = np.random.default_rng(3)
    est = _fit(multitask.TraceNormRegressor(), *_rows(rng, np.array([2**62, 7]), 5))
    with pytest.raises(ValueError, match="already a task"):
        est.fit_new_tasks(*_rows(rng, np.array([2**62], dtype=np.uint64), 3))
    with pytest.raises(ValueError, match="already a task"):
        est.fit_new_tasks(*_rows(rng, np.array([7.0, 8.5]), 3))


def test_positional_ids_after_the_largest_id_do_not_overflow():
    """Per-task lists are numbered after the largest id: past int8's 127 (numpy's arange
    in int8 raised a bare OverflowError), and refused past 2**64 - 1."""
    rng = np.random.default_rng(4)
    est = _fit(multitask.MeanRegularizedRegressor(), *_rows(rng, np.array([3, 127],
                                                                         dtype=np.int8), 5))
    Xs = [rng.standard_normal((4, 3)) for _ in range(2)]
    ys = [rng.standard_normal(4) for _ in range(2)]
    est.fit_new_tasks(Xs, ys)
    assert est.tasks_.tolist() == [3, 127, 128, 129]
    top = _fit(multitask.MeanRegularizedRegressor(),
               *_rows(rng, np.array([2**64 - 1], dtype=np.uint64), 5))
    with pytest.raises(ValueError, match="2\\*\\*64 - 1"):
        top.fit_new_tasks(Xs, ys)


def test_large_ids_save_and_load(tmp_path):
    rng = np.random.default_rng(5)
    est = _fit(multitask.TraceNormRegressor(), *_rows(rng, np.array([2**62, 2**62 + 1]), 6))
    Xn, yn, tn = _rows(rng, np.array([2**63, 2**63 + 1], dtype=np.uint64), 3)
    est.fit_new_tasks(Xn, yn, tn)
    path = save_model(est, tmp_path / "model.skops")
    back = load_model(path)
    assert back.tasks_.tolist() == est.tasks_.tolist()
    np.testing.assert_array_equal(back.predict(Xn, tn), est.predict(Xn, tn))
    np.testing.assert_array_equal(back.new_task_strength_, est.new_task_strength_)
    np.testing.assert_array_equal(back.new_task_strength_rule_, est.new_task_strength_rule_)


# ----------------------------------------------------------------------------- item 7: strength
def _new_fit(est, Xn, yn, tn, strength):
    e = copy.deepcopy(est)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e.fit_new_tasks(Xn, yn, tn, strength=strength)
    return np.column_stack([e.coef_[-2:], e.intercept_[-2:]])


def test_sparse_low_rank_tiny_strength_is_the_limit():
    """strength=1e-30 raised numpy's "Singular matrix"; it is the limit of small
    strengths."""
    rng = np.random.default_rng(6)
    d = 4
    X, y, t = _rows(rng, np.arange(6), 10, d=d)
    est = _fit(multitask.SparseLowRankRegressor(), X, y, t)
    Xn, yn, tn = _rows(rng, np.array([100, 101]), 2, d=d)
    tiny = _new_fit(est, Xn, yn, tn, 1e-30)
    assert np.all(np.isfinite(tiny))
    np.testing.assert_allclose(tiny, _new_fit(est, Xn, yn, tn, 1e-12), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(tiny, _new_fit(est, Xn, yn, tn, 1e-300), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", REGRESSORS)
@pytest.mark.parametrize("rows", [2, 4])
def test_extreme_strengths_give_the_limits(name, rows):
    """Every prior at strengths 1e-30 and 1e30 (2 rows per task: fewer rows than features;
    4 with d = 4 and an intercept: a singular Gram matrix): finite, and the limit of small
    (large) strengths, equal to the result at 1e-12 (1e12)."""
    rng = np.random.default_rng(7)
    d = 4
    X, y, t = _rows(rng, np.arange(6), 10, d=d)
    est = _fit(getattr(multitask, name)(), X, y, t)
    Xn, yn, tn = _rows(rng, np.array([100, 101]), rows, d=d)
    for extreme, near in ((1e-30, 1e-12), (1e30, 1e12)):
        got = _new_fit(est, Xn, yn, tn, extreme)
        assert np.all(np.isfinite(got)), (name, extreme)
        np.testing.assert_allclose(got, _new_fit(est, Xn, yn, tn, near), rtol=1e-5,
                                   atol=1e-7, err_msg=f"{name} at {extreme}")


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", [n for n in WITH_NEW_TASKS if n.endswith("Classifier")])
def test_extreme_strengths_of_classifiers_are_finite(name):
    rng = np.random.default_rng(8)
    X, y, t = _rows(rng, np.arange(4), 10, classify=True)
    est = _fit(getattr(multitask, name)(), X, y, t)
    Xn, yn, tn = _rows(rng, np.array([100, 101]), 2, classify=True)
    for strength in (1e-30, 1e30):
        assert np.all(np.isfinite(_new_fit(est, Xn, yn, tn, strength))), (name, strength)


@pytest.mark.parametrize("name", ["TraceNormRegressor", "MeanRegularizedRegressor",
                                  "TaskRelationshipRegressor", "ConvexASORegressor"])
@pytest.mark.parametrize("rows", [2, 4, 6])
def test_closed_form_limit_is_the_fit_closest_to_the_prior(name, rows):
    """At c -> 0 the closed form is the fit of the task's rows (an interpolation with fewer
    rows than unknowns) of least prior norm: the numpy twin and the compiled kernel agree
    with the solution at a small strength, and no factorization fails."""
    rng = np.random.default_rng(9)
    d = 4
    X, y, t = _rows(rng, np.arange(6), 10, d=d)
    est = _fit(getattr(multitask, name)(), X, y, t)
    est.fit_new_tasks(*_rows(rng, np.array([50]), 3, d=d))  # the prior is built and kept
    from multitask.estimators.fitted_structure import fitted_structure
    from multitask.estimators.new_tasks import convert_new_rows

    prior = fitted_structure(est).prior
    data, _ = convert_new_rows(est, *_rows(rng, np.array([100, 101]), rows, d=d), None)
    small = closed_form(data, prior, True, 0.0, np.full(2, 1e-9))
    for c in (1e-30, 1e-300, 0.0):
        W, b = GaussianSystem(data, prior, True, 0.0).solve(np.full(2, c))
        assert np.all(np.isfinite(W)) and np.all(np.isfinite(b))
        np.testing.assert_allclose(W, small[0], rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(b, small[1], rtol=1e-5, atol=1e-7)
    losses = GaussianSystem(data, prior, True, 0.0).loo_losses(np.full((1, 2), 1e-300))
    assert losses.shape == (1,) and not np.isnan(losses[0])


# ----------------------------------------------------------------------------- item 10: auto
def survey(seed, n_tasks=40, fit_rows=8, new_tasks=20, new_rows=2, d=10, test_rows=20,
           heterogeneity=0.2):
    """A small problem shaped like the survey of the report (benchmarks/bench_new_tasks.py
    --survey): persons alike beside the noise of their answers."""
    rng = np.random.default_rng([seed, 33])
    m = n_tasks + new_tasks
    w0 = rng.standard_normal(d) / np.sqrt(d)
    U = rng.standard_normal((d, 2)) / np.sqrt(d)
    W = w0 + heterogeneity * rng.standard_normal((m, 2)) @ U.T
    b = 1.0 + heterogeneity * rng.standard_normal(m)

    def rows(tasks, n):
        task = np.repeat(tasks, n)
        X = rng.standard_normal((len(task), d))
        return X, np.einsum("nd,nd->n", X, W[task]) + b[task] + rng.standard_normal(
            len(task)), task

    new = np.arange(n_tasks, m)
    return rows(np.arange(n_tasks), fit_rows), rows(new, new_rows), rows(new, test_rows)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", ["TraceNormRegressor", "L21Regressor",
                                  "TaskRelationshipRegressor"])
def test_auto_with_two_rows_is_no_worse_than_the_population_model(name):
    """With 2 rows per new task "auto" fell back to "scaled", worse than the population
    model on persons alike; it now compares the two on tasks like the fitted ones and is no
    worse."""
    worse = []
    for seed in range(3):
        (X, y, t), (Xn, yn, tn), (Xt, yt, tt) = survey(seed)
        est = _fit(getattr(multitask, name)(), X, y, t)
        population = nmse(yt, est.predict(Xt, tt, unknown_tasks="population"))
        auto = copy.deepcopy(est).fit_new_tasks(Xn, yn, tn)
        scaled = copy.deepcopy(est).fit_new_tasks(Xn, yn, tn, strength="scaled")
        assert nmse(yt, auto.predict(Xt, tt)) <= population * (1 + 1e-9)
        worse.append(nmse(yt, scaled.predict(Xt, tt)) > population)
        assert all(r.startswith("auto -> population model: expected squared error")
                   for r in auto.new_task_strength_rule_)
        assert np.all(np.isnan(auto.new_task_strength_))
        # the population model's coefficients, the fitted tasks untouched
        w, b0 = est.coef_.mean(axis=0), est.intercept_.mean()
        np.testing.assert_allclose(auto.coef_[len(est.tasks_):], np.tile(w, (20, 1)))
        np.testing.assert_allclose(auto.intercept_[len(est.tasks_):], b0)
        np.testing.assert_array_equal(auto.coef_[: len(est.tasks_)], est.coef_)
        check_fitted_state(auto)
    assert all(worse)  # the case of the report: "scaled" is worse here


@pytest.mark.filterwarnings("ignore")
def test_auto_keeps_scaled_where_the_tasks_differ():
    """Tasks far from one another (2 rows each): "auto" keeps "scaled", which predicts them
    better than the population model."""
    for seed in (1, 2):
        (X, y, t), (Xn, yn, tn), (Xt, yt, tt) = survey(seed, heterogeneity=6.0)
        est = _fit(multitask.TraceNormRegressor(), X, y, t)
        auto = copy.deepcopy(est).fit_new_tasks(Xn, yn, tn)
        assert auto.new_task_strength_rule_[0].startswith("auto -> scaled: expected")
        scaled = copy.deepcopy(est).fit_new_tasks(Xn, yn, tn, strength="scaled")
        np.testing.assert_array_equal(auto.coef_, scaled.coef_)
        assert nmse(yt, auto.predict(Xt, tt)) < nmse(
            yt, est.predict(Xt, tt, unknown_tasks="population"))


def test_the_comparison_is_seeded_and_prefers_the_population_model_of_alike_tasks():
    """The same model and rows give the same answer; fitted tasks all alike (a strong mean
    regularization) make the population model the better one."""
    (X, y, t), (Xn, yn, tn), _ = survey(0, n_tasks=12, new_tasks=3, new_rows=3, d=4)
    from multitask.estimators.fitted_structure import fitted_structure

    for alpha, population_wins in ((1e6, True), (1e-3, None)):
        est = _fit(multitask.MeanRegularizedRegressor(alpha=alpha), X, y, t)
        structure = fitted_structure(est)
        data, _ = new_tasks.convert_new_rows(est, Xn, yn, tn, None)
        first = new_tasks.compare_with_population(est, data, structure.prior, structure.nbar)
        again = new_tasks.compare_with_population(est, data, structure.prior, structure.nbar)
        assert first == again and all(np.isfinite(first))
        if population_wins:
            assert first[1] < first[0]


def test_leave_one_out_error_matches_refits():
    """The leave-one-out error that calibrates the comparison: each row predicted by the fit
    of its task's other rows at c = nbar / (n_t - 1)."""
    (X, y, t), (Xn, yn, tn), _ = survey(0, n_tasks=12, new_tasks=3, new_rows=3, d=4)
    est = _fit(multitask.TraceNormRegressor(), X, y, t)
    from multitask.estimators.fitted_structure import fitted_structure

    structure = fitted_structure(est)
    data, _ = new_tasks.convert_new_rows(est, Xn, yn, tn, None)
    got = new_tasks._loo_error(new_tasks.solve_settings(est), data, structure.prior,
                               structure.nbar)
    errors = []
    for i in range(len(yn)):
        keep = (np.arange(len(yn)) != i) & (tn == tn[i])
        e = copy.deepcopy(est).fit_new_tasks(Xn[keep], yn[keep], tn[keep],
                                             strength=structure.nbar / int(keep.sum()))
        errors.append(float(e.predict(Xn[i:i + 1], tn[i:i + 1])[0] - yn[i]) ** 2)
    assert got == pytest.approx(np.mean(errors), rel=1e-8)


@pytest.mark.parametrize(("strength", "rule"), [
    ("scaled", "scaled"), ("fitted", "fitted"), (2.5, "number"), ("cv", "cv: multiplier"),
    ("auto", "auto -> cv: multiplier")])
def test_the_strength_of_each_new_task_is_recorded(strength, rule):
    rng = np.random.default_rng(10)
    X, y, t = _rows(rng, np.arange(5), 12)
    est = _fit(multitask.TraceNormRegressor(), X, y, t)
    nbar = 12.0
    Xn, yn, tn = _rows(rng, np.array([20, 21, 22]), 10)
    est.fit_new_tasks(Xn, yn, tn, strength=strength)
    assert est.new_task_strength_.shape == (3,)
    assert all(r.startswith(rule) for r in est.new_task_strength_rule_)
    expected = {"scaled": nbar / 10, "fitted": 1.0, 2.5: 2.5}.get(strength)
    if expected is not None:
        np.testing.assert_allclose(est.new_task_strength_, expected)
    else:
        g = float(est.new_task_strength_rule_[0].split("multiplier ")[1].split()[0])
        np.testing.assert_allclose(est.new_task_strength_, g * nbar / 10, rtol=1e-3)
    # a second call appends; a refit forgets
    est.fit_new_tasks(*_rows(rng, np.array([30]), 1), strength="auto")
    assert est.new_task_strength_rule_[-1].startswith("auto -> ")
    assert "expected squared error" in est.new_task_strength_rule_[-1]
    assert est.new_task_strength_.shape == (4,)
    check_fitted_state(est)
    est.fit(X, y, t)
    assert not hasattr(est, "new_task_strength_")
    check_fitted_state(est)


@pytest.mark.filterwarnings("ignore")
def test_classifier_auto_says_it_did_not_compare():
    rng = np.random.default_rng(11)
    X, y, t = _rows(rng, np.arange(4), 10, classify=True)
    est = _fit(multitask.TraceNormClassifier(), X, y, t)
    est.fit_new_tasks(*_rows(rng, np.array([9]), 2, classify=True))
    assert est.new_task_strength_rule_[0].startswith("auto -> scaled: not compared")
    assert est.new_task_strength_[0] == pytest.approx(10 / 2)


def test_a_record_of_the_wrong_length_is_refused():
    rng = np.random.default_rng(12)
    est = _fit(multitask.TraceNormRegressor(), *_rows(rng, np.arange(3), 6))
    est.fit_new_tasks(*_rows(rng, np.array([7, 8]), 3), strength="scaled")
    est.new_task_strength_ = est.new_task_strength_[:1]
    with pytest.raises(ValueError, match="new_task_strength_"):
        check_fitted_state(est)
