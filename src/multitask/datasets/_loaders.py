"""Loaders for the real data sets kept in the data folder (see :func:`find_data_dir`).

Nothing is downloaded: every loader reads local files and raises ``FileNotFoundError`` naming
the missing file.
"""

from __future__ import annotations

import bz2
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.io import loadmat
from sklearn.utils import Bunch

from ._paths import data_file, find_data_dir
from ._utils import RandomStateLike, check_random_state

PathLike = str | os.PathLike

LETTER_PAIRS: tuple[tuple[str, str], ...] = (
    ("c", "e"),
    ("g", "y"),
    ("m", "n"),
    ("a", "g"),
    ("a", "o"),
    ("f", "t"),
    ("h", "n"),
)
"""The seven letter pairs of the "Handwritten Letter" multi-task benchmark."""

NEWSGROUP_PAIRS: tuple[str, ...] = ("comp.vs.sci", "rec.vs.talk")
"""The two 20 Newsgroups two-task sets shipped with MALSAR."""

SCENE_LABELS: tuple[str, ...] = ("Beach", "Sunset", "FallFoliage", "Field", "Mountain", "Urban")


# --------------------------------------------------------------------------------------------
# SARCOS
# --------------------------------------------------------------------------------------------

_SARCOS_DESCR = """\
SARCOS inverse dynamics (test file only)
========================================

Multi-output regression with a shared design: 4,449 rows, 21 inputs (7 joint positions,
7 joint velocities, 7 joint accelerations of a 7-degree-of-freedom SARCOS robot arm) and
7 outputs (the joint torques), one task per torque.

Only the 4,449-row test file ``sarcos_inv_test.mat`` is available; the 44,484-row training
file is not. Split these rows yourself (e.g. with ``split_shared``); results are not
comparable with published SARCOS numbers.

References
----------
S. Vijayakumar, S. Schaal, "Locally weighted projection regression: an O(n) algorithm for
incremental real time learning in high dimensional space", ICML 2000.
C. E. Rasmussen, C. K. I. Williams, "Gaussian Processes for Machine Learning", MIT Press, 2006.
"""


def load_sarcos(data_dir: PathLike | None = None) -> Bunch:
    """Load the SARCOS inverse-dynamics test file (7 torque tasks with a shared design).

    Parameters
    ----------
    data_dir : str or path-like, optional
        Data folder; resolved by :func:`find_data_dir`. Reads ``sarcos/sarcos_inv_test.mat``.

    Returns
    -------
    data : sklearn.utils.Bunch
        X : ndarray of shape (4449, 21), float64
            Joint positions, velocities and accelerations.
        Y : ndarray of shape (4449, 7), float64
            Joint torques, one column per task.
        feature_names : ndarray of shape (21,), str
        task_names : ndarray of shape (7,), str
        DESCR : str
    """
    path = data_file(data_dir, "sarcos", "sarcos_inv_test.mat")
    data = np.asarray(loadmat(path)["sarcos_inv_test"], dtype=np.float64)
    if data.ndim != 2 or data.shape[1] != 28:
        raise ValueError(f"{path.name}: expected 28 columns, got shape {data.shape}")
    feature_names = [
        f"{kind}_{j}" for kind in ("position", "velocity", "acceleration") for j in range(1, 8)
    ]
    return Bunch(
        X=np.ascontiguousarray(data[:, :21]),
        Y=np.ascontiguousarray(data[:, 21:]),
        feature_names=np.array(feature_names),
        task_names=np.array([f"torque_{j}" for j in range(1, 8)]),
        DESCR=_SARCOS_DESCR,
    )


# --------------------------------------------------------------------------------------------
# Yeast and Scene (multi-label, data rows only)
# --------------------------------------------------------------------------------------------

_YEAST_DESCR = """\
Yeast (multi-label; MULAN train/test split)
===========================================

Gene functional classes of yeast: 103 real features per gene, 14 binary labels (one
classification task per label, shared design). 1,500 training rows and 917 test rows
(the standard MULAN split).

References
----------
A. Elisseeff, J. Weston, "A kernel method for multi-labelled classification", NIPS 2001.
G. Tsoumakas, E. Spyromitros-Xioufis, J. Vilcek, I. Vlahavas, "Mulan: a Java library for
multi-label learning", JMLR 12:2411-2414, 2011.
"""

