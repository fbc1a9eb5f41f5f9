"""Each model page lists the losses its models fit, as fitting them finds.

Every page of ``docs/models`` has a section ``## Losses`` with one bullet per model of the page
(the models of ``PAGE_MODELS`` in ``test_docs_parameters.py``), and optionally bullets for a
setting that changes the list (``RobustMTLRegressor(formulation="constrained")``)::

    * `L21Regressor`: fits `"squared"`, ..., `"quantile"` (with `alpha_l2 = 0` only).
    * `L21Classifier`: fits `"logistic"` (any number of classes), `"squared_hinge"` (two
      classes).
    * `DirtyModelRegressor`: fits `"squared"`, ...; refuses `"quantile"`.

The probe (:func:`probe`) tries every loss of the library on every model with one fit on a
small problem (3 tasks of 24 rows, 4 features, ``max_iter=30``): regression targets that lie
in every loss's domain (counts plus one), two classes, and three classes for the losses a
classifier fits. A loss the model's ``loss`` parameter does not offer is not listed; a loss it
offers but refuses at fit (a ``ValueError``: no solver of the model applies, or more than two
classes for a two-class loss) is listed after "refuses". The pinball loss is tried again with
``alpha_l2 = 0.1``; "(with `alpha_l2 = 0` only)" marks a model that refuses it then. Settings
of the models that the pages do not list (the generic models' other penalties, the dirty
model's ``q = 2``, the other l1,inf constraints, divide-and-conquer for regression) must give
the lists of their model's defaults.

``python tests/test_docs_losses.py`` prints the bullets the probe finds, page by page.
"""

from __future__ import annotations

import ast
import re
import sys
import warnings
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from sklearn.utils._param_validation import InvalidParameterError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_docs_parameters import CLASSES, PAGE_MODELS, _classes_of  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

#: Every loss of the library, in the order the pages list them.
LOSSES = ("squared", "poisson", "gamma", "tweedie", "huber", "quantile", "logistic",
          "squared_hinge", "hinge")

#: Settings that could change a model's losses, not listed on the pages: each must give the
#: lists of its model's defaults (a page lists a setting that differs, and the test reads it).
SAME_AS_DEFAULT = (
    'MultiTaskRegressor(penalty="l21")', 'MultiTaskRegressor(penalty="l1")',
    'MultiTaskRegressor(penalty="ridge")', 'MultiTaskRegressor(penalty="column_l2")',
    'MultiTaskClassifier(penalty="l21")', 'MultiTaskClassifier(penalty="l1")',
    'MultiTaskClassifier(penalty="ridge")', 'MultiTaskClassifier(penalty="column_l2")',
    "DirtyModelRegressor(q=2)", "DirtyModelClassifier(q=2)",
    'L1InfRegressor(constraint="l1")', 'L1InfRegressor(constraint="l2")',
    "RobustMTLRegressor(n_groups=2)",
)

SECTION = "## Losses"


def _spec(spec: str) -> tuple[str, dict]:
    """``"Name"`` or ``"Name(key=literal, ...)"`` -> ``(name, keywords)``."""
    call = ast.parse(spec, mode="eval").body
    if isinstance(call, ast.Name):
        return call.id, {}
    assert isinstance(call, ast.Call) and isinstance(call.func, ast.Name), spec
    return call.func.id, {k.arg: ast.literal_eval(k.value) for k in call.keywords}


@cache
def _problem():
    rng = np.random.default_rng(0)
    m, n, d = 3, 24, 4
    X = rng.standard_normal((m * n, d))
    task = np.repeat(np.arange(m), n)
    counts = 1.0 + rng.poisson(np.exp(0.3 * X @ rng.standard_normal(d)))
    two = (X @ rng.standard_normal(d) + 0.5 * rng.standard_normal(m * n) > 0).astype(int)
    three = np.argmax(X[:, :3] + 0.5 * rng.standard_normal((m * n, 3)), axis=1)
    return X, task, counts, two, three


def _fit(spec: str, y, **params) -> str | None:
    """``None`` when the model fits; ``"not offered"`` when its ``loss`` parameter does not
    take the loss; otherwise the refusal's message."""
    name, kw = _spec(spec)
    X, task, *_ = _problem()
    est = CLASSES[name](**kw)
    if "graph" in est.get_params() and est.get_params()["graph"] is None:
        est.set_params(graph=np.ones((3, 3)) - np.eye(3))
    if "max_iter" in est.get_params():
        est.set_params(max_iter=30)
    try:
        est.set_params(**params)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X, y, task=task)
    except InvalidParameterError:
        return "not offered"
    except ValueError as exc:
        if str(exc).startswith("loss must be"):  # the kernel model checks its own option
            return "not offered"
        return str(exc)
    return None


