"""Locate the folder that holds the real data sets (``shared/data`` beside the clone)."""

from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "MULTITASK_DATA"
"""Name of the environment variable that points to the data folder."""

_RELATIVE = Path("shared") / "data"


def _candidates(start: Path) -> list[Path]:
    """``<p>/shared/data`` for ``start`` and each of its parents (nearest first)."""
    start = start.resolve()
    return [p / _RELATIVE for p in (start, *start.parents)]


def find_data_dir(data_dir: str | os.PathLike | None = None) -> Path:
    """Return the folder that holds the real data sets.

    The folder is resolved in this order:

    1. the ``data_dir`` argument, when given;
    2. the environment variable ``MULTITASK_DATA``, when set and not empty;
    3. the first folder ``shared/data`` found beside the current working directory or one of
       its parents, then beside this module's file or one of its parents. A clone of the
       repository has ``shared/`` beside it, so ``<clone>/../shared/data`` is found from
       anywhere inside the clone.

    Parameters
    ----------
    data_dir : str or path-like, optional
        Explicit data folder. It must exist.

    Returns
    -------
    path : pathlib.Path
        Absolute path of an existing folder.

    Raises
    ------
    FileNotFoundError
        If the explicit folder or the folder named by ``MULTITASK_DATA`` does not exist, or if
        no ``shared/data`` folder is found by the search.
    """
    if data_dir is not None:
        path = Path(data_dir).expanduser()
        if not path.is_dir():
            raise FileNotFoundError(f"data_dir={str(data_dir)!r} is not an existing folder.")
        return path.resolve()

    env = os.environ.get(ENV_VAR, "").strip()
    if env:
        path = Path(env).expanduser()
        if not path.is_dir():
            raise FileNotFoundError(
                f"The environment variable {ENV_VAR}={env!r} does not name an existing folder."
            )
        return path.resolve()

    searched: list[Path] = []
    for start in (Path.cwd(), Path(__file__).parent):
        for candidate in _candidates(start):
            if candidate in searched:
                continue
            searched.append(candidate)
            if candidate.is_dir():
                return candidate
    raise FileNotFoundError(
        "Could not find the data folder: no 'shared/data' folder beside the current working "
        "directory, this package or any of their parents. Pass data_dir=<folder> to the loader "
        f"or set the environment variable {ENV_VAR} to the folder that holds the data sets."
    )


def data_file(data_dir: str | os.PathLike | None, *parts: str) -> Path:
    """Return ``find_data_dir(data_dir) / parts...`` and check that the file exists.

    Parameters
    ----------
    data_dir : str or path-like or None
        Passed to :func:`find_data_dir`.
    *parts : str
        Path components below the data folder, e.g. ``"sarcos", "sarcos_inv_test.mat"``.

    Returns
    -------
    path : pathlib.Path

    Raises
    ------
    FileNotFoundError
        If the data folder or the file is missing; the message names the file.
    """
    root = find_data_dir(data_dir)
    path = root.joinpath(*parts)
    if not path.exists():
        raise FileNotFoundError(
            f"Missing data file {'/'.join(parts)!r} in the data folder {str(root)!r}. "
            "Pass data_dir=<folder> or set MULTITASK_DATA to a folder that holds it."
        )
    return path