_SCENE_DESCR = """\
Scene (multi-label; MULAN train/test split)
===========================================

Natural scene images: 294 features in [0, 1] (colour moments of a 7 x 7 grid in LUV space)
and 6 binary labels (Beach, Sunset, FallFoliage, Field, Mountain, Urban), one classification
task per label with a shared design. 1,211 training rows and 1,196 test rows.

References
----------
M. R. Boutell, J. Luo, X. Shen, C. M. Brown, "Learning multi-label scene classification",
Pattern Recognition 37(9):1757-1771, 2004.
"""


def _read_rows(path: Path, n_columns: int) -> np.ndarray:
    """Read comma-separated data rows (blank lines skipped, no header) as float64."""
    data = np.loadtxt(path, delimiter=",", dtype=np.float64, ndmin=2)
    if data.shape[1] != n_columns:
        raise ValueError(f"{path.name}: expected {n_columns} columns, got {data.shape[1]}")
    return data


def _load_multilabel(
    name: str,
    n_features: int,
    task_names: Sequence[str],
    subset: str,
    data_dir: PathLike | None,
    descr: str,
) -> Bunch:
    if subset not in ("train", "test", "all"):
        raise ValueError(f"subset must be 'train', 'test' or 'all', got {subset!r}")
    n_labels = len(task_names)
    parts = ("train", "test") if subset == "all" else (subset,)
    blocks = []
    for part in parts:
        path = data_file(data_dir, name, f"{name}-{part}.arff")
        blocks.append(_read_rows(path, n_features + n_labels))
    data = np.vstack(blocks)
    labels = data[:, n_features:]
    if not np.all((labels == 0) | (labels == 1)):
        raise ValueError(f"{name}: the last {n_labels} columns are not binary labels")
    bunch = Bunch(
        X=np.ascontiguousarray(data[:, :n_features]),
        Y=labels.astype(np.int64),
        feature_names=np.array([f"Att{j}" for j in range(1, n_features + 1)]),
        task_names=np.array(list(task_names)),
        subset=subset,
        DESCR=descr,
    )
    if subset == "all":
        n_train = blocks[0].shape[0]
        bunch.train_index = np.arange(n_train)
        bunch.test_index = np.arange(n_train, data.shape[0])
    return bunch


def load_yeast(data_dir: PathLike | None = None, subset: str = "all") -> Bunch:
    """Load the Yeast multi-label data set (14 label tasks with a shared design).

    Parameters
    ----------
    data_dir : str or path-like, optional
        Data folder; resolved by :func:`find_data_dir`. Reads ``yeast/yeast-train.arff`` and/or
        ``yeast/yeast-test.arff`` (comma-separated data rows without an ARFF header: 103
        features then 14 labels).
    subset : {"train", "test", "all"}, default="all"
        Which part of the official MULAN split; ``"all"`` stacks train then test.

    Returns
    -------
    data : sklearn.utils.Bunch
        X : ndarray of shape (n, 103), float64
            n = 1500 (train), 917 (test) or 2417 (all).
        Y : ndarray of shape (n, 14), int64 in {0, 1}
            One column per label task.
        feature_names : ndarray of shape (103,), str
        task_names : ndarray of shape (14,), str
            ``"Class1"`` ... ``"Class14"``.
        train_index, test_index : ndarray of int64
            Only for ``subset="all"``: the rows of the official training and test parts.
        subset : str
        DESCR : str
    """
    names = [f"Class{j}" for j in range(1, 15)]
    return _load_multilabel("yeast", 103, names, subset, data_dir, _YEAST_DESCR)


def load_scene(data_dir: PathLike | None = None, subset: str = "all") -> Bunch:
    """Load the Scene multi-label data set (6 label tasks with a shared design).

    Parameters
    ----------
    data_dir : str or path-like, optional
        Data folder; resolved by :func:`find_data_dir`. Reads ``scene/scene-train.arff`` and/or
        ``scene/scene-test.arff`` (comma-separated data rows without an ARFF header: 294
        features then 6 labels).
    subset : {"train", "test", "all"}, default="all"
        Which part of the official MULAN split; ``"all"`` stacks train then test.

    Returns
    -------
    data : sklearn.utils.Bunch
        X : ndarray of shape (n, 294), float64
            n = 1211 (train), 1196 (test) or 2407 (all).
        Y : ndarray of shape (n, 6), int64 in {0, 1}
            Beach, Sunset, FallFoliage, Field, Mountain, Urban.
        feature_names : ndarray of shape (294,), str
        task_names : ndarray of shape (6,), str
        train_index, test_index : ndarray of int64
            Only for ``subset="all"``: the rows of the official training and test parts.
        subset : str
        DESCR : str
    """
    return _load_multilabel("scene", 294, SCENE_LABELS, subset, data_dir, _SCENE_DESCR)


