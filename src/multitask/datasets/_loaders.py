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


# --------------------------------------------------------------------------------------------
# Belgian motor third-party liability, 1997 (claim counts with exposure)
# --------------------------------------------------------------------------------------------

_BE_MTPL97_DESCR = """\
beMTPL97: Belgian motor third-party liability policies, 1997 (claim counts with exposure)
=========================================================================================

163,212 policies of a Belgian insurer: the number of claims of each policy in the year
(``nclaims``, 0 to 5) over its exposure (``expo``, the fraction of the year it was insured,
0.0027 to 1). The overall claim frequency is 0.139 claims per policy-year.

Tasks: the postal districts, ``postcode // 100`` (the first two digits of the Belgian postal
code): 80 tasks of 246 to 6,291 policies (median 1,644), 219 to 5,215 policy-years of
exposure, 19 to 1,282 claims each.

Features (10): ``ageph`` (age of the policyholder), ``bm`` (bonus-malus level, 0 to 22),
``power`` (vehicle power, kW), ``agec`` (vehicle age, years), ``fleet`` (0/1) as numbers, and
the indicators of ``sex``, ``fuel``, ``use`` and ``coverage`` with the most common level as
reference (``male``, ``gasoline``, ``private``, ``TPL``): ``sex_female``, ``fuel_diesel``,
``use_work``, ``coverage_TPL+``, ``coverage_TPL++``. The outcomes ``claim``, ``amount`` and
``average`` are never features. Standardize the features before fitting.

The multi-task model of the data: a Poisson regression per district with ``log(expo)`` as
offset, i.e. (scikit-learn's way) the rate ``nclaims / expo`` as target with ``expo`` as
sample weight; the expected number of claims is then the rate times the exposure.

References
----------
K. Henckaerts, K. Antonio, M. Clijsters, R. Verbelen, "A data driven binning strategy for the
construction of insurance tariff classes", Scandinavian Actuarial Journal 2018(8):681-705.
M. Denuit, S. Lang, "Non-life rate-making with Bayesian GAMs", Insurance: Mathematics and
Economics 35(3), 2004.
C. Dutang, A. Charpentier, "CASdatasets: Insurance Datasets", R package (version 1.2-1).
"""

#: The numeric features of beMTPL97, then its categorical columns with their levels (the first,
#: the most common, is the reference level and gets no column).
_BE_MTPL97_NUMERIC = ("ageph", "bm", "power", "agec", "fleet")
_BE_MTPL97_LEVELS = {
    "sex": ("male", "female"),
    "fuel": ("gasoline", "diesel"),
    "use": ("private", "work"),
    "coverage": ("TPL", "TPL+", "TPL++"),
}


def load_be_mtpl97(data_dir: PathLike | None = None) -> Bunch:
    """Load the Belgian motor insurance claim counts (80 postal-district tasks, with exposure).

    Parameters
    ----------
    data_dir : str or path-like, optional
        Data folder; resolved by :func:`find_data_dir`. Reads
        ``be_mtpl97/beMTPL97.csv.gz`` (with pandas).

    Returns
    -------
    data : sklearn.utils.Bunch
        X : ndarray of shape (163212, 10), float64
            The features, long format (one row per policy, in the file's order):
            ``ageph, bm, power, agec, fleet, sex_female, fuel_diesel, use_work,
            coverage_TPL+, coverage_TPL++`` (indicators against the most common level).
        y : ndarray of shape (163212,), float64
            The number of claims, ``nclaims`` (0 to 5).
        exposure : ndarray of shape (163212,), float64
            The exposure in years, ``expo`` (in ``(0, 1]``). A Poisson model of the counts
            fits the rate ``y / exposure`` with ``sample_weight=exposure``.
        task : ndarray of shape (163212,), int64
            The postal district of each policy, ``postcode // 100`` (80 distinct values).
        postcode : ndarray of shape (163212,), int64
            The postal code (583 distinct values), for other groupings.
        task_names : ndarray of shape (80,), int64
            The districts, sorted.
        feature_names : ndarray of shape (10,), str
        DESCR : str

    Raises
    ------
    FileNotFoundError
        When the data folder or the file is missing.
    ValueError
        When a column is missing, a categorical column holds a level not listed in the
        README, or the counts or exposures are out of their range.

    Examples
    --------
    >>> from multitask.datasets import load_be_mtpl97
    >>> d = load_be_mtpl97()                                   # doctest: +SKIP
    >>> round(d.y.sum() / d.exposure.sum(), 3)                 # doctest: +SKIP
    0.139
    """
    import pandas as pd

    path = data_file(data_dir, "be_mtpl97", "beMTPL97.csv.gz")
    df = pd.read_csv(path)
    needed = ("nclaims", "expo", "postcode", *_BE_MTPL97_NUMERIC, *_BE_MTPL97_LEVELS)
    missing = [c for c in needed if c not in df.columns]
    if missing:
        raise ValueError(f"{path.name}: column {missing[0]!r} not found.")
    columns = [df[c].to_numpy(dtype=np.float64) for c in _BE_MTPL97_NUMERIC]
    names = list(_BE_MTPL97_NUMERIC)
    for col, levels in _BE_MTPL97_LEVELS.items():
        values = df[col].astype(str).to_numpy()
        unknown = sorted(set(np.unique(values)) - set(levels))
        if unknown:
            raise ValueError(f"{path.name}: column {col!r} holds the level {unknown[0]!r}, not "
                             f"one of {levels}.")
        for level in levels[1:]:
            columns.append((values == level).astype(np.float64))
            names.append(f"{col}_{level}")
    y = df["nclaims"].to_numpy(dtype=np.float64)
    exposure = df["expo"].to_numpy(dtype=np.float64)
    if not (np.all(np.isfinite(y)) and np.all(y >= 0)):
        raise ValueError(f"{path.name}: 'nclaims' holds negative or missing counts.")
    if not (np.all(np.isfinite(exposure)) and np.all(exposure > 0)):
        raise ValueError(f"{path.name}: 'expo' holds exposures that are not positive.")
    postcode = df["postcode"].to_numpy(dtype=np.int64)
    task = postcode // 100
    return Bunch(
        X=np.ascontiguousarray(np.column_stack(columns)),
        y=y,
        exposure=exposure,
        task=task,
        postcode=postcode,
        task_names=np.unique(task),
        feature_names=np.array(names),
        DESCR=_BE_MTPL97_DESCR,
    )


