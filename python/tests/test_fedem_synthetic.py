"""scripts/fedem_synthetic_data.py (FedEM's Table 2 synthetic mixture as a
`kind = "files"` federation) and scripts/fedem_synthetic_check.py (the claim's
check with the `fedcluster` binary), on small sizes."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
GENERATOR = REPO / "scripts" / "fedem_synthetic_data.py"
CHECK = REPO / "scripts" / "fedem_synthetic_check.py"
BINARY = REPO / "target" / "release" / "fedcluster"


def generate(out: Path, *extra: str) -> dict:
    cmd = [sys.executable, str(GENERATOR), "--out", str(out), "--n-tasks", "30", "--n-test", "50"]
    subprocess.run(cmd + list(extra), check=True, capture_output=True)
    return json.loads((out / "federation.json").read_text())


def test_generator_writes_the_papers_shapes_and_is_deterministic(tmp_path: Path) -> None:
    manifest = generate(tmp_path / "a")
    assert manifest["classes"] == 2 and manifest["features"] == 150
    assert len(manifest["train"]) == 30 and len(manifest["test"]) == 30
    for row in manifest["train"]:
        arrays = np.load(tmp_path / "a" / row["file"])
        assert arrays["x"].shape == (row["samples"], 150)
        assert 50 <= row["samples"] <= 1000  # min(lognormal + 50, 1000)
        assert set(np.unique(arrays["y"])) <= {0, 1}
        assert np.abs(arrays["x"]).max() <= 1.0
        assert 0 <= row["cluster"] < 3
    generate(tmp_path / "b")
    first = np.load(tmp_path / "a" / "train" / "7.npz")
    again = np.load(tmp_path / "b" / "train" / "7.npz")
    assert np.array_equal(first["x"], again["x"]) and np.array_equal(first["y"], again["y"])


def test_generator_keeps_the_public_codes_labelling_unless_fixed(tmp_path: Path) -> None:
    """The public code never advances its start index: points past the
    largest component's share keep label 0, so the paper's data has fewer
    ones than the fixed generator's on the very same points."""
    paper = generate(tmp_path / "paper")
    generate(tmp_path / "fixed", "--fixed")
    ones = {"paper": 0, "fixed": 0}
    for row in paper["train"]:
        p = np.load(tmp_path / "paper" / row["file"])
        f = np.load(tmp_path / "fixed" / row["file"])
        assert np.array_equal(p["x"], f["x"])  # the same draws, labelled differently
        ones["paper"] += int(p["y"].sum())
        ones["fixed"] += int(f["y"].sum())
    assert ones["paper"] < 0.9 * ones["fixed"], ones


def test_quick_check_runs_every_method_and_writes_a_verdict(tmp_path: Path) -> None:
    if not BINARY.exists():
        pytest.skip(f"{BINARY} is not built (cargo build --release -p fedcluster-cli)")
    out = tmp_path / "check"
    subprocess.run([sys.executable, str(CHECK), "--quick", "--out", str(out),
                    "--data", str(tmp_path / "data")], check=True, capture_output=True)
    with open(out / "results.csv") as f:
        rows = list(csv.DictReader(f))
    assert {(r["setting"], r["method"]) for r in rows} == {
        (s, m) for s in ("paper", "fixed") for m in ("local", "fedavg", "fedem")
    }
    assert all(0.0 <= float(r["last_accuracy"]) <= 1.0 for r in rows)
    report = (out / "report.md").read_text()
    assert "## Verdict" in report and "FedEM" in report