# --------------------------------------------------------------------------------------------
# OCR letters
# --------------------------------------------------------------------------------------------

_LETTERS_DESCR = """\
Handwritten letters (OCR data of Taskar et al.), letter-pair tasks
=================================================================

Binary tasks built from pairs of letters, e.g. c/e, g/y, m/n, a/g, a/o, f/t, h/n (the seven
pairs of the "Handwritten Letter" multi-task benchmark). Each letter is a 16 x 8 binary image
(128 pixel features). A task holds every letter of its two classes from both the "train" and
the "test" words of the file (52,152 letters in all); ``y = 1`` marks the first letter of the
pair. ``from_train_words`` tells which rows come from the file's training words.

References
----------
B. Taskar, C. Guestrin, D. Koller, "Max-margin Markov networks", NIPS 2003 (data collected by
R. Kassel, MIT).
G. Obozinski, B. Taskar, M. I. Jordan, "Joint covariate selection and joint subspace selection
for multiple classification problems", Statistics and Computing 20(2):231-252, 2010.
"""


def _letter_code(letter: str) -> int:
    if not (isinstance(letter, str) and len(letter) == 1 and "a" <= letter.lower() <= "z"):
        raise ValueError(f"letters must be single characters a..z, got {letter!r}")
    return ord(letter.lower()) - ord("a")


def load_letters(
    data_dir: PathLike | None = None, pairs: Sequence[tuple[str, str]] = LETTER_PAIRS
) -> Bunch:
    """Load the handwritten-letter pair tasks (one binary task per pair of letters).

    Parameters
    ----------
    data_dir : str or path-like, optional
        Data folder; resolved by :func:`find_data_dir`. Reads ``ocr_letters/ocr_taskar.mat``.
    pairs : sequence of (str, str), default=LETTER_PAIRS
        Letter pairs; task ``t`` separates ``pairs[t][0]`` (label 1) from ``pairs[t][1]``
        (label 0).

    Returns
    -------
    data : sklearn.utils.Bunch
        X : list of ndarray of shape (n_t, 128), float64
            Binary pixels of every letter of the two classes (train and test words).
        y : list of ndarray of shape (n_t,), int64 in {0, 1}
            1 for the first letter of the pair.
        from_train_words : list of ndarray of shape (n_t,), bool
            True for letters taken from the file's training words.
        task_names : ndarray of shape (n_tasks,), str
            ``"c/e"``, ...
        feature_names : ndarray of shape (128,), str
            ``"pixel_0"`` ... ``"pixel_127"``, in the file's order of the pixels.
        DESCR : str
    """
    pairs = [tuple(pair) for pair in pairs]
    if not pairs or any(len(pair) != 2 for pair in pairs):
        raise ValueError("pairs must be a non-empty sequence of (letter, letter) pairs")
    codes = [(_letter_code(a), _letter_code(b)) for a, b in pairs]
    if any(a == b for a, b in codes):
        raise ValueError("the two letters of a pair must differ")

    path = data_file(data_dir, "ocr_letters", "ocr_taskar.mat")
    mat = loadmat(path)
    patterns, labels, from_train = [], [], []
    for part in ("train", "test"):
        words = mat[f"patterns_{part}"].ravel()
        word_labels = mat[f"labels_{part}"].ravel()
        pixels = np.hstack([np.asarray(w) for w in words])  # (129, n_letters)
        labs = np.concatenate([np.asarray(lab).ravel() for lab in word_labels])
        if pixels.shape[0] != 129 or pixels.shape[1] != labs.size:
            raise ValueError(f"{path.name}: unexpected pattern layout {pixels.shape}")
        patterns.append(pixels[:128].T)
        labels.append(labs.astype(np.int64))
        from_train.append(np.full(labs.size, part == "train"))
    pixels = np.vstack(patterns)
    labels = np.concatenate(labels)
    from_train = np.concatenate(from_train)

    X, y, origin = [], [], []
    for a, b in codes:
        rows = np.flatnonzero((labels == a) | (labels == b))
        X.append(pixels[rows].astype(np.float64))
        y.append((labels[rows] == a).astype(np.int64))
        origin.append(from_train[rows])
    # The names only number the 128 pixel rows of the file (the image layout is not checked).
    feature_names = [f"pixel_{k}" for k in range(128)]
    return Bunch(
        X=X,
        y=y,
        from_train_words=origin,
        task_names=np.array([f"{a.lower()}/{b.lower()}" for a, b in pairs]),
        feature_names=np.array(feature_names),
        DESCR=_LETTERS_DESCR,
    )


