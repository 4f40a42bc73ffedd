"""Shared fixtures of the package's tests: the repository's configs and small
configs built as dicts; and the skip log: every skipped test (``pytest.skip``
or a ``skipif`` mark, listed by ``pytest -rs``) is also appended to
``<target dir>/fedcluster-skipped-tests.txt``, the log the Rust tests write
and ``scripts/test`` sums up at the end."""

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


def skip_log() -> Path:
    """``$CARGO_TARGET_DIR`` (relative to the repository when relative), else
    the repository's ``target/``, then ``fedcluster-skipped-tests.txt``: where
    the Rust tests log theirs (``fedcluster_testkit::skip_log``)."""
    return REPO / (os.environ.get("CARGO_TARGET_DIR") or "target") / "fedcluster-skipped-tests.txt"


_ROOT = [REPO]


def pytest_configure(config: pytest.Config) -> None:
    _ROOT[0] = config.rootpath  # what test ids are relative to


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Appends ``python/tests/...::test: reason`` to the skip log for each
    skipped test (an expected failure is not a skip)."""
    if not report.skipped or hasattr(report, "wasxfail"):
        return
    file, _, name = report.nodeid.partition("::")
    try:
        test = f"{(_ROOT[0] / file).resolve().relative_to(REPO)}::{name}"
    except ValueError:
        test = report.nodeid
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    reason = reason.removeprefix("Skipped: ").replace("\n", " ")
    log = skip_log()
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("a", encoding="utf-8") as f:
            f.write(f"{test}: {reason}\n")
    except OSError as e:
        print(f"(cannot append to the skip log {log}: {e})", file=sys.stderr)


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


#: An ``[algorithm]`` table for :func:`small_mixture`'s data per algorithm of
#: the table (the two-phase method has its own data: :func:`small_run`).
SMALL_ALGORITHMS: dict[str, dict] = {
    "ifca": {"name": "ifca", "clusters": 2, "lr": 0.1},
    "cflmgd": {"name": "cflmgd", "clusters": 2, "aggregation": "model", "lr": 0.02, "momentum": 0.9,
               "local_steps": 5, "restarts": 2, "init": {"kind": "gaussian", "std": 1.0}},
    "oneshot": {"name": "oneshot", "clusters": 2, "erm_steps": 20, "erm_lr": 0.1, "lr": 0.1,
                "aggregation": "model", "local_steps": 2},
    "global": {"name": "global", "lr": 0.1},
    "oracle": {"name": "oracle", "lr": 0.1},
    "local": {"name": "local", "lr": 0.1},
    "fedprox": {"name": "fedprox", "lr": 0.1},
    "srfca": {"name": "srfca", "threshold": {"kind": "quantile", "value": 0.3}, "local_steps": 20,
              "local_lr": 0.05, "refine_rounds": 3, "lr": 0.1,
              "local_optimizer": {"kind": "adam", "batch_size": 16}},
    "local-kmeans": {"name": "local-kmeans", "clusters": 2, "erm_steps": 20, "erm_lr": 0.1, "lr": 0.1},
    "cfl": {"name": "cfl", "lr": 0.05, "local_steps": 3, "eps1": 0.05, "eps2": 0.1, "warmup_rounds": 3},
    "fedsoft": {"name": "fedsoft", "clusters": 2, "lr": 0.05, "local_steps": 3, "participation": 0.7,
                "init": {"kind": "gaussian", "std": 1.0}},
    "fedavgm": {"name": "fedavgm", "lr": 0.1},
    "fesem": {"name": "fesem", "clusters": 2, "lr": 0.1, "local_steps": 3, "participation": 0.7},
    "flhc": {"name": "flhc", "lr": 0.1, "local_steps": 3, "cluster_round": 2,
             "cut": {"kind": "clusters", "value": 2}},
    "pacfl": {"name": "pacfl", "basis": 2, "cut": {"kind": "distance", "value": 30.0}, "lr": 0.1,
              "local_steps": 3, "participation": 0.7},
    "fedem": {"name": "fedem", "clusters": 2, "lr": 0.05, "local_steps": 3, "participation": 0.7},
    # Class labels (its label priors need them): small_run gives it small_images().
    "fedrc": {"name": "fedrc", "clusters": 2, "lr": 0.1, "local_steps": 2, "participation": 0.7},
}

#: Algorithms whose small run needs class labels: :func:`small_images`' data.
LABELLED_ALGORITHMS = {"fedrc"}


def small_images() -> tuple[dict, dict]:
    """Two concepts of small synthetic images (6 clients, 3 classes) and a
    logistic model, as ``[data]`` and ``[model]`` tables."""
    data = {"kind": "synthetic-images", "clients": 6, "points_per_client": 12,
            "test_points_per_client": 4, "clusters": 2, "classes": 3, "height": 4,
            "width": 4, "channels": 1}
    return data, {"kind": "logistic"}


def small_run(name: str, rounds: int = 6) -> dict:
    """A small config dict of the algorithm ``name`` of fedcluster's table;
    a ``KeyError`` for a name without one here (add one with each new
    algorithm: the tests that cover the table fail until then)."""
    if name == "twophase":
        return {
            "name": "small-two-phase",
            "seed": 3,
            "rounds": rounds,
            "data": {"kind": "mixed-regression", "dim": 6, "clusters": 2, "probs": [0.4, 0.6],
                     "client_sizes": [{"count": 30, "points": 10}, {"count": 6, "points": 40}],
                     "test_points_per_client": 5},
            "model": {"kind": "linear"},
            "algorithm": {"name": "twophase", "clusters": 2, "lr": 0.02, "init": {"kind": "gaussian", "std": 0.6},
                          "phase1": {"iterations": 2, "alpha": 2.0, "beta": 2.0, "separation": 1.5}},
        }
    config = small_mixture()
    config["algorithm"] = SMALL_ALGORITHMS[name]
    config["rounds"] = rounds
    if name in LABELLED_ALGORITHMS:
        config["data"], config["model"] = small_images()
    return config