@cache
def probe(spec: str) -> dict[str, dict]:
    """``loss -> {"fits": bool, "why": str, "classes": "any" | "two" | None, "alpha_l2": bool}``
    for every loss the model's ``loss`` parameter offers."""
    _, _, counts, two, three = _problem()
    classifier = _spec(spec)[0].endswith("Classifier")
    out = {}
    for loss in LOSSES:
        why = _fit(spec, two if classifier else counts, loss=loss)
        if why == "not offered":
            continue
        row = {"fits": why is None, "why": why or "", "classes": None, "alpha_l2": True}
        if classifier and why is None:
            row["classes"] = "any" if _fit(spec, three, loss=loss) is None else "two"
        if loss == "quantile" and why is None:
            row["alpha_l2"] = _fit(spec, counts, loss=loss, alpha_l2=0.1) is None
        out[loss] = row
    return out


def bullet(spec: str) -> str:
    """The page's bullet for ``spec``, from the probe."""
    rows = probe(spec)
    fits, refused = [], []
    for loss, row in rows.items():
        if not row["fits"]:
            refused.append(f'`"{loss}"`')
            continue
        note = {"any": " (any number of classes)", "two": " (two classes)"}.get(row["classes"],
                                                                                 "")
        if not row["alpha_l2"]:
            note = " (with `alpha_l2 = 0` only)"
        fits.append(f'`"{loss}"`{note}')
    text = f"* `{spec}`: fits {', '.join(fits)}"
    return text + (f"; refuses {', '.join(refused)}." if refused else ".")


def stated(text: str) -> dict[str, str]:
    """``spec -> bullet text`` of the page's ``## Losses`` section (bullets joined to one
    line, whitespace normalized)."""
    assert text.count(f"\n{SECTION}\n") == 1, "no section '## Losses'"
    section = text.split(f"\n{SECTION}\n", 1)[1].split("\n## ", 1)[0]
    out = {}
    for item in re.split(r"\n(?=\* )", section):
        item = " ".join(item.split())
        m = re.match(r"\* `([A-Z]\w*(?:\([^`]*\))?)`: (fits .*)", item)
        if m:
            out[m.group(1)] = f"* `{m.group(1)}`: {m.group(2)}"
    return out


def _parsed(line: str) -> dict[str, tuple]:
    """``loss -> (fits, note)`` of one bullet."""
    fits, _, refused = line.partition("; refuses ")
    out = {}
    for part, ok in ((fits, True), (refused, False)):
        for m in re.finditer(r'`"(\w+)"`( \([^)]*\))?', part):
            out[m.group(1)] = (ok, (m.group(2) or "").strip() if ok else "")
    return out


@pytest.mark.parametrize("page", sorted(PAGE_MODELS))
def test_model_page_lists_the_losses_its_models_fit(page):
    text = (ROOT / "docs" / "models" / page).read_text(encoding="utf-8")
    bullets = stated(text)
    classes = _classes_of(PAGE_MODELS[page])
    assert set(classes) <= set(bullets), f"{page}: no bullet for {set(classes) - set(bullets)}"
    for spec, line in bullets.items():
        assert _spec(spec)[0] in classes, f"{page}: {spec} is not a model of the page"
        want = bullet(spec)
        assert _parsed(line) == _parsed(want), (
            f"{page}: the losses of {spec} are\n{want}\nnot\n{line}\n"
            + "\n".join(f"  {k}: {r['why']}" for k, r in probe(spec).items() if r["why"]))


@pytest.mark.parametrize("spec", SAME_AS_DEFAULT)
def test_unlisted_settings_fit_the_losses_of_their_model(spec):
    assert probe(spec) .keys() == probe(_spec(spec)[0]).keys()
    ours = {k: (r["fits"], r["classes"], r["alpha_l2"]) for k, r in probe(spec).items()}
    default = {k: (r["fits"], r["classes"], r["alpha_l2"])
               for k, r in probe(_spec(spec)[0]).items()}
    assert ours == default, f"{spec} fits other losses than its defaults: list it on its page"


def test_the_parser_reads_what_the_bullets_write():
    line = ('* `X`: fits `"squared"`, `"quantile"` (with `alpha_l2 = 0` only), `"logistic"` '
            '(any number of classes); refuses `"huber"`.')
    assert _parsed(line) == {"squared": (True, ""), "quantile": (True, "(with `alpha_l2 = 0` "
                                                                        "only)"),
                             "logistic": (True, "(any number of classes)"),
                             "huber": (False, "")}


if __name__ == "__main__":  # print the bullets the probe finds, page by page
    for page, stems in sorted(PAGE_MODELS.items()):
        print(f"--- docs/models/{page}")
        text = (ROOT / "docs" / "models" / page).read_text(encoding="utf-8")
        extra = ([s for s in stated(text) if "(" in s] if f"\n{SECTION}\n" in text else [])
        for spec in [*_classes_of(stems), *extra]:
            print(bullet(spec))
            for loss, row in probe(spec).items():
                if row["why"]:
                    print(f"    {loss}: {row['why'][:160]}")
