"""Shared fixtures of the package's tests: the repository's configs and small
configs built as dicts."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# Flower sends usage events to its servers unless told not to: the tests stay on
# this machine (read when flwr is imported, and inherited by every process the
# deployment tests start).
os.environ["FLWR_TELEMETRY_ENABLED"] = "0"

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture
def repo() -> Path:
    return REPO


@pytest.fixture
def synthetic(repo: Path) -> Path:
    return repo / "configs" / "ifca-synthetic.toml"


def small_mixture(**algorithm) -> dict:
    """A small IFCA problem (24 clients, d = 8, k = 2) as a config dict."""
    return {
        "name": "small-mixture",
        "seed": 7,
        "rounds": 4,
        "data": {
            "kind": "ifca-synthetic",
            "clients": 24,
            "points_per_client": 20,
            "test_points_per_client": 10,
            "dim": 8,
            "clusters": 2,
            "noise_std": 0.1,
            "separation": 1.0,
        },
        "model": {"kind": "linear"},
        "algorithm": {"name": "ifca", "clusters": 2, "lr": 0.1, **algorithm},
    }
