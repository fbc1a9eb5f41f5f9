"""Targets: regression values and class labels, missing targets, the class encodings.

A target is read as a real number (regression) or a class label of one plain type
(classification: two classes are mapped to ``-1 / +1`` per task, more to the class codes
``0 .. K-1`` of the label set the tasks share); a missing target (NaN, ``None``,
pandas' NA) is an error or, with ``missing_targets="ignore"``, a (row, task) pair that weighs
zero.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from multitask.data.checks import (
    _KIND_NAMES,
    _REAL_KINDS,
    _check_finite,
    _check_scale,
    _dtype_error,
    _label,
    _real_from_object,
    _uniform_values,
)
from multitask.data.container import _offsets_of

#: The values of the ``missing_targets`` option: a NaN target is an error (``"error"``) or a
#: target that was not observed (``"ignore"``: the (row, task) pair weighs zero).
MISSING_TARGETS = ("error", "ignore")

_MISSING_HINT = (" If NaN marks a target that was not observed, pass missing_targets='ignore' "
                 "(the row then counts only for the tasks whose target is observed).")


def _is_missing(v) -> bool:
    """Whether a target value marks a missing target: NaN, None, pandas' NA or NaT."""
    if v is None:
        return True
    if isinstance(v, (float, np.floating)):
        return bool(np.isnan(v))
    return type(v).__name__ in ("NAType", "NaTType")


def _missing_mask(y) -> np.ndarray | None:
    """The entries of ``y`` that are missing (:func:`_is_missing`), or None when none is."""
    a = np.asarray(y)
    if a.dtype.kind == "f":
        miss = np.isnan(a)
    elif a.dtype.kind == "O":
        miss = np.fromiter((_is_missing(v) for v in a.ravel().tolist()), dtype=bool,
                           count=a.size).reshape(a.shape)
    else:
        return None
    return miss if miss.any() else None


def observed_mask(y) -> np.ndarray:
    """The observed entries of targets ``y`` (any shape): ``False`` where an entry is missing
    (NaN, ``None``, pandas' NA), the meaning ``missing_targets="ignore"`` gives it.

    Parameters
    ----------
    y : array-like

    Returns
    -------
    ndarray of bool, the shape of ``y``
    """
    miss = _missing_mask(y)
    return np.ones(np.shape(y), dtype=bool) if miss is None else ~miss


def _observed_targets(y, allow: bool):
    """``(y, observed)``: with ``allow`` and missing entries, ``y`` with each missing entry
    replaced by the first observed value (a placeholder the weights of zero ignore) and the
    1-D mask of the observed entries; else ``(y, None)``."""
    if not allow:
        return y, None
    miss = _missing_mask(y)
    if miss is None:
        return y, None
    a = np.array(y, copy=True)
    seen = a[~miss]
    a[miss] = seen[0] if seen.size else 0.0
    return a, ~miss.reshape(-1)


def _as_labels(y: np.ndarray, what: str) -> np.ndarray:
    """Class labels of one plain type (numbers, booleans or strings)."""
    if y.dtype.kind == "O":
        return _uniform_values(y, what, "label")
    if y.dtype.kind not in _REAL_KINDS + "US":
        raise ValueError(f"{what} has {_KIND_NAMES.get(y.dtype.kind, 'unsupported')} dtype "
                         f"{y.dtype}: class labels must be numbers, booleans or strings.")
    return y


def _as_1d_target(y, what: str, classification: bool, task=None, check: bool = True,
                  hint: str = ""):
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y.ravel()
    if y.ndim != 1:
        raise ValueError(f"{what} must be 1-D, got shape {y.shape}.")
    if classification:
        try:
            y = _as_labels(y, what)
        except ValueError as exc:  # a missing label (None): say how to mark it as such
            if hint and _missing_mask(y) is not None:
                raise ValueError(f"{exc}{hint}") from None
            raise
    elif y.dtype.kind == "O":
        y = _real_from_object(y, what)
    else:
        if y.dtype.kind not in _REAL_KINDS:
            raise _dtype_error(what, y.dtype, " for regression targets")
        y = y.astype(np.float64)
    if check:
        _check_finite(y, what, task, hint)
        if not classification:
            _check_scale(y, what, task)
    return y



