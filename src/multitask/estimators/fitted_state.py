"""What a fitted model must look like, declared by each estimator class, and one validator.

A model file is data until it is checked: :func:`multitask.persistence.read_model_file`
rebuilds the estimator, then :func:`check_fitted_state` compares every attribute of it with the
declaration of its class before anyone may call ``predict``. A declaration is a dictionary
``{attribute: Fitted(...)}`` in the class attribute ``_fitted_state``: the generic base
(:class:`~multitask.estimators.base.MultiTaskEstimator`) declares the attributes every model
has (``coef_``, ``intercept_``, ``tasks_``, ``n_features_in_``, the solver's record), the
classifier base adds ``classes_``, and each model family adds what its ``_store_extra`` stores
(components, ranks, ``M_``, kernel weights...). The declarations of a class and of its bases
are merged along the method resolution order (a family may override an entry, or remove one
with ``None``).

Shapes are written with symbols: ``"m"`` is the number of tasks (``len(tasks_)``), ``"d"`` the
number of features (``n_features_in_``), ``"t"`` the number of tasks of the fit itself
(``len(fit_task_sizes_)``; ``"m"`` when not recorded: tasks added later by ``fit_new_tasks``
extend ``coef_`` but not the fit's own structures, such as a task graph); ``"K"`` the number of
classes of a classifier of more than two (``coef_.shape[1]``), and ``"c"`` / ``"tc"`` the
columns of the solver's weights for the ``m`` / ``t`` tasks: one per task, or one per (task,
class) pair for a classifier of more than two classes (its multinomial model, ``m K``
columns); any other symbol
(``"k"``, ``"n"``, ``"r"``) is bound by its first use and must then agree everywhere. A shape may
also be a callable of the estimator returning the shape (the classifiers' ``coef_`` is
``(m, d)`` for two classes and ``(m, K, d)`` for more). The
validator refuses, with a :class:`FittedStateError` (a ``ValueError``) naming the attribute:

* a missing declared attribute, or an attribute the class does not declare (a file edited to
  claim another class: a classifier relabelled as a regressor keeps its ``classes_``, a
  model of another family its components or its hyper-parameters);
* a value of the wrong kind (an array where a number is expected, a string where a solver
  object is), shape, dtype, or with NaN or infinity where the model never stores them;
* indices out of range, repeated labels, and the consistency rules of the declarations
  (``coef_`` must be the map of the solver's variable ``coef_variable_``, the components must
  sum to ``coef_``, ...);
* hyper-parameters that the class's own parameter check refuses.

A model whose attributes pass can be used for prediction without reading out of bounds: the
compiled kernels see arrays of the shapes the class declares. Prediction also checks the
shapes it uses on each call (:meth:`MultiTaskEstimator._scores`), so that a model whose
attributes were edited in memory gets a ``ValueError`` rather than an out-of-bounds read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = [
    "Fitted",
    "FittedStateError",
    "check_fitted_state",
    "fitted_declaration",
]


class FittedStateError(ValueError):
    """A fitted attribute that does not match what its class declares (the message names it)."""


#: Kinds of :class:`Fitted` declarations.
KINDS = ("array", "int", "float", "bool", "str", "labels", "indices", "names", "dict", "list",
         "object", "sparse_or_array")


@dataclass(frozen=True)
class Fitted:
    """The declaration of one fitted attribute.

    Parameters
    ----------
    kind : str
        ``"array"`` (an ndarray of ``dtype`` kinds and ``shape``), ``"sparse_or_array"`` (the
        same, or a CSR matrix), ``"int"``, ``"float"``, ``"bool"``, ``"str"`` (one of
        ``choices`` when given), ``"labels"`` (a 1-D array of distinct labels: integers,
        strings, booleans or finite floats), ``"indices"`` (a 1-D integer array of distinct
        increasing values in ``[0, bound)``), ``"names"`` (a 1-D array of strings), ``"dict"``
        (string keys), ``"list"`` (a list whose entries match ``item``), ``"object"`` (an
        instance of ``types``).
    shape : tuple or callable
        For arrays: each entry an int, a symbol (``"m"`` tasks, ``"d"`` features, ``"K"``,
        ``"c"``, ``"tc"`` (module docstring), others bound on first use) or ``None`` (any
        length); or ``shape(estimator) -> tuple``.
    dtype : str
        numpy dtype kinds accepted (``"f"`` float, ``"i"``/``"u"`` integers, ``"b"`` bool).
    finite : bool
        No NaN or infinity (numbers and arrays of floats).
    nan : bool
        NaN is accepted although ``finite`` (a measure that does not apply).
    nonnegative : bool
        Values ``>= 0`` (numbers and arrays).
    optional : bool
        ``None`` is accepted.
    required : bool
        The attribute must be present (``False``: when present it is checked; files of older
        versions, or data-dependent attributes such as ``feature_names_in_``).
    when : callable, optional
        ``when(estimator) -> bool``: the attribute exists exactly when true (for example the
        kernel model's ``coef_``, which exists for the linear kernel only).
    choices : tuple
        Accepted strings (``kind="str"``).
    bound : str or int, optional
        Upper bound (excluded) of ``"indices"`` and of ``"int"`` values: a symbol or a number.
    bind : str, optional
        ``"int"``: the value defines this symbol (``n_features_in_`` defines ``"d"``).
    item : Fitted, optional
        Declaration of the entries of a ``"list"``.
    types : tuple of type
        Accepted classes of an ``"object"``.
    check : callable, optional
        ``check(estimator, value, sizes) -> str | None``: a consistency rule with the other
        attributes (``sizes`` maps the bound symbols); the returned text says what is wrong.
    """

    kind: str
    shape: tuple | Callable[[Any], tuple] = ()
    dtype: str = "f"
    finite: bool = True
    nan: bool = False
    nonnegative: bool = False
    optional: bool = False
    required: bool = True
    when: Callable[[Any], bool] | None = None
    choices: tuple = ()
    bound: str | int | None = None
    bind: str | None = None
    item: Fitted | None = None
    types: tuple = ()
    check: Callable[[Any, Any, dict], str | None] | None = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"Unknown kind of fitted attribute {self.kind!r}.")


def fitted_declaration(cls: type) -> dict[str, Fitted]:
    """The merged declaration of ``cls``: the ``_fitted_state`` of its bases first, then its own
    (an entry set to ``None`` removes the attribute)."""
    spec: dict[str, Fitted] = {}
    for klass in reversed(cls.__mro__):
        for name, decl in klass.__dict__.get("_fitted_state", {}).items():
            if decl is None:
                spec.pop(name, None)
            else:
                spec[name] = decl
    return spec


# --------------------------------------------------------------------------- the validator
class _Checker:
    def __init__(self, est, where: str):
        self.est = est
        self.cls = type(est).__name__
        self.where = where
        self.sizes: dict[str, int] = {}
        self.bound_by: dict[str, str] = {}  # symbol -> the attribute that defined it

    def fail(self, name: str, what: str) -> FittedStateError:
        return FittedStateError(f"{self.where}{self.cls}.{name}: {what}.")

    # ------------------------------------------------------------------ one value
    def value(self, name: str, v, decl: Fitted) -> None:
        if v is None:
            if decl.optional:
                return
            raise self.fail(name, "is None")
        kind = decl.kind
        if kind == "int":
            self.integer(name, v, decl)
        elif kind == "float":
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, Real):
                raise self.fail(name, f"must be a number, got {_what(v)}")
            f = float(v)
            if decl.finite and not np.isfinite(f) and not (decl.nan and np.isnan(f)):
                raise self.fail(name, f"must be finite, got {f!r}")
            if decl.nonnegative and f < 0:
                raise self.fail(name, f"must be >= 0, got {f!r}")
        elif kind == "bool":
            if not isinstance(v, (bool, np.bool_)):
                raise self.fail(name, f"must be True or False, got {_what(v)}")
        elif kind == "str":
            if not isinstance(v, str):
                raise self.fail(name, f"must be a string, got {_what(v)}")
            if decl.choices and v not in decl.choices:
                raise self.fail(name, f"must be one of {list(decl.choices)}, got {v!r}")
        elif kind == "dict":
            if not isinstance(v, dict) or not all(isinstance(k, str) for k in v):
                raise self.fail(name, f"must be a dict with string keys, got {_what(v)}")
        elif kind == "list":
            if not isinstance(v, (list, tuple)):
                raise self.fail(name, f"must be a list, got {_what(v)}")
            want = self.want(decl)
            self.shape(name, (len(v),), want[:1] if want else (None,))
            assert decl.item is not None
            for i, entry in enumerate(v):
                self.value(f"{name}[{i}]", entry, decl.item)
        elif kind == "object":
            if not isinstance(v, decl.types):
                names = " or ".join(t.__name__ for t in decl.types)
                raise self.fail(name, f"must be a {names}, got {_what(v)}")
        elif kind == "sparse_or_array" and sp.issparse(v):
            if v.format != "csr" or v.dtype.kind not in decl.dtype:
                raise self.fail(name, f"must be a CSR matrix of {_kinds(decl.dtype)}, got "
                                f"{v.format} of dtype {v.dtype}")
            self.shape(name, v.shape, self.want(decl))
            _check_csr(self, name, v)
            if decl.finite and not np.all(np.isfinite(v.data)):
                raise self.fail(name, "holds NaN or infinity")
        else:
            self.array(name, v, decl)
        if decl.check is not None:
            problem = decl.check(self.est, v, self.sizes)
            if problem:
                raise self.fail(name, problem)
            symbol = getattr(decl.check, "binds", None)
            if symbol is not None:
                self.bound_by.setdefault(symbol, name)

    def integer(self, name: str, v, decl: Fitted) -> None:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, Integral):
            raise self.fail(name, f"must be an integer, got {_what(v)}")
        i = int(v)
        if decl.nonnegative and i < 0:
            raise self.fail(name, f"must be >= 0, got {i}")
        if decl.bound is not None:
            top = self.resolve(decl.bound)
            if top is not None and not i < top:
                raise self.fail(name, f"must be below {top}, got {i}")
        if decl.bind is not None:
            self.bind(name, decl.bind, i)

    def array(self, name: str, v, decl: Fitted) -> None:
        if not isinstance(v, np.ndarray) or isinstance(v, np.matrix):
            raise self.fail(name, f"must be a numpy array, got {_what(v)}")
        kind = decl.kind
        if kind in ("labels", "indices", "names") and v.ndim != 1:
            raise self.fail(name, f"must be 1-D, got shape {v.shape}")
        self.shape(name, v.shape, self.want(decl) or ((None,) if kind != "array" else ()))
        if kind == "labels":
            _check_labels(self, name, v)
            return
        if kind == "names":
            if v.dtype.kind not in "OU" or not all(isinstance(s, str) for s in v.tolist()):
                raise self.fail(name, "must hold strings")
            return
        if kind == "indices":
            if v.dtype.kind not in "iu":
                raise self.fail(name, f"must hold integers, got dtype {v.dtype}")
            if v.size:
                top = self.resolve(decl.bound) if decl.bound is not None else None
                if int(v.min()) < 0 or (top is not None and int(v.max()) >= top):
                    raise self.fail(name, f"must hold indices in [0, {top}), got values from "
                                    f"{int(v.min())} to {int(v.max())}")
                if v.size > 1 and not np.all(np.diff(v) > 0):
                    raise self.fail(name, "must hold distinct increasing indices")
            return
        if v.dtype.kind not in decl.dtype:
            raise self.fail(name, f"must hold {_kinds(decl.dtype)}, got dtype {v.dtype}")
        if v.dtype.kind == "f":
            if decl.finite and not np.all(np.isfinite(v)):
                raise self.fail(name, "holds NaN or infinity")
        if decl.nonnegative and v.size and np.min(v) < 0:
            raise self.fail(name, f"must be >= 0, holds {float(np.min(v))!r}")

    # ------------------------------------------------------------------ shapes and symbols
    def want(self, decl: Fitted) -> tuple:
        """The declared shape (a callable's, for this estimator)."""
        return tuple(decl.shape(self.est)) if callable(decl.shape) else decl.shape

    def resolve(self, symbol):
        if isinstance(symbol, str):
            if symbol == "t" and "t" not in self.sizes:
                return self.sizes.get("m")
            if symbol in _COLUMN_SYMBOLS and symbol not in self.sizes:
                return self.column_symbol(symbol)
            return self.sizes.get(symbol)
        return symbol

    def column_symbol(self, symbol: str) -> int | None:
        """``"K"`` (the classes), ``"c"`` and ``"tc"`` (the weight columns of the ``m`` and
        ``t`` tasks), from the estimator's ``classes_`` and the bound task counts."""
        per_task = class_columns_of(self.est)
        if symbol == "K":
            return per_task
        tasks = self.sizes.get("m") if symbol == "c" else self.resolve("t")
        if tasks is None:
            labels = getattr(self.est, "tasks_", None)
            tasks = None if labels is None else len(labels)
        return None if tasks is None else int(tasks) * per_task

    def bind(self, name: str, symbol: str, size: int) -> None:
        known = self.sizes.get(symbol)
        if known is None:
            self.sizes[symbol] = int(size)
            self.bound_by[symbol] = name
        elif known != size:
            raise self.fail(name, f"has {size} {_symbol_name(symbol)} but the model has "
                            f"{known}{self.origin(symbol)}")

    def origin(self, symbol: str) -> str:
        """`` (as in ATTR)``: the attribute whose shape defined ``symbol``."""
        by = self.bound_by.get(symbol, "tasks_" if symbol == "t" else None)
        return f" (as in {by})" if by else ""

    def shape(self, name: str, got: tuple, want: tuple) -> None:
        if len(got) != len(want):
            raise self.fail(name, f"must have {len(want)} dimension(s) "
                            f"{_shape_text(want)}, got shape {tuple(got)}")
        for axis, (g, w) in enumerate(zip(got, want, strict=True)):
            if w is None:
                continue
            if isinstance(w, str):
                if w == "t" and w not in self.sizes and "m" in self.sizes:
                    self.sizes["t"] = self.sizes["m"]  # no record of the fit's own tasks
                known = self.sizes.get(w)
                if known is None and w in _COLUMN_SYMBOLS:
                    known = self.column_symbol(w)
                if known is None:
                    self.sizes[w] = int(g)
                    self.bound_by[w] = name
                elif known != g:
                    raise self.fail(name, f"has shape {tuple(got)}: axis {axis} must be "
                                    f"{known} ({_symbol_name(w)} of the model"
                                    f"{self.origin(w).replace(' (', ', ').rstrip(')')})")
            elif g != w:
                raise self.fail(name, f"has shape {tuple(got)}, expected {_shape_text(want)}")


#: The symbols derived from the classes and the task counts (module docstring).
_COLUMN_SYMBOLS = ("K", "c", "tc")


def class_columns_of(est) -> int:
    """The weight columns per task of ``est``: ``K`` for a classifier of more than two
    classes (one multinomial column per class; its ``coef_`` is ``(m, K, d)``), else 1. Read
    from the shape of ``coef_``, so that a file whose ``classes_`` was edited is refused on
    ``classes_`` itself."""
    coef = getattr(est, "coef_", None)
    if isinstance(coef, np.ndarray) and coef.ndim == 3:
        return int(coef.shape[1])
    return 1


def as_coef_shape(target: np.ndarray, coef) -> np.ndarray:
    """``target`` (the solver's orientation transposed, ``(c, d)``) in the shape of ``coef``
    when ``coef`` is ``(m, K, d)`` with ``m K = c``; ``target`` itself otherwise."""
    if (isinstance(coef, np.ndarray) and coef.ndim == 3 and target.ndim == 2
            and target.shape == (coef.shape[0] * coef.shape[1], coef.shape[2])):
        return target.reshape(coef.shape)
    return target


def _what(v) -> str:
    if isinstance(v, np.ndarray):
        return f"an array of shape {v.shape} and dtype {v.dtype}"
    text = repr(v)
    return f"{type(v).__name__} {text[:40]}{'...' if len(text) > 40 else ''}"


def _kinds(dtype: str) -> str:
    names = {"f": "floats", "i": "integers", "u": "integers", "b": "booleans"}
    return " or ".join(dict.fromkeys(names.get(k, k) for k in dtype))


def _symbol_name(symbol: str) -> str:
    return {"m": "tasks", "d": "features"}.get(symbol, f"entries ({symbol})")


def _shape_text(shape: tuple) -> str:
    return "(" + ", ".join("any" if s is None else str(s) for s in shape) + \
        ("," if len(shape) == 1 else "") + ")"


def _check_labels(checker: _Checker, name: str, v: np.ndarray) -> None:
    kind = v.dtype.kind
    if kind == "O":
        if not all(isinstance(x, (str, Integral)) and not isinstance(x, (bool, np.bool_))
                   for x in v.tolist()):
            raise checker.fail(name, "must hold integers or strings")
        values = v.tolist()
        if len({(type(x) is str, x) for x in values}) != len(values):
            raise checker.fail(name, "holds a label twice")
        return
    if kind not in "iubfU":
        raise checker.fail(name, f"must hold integers, strings, booleans or numbers, got "
                           f"dtype {v.dtype}")
    if kind == "f" and not np.all(np.isfinite(v)):
        raise checker.fail(name, "holds NaN or infinity")
    if len(np.unique(v)) != len(v):
        raise checker.fail(name, "holds a label twice")


def _check_csr(checker: _Checker, name: str, v) -> None:
    from multitask.data import check_sparse_structure

    try:
        check_sparse_structure(v)
    except ValueError as exc:
        raise checker.fail(name, f"is a broken sparse matrix ({exc})") from None


def _unexpected(est, spec: dict[str, Fitted], params: set[str]) -> list[str]:
    """Attributes that are neither hyper-parameters, declared fitted attributes nor the
    class's declared transient state (``_transient``: a cache between fits that copies and
    model files leave out)."""
    transient = set(getattr(type(est), "_transient", ()))
    return [n for n in vars(est) if n not in params and n not in spec and n not in transient]


def check_fitted_state(est, *, where: str = "") -> None:
    """Check a fitted estimator against the declaration of its class.

    Parameters
    ----------
    est : estimator
        A fitted library estimator (or a :class:`multitask.MultiTaskCV`, whose refitted
        ``best_estimator_`` is checked in turn). An estimator that is not fitted passes when
        it holds no fitted attribute at all.
    where : str
        Prefix of the messages (the file name).

    Raises
    ------
    FittedStateError
        Naming the first attribute that does not match (see the module docstring).
    """
    cls = type(est)
    decl = getattr(cls, "_fitted_declaration", None)
    if decl is None:
        raise FittedStateError(f"{where}{cls.__name__} is not a model of this library.")
    spec = decl()
    checker = _Checker(est, where)
    params = set(cls._get_param_names())
    state = vars(est)
    missing = sorted(params - set(state))
    if missing:
        raise checker.fail(missing[0], "the hyper-parameter is missing (a file of another "
                           "class?)")
    extra = _unexpected(est, spec, params)
    if extra:
        raise checker.fail(extra[0], f"is not an attribute of {cls.__name__} (a model of "
                           "another class?)")
    fitted = [n for n in spec if n in state]
    if fitted:
        _check_params(est, checker)
    elif not any(n.endswith("_") for n in state):
        return  # not fitted
    for name, d in spec.items():
        present = name in state
        expected = d.required if d.when is None else bool(d.when(est))
        if d.when is not None and present and not expected:
            raise checker.fail(name, "is not an attribute of this configuration")
        if not present:
            if expected:
                raise checker.fail(name, "is missing")
            continue
        checker.value(name, state[name], d)


def _check_params(est, checker: _Checker) -> None:
    validate = getattr(est, "_validate_params", None)
    if validate is None:
        return
    try:
        validate()
    except ValueError as exc:
        raise FittedStateError(f"{checker.where}{checker.cls}: invalid hyper-parameter: "
                               f"{exc}") from None
    except Exception as exc:  # noqa: BLE001 - any failure of the check is a bad file
        raise FittedStateError(f"{checker.where}{checker.cls}: invalid hyper-parameters "
                               f"({type(exc).__name__}: {exc})") from None


# --------------------------------------------------------------------------- rules shared by
# the declarations of the estimator modules
def _equal_to_rounding(value, reference: np.ndarray) -> bool:
    """Whether ``value`` equals ``reference`` to rounding: ``|value - reference| <= 1e-12 M
    + 1e-9 |reference|`` entrywise, ``M`` the largest ``|reference|`` (at least ``1e-300``)."""
    scale = max(float(np.max(np.abs(reference))) if reference.size else 0.0, 1e-300)
    return bool(np.allclose(value, reference, rtol=1e-9, atol=1e-12 * scale))


def matches_coef(expected: Callable[[Any, dict], np.ndarray], what: str):
    """A ``check``: ``coef_`` must equal ``expected(value, sizes)`` (to rounding)."""

    def check(est, value, sizes) -> str | None:
        coef = getattr(est, "coef_", None)
        if not isinstance(coef, np.ndarray):
            return None  # reported on coef_ itself
        try:
            target = as_coef_shape(np.asarray(expected(value, sizes), dtype=np.float64), coef)
        except (ValueError, TypeError, IndexError) as exc:
            return f"cannot be combined into coef_ ({exc})"
        if target.shape != coef.shape:
            return f"gives coef_ of shape {target.shape}, not {coef.shape}"
        if not _equal_to_rounding(target, coef):
            return f"does not match coef_ ({what})"
        return None

    return check


def variable_part(i: int):
    """A ``check``: the value must be ``coef_variable_[i].T`` (a component of a split model)."""

    def check(est, value, sizes) -> str | None:
        V = getattr(est, "coef_variable_", None)
        if not (isinstance(V, np.ndarray) and V.ndim == 3 and V.shape[0] > i):
            return None  # reported on coef_variable_ itself
        part = as_coef_shape(V[i].T, value)
        if part.shape != np.shape(value):
            return f"has shape {np.shape(value)}, expected {part.shape}"
        if not _equal_to_rounding(value, part):
            return f"does not match part {i} of coef_variable_"
        return None

    return check


def at_most(symbols: tuple[str, ...]):
    """A ``check``: integer value(s) at most the smallest of the sizes ``symbols`` (``"tc"``:
    the weight columns of the tasks of the fit, :func:`class_columns_of`)."""

    def size(est, sizes, s):
        if s == "tc":
            t = sizes.get("t", sizes.get("m"))
            return None if t is None else t * class_columns_of(est)
        return sizes.get(s, sizes.get("m") if s == "t" else None)

    def check(est, value, sizes) -> str | None:
        known = [size(est, sizes, s) for s in symbols]
        known = [k for k in known if k is not None]
        if not known:
            return None
        top = min(known)
        if np.size(value) and int(np.max(value)) > top:
            return f"must be at most {top}, got {int(np.max(value))}"
        return None

    return check


def length_of(size: Callable[[dict], int | None]):
    """A ``check``: a 1-D value of length ``size(sizes)`` (``sizes["K"]``: the weight columns
    per task, :func:`class_columns_of`)."""

    def check(est, value, sizes) -> str | None:
        want = size({"t": sizes.get("m"), **sizes, "K": class_columns_of(est)})
        if want is not None and np.shape(value)[:1] != (want,):
            return f"must have {want} entries, got shape {np.shape(value)}"
        return None

    return check


def in_range(symbol: str):
    """A ``check``: integer entries in ``[0, size of symbol)`` (any order, repeats allowed)."""

    def check(est, value, sizes) -> str | None:
        top = sizes.get(symbol, sizes.get("m") if symbol == "t" else None)
        a = np.asarray(value)
        if a.dtype.kind not in "iu":
            return f"must hold integers, got dtype {a.dtype}"
        if a.size and (int(a.min()) < 0 or (top is not None and int(a.max()) >= top)):
            return f"must hold integers in [0, {top})"
        return None

    return check


def derived(expected: Callable[[Any, dict], Any], what: str):
    """A ``check``: the value is what the model's other attributes give, ``expected(est,
    sizes)`` (equal integers; floats to rounding): a derived summary (a support, a norm per
    task) that matches the weights. ``expected`` may return None when it cannot be computed
    (another attribute is wrong, and reported on its own)."""

    def check(est, value, sizes) -> str | None:
        try:
            want = expected(est, {"t": sizes.get("m"), **sizes})
        except (ValueError, TypeError, IndexError, AttributeError, KeyError):
            return None  # an attribute it reads is broken: reported on that attribute
        if want is None:
            return None
        want = np.asarray(want)
        have = np.asarray(value)
        if have.shape != want.shape:
            return f"has shape {have.shape}, but {what} gives {want.shape}"
        if want.dtype.kind == "f" or have.dtype.kind == "f":
            scale = max(float(np.max(np.abs(want))) if want.size else 0.0, 1e-300)
            same = np.allclose(have, want, rtol=1e-9, atol=1e-12 * scale)
        else:
            same = np.array_equal(have, want)
        return None if same else f"does not match {what}"

    return check


def fit_weights(est, sizes) -> np.ndarray:
    """``W`` of the tasks of the fit, ``(n_features, t)``: the first ``t`` rows of ``coef_``,
    transposed (what the family's summaries were computed from); ``(n_features, t K)``, the
    solver's task-class columns, for a ``coef_`` of shape ``(m, K, d)``."""
    coef = np.asarray(est.coef_)[: sizes["t"]]
    if coef.ndim == 3:
        coef = coef.reshape(-1, coef.shape[-1])
    return coef.T


def fit_part(i: int):
    """``coef_variable_[i]`` restricted to the tasks of the fit, ``(n_features, t)`` (``t K``
    task-class columns for more than two classes)."""

    def part(est, sizes) -> np.ndarray:
        return np.asarray(est.coef_variable_)[i][:, : sizes["t"] * class_columns_of(est)]

    return part


#: Fitted attributes that are copies of the solver's record (attribute -> field, transposed).
RECORD_COPIES = {"objective_": ("objective", False), "n_iter_": ("n_iter", False),
                 "converged_": ("converged", False), "intercept_": ("intercept", False),
                 "coef_": ("W", True), "coef_variable_": ("coef", False),
                 "intercept_variable_": ("intercept_variable", False)}


def solver_result_check(est, value, sizes) -> str | None:
    """A ``check`` of a :class:`~multitask.solvers.result.SolverResult`: its arrays are
    arrays of floats of the model's shapes (the plotting helpers read them), and the fitted
    attributes copied from it (:data:`RECORD_COPIES`) are equal to its fields."""
    for field_name in ("coef", "W", "intercept", "objective", "times"):
        a = getattr(value, field_name, None)
        if not isinstance(a, np.ndarray) or a.dtype.kind != "f":
            return f"{field_name} must be an array of floats, got {_what(a)}"
    m, d = sizes.get("m"), sizes.get("d")
    m = None if m is None else m * class_columns_of(est)
    if value.W.ndim != 2 or (d is not None and m is not None and value.W.size
                             and value.W.shape != (d, m)):
        return f"W has shape {value.W.shape}, expected ({d}, {m})"
    if value.objective.ndim != 1 or value.times.ndim != 1:
        return "objective and times must be 1-D"
    if not isinstance(value.info, dict):
        return "info must be a dict"
    state = vars(est)
    for attr, (field_name, transposed) in RECORD_COPIES.items():
        if attr not in state or (field_name == "W" and not value.W.size):
            continue
        mine, theirs = state[attr], getattr(value, field_name, None)
        if transposed and isinstance(theirs, np.ndarray):
            theirs = theirs.T
        if isinstance(theirs, np.ndarray) and isinstance(mine, np.ndarray) and (
                mine.ndim == theirs.ndim + 1 and mine.size == theirs.size):
            theirs = theirs.reshape(mine.shape)  # (m, K, d) and (m, K): the columns per class
        same = (mine is None and theirs is None) if mine is None or theirs is None else (
            np.shape(mine) == np.shape(theirs) and np.array_equal(mine, theirs))
        if not same:
            return f"{field_name} differs from {attr}"
    return None


def fitted_task_count(est, value, sizes) -> str | None:
    """A ``check`` of ``fit_task_sizes_``: one entry per task of the fit (at most ``m``); it
    defines the symbol ``"t"``."""
    m = sizes.get("m")
    if m is not None and not 1 <= len(value) <= m:
        return f"must have between 1 and {m} entries (the tasks of the fit), got {len(value)}"
    sizes["t"] = len(value)
    return None


fitted_task_count.binds = "t"  # type: ignore[attr-defined]


def solver_named_in_info(est, value, sizes) -> str | None:
    """A ``check`` of ``solver_info_``: the solver it names is ``solver_``."""
    named, label = value.get("solver"), getattr(getattr(est, "solver_", None), "label", None)
    if named is not None and label is not None and named != label:
        return f"names the solver {named!r} but solver_ is {label!r}"
    return None



def added_task_count(est, value, sizes) -> str | None:
    """A ``check`` of the records of new tasks (``new_task_strength_``,
    ``new_task_strength_rule_``): one entry per task added by ``fit_new_tasks`` since the fit
    (``m - t``)."""
    m = sizes.get("m")
    t = sizes.get("t", m)
    if m is not None and t is not None and len(value) != m - t:
        return (f"must have one entry per task added since the fit ({m - t}), got "
                f"{len(value)}")
    return None


def positive_or_nan(est, value, sizes) -> str | None:
    """A ``check`` of ``new_task_strength_``: each strength ``> 0``, or NaN (the task took the
    population model, or its strength was not recorded)."""
    bad = ~(np.isnan(value) | (value > 0))
    if np.any(bad):
        return f"must hold strengths > 0 or NaN, got {value[bad][:3].tolist()}"
    return added_task_count(est, value, sizes)


#: The records ``fit_new_tasks`` keeps of the tasks it adds (merged into the generic base's
#: declaration): the strength of each (NaN: the population model) and how it was chosen.
NEW_TASK_STATE: dict[str, Fitted] = {
    "new_task_strength_": Fitted("array", shape=(None,), finite=False, required=False,
                                 check=positive_or_nan),
    "new_task_strength_rule_": Fitted("names", shape=(None,), required=False,
                                      check=added_task_count),
}
