"""Plotting and table reading are in the base install: no message sends the user to an extra.

``pip install 'multitask[plot]'`` and ``'multitask[io]'`` were the hints of the versions where
matplotlib, pandas and pyarrow were extras; they joined the base dependencies (the extras stay
as aliases in ``pyproject.toml``), so a missing one means a broken environment, and the
message says to install that package.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Hints that name the former extras (any spelling of ``multitask[plot]`` / ``[io]``).
STALE = re.compile(r"multitask\s*\[\s*(plot|io)\s*[],]|\.\s*\[\s*(plot|io)\s*[],]")


def test_no_page_or_module_names_the_former_extras():
    files = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"),
             *(ROOT / "src" / "multitask").rglob("*.py")]
    stale = [f"{p.relative_to(ROOT)}:{i}" for p in files
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if STALE.search(line)]
    assert stale == []
    # the pattern finds what it should
    assert STALE.search("pip install 'multitask[io]'") and STALE.search('pip install ".[plot]"')
    assert STALE.search('"multitask[plot,io]"') and not STALE.search("multitask[distributed]")


def test_plotting_without_matplotlib_names_the_package(monkeypatch):
    from multitask import plotting

    for module in ("matplotlib.pyplot", "matplotlib.figure"):
        monkeypatch.setitem(sys.modules, module, None)  # import raises ImportError
    calls = [lambda: plotting._plt(),
             lambda: plotting.plot_weight_matrix(np.ones((2, 3))),
             lambda: plotting.plot_convergence({"a": [1.0, 0.5, 0.25]})]
    for call in calls:
        with pytest.raises(ImportError) as info:
            call()
        message = str(info.value)
        assert "pip install matplotlib" in message and "[" not in message, message


def test_reading_a_table_without_pandas_names_the_package(monkeypatch, tmp_path):
    from multitask.cli_fit import CLIError, read_table

    path = tmp_path / "data.csv"
    path.write_text("a,y\n1,2\n", encoding="utf-8")
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(CLIError) as info:
        read_table(path)
    message = str(info.value)
    assert "pip install pandas" in message and "[" not in message, message


def test_reading_parquet_without_pyarrow_names_the_package(monkeypatch, tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    from multitask.cli_fit import CLIError, read_table

    path = tmp_path / "data.parquet"
    pd.DataFrame({"a": [1.0], "y": [2.0]}).to_parquet(path)

    def no_engine(*args, **kwargs):
        raise ImportError("Unable to find a usable engine; tried using: 'pyarrow'.")

    monkeypatch.setattr(pd, "read_parquet", no_engine)
    with pytest.raises(CLIError) as info:
        read_table(path)
    message = str(info.value)
    assert "pip install pyarrow" in message and "[" not in message, message
