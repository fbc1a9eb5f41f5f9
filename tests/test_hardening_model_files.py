"""A model file is data until it is checked (issue: model files as data).

Loading used to check the types in a skops file but not what it rebuilt: ``coef_`` replaced by
a ``(1, 1)`` array loaded, and ``predict`` (compiled kernels, no bounds checks) read out of
bounds, or, with ``n_features_in_`` raised as well, ended in SIGSEGV; a classifier relabelled
as a regressor silently returned decision scores, and 42 of 44 estimators loaded as another
family. Now every fitted attribute is checked against the declaration of its class
(:mod:`multitask.estimators.fitted_state`) and the class recorded in the file against the
class rebuilt; prediction checks the shapes it uses even on a model edited in memory.

The tampering run (:func:`tamper_cases`) replaces every fitted attribute of every estimator
configuration in turn by a value of the wrong shape, of the wrong dtype, by NaN and by another
class's value (the same attribute of a model of another family fitted on a problem of other
sizes, or a value of another Python type), and relabels every file as every other class. Each
case runs in a child interpreter (a crash would otherwise end the test run). It must give 0
crashes and 0 silent loads. The default run takes a sample; the exhaustive run is slow::

    python -m pytest tests/test_hardening_model_files.py -m slow -q -s

and prints the counts (cases, refusals, valid values, silent loads, crashes).
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import warnings
import zipfile
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import is_classifier

import multitask as M
from multitask.estimators.fitted_state import FittedStateError
from multitask.persistence import ModelFileError, load_model, read_model_file, save_model

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from test_hardening_fuzz import ESTIMATORS, make_estimator  # noqa: E402

#: Estimator configurations: every public estimator, and the kernel classifier's two
#: kernel-dual configurations (their fitted state differs: dual coefficients, rows).
CONFIGS = [(n, {}) for n in ESTIMATORS] + [("MultiTaskKernelClassifier", {"kernel": "rbf"}),
                                           ("MultiTaskKernelClassifier",
                                            {"kernel": "precomputed"})]
#: Attributes for which NaN is a documented value (a measure that does not apply).
NAN_IS_VALID = {"optimality_", "duality_gap_"}
KINDS = ("wrong shape", "wrong dtype", "NaN", "another class's value")


def _label(name, kw):
    return name + (f"({', '.join(f'{k}={v}' for k, v in kw.items())})" if kw else "")


def _problem(m, d, seed, classifier, precomputed=False):
    rng = np.random.default_rng(seed)
    n = 10
    X = rng.standard_normal((n * m, d))
    task = np.repeat(np.arange(m), n)
    y = X @ rng.standard_normal(d) + 0.3 * rng.standard_normal(n * m)
    if classifier:
        y = (y > np.median(y)).astype(int)
        y[::n], y[1::n] = 0, 1
    if precomputed:
        X = X @ X.T
    return X, y, task


def fit_config(name, kw, m=3, d=4, seed=0):
    """``(model, X, task)``: the configuration fitted on a long-format problem."""
    est = make_estimator(name, **kw)
    X, y, task = _problem(m, d, seed, is_classifier(est), kw.get("kernel") == "precomputed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y, task)
    return est, X, task


def _fitted_names(est) -> list[str]:
    """What a fit stored: neither a hyper-parameter nor the class's declared transient state
    (``_transient``: kept between fits for a warm start, left out of files)."""
    params = set(est.get_params(deep=False))
    transient = set(getattr(type(est), "_transient", ()))
    return [n for n in vars(est) if n not in params and n not in transient]


# ----------------------------------------------------------------------------- tampering
def _wrong_shape(v, ref):
    if isinstance(v, np.ndarray):
        if v.ndim == 0 or v.size == 0:
            return np.zeros((2, 3))
        return np.concatenate([v, v[:1]])  # one more entry on the first axis
    if isinstance(v, (bool, np.bool_, int, float, np.integer, np.floating)):
        return np.array([v, v])
    if isinstance(v, list):
        return v + v[:1] if v else [np.zeros(2)]
    return [v, v]  # a string, a dict, an object: a list of them


#: Attributes holding labels (integers, strings, booleans or numbers are all valid labels).
LABELS = {"tasks_", "classes_"}


def _wrong_dtype(v, ref, name=""):
    if isinstance(v, np.ndarray):
        if name in LABELS or v.dtype.kind not in "iubf":
            return np.full(v.shape, 0.5 + 1j)  # complex: never a label, count or weight
        if v.dtype.kind in "iub":
            return v.astype(np.float64) + 0.5
        return v.astype(str)
    if isinstance(v, (bool, np.bool_)):
        return 1.5
    if isinstance(v, (int, np.integer)):
        return float(v) + 0.5
    if isinstance(v, (float, np.floating)):
        return str(v)
    if isinstance(v, str):
        return 3
    if isinstance(v, list):
        return [str(x) for x in v] if v else ["x"]
    return {"a": 1} if not isinstance(v, dict) else "a dict no more"


def _nan(v, ref):
    if isinstance(v, np.ndarray):
        return np.full(v.shape if v.size else (3,), np.nan)
    if isinstance(v, list):
        return [np.full(np.shape(x), np.nan) for x in v] if v else [np.nan]
    return float("nan")


def _replacement(kind, name, value, other):
    """The tampered value, or None when the kind does not apply (an equal value)."""
    ref = value
    if value is None:  # an optional attribute left empty: tamper a value of its kind
        value = other.get(name) if other.get(name) is not None else np.zeros(3)
    if kind == "wrong shape":
        return _wrong_shape(value, ref)
    if kind == "wrong dtype":
        return _wrong_dtype(value, ref, name)
    if kind == "NaN":
        return None if name in NAN_IS_VALID else _nan(value, ref)
    theirs = other.get(name)
    if theirs is not None and (type(theirs) is not type(value) or np.shape(theirs) != np.shape(
            value)):
        return theirs
    # no differing value of that attribute in the other model: a value of another class
    return other["solver_result_"] if not type(value).__name__ == "SolverResult" else "text"


def _other_values(name, kw):
    """The fitted attributes of a model of another family fitted on a problem of other sizes
    (5 tasks, 6 features), by attribute name."""
    partner = {"Classifier": "RobustMTLClassifier", "Regressor": "DirtyModelRegressor"}
    pick = "DirtyModelClassifier" if name.startswith("RobustMTL") else None
    key = "Classifier" if "Classifier" in name else "Regressor"
    other_name = pick or partner[key]
    if name.startswith("Dirty"):
        other_name = "SparseLowRank" + key
    est, _, _ = fit_config(other_name, {}, m=5, d=6, seed=1)
    values = {n: getattr(est, n) for n in _fitted_names(est)}
    kern, _, _ = fit_config("MultiTaskKernelClassifier", {"kernel": "rbf"}, m=5, d=6, seed=1)
    for n in _fitted_names(kern):
        values.setdefault(n, getattr(kern, n))
    return values


def tamper_cases(names=None, kinds=KINDS, relabel=True, attributes=None):
    """Yield ``(case, model, new_X, new_task, relabel_to)``: one tampered model per case
    (``names``: configurations, ``attributes``: the attributes to tamper, default all;
    ``relabel``: relabel as every other class, or as the listed ones)."""
    all_classes = list(ESTIMATORS) if relabel is True else list(relabel or ())
    for name, kw in CONFIGS:
        if names is not None and _label(name, kw) not in names:
            continue
        est, X, task = fit_config(name, kw)
        other = _other_values(name, kw)
        targets = [(a, est) for a in _fitted_names(est)]
        inner = getattr(est, "best_estimator_", None)
        if inner is not None:  # a search: its refitted model's attributes too
            targets += [(a, inner) for a in _fitted_names(inner)]
        for attr, holder in targets:
            if attributes is not None and attr not in attributes:
                continue
            for kind in kinds:
                bad = _replacement(kind, attr, getattr(holder, attr), other)
                if bad is None:
                    continue
                model = copy.deepcopy(est)
                setattr(model if holder is est else model.best_estimator_, attr, bad)
                where = attr if holder is est else f"best_estimator_.{attr}"
                yield {"model": _label(name, kw), "attribute": where, "kind": kind}, model, \
                    X, task, None
        if all_classes:
            for cls in all_classes:
                if cls != name and not (name, cls) == ("MultitaskKernelClassifier",
                                                       "MultiTaskKernelClassifier"):
                    for keep in (True, False):
                        kind = "relabelled" + ("" if keep else " (record removed too)")
                        yield {"model": _label(name, kw), "attribute": f"class -> {cls}",
                               "kind": kind}, est, X, task, (cls, keep)


def _relabel(path: Path, cls: str, keep_record: bool) -> None:
    """Edit the class name of the model in a skops file (as an attacker would)."""
    with zipfile.ZipFile(path) as z:
        files = {n: z.read(n) for n in z.namelist()}
    schema = json.loads(files["schema.json"])
    target = getattr(M, cls)
    node = schema["content"]["model"]
    node["__class__"], node["__module__"] = target.__name__, target.__module__
    if not keep_record:
        schema["content"].pop("model_class", None)
    files["schema.json"] = json.dumps(schema).encode()
    with zipfile.ZipFile(path, "w") as z:
        for n, b in files.items():
            z.writestr(n, b)


def run_case(case, model, X, task, relabel, folder: Path) -> str:
    """``"refused"``, ``"valid value"`` (a consistent file: loads and predicts), or a failure:
    ``"SILENT LOAD"`` (a tampered value accepted) or ``"CRASH ..."`` (another exception)."""
    path = folder / "m.skops"
    if path.exists():
        path.unlink()
    try:
        save_model(model, path)
    except ModelFileError:
        return "not writable"  # a value skops cannot store safely: no file to load
    if relabel is not None:
        _relabel(path, *relabel)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loaded = load_model(path)
    except ModelFileError as exc:
        name = case["attribute"].split(".")[-1].split(" ")[0]
        if relabel is None and name not in str(exc) and "hyper-parameter" not in str(exc):
            return f"REFUSED WITHOUT NAMING {name}: {str(exc)[:200]}"
        return "refused"
    except Exception as exc:  # noqa: BLE001 - classified
        return f"CRASH {type(exc).__name__}: {str(exc)[:200]}"
    if relabel is not None and not relabel[1]:
        # a consistent forgery (class and record both edited): the state of one family is a
        # valid state of the other; it must predict like the class it claims, without crash
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                loaded.predict(X, task)
        except ValueError:
            pass
        except Exception as exc:  # noqa: BLE001 - classified
            return f"CRASH at predict {type(exc).__name__}: {str(exc)[:160]}"
        return "loads as a consistent model of the claimed class"
    return "SILENT LOAD"


def child_main(names, kinds, relabel, attributes, out_path: str) -> None:
    """Run the cases (in a child interpreter); write ``[case, outcome]`` pairs as JSON."""
    import tempfile

    folder = Path(tempfile.mkdtemp())
    progress = open(out_path + ".progress", "w")  # noqa: SIM115 - kept open for the run
    outcomes = []
    for case, model, X, task, rel in tamper_cases(names, kinds, relabel, attributes):
        progress.write(json.dumps(case) + "\n")
        progress.flush()
        outcomes.append([case, run_case(case, model, X, task, rel, folder)])
    Path(out_path).write_text(json.dumps(outcomes))


def run_tampering(tmp_path, names=None, kinds=KINDS, relabel=True, attributes=None,
                  timeout=3000) -> list:
    out = tmp_path / "tamper.json"
    code = (f"import sys; sys.path.insert(0, {str(HERE)!r}); "
            f"import test_hardening_model_files as T; "
            f"T.child_main({names!r}, {tuple(kinds)!r}, {relabel!r}, {attributes!r}, "
            f"{str(out)!r})")
    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        last = Path(str(out) + ".progress").read_text().splitlines()[-1:]
        pytest.fail(f"the tampering run hung; last case: {last}")
    if proc.returncode != 0:
        last = Path(str(out) + ".progress").read_text().splitlines()[-1:]
        pytest.fail(f"the interpreter died (status {proc.returncode}) on case {last}\n"
                    f"{proc.stderr[-2000:]}")
    return json.loads(out.read_text())


def summarize(outcomes) -> Counter:
    counts = Counter()
    for _case, outcome in outcomes:
        head = outcome.split(":")[0]
        counts[head if not head.startswith("CRASH") else "CRASH"] += 1
        counts["cases"] += 1
    print("\ntampering: " + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
    by_kind = Counter((c["kind"], o.split(":")[0]) for c, o in outcomes)
    for (kind, outcome), n in sorted(by_kind.items()):
        print(f"  {kind:38s} {outcome:50s} {n}")
    return counts


def _failures(outcomes):
    return [(c, o) for c, o in outcomes if o.startswith(("SILENT", "CRASH", "REFUSED WITHOUT"))]


#: The sample of the default run: the attributes of the issue's findings and a split model's
#: own, every kind of tampering, three relabellings (the exhaustive run is the slow test).
SAMPLE_ATTRIBUTES = ["n_features_in_", "tasks_", "coef_", "intercept_", "classes_",
                     "coef_variable_", "group_component_", "solver_"]


def test_tampering_sample(tmp_path):
    outcomes = run_tampering(tmp_path, names=["DirtyModelClassifier"],
                             attributes=SAMPLE_ATTRIBUTES,
                             relabel=["DirtyModelRegressor", "L21Classifier",
                                      "MultiTaskKernelClassifier"])
    counts = summarize(outcomes)
    assert not _failures(outcomes), _failures(outcomes)[:5]
    assert counts["refused"] >= 35


@pytest.mark.slow
def test_tampering_every_estimator(tmp_path):
    """The exhaustive run: every configuration, attribute, tampering kind and relabelling."""
    outcomes = run_tampering(tmp_path)
    summarize(outcomes)
    assert not _failures(outcomes), _failures(outcomes)[:10]


# ----------------------------------------------------------------------------- the findings
def _saved(tmp_path, est):
    path = tmp_path / "m.skops"
    save_model(est, path)
    return path


def test_coef_of_the_wrong_shape_is_refused_by_name(tmp_path):
    """``coef_`` replaced by a ``(1, 1)`` array loaded and predicted values read out of
    bounds (finding 1)."""
    est, X, task = fit_config("TraceNormRegressor", {})
    est.coef_ = np.zeros((1, 1))
    with pytest.raises(ModelFileError, match=r"coef_.*shape"):
        load_model(_saved(tmp_path, est))


def test_raised_feature_count_is_refused(tmp_path):
    """``coef_`` and ``n_features_in_`` raised together ended in SIGSEGV on a one-row sparse
    input: both now disagree with ``coef_variable_``."""
    est, X, task = fit_config("L21Regressor", {})
    est.n_features_in_ = 10**6
    est.coef_ = np.zeros((3, 10**6 // 10**4))
    with pytest.raises(ModelFileError, match=r"coef_"):
        load_model(_saved(tmp_path, est))


def test_classifier_relabelled_as_regressor_is_refused(tmp_path):
    est, X, task = fit_config("L21Classifier", {})
    path = _saved(tmp_path, est)
    _relabel(path, "L21Regressor", keep_record=True)
    with pytest.raises(ModelFileError, match="records a multitask.estimators.baselines."
                                             "L21Classifier but holds a .*L21Regressor"):
        load_model(path)
    _relabel(path, "L21Regressor", keep_record=False)  # the record removed as well
    # (a regressor has a loss too, with its own parameters: one of them is missing)
    with pytest.raises(ModelFileError, match=r"L21Regressor\.(classes_: is not an |"
                                             r"(epsilon|power|quantile): the hyper-parameter "
                                             r"is missing)"):
        load_model(path)


def test_families_relabelled_are_refused(tmp_path):
    """Dirty model as the l2,1 model, trace norm as sparse + low rank, both records edited:
    the family's own attributes or hyper-parameters betray them."""
    for src, dst in [("DirtyModelRegressor", "L21Regressor"),
                     ("TraceNormRegressor", "SparseLowRankRegressor"),
                     ("RobustMTLClassifier", "TraceNormClassifier")]:
        est, X, task = fit_config(src, {})
        path = _saved(tmp_path, est)
        _relabel(path, dst, keep_record=False)
        with pytest.raises(ModelFileError, match=dst):
            load_model(path)