# --------------------------------------------------------------------------------------------
# 20 Newsgroups (MALSAR two-task sets)
# --------------------------------------------------------------------------------------------

_NEWSGROUPS_DESCR = """\
20 Newsgroups two-task sets (as shipped with MALSAR)
====================================================

Binary text classification with sparse term features (2,000 terms). Each pair folder
("comp.vs.sci", "rec.vs.talk") holds two related tasks: the same two top-level categories,
different sub-groups. Sizes: comp.vs.sci task1 1,875, task2 1,827; rec.vs.talk task1 1,844,
task2 1,545 documents. The original labels 1 and 2 are mapped to 0 and 1 (``y = gnd - 1``).

References
----------
K. Lang, "NewsWeeder: learning to filter netnews", ICML 1995.
J. Zhou, J. Chen, J. Ye, "MALSAR: Multi-tAsk Learning via StructurAl Regularization",
Arizona State University, 2011.
"""


def _find_case_insensitive(folder: Path, name: str) -> Path | None:
    exact = folder / name
    if exact.exists():
        return exact
    if folder.is_dir():
        for child in sorted(folder.iterdir()):
            if child.name.lower() == name.lower():
                return child
    return None


def load_newsgroups(
    data_dir: PathLike | None = None, pairs: Sequence[str] = NEWSGROUP_PAIRS
) -> Bunch:
    """Load the 20 Newsgroups two-task sets of MALSAR (sparse binary text tasks).

    Parameters
    ----------
    data_dir : str or path-like, optional
        Data folder; resolved by :func:`find_data_dir`. Reads
        ``newsgroups_malsar/<pair>/task1.mat`` and ``task2.mat`` (the file names' case may
        differ, e.g. ``Task1.mat``).
    pairs : sequence of str, default=("comp.vs.sci", "rec.vs.talk")
        Pair folders to load; each contributes two tasks.

    Returns
    -------
    data : sklearn.utils.Bunch
        X : list of scipy.sparse.csr_matrix of shape (n_t, 2000), float64
            Term features; n_t = 1875, 1827, 1844, 1545 for the default pairs.
        y : list of ndarray of shape (n_t,), int64 in {0, 1}
            ``gnd - 1`` (original labels 1 and 2).
        task_names : ndarray of shape (2 * len(pairs),), str
            ``"comp.vs.sci/task1"``, ...
        DESCR : str
    """
    if isinstance(pairs, str):
        pairs = (pairs,)
    root = find_data_dir(data_dir)
    X, y, names = [], [], []
    for pair in pairs:
        folder = root / "newsgroups_malsar" / pair
        for k in (1, 2):
            path = _find_case_insensitive(folder, f"task{k}.mat")
            if path is None:
                raise FileNotFoundError(
                    f"Missing data file 'newsgroups_malsar/{pair}/task{k}.mat' in the data "
                    f"folder {str(root)!r}. Pass data_dir=<folder> or set MULTITASK_DATA."
                )
            mat = loadmat(path)
            fea = sp.csr_matrix(mat["fea"], dtype=np.float64)
            gnd = np.asarray(mat["gnd"]).ravel().astype(np.int64)
            if fea.shape[0] != gnd.size or not np.all((gnd == 1) | (gnd == 2)):
                raise ValueError(f"{path}: unexpected 'fea'/'gnd' layout")
            X.append(fea)
            y.append(gnd - 1)
            names.append(f"{pair}/task{k}")
    return Bunch(X=X, y=y, task_names=np.array(names), DESCR=_NEWSGROUPS_DESCR)


# --------------------------------------------------------------------------------------------
# C. elegans splice sites
# --------------------------------------------------------------------------------------------

_SPLICE_DESCR = """\
C. elegans acceptor splice sites (one organism)
===============================================

DNA sequences around an AG dinucleotide, labelled +1 (true acceptor splice site) or -1.
``source="arff"``: 2,200 sequences of 82 nucleotides (200 positive, 2,000 negative).
``source="fasta"``: 100,000 sequences of 398 nucleotides (3,301 positive). One organism only,
so this is a single task; it serves string-kernel and multiple-kernel-learning code.

References
----------
S. Sonnenburg, G. Schweikert, P. Philips, J. Behr, G. Raetsch, "Accurate splice site
prediction using support vector machines", BMC Bioinformatics 8(Suppl 10):S7, 2007.
"""