# --------------------------------------------------------------------------------------------
# Vowel recognition (Deterding data): 11 classes, 15 speakers
# --------------------------------------------------------------------------------------------

_VOWEL_DESCR = """\
Vowel recognition (Deterding data; UCI "Connectionist Bench", vowel-context.data)
==================================================================================

The 11 steady-state vowels of British English, each spoken in an h-V-d word (heed, hid, head,
had, hard, hud, hod, hoard, hood, who'd, heard) six times by each of 15 speakers: 990 rows,
66 per speaker, 6 per (speaker, vowel). Features: 10 log-area ratios from an LPC analysis of
the steady part of the vowel (``f0`` .. ``f9``, about -5.2 to 5.1). Classes: the vowels
coded 0 .. 10 as in the file (whose description gives the words but not their order).

Tasks: the speakers (0 .. 14), all with the same 11 classes. The original split is by speaker
(``train_speaker``): speakers 0-7 (528 rows) for training and 8-14 (462 rows) for testing,
speaker-independent recognition (a "new task" problem); per-task models split each speaker's
rows instead (stratified by vowel).

References
----------
D. H. Deterding, "Speaker Normalisation for Automatic Speech Recognition", PhD thesis,
University of Cambridge, 1989.
A. J. Robinson, "Dynamic Error Propagation Networks", PhD thesis, University of Cambridge,
1989.
T. Hastie, R. Tibshirani, J. Friedman, "The Elements of Statistical Learning", Springer.
UCI Machine Learning Repository, "Connectionist Bench (Vowel Recognition - Deterding Data)".
"""


def load_vowel(data_dir: PathLike | None = None) -> Bunch:
    """Load the Deterding vowel data (15 speaker tasks, 11 vowel classes, 10 features).

    Parameters
    ----------
    data_dir : str or path-like, optional
        Data folder; resolved by :func:`find_data_dir`. Reads
        ``vowel_deterding/vowel-context.data``.

    Returns
    -------
    data : sklearn.utils.Bunch
        X : ndarray of shape (990, 10), float64
            The 10 log-area ratios, long format (one row per spoken vowel, file order).
        y : ndarray of shape (990,), int64
            The vowel, 0 .. 10.
        task : ndarray of shape (990,), int64
            The speaker, 0 .. 14 (66 rows each).
        sex : ndarray of shape (990,), int64
            0 male, 1 female (constant within a speaker).
        train_speaker : ndarray of shape (990,), bool
            The original split by speaker: True for the 528 rows of the training speakers
            0-7, False for the 462 rows of the test speakers 8-14.
        task_names : ndarray of shape (15,), int64
        feature_names : ndarray of shape (10,), str
            ``"f0"`` .. ``"f9"``.
        DESCR : str

    Raises
    ------
    FileNotFoundError
        When the data folder or the file is missing.
    ValueError
        When the file does not hold 14 numeric columns or its labels are out of range.
    """
    path = data_file(data_dir, "vowel_deterding", "vowel-context.data")
    data = np.loadtxt(path, delimiter=",", dtype=np.float64, ndmin=2)
    if data.shape[1] != 14:
        raise ValueError(f"{path.name}: expected 14 columns, got shape {data.shape}")
    split, speaker, sex, y = (data[:, j] for j in (0, 1, 2, 13))
    for label, col, top in (("train_test", split, 1), ("speaker", speaker, 14),
                            ("sex", sex, 1), ("vowel", y, 10)):
        if not (np.all(col == np.round(col)) and col.min() >= 0 and col.max() <= top):
            raise ValueError(f"{path.name}: the {label} column holds values outside 0..{top}.")
    task = speaker.astype(np.int64)
    return Bunch(
        X=np.ascontiguousarray(data[:, 3:13]),
        y=y.astype(np.int64),
        task=task,
        sex=sex.astype(np.int64),
        train_speaker=split == 0,
        task_names=np.unique(task),
        feature_names=np.array([f"f{i}" for i in range(10)]),
        DESCR=_VOWEL_DESCR,
    )
