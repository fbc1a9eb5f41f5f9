"""Build ``data/school.npz``, the compact copy of the School data shipped inside the package.

Run once from a clone that has the data folder (``shared/data`` beside the clone, or the
folder named by ``MULTITASK_DATA``)::

    python -m multitask.datasets._build_school [--data-dir DIR] [--output FILE]

Inputs (in ``<data>/school/``):

* ``school_b.mat``: ``x`` (28, 15362) uint8 with one column per student, ``y`` (15362, 1)
  uint8 and ``task_indexes`` (139, 1), the 1-based first column of each school.
* ``school.mat`` (optional, used as a cross-check): cell arrays ``X`` (n_t, 28) and ``Y``.
* ``splits/school_{1..10}_indexes.mat``: ``tr`` (1, 11472) and ``tst`` (1, 3890), 1-based
  indexes into the columns of ``x``, and ``tr_indexes`` / ``tst_indexes`` (139, 1), the 1-based
  start of each school's block in ``tr`` / ``tst``.

Output arrays (``np.savez_compressed``):

* ``X`` (15362, 28) uint8, bias column last; ``y`` (15362,) uint8;
* ``offsets`` (140,) int32: rows of school ``t`` are ``offsets[t]:offsets[t + 1]``;
* ``train_mask`` (10, ceil(15362 / 8)) uint8: ``np.packbits`` of the boolean mask of the
  training rows of each official split (the test rows are the complement).

The split files list each school's rows in a random order; only the sets are stored (the order
does not change which rows are used for training). Every index is checked to belong to its
school's block, and each split is checked to partition every school.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from scipy.io import loadmat

from ._paths import find_data_dir

N_SPLITS = 10
OUTPUT = Path(__file__).parent / "data" / "school.npz"


def _read_split(path: Path, offsets: np.ndarray) -> np.ndarray:
    """Read one split file and return the boolean training mask over the stacked rows."""
    mat = loadmat(path)
    n_rows = int(offsets[-1])
    n_tasks = len(offsets) - 1
    mask = np.zeros(n_rows, dtype=bool)
    seen = np.zeros(n_rows, dtype=np.int64)
    for key, start_key, is_train in (("tr", "tr_indexes", True), ("tst", "tst_indexes", False)):
        idx = mat[key].ravel().astype(np.int64) - 1  # 1-based columns of x -> 0-based rows
        starts = mat[start_key].ravel().astype(np.int64) - 1
        if starts.shape != (n_tasks,) or starts[0] != 0 or np.any(np.diff(starts) <= 0):
            raise ValueError(f"{path.name}: {start_key} is not an increasing list of starts")
        bounds = np.append(starts, idx.size)
        for t in range(n_tasks):
            block = idx[bounds[t] : bounds[t + 1]]
            if block.size == 0:
                raise ValueError(f"{path.name}: school {t} has an empty {key!r} block")
            if np.any(block < offsets[t]) or np.any(block >= offsets[t + 1]):
                raise ValueError(
                    f"{path.name}: an index of block {t} in {key!r} is outside school {t}"
                )
        seen[idx] += 1
        mask[idx] = is_train
    if np.any(seen != 1):
        raise ValueError(f"{path.name}: the train and test indexes do not partition the rows")
    return mask


def build(data_dir: str | Path | None = None, output: str | Path = OUTPUT) -> dict[str, np.ndarray]:
    """Convert the School files to the compact ``.npz`` shipped with the package.

    Parameters
    ----------
    data_dir : str or path-like, optional
        Data folder (see :func:`multitask.datasets.find_data_dir`).
    output : str or path-like
        Where to write the ``.npz`` file.

    Returns
    -------
    arrays : dict of str to ndarray
        The arrays written (see the module docstring for their shapes).
    """
    folder = find_data_dir(data_dir) / "school"
    mat = loadmat(folder / "school_b.mat")
    X = np.ascontiguousarray(mat["x"].T).astype(np.uint8)  # (15362, 28)
    y = mat["y"].ravel().astype(np.uint8)
    starts = mat["task_indexes"].ravel().astype(np.int64) - 1
    offsets = np.append(starts, X.shape[0]).astype(np.int32)
    if offsets[0] != 0 or np.any(np.diff(offsets) <= 0):
        raise ValueError("task_indexes is not an increasing list of 1-based starts")
    if not np.all(X[:, -1] == 1):
        raise ValueError("the last column of x is not the constant bias column")

    other = folder / "school.mat"
    if other.exists():  # cross-check with the per-school cell arrays
        cells = loadmat(other)
        X2 = np.vstack([c for c in cells["X"].ravel()])
        y2 = np.concatenate([c.ravel() for c in cells["Y"].ravel()])
        sizes = np.array([c.shape[0] for c in cells["X"].ravel()])
        if not (
            np.array_equal(X2, X)
            and np.array_equal(y2, y)
            and np.array_equal(sizes, np.diff(offsets))
        ):
            raise ValueError("school.mat and school_b.mat disagree")

    masks = np.stack(
        [_read_split(folder / "splits" / f"school_{i}_indexes.mat", offsets) for i in range(1, 11)]
    )
    arrays = {
        "X": X,
        "y": y,
        "offsets": offsets,
        "train_mask": np.packbits(masks, axis=1),
    }
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(output, **arrays)
    return arrays


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point: build the file and print a one-line summary."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None, help="data folder (default: search)")
    parser.add_argument("--output", default=str(OUTPUT), help="output .npz file")
    args = parser.parse_args(argv)
    arrays = build(args.data_dir, args.output)
    size = Path(args.output).stat().st_size
    print(
        f"wrote {args.output}: {len(arrays['offsets']) - 1} schools, {arrays['X'].shape[0]} rows, "
        f"{arrays['train_mask'].shape[0]} splits, {size} bytes"
    )


if __name__ == "__main__":
    main()