def test_every_estimator_file_round_trips_and_predicts_alike(tmp_path):
    """The checks accept every legitimate file of every configuration, and every attribute a
    fit stores is declared by its class (a new fitted attribute must be declared, else its
    files are refused)."""
    for name, kw in CONFIGS:
        est, X, task = fit_config(name, kw)
        declared = type(est)._fitted_declaration()
        missing = [a for a in _fitted_names(est) if a not in declared]
        assert not missing, (name, missing)
        loaded = load_model(_saved(tmp_path, est))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            np.testing.assert_array_equal(np.asarray(loaded.predict(X, task)),
                                          np.asarray(est.predict(X, task)))


def test_pickle_files_are_checked_too(tmp_path):
    import joblib

    est, X, task = fit_config("TraceNormRegressor", {})
    est.intercept_ = np.zeros(7)
    joblib.dump(est, tmp_path / "m.joblib")
    with pytest.raises(ModelFileError, match="intercept_"):
        read_model_file(tmp_path / "m.joblib", allow_pickle=True)


def test_search_files_check_their_refitted_model(tmp_path):
    est, X, task = fit_config("MultiTaskCV", {})
    est.best_estimator_.coef_ = np.zeros((3, 1))
    with pytest.raises(ModelFileError, match=r"best_estimator_: .*coef_"):
        load_model(_saved(tmp_path, est))
    est, X, task = fit_config("MultiTaskCV", {})
    est.best_estimator_ = make_estimator("TraceNormRegressor").fit(X, np.arange(len(X)) % 3,
                                                                   task)
    with pytest.raises(ModelFileError, match="must be a L21Regressor"):
        load_model(_saved(tmp_path, est))


