"""Checks of user input shared by every format: numbers, dtypes, finiteness, scale, sparse
structure, scalar parameters.

Each check raises a ``ValueError`` naming the input, the problem and where it is (row, column,
and the row's task when known); none modifies its input.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

#: Largest magnitude accepted for a feature or a regression target. Sums of squares over all
#: entries (Gram matrices, spectral norms, objectives) stay below 1e200 times the number of
#: entries, far from the float64 overflow at 1.8e308 whatever the size of the data; tried:
#: every estimator fits small problems with finite coefficients up to 1e140 and fails (NaN, a
#: LAPACK error or a crash) from 1e160 on (see docs/model_files.md, "Input checks").
MAX_ABS_VALUE = 1e100
#: Smallest largest-magnitude accepted for a design or a regression target that is not all
#: zero: products of such entries underflow to subnormal numbers, where LAPACK's SVD stops
#: converging (measured at 1e-160).
MIN_MAX_ABS_VALUE = 1e-100

_REAL_KINDS = "fiub"
_KIND_NAMES = {"c": "complex", "O": "object", "U": "text", "S": "bytes", "M": "datetime",
               "m": "timedelta", "V": "structured"}


def check_scalar_param(value, name: str, *, allow_zero: bool = True, upper=None) -> float:
    """Return ``value`` as a float after checking that it is finite and non-negative.

    Raises
    ------
    ValueError
        Naming the parameter, when ``value`` is not a finite number >= 0 (> 0 when
        ``allow_zero`` is false) or exceeds ``upper``.
    """
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}.") from None
    if not np.isfinite(v):
        raise ValueError(f"{name} must be finite, got {value!r}.")
    if v < 0 or (v == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be {bound}, got {value!r}.")
    if upper is not None and v > upper:
        raise ValueError(f"{name} must be <= {upper}, got {value!r}.")
    return v


def _label(v) -> str:
    """A task label as the user wrote it (``'b'``, ``3``), not as numpy prints it."""
    return repr(v.item() if isinstance(v, np.generic) else v)


def _check_finite(A, what: str, task=None, hint: str = "") -> None:
    """Raise a ValueError locating the first NaN or infinity of ``A`` (and its row's task);
    ``hint`` is appended to the message."""
    if sp.issparse(A):
        bad = np.flatnonzero(~np.isfinite(A.data))
        if not bad.size:
            return
        where = [int(np.searchsorted(A.indptr, bad[0], side="right") - 1), int(A.indices[bad[0]])]
    else:
        if A.dtype.kind not in "fc" or not A.size:
            return
        with np.errstate(over="ignore", invalid="ignore"):
            if np.isfinite(A.sum()):  # one pass: every entry is finite (scikit-learn's test)
                return
        cells = np.argwhere(~np.isfinite(A))
        if not cells.size:
            return
        where = [int(i) for i in cells[0]]
    loc = f"row {where[0]}" + (f", column {where[1]}" if len(where) > 1 else "")
    if task is not None:
        loc += f", task {_label(task[where[0]])}"
    raise ValueError(f"{what} contains NaN or infinity (first at {loc}).{hint}")


def _check_scale(A, what: str, task=None) -> None:
    """Raise a ValueError when an entry of ``A`` exceeds :data:`MAX_ABS_VALUE` in magnitude.

    The message names the row (and column, and the row's task) of the largest entry.
    """
    values = A.data if sp.issparse(A) else A
    if not values.size:
        return
    hi, lo = float(np.max(values)), float(np.min(values))
    top = max(hi, -lo)
    if 0.0 < top < MIN_MAX_ABS_VALUE:
        raise ValueError(
            f"{what} has no entry larger than {top:.3g} in magnitude, below the "
            f"{MIN_MAX_ABS_VALUE:g} that the solvers handle without underflow: rescale it (e.g. "
            "divide by its largest absolute value, or use sklearn.preprocessing.StandardScaler)."
        )
    if top <= MAX_ABS_VALUE:
        return
    k = int(np.argmax(np.abs(values)))
    if sp.issparse(A):
        where = [int(np.searchsorted(A.indptr, k, side="right") - 1), int(A.indices[k])]
        value = A.data[k]
    else:
        where = [int(i) for i in np.unravel_index(k, A.shape)]
        value = A[tuple(where)]
    loc = f"row {where[0]}" + (f", column {where[1]}" if len(where) > 1 else "")
    if task is not None:
        loc += f", task {_label(task[where[0]])}"
    raise ValueError(
        f"{what} has an entry of magnitude {abs(value):.3g} (at {loc}), beyond the "
        f"{MAX_ABS_VALUE:g} that the solvers handle without overflow: rescale it (e.g. divide "
        "by its largest "
        "absolute value, or use sklearn.preprocessing.StandardScaler)."
    )


def _dtype_error(what: str, dtype, hint: str = "") -> ValueError:
    if dtype.kind == "c":
        return _complex_error(what, f"complex dtype {dtype}", hint)
    kind = _KIND_NAMES.get(dtype.kind, "unsupported")
    return ValueError(f"{what} has {kind} dtype {dtype}: only real numbers (float, int or bool) "
                      f"are accepted{hint}.")


def _complex_error(what: str, detail: str, hint: str = "") -> ValueError:
    """The one message for complex input, whether a complex array or a complex number inside
    an object array or a list."""
    return ValueError(f"{what} holds complex numbers ({detail}). Complex data not supported: "
                      f"only real numbers (float, int or bool) are accepted{hint}.")


def check_not_complex(X, what: str = "X") -> None:
    """Refuse complex values in one design matrix before anything converts it.

    A complex dtype, complex numbers inside an object array or a pandas column of objects,
    or in nested lists, are refused with the message of every other complex input (scikit-
    learn's conversion would raise a ``TypeError``, or print the whole array). Sparse
    matrices and real arrays pass at the cost of a dtype test; object arrays are scanned.
    """
    if sp.issparse(X):
        return
    if isinstance(X, (list, tuple)):
        try:
            X = np.asarray(X)
        except (ValueError, TypeError):
            return  # ragged input: left to the conversion's own message
    columns = getattr(X, "dtypes", None)
    if columns is not None and hasattr(X, "columns"):  # a DataFrame, column by column
        for name, dtype in zip(X.columns, columns, strict=True):
            kind = getattr(dtype, "kind", "O")
            if kind in "cO":
                check_not_complex(np.asarray(X[name]), f"{what} column {name!r}")
        return
    dtype = getattr(X, "dtype", None)
    if dtype is None or not isinstance(X, np.ndarray):
        return
    if dtype.kind == "c":
        raise _dtype_error(what, dtype)
    if dtype.kind == "O":
        for k, v in enumerate(X.ravel().tolist()):
            if isinstance(v, (complex, np.complexfloating)):
                pos = ", ".join(map(str, np.unravel_index(k, X.shape)))
                raise _complex_error(what, f"object dtype: {v!r} at position ({pos})")


def _real_from_object(A: np.ndarray, what: str) -> np.ndarray:
    """An object array holding only real numbers (int, float, bool) as float64.

    Any other element (None, a string, a complex number, a list) is refused, naming its
    position: object arrays are not parsed or guessed.
    """
    flat = A.ravel()
    for k, v in enumerate(flat.tolist()):
        if _python_kind(v) not in ("int", "float", "bool"):
            pos = ", ".join(map(str, np.unravel_index(k, A.shape)))
            if isinstance(v, (complex, np.complexfloating)):
                raise _complex_error(what, f"object dtype: {v!r} at position ({pos})")
            raise ValueError(f"{what} has object dtype and holds {v!r} ({type(v).__name__}) "
                             f"at position ({pos}): only real numbers (float, int or bool) "
                             "are accepted.")
    return A.astype(np.float64)


def _real_array(X, what: str, kind: str) -> np.ndarray:
    """``X`` as an array of real numbers (an object array converted by
    :func:`_real_from_object`; any shape, values not checked); a ValueError naming ``what``
    (``kind``: "a 2-D array", "an array") when it is not one."""
    try:
        A = np.asarray(X)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} must be {kind} of numbers: {exc}") from None
    if A.dtype.kind == "O":
        return _real_from_object(A, what)
    if A.dtype.kind not in _REAL_KINDS:
        raise _dtype_error(what, A.dtype)
    return A


def _sparse_entry_row(indptr: np.ndarray, k: int) -> int:
    return int(np.searchsorted(indptr, k, side="right") - 1)


def check_sparse_structure(X, what: str = "X") -> sp.csr_matrix:
    """Check the whole structure of a scipy sparse matrix; return a canonical float64 CSR copy.

    scipy builds a compressed matrix from user arrays without checking its index arrays, and
    the compiled products (scipy's and this library's) index memory with them: an index out of
    range reads or writes outside the arrays (the interpreter crashes, or a negative index
    silently wraps around). Every sparse input is checked here before anything else sees it:

    * CSR / CSC / BSR: ``indptr`` has one entry per row (column, block row) plus one, starts
      at 0, never decreases and ends at ``nnz <= len(indices) == len(data)``; every index
      ``j`` of ``indices[:nnz]`` satisfies ``0 <= j < n_minor``;
    * COO: ``row``, ``col`` and ``data`` have one length, ``0 <= row < n_rows`` and
      ``0 <= col < n_cols``;
    * other formats (LIL, DOK, DIA) are converted by scipy's pure-Python code, then checked
      as CSR;
    * the values are real numbers (float, int or bool): complex, object and other dtypes are
      refused.

    The returned matrix is a new CSR ``float64`` matrix with sorted indices and duplicate
    entries summed (the meaning scipy gives them), sharing no array with ``X``; ``X`` itself
    is never modified.

    Parameters
    ----------
    X : scipy sparse matrix or array
        Any format.
    what : str, default="X"
        How the messages name the input (``"X"``, ``"X of task 2"``).

    Returns
    -------
    scipy.sparse.csr_matrix of dtype float64

    Raises
    ------
    ValueError
        Naming the input, the broken array, and the row or column of the first bad entry.
    """
    fmt = X.format
    label = f"{what} (sparse {fmt.upper()})"
    if X.dtype.kind not in _REAL_KINDS:
        raise _dtype_error(label, X.dtype)
    if fmt in ("csr", "csc", "bsr"):
        _check_compressed(X, label)
    elif fmt == "coo":
        _check_coordinates(X, label)
    else:  # lil, dok, dia: converted by numpy / Python code, then checked as CSR
        return check_sparse_structure(_converted_to_csr(X, label), what)
    return _canonical_csr_copy(X)


def _check_compressed(X, label: str) -> None:
    """The structure of a CSR, CSC or BSR matrix (:func:`check_sparse_structure`): ``indptr``
    of ``n_major + 1`` non-decreasing entries from 0 to ``nnz <= len(indices) ==
    len(data)``, every index of ``indices[:nnz]`` in ``[0, n_minor)``."""
    n_rows, n_cols = X.shape
    data = np.asarray(X.data)
    indptr, indices = np.asarray(X.indptr), np.asarray(X.indices)
    for name, arr in (("indptr", indptr), ("indices", indices)):
        if arr.ndim != 1 or arr.dtype.kind not in "iu":
            raise ValueError(f"{label}: {name} must be a 1-D integer array, got dtype "
                             f"{arr.dtype} and shape {arr.shape}.")
    if X.format == "bsr":
        r, c = X.blocksize
        major, minor, unit = n_rows // r, n_cols // c, ("block row", "block column")
    elif X.format == "csr":
        major, minor, unit = n_rows, n_cols, ("row", "column")
    else:
        major, minor, unit = n_cols, n_rows, ("column", "row")
    if len(indptr) != major + 1:
        raise ValueError(f"{label}: indptr has {len(indptr)} entries for {major} "
                         f"{unit[0]}s (expected {major + 1}).")
    if indptr[0] != 0:
        raise ValueError(f"{label}: indptr must start at 0, got {indptr[0]}.")
    steps = np.diff(indptr)
    if steps.size and steps.min() < 0:
        i = int(np.argmax(steps < 0))
        raise ValueError(f"{label}: indptr decreases at {unit[0]} {i} ({indptr[i]} then "
                         f"{indptr[i + 1]}); it must never decrease.")
    nnz = int(indptr[-1])
    if len(indices) != len(data):
        raise ValueError(f"{label}: indices has {len(indices)} entries but data has "
                         f"{len(data)}; they must have the same length.")
    if nnz > len(indices):
        raise ValueError(f"{label}: indptr ends at {nnz} but there are only {len(indices)} "
                         "stored entries.")
    idx = indices[:nnz]
    bad = np.flatnonzero((idx < 0) | (idx >= minor))
    if bad.size:
        k = int(bad[0])
        sign = "negative " if idx[k] < 0 else ""
        raise ValueError(f"{label}: {sign}{unit[1]} index {int(idx[k])} at {unit[0]} "
                         f"{_sparse_entry_row(indptr, k)} is out of range (indices must "
                         f"be in [0, {minor}) for {minor} {unit[1]}s).")


def _check_coordinates(X, label: str) -> None:
    """The structure of a COO matrix (:func:`check_sparse_structure`): ``row``, ``col`` and
    ``data`` of one length, ``0 <= row < n_rows`` and ``0 <= col < n_cols``."""
    n_rows, n_cols = X.shape
    data = np.asarray(X.data)
    coords = getattr(X, "coords", None) or (X.row, X.col)
    row, col = (np.asarray(a) for a in coords)
    if not (len(row) == len(col) == len(data)):
        raise ValueError(f"{label}: row, col and data have lengths {len(row)}, {len(col)} "
                         f"and {len(data)}; they must have the same length.")
    for name, arr, size in (("row", row, n_rows), ("column", col, n_cols)):
        if arr.dtype.kind not in "iu":
            raise ValueError(f"{label}: {name} indices must be integers, got {arr.dtype}.")
        bad = np.flatnonzero((arr < 0) | (arr >= size))
        if bad.size:
            k = int(bad[0])
            raise ValueError(f"{label}: {name} index {int(arr[k])} of entry {k} is out of "
                             f"range (indices must be in [0, {size}) for {size} {name}s).")


def _converted_to_csr(X, label: str):
    """A LIL, DOK or DIA matrix converted to CSR by scipy (a LIL matrix's lists checked
    first: one list of indices and one of values per row, of equal lengths)."""
    n_rows = X.shape[0]
    if X.format == "lil" and (len(X.rows) != n_rows or len(X.data) != n_rows or any(
            len(r) != len(v) for r, v in zip(X.rows, X.data, strict=True))):
        raise ValueError(f"{label}: rows and data must hold one list per row, of equal "
                         "lengths.")
    try:
        return X.tocsr()
    except (ValueError, IndexError, TypeError) as exc:
        raise ValueError(f"{label}: inconsistent structure ({exc}).") from None


def _canonical_csr_copy(src) -> sp.csr_matrix:
    """A checked CSR, CSC, BSR or COO matrix copied into a new float64 CSR matrix that the
    caller owns, its indices sorted and its duplicate entries summed (``src`` untouched)."""
    if src.format == "csr":
        nnz = int(src.indptr[-1])
        out = sp.csr_matrix(
            (np.array(src.data[:nnz], dtype=np.float64), np.array(src.indices[:nnz]),
             np.array(src.indptr)), shape=src.shape, copy=False)
    else:
        out = sp.csr_matrix(src.copy(), dtype=np.float64)
    out.sum_duplicates()  # sorts the indices and adds duplicate entries, on the copy
    return out


def _as_2d_float(X, what: str, accept_sparse: bool = True, check_finite: bool = True):
    """``X`` as a float64 array (a checked canonical CSR copy for sparse input).

    Dense input must hold real numbers (float, int or bool dtype); complex, object, text and
    datetime arrays are refused rather than converted (which would drop imaginary parts or
    parse text).
    """
    if sp.issparse(X):
        if not accept_sparse:
            raise ValueError(f"{what}: sparse input is not supported here.")
        X = check_sparse_structure(X, what)
        if check_finite:
            _check_finite(X, what)
            _check_scale(X, what)
        return X
    A = _real_array(X, what, "a 2-D array")
    if A.ndim == 1:
        raise ValueError(
            f"{what} must be 2-D (n_samples, n_features), got a 1-D array of shape {A.shape}; "
            "reshape with X.reshape(-1, 1) for a single feature."
        )
    if A.ndim != 2:
        raise ValueError(f"{what} must be 2-D, got shape {A.shape}.")
    A = A.astype(np.float64, copy=False)
    if check_finite:
        _check_finite(A, what)
        _check_scale(A, what)
    return A


def _check_tasks(A: np.ndarray, starts: np.ndarray, whats: list[str], hint: str = "") -> None:
    """:func:`_check_finite` and :func:`_check_scale` on the rows of every task of the dense
    float stack ``A`` (task ``t``'s rows start at ``starts[t]``; every task has rows), in one
    pass over ``A``; only when a task fails do the per-task checks run, to raise their message
    (named by ``whats[t]``)."""
    if not A.size:
        return
    top = np.abs(A).max(axis=1) if A.ndim == 2 else np.abs(A)
    top = np.maximum.reduceat(top, starts)  # each task's largest magnitude (NaN if any)
    if ((top <= MAX_ABS_VALUE) & ~((top > 0.0) & (top < MIN_MAX_ABS_VALUE))).all():
        return
    for A_t, what in zip(np.split(A, starts[1:]), whats, strict=True):
        _check_finite(A_t, what, hint=hint)
        _check_scale(A_t, what)


def _python_kind(v) -> str | None:
    """``'str'``, ``'bool'``, ``'int'``, ``'float'`` for a scalar id or label, else None."""
    if isinstance(v, (str, np.str_)):
        return "str"
    if isinstance(v, (bool, np.bool_)):
        return "bool"
    if isinstance(v, (int, np.integer)):
        return "int"
    if isinstance(v, (float, np.floating)):
        return "float"
    return None


def _uniform_values(values: np.ndarray, what: str, noun: str) -> np.ndarray:
    """An object array of ids or labels as an array of one plain type (str, bool, int, float).

    Raises a ValueError naming the row of a missing value (``None``), of a value of another
    type (a list, a date), or of the first value whose type differs from the first row's:
    mixing ``1`` and ``'1'`` or ``1`` and ``1.0`` would merge or reorder them silently.
    """
    kinds = [_python_kind(v) for v in values.tolist()]
    for i, k in enumerate(kinds):
        if k is None:
            v = values[i]
            if v is None or (isinstance(v, float) and np.isnan(v)):
                raise ValueError(f"{what}: the {noun} of row {i} is missing ({v!r}).")
            raise ValueError(f"{what}: the {noun} of row {i} is a {type(v).__name__} ({v!r}); "
                             f"{noun}s must be strings, integers, floats or booleans.")
    first = kinds[0] if kinds else "str"
    other = next((i for i, k in enumerate(kinds) if k != first), None)
    if other is not None:
        raise ValueError(
            f"{what}: {noun}s of different types, row 0 holds {values[0]!r} ({first}) and row "
            f"{other} holds {values[other]!r} ({kinds[other]}); give all {noun}s one type (e.g. "
            "all strings), so that none are merged or reordered."
        )
    dtype = {"str": str, "bool": bool, "int": np.int64, "float": np.float64}[first or "str"]
    try:
        return np.array(values.tolist(), dtype=dtype)
    except OverflowError:
        raise ValueError(f"{what}: an integer {noun} does not fit in 64 bits.") from None