def _encode_binary(y, what: str, classes: np.ndarray | None):
    """Map labels to -1/+1 given (or learning) the two classes (``+1`` for ``classes[-1]``)."""
    if classes is None:
        classes = np.unique(y)
        if len(classes) > 2:
            raise ValueError(
                f"{what} has {len(classes)} classes {classes[:5].tolist()}...: a two-class "
                "encoding needs two (more than two classes are encoded as class codes, "
                "_encode_classes)."
            )
    return np.where(y == classes[-1], 1.0, -1.0), classes


def _encode_classes(y, what: str, classes: np.ndarray) -> np.ndarray:
    """The class codes ``0 .. K-1`` (float64) of the labels ``y`` in the sorted label set
    ``classes``; a label outside it is a ``ValueError`` naming it."""
    classes = np.asarray(classes)
    codes = np.searchsorted(classes, y)
    codes = np.clip(codes, 0, len(classes) - 1)
    bad = classes[codes] != y
    if np.any(bad):
        raise ValueError(f"{what} holds the label {np.asarray(y)[bad][0]!r}, which is not "
                         f"among the classes {classes.tolist()}.")
    return codes.astype(np.float64)


@dataclass(frozen=True)
class _TargetRules:
    """How a conversion reads the targets (:func:`~multitask.data.as_multitask_data`).

    Parameters
    ----------
    classification : bool
        Class labels (else real numbers).
    allow_missing : bool
        A missing target is a (row, task) pair that was not observed (else an error).
    hint : str
        Appended to the message of a missing target: how to mark it as not observed.
    """

    classification: bool
    allow_missing: bool
    hint: str

    @classmethod
    def of(cls, classification: bool, missing_targets: str | None,
           predicting: bool) -> _TargetRules:
        """The rules of the option ``missing_targets`` (checked: ``None``, ``"error"`` or
        ``"ignore"``); no target is missing at predict time."""
        if missing_targets not in (None, *MISSING_TARGETS):
            raise ValueError(
                f"missing_targets must be 'error' or 'ignore', got {missing_targets!r}.")
        return cls(bool(classification), missing_targets == "ignore" and not predicting,
                   _MISSING_HINT if missing_targets == "error" else "")

    def read(self, y, what: str, task=None,
             check: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
        """``(y, observed)``: the targets ``y`` as a 1-D array (:func:`_as_1d_target`, NaN
        and scale checked when ``check``), each missing one replaced by a placeholder when
        missing targets are allowed, and the 1-D mask of the observed ones (None when none
        is missing)."""
        y, observed = _observed_targets(y, self.allow_missing)
        return _as_1d_target(y, what, self.classification, task, check, self.hint), observed


def _class_targets(ys: list, sizes: np.ndarray, weights: np.ndarray | None, labels,
                   classes: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """``(y, classes)``: the stacked class labels of the tasks ``ys`` encoded against the
    label set ``classes`` (given, or learned: the sorted union of the tasks' labels).

    Two classes are mapped to ``-1 / +1`` (``+1`` for ``classes[-1]``), and every task needs
    both among its rows of positive weight (``weights``, stacked; None: all): one binary
    problem per task. ``K > 2`` classes are encoded as the class codes ``0 .. K-1`` (float64)
    for one multinomial model per task; a task may lack some classes (the label set is shared
    by the tasks), even all but one. A single class in the whole data is a ``ValueError``
    naming it, as is a label outside given ``classes``.
    """
    allv = np.concatenate([np.asarray(v) for v in ys])
    if classes is None:
        classes = np.unique(allv)
        if len(classes) < 2:
            raise ValueError(
                f"y has one class only ({classes.tolist()}): a classifier needs at least two "
                "classes in its training data."
            )
    if len(classes) > 2:
        if weights is not None:  # placeholders of missing targets: any class of the set
            allv = np.where(weights > 0, allv, classes[0])
        return _encode_classes(allv, "y", classes), classes
    cuts = _offsets_of(sizes)
    for t, yt in enumerate(ys):
        if weights is not None:  # the class of a pair of weight zero does not count
            yt = yt[weights[cuts[t]:cuts[t + 1]] > 0]
        if len(np.unique(yt)) < 2:
            raise ValueError(
                f"Task {_label(labels[t])} has one class only ({np.unique(yt).tolist()}): "
                "each task of a two-class problem needs both classes in its training rows."
            )
    return _encode_binary(allv, "y", classes)


#: The name the conversion (:mod:`multitask.data.formats`) imports.
_binary_targets = _class_targets