@pytest.mark.parametrize("attr, value", [("coef_", np.zeros((1, 1))),
                                         ("coef_", np.zeros((3, 400))),
                                         ("intercept_", np.zeros(1)),
                                         ("coef_", "text")])
def test_models_edited_in_memory_get_a_value_error(attr, value):
    """The compiled kernels are never called with inconsistent shapes: prediction checks the
    shapes it uses on each call (dense, sparse and per-task lists)."""
    import scipy.sparse as sp

    est, X, task = fit_config("L21Regressor", {})
    setattr(est, attr, value)
    for given in (X, sp.csr_matrix(X[:1]), [X[task == t] for t in range(3)]):
        t = task if given is X else (task[:1] if sp.issparse(given) else None)
        with pytest.raises(ValueError, match=attr):
            est.predict(given, t) if t is not None else est.predict(given)


def test_compiled_products_refuse_inconsistent_shapes():
    from multitask.data import as_multitask_data

    X, y, task = _problem(3, 4, 0, False)
    data, _ = as_multitask_data(X, y, task)
    with pytest.raises(ValueError, match="W has shape"):
        data.matvec(np.zeros((1, 1)))
    with pytest.raises(ValueError, match="R has shape"):
        data.rmatvec(np.zeros(2))


def test_validator_names_each_problem():
    """Direct checks of the validator (no file): what each refusal says."""
    from multitask.estimators.fitted_state import check_fitted_state

    est, X, task = fit_config("DirtyModelRegressor", {})
    check_fitted_state(est)
    cases = {"tasks_": (np.array([0, 0, 1]), "label twice"),
             "shared_features_": (np.array([0, 99]), r"indices in \[0, 4\)"),
             "group_component_": (est.group_component_ + 1.0, "part 0 of coef_variable_"),
             "optimality_": (-1.0, ">= 0"),
             "solver_": ("fista", "must be a Solver"),
             "coef_variable_": (est.coef_variable_[:1], "shape")}
    for attr, (bad, message) in cases.items():
        broken = copy.deepcopy(est)
        setattr(broken, attr, bad)
        with pytest.raises(FittedStateError, match=message):
            check_fitted_state(broken)
    broken = copy.deepcopy(est)
    broken.alpha_group = -1.0
    with pytest.raises(FittedStateError, match="alpha_group"):
        check_fitted_state(broken)
    del broken.alpha_group
    with pytest.raises(FittedStateError, match="alpha_group.*missing"):
        check_fitted_state(broken)


def test_models_with_new_tasks_round_trip(tmp_path):
    """Tasks added by ``fit_new_tasks`` extend ``coef_`` but not the fit's own structures
    (graph, clusters, outlier norms): the declarations follow (symbol ``"t"``)."""
    for name in ("DirtyModelRegressor", "PooledClassifier", "GraphRegularizedRegressor",
                 "ClusteredMTLClassifier", "RobustMTLRegressor"):
        est, X, task = fit_config(name, {})
        X2, y2, t2 = _problem(2, 4, 5, is_classifier(est))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit_new_tasks(X2, y2, task=t2 + 10)
        loaded = load_model(_saved(tmp_path, est))
        assert len(loaded.tasks_) == 5


def test_unfitted_models_pass(tmp_path):
    loaded = load_model(_saved(tmp_path, M.TraceNormRegressor(alpha=0.3)))
    assert loaded.alpha == 0.3


def test_sample_cases_are_generated_for_every_kind():
    cases = Counter(c["kind"] for c, *_ in tamper_cases(["L21Regressor"], relabel=False))
    assert set(cases) == set(KINDS) and min(cases.values()) >= 10


os.environ.setdefault("PYTHONHASHSEED", "0")
