"""Two benchmark helpers this round's figures rest on: the pooling of
``bench_cv_two_param.py`` runs (``benchmarks/pool_cv_two_param.py``) and the address-space cap
of ``bench_auto_choice.py --memory-gb``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))

pool = pytest.importorskip("pool_cv_two_param")


def _run(l21: float, model_cpu: float, iters: int = 100) -> dict:
    row = {"cpu": model_cpu, "iterations": iters, "test_nmse": 0.5}
    return {"survey": {"L21Regressor": {"cpu": l21, "iterations": 10, "test_nmse": 0.6},
                       "SparseLowRankRegressor": row}}


def test_pooled_ratio_is_over_the_median_baseline_of_both_versions(tmp_path):
    after = [_run(1.0, 2.0), _run(3.0, 4.0, iters=120), _run(2.0, 100.0, iters=130)]
    before = [_run(5.0, 9.0), _run(4.0, 7.0)]
    paths = {}
    for name, runs in (("after", after), ("before", before)):
        paths[name] = []
        for i, run in enumerate(runs):
            path = tmp_path / f"{name}{i}.json"
            path.write_text(json.dumps(run))
            paths[name].append(str(path))
    out = pool.main(["--after", *paths["after"], "--before", *paths["before"]])
    # baseline: median of 1, 3, 2, 5, 4 = 3; the model: median of 2, 4, 100 = 4 (after),
    # of 9, 7 = 8 (before); the iterations of the last run
    assert "pooled median 3.000 s over 5 runs (range 1.000-5.000)" in out
    line = next(x for x in out.splitlines() if x.startswith("SparseLowRankRegressor"))
    fields = line.split()
    assert fields[1:5] == ["4.00", "1.33", "3", "130"]
    assert fields[fields.index("(before:") + 1:fields.index("(before:") + 4] == [
        "8.00", "2.67", "2"]


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS as on Linux")
def test_memory_cap_turns_a_huge_allocation_into_memory_error():
    code = (f"import sys; sys.path.insert(0, {str(BENCH)!r}); import numpy as np; "
            "import bench_auto_choice as b; b.limit_memory(2.0)\n"
            "try:\n    np.ones((40_000, 40_000))\nexcept MemoryError:\n    print('refused')\n"
            "print(np.ones(1000).sum())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["refused", "1000.0"]