def _read_splice_arff(path: Path) -> tuple[list[str], list[int]]:
    sequences: list[str] = []
    labels: list[int] = []
    in_data = False
    with open(path, encoding="ascii") as handle:
        for line in handle:
            line = line.strip()
            if not line or line.startswith("%"):
                continue
            if not in_data:
                if line.lower().startswith("@data"):
                    in_data = True
                continue
            label, seq = line.split(",", 1)
            labels.append(int(round(float(label))))
            sequences.append(seq.strip().strip("'\"").upper())
    if not in_data:
        raise ValueError(f"{path.name}: no @data section")
    return sequences, labels


def _read_splice_fasta(path: Path, n_max: int | None) -> tuple[list[str], list[int]]:
    sequences: list[str] = []
    labels: list[int] = []
    parts: list[str] = []
    with bz2.open(path, "rt", encoding="ascii") as handle:
        for line in handle:
            line = line.strip()
            if not line:
                continue
            if line.startswith(">"):
                if parts:
                    sequences.append("".join(parts).upper())
                    parts = []
                if n_max is not None and len(labels) == n_max:
                    break
                fields = dict(
                    item.strip().split("=", 1) for item in line[1:].split(",") if "=" in item
                )
                if "label" not in fields:
                    raise ValueError(f"{path.name}: header without label: {line!r}")
                labels.append(int(round(float(fields["label"]))))
            else:
                parts.append(line)
    if parts:
        sequences.append("".join(parts).upper())
    if len(sequences) != len(labels):
        raise ValueError(f"{path.name}: headers and sequences do not match")
    return sequences, labels


def load_splice(
    data_dir: PathLike | None = None,
    source: str = "arff",
    n_max: int | None = None,
    random_state: RandomStateLike = None,
) -> Bunch:
    """Load C. elegans acceptor splice-site sequences (one task, labels +1/-1).

    Parameters
    ----------
    data_dir : str or path-like, optional
        Data folder; resolved by :func:`find_data_dir`. Reads
        ``splice_c_elegans/C_elegans_acc_seq.arff`` or
        ``splice_c_elegans/C_elegans_acc_100000.fasta.bz2``.
    source : {"arff", "fasta"}, default="arff"
        ``"arff"``: 2,200 sequences of 82 nt (200 positive). ``"fasta"``: 100,000 sequences of
        398 nt (3,301 positive).
    n_max : int, optional
        Keep at most ``n_max`` sequences: the first ones of the file when ``random_state`` is
        None (the FASTA file is then read only that far), else a random subset of that size
        drawn with ``random_state``, kept in file order.
    random_state : int, RandomState instance or None, default=None
        Seed for the random subset (used only with ``n_max``).

    Returns
    -------
    data : sklearn.utils.Bunch
        sequences : list of str
            Upper-case sequences over ``ACGT``.
        y : ndarray of shape (n,), int64 in {-1, +1}
        source : str
        DESCR : str
    """
    if source not in ("arff", "fasta"):
        raise ValueError(f"source must be 'arff' or 'fasta', got {source!r}")
    if n_max is not None and (int(n_max) != n_max or n_max < 1):
        raise ValueError(f"n_max must be a positive integer, got {n_max!r}")
    subsample = n_max is not None and random_state is not None
    if source == "arff":
        path = data_file(data_dir, "splice_c_elegans", "C_elegans_acc_seq.arff")
        sequences, labels = _read_splice_arff(path)
        if n_max is not None and not subsample:
            sequences, labels = sequences[:n_max], labels[:n_max]
    else:
        path = data_file(data_dir, "splice_c_elegans", "C_elegans_acc_100000.fasta.bz2")
        sequences, labels = _read_splice_fasta(path, None if subsample else n_max)
    if subsample and n_max < len(sequences):
        rng = check_random_state(random_state)
        keep = np.sort(rng.choice(len(sequences), size=int(n_max), replace=False))
        sequences = [sequences[i] for i in keep]
        labels = [labels[i] for i in keep]
    y = np.asarray(labels, dtype=np.int64)
    if not np.all((y == 1) | (y == -1)):
        raise ValueError(f"{path.name}: labels are not +1/-1")
    return Bunch(sequences=sequences, y=y, source=source, DESCR=_SPLICE_DESCR)
