"""fedcluster.run: the CLI's run from Python, its results and its errors."""

from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest
from conftest import small_mixture

import fedcluster
from fedcluster.run import METRIC_COLUMNS

MEASURED = [c for c in METRIC_COLUMNS if c != "seconds"]


def same_metrics(a: fedcluster.RunResult, b: fedcluster.RunResult) -> bool:
    return all(np.array_equal(a.metrics[c], b.metrics[c], equal_nan=True) for c in MEASURED)


def test_a_path_toml_text_and_a_dict_give_the_same_run(synthetic):
    by_path = fedcluster.run(synthetic, overrides={"rounds": 3})
    by_text = fedcluster.run(synthetic.read_text(), overrides=["rounds=3"])
    config = fedcluster.load_config(synthetic, overrides={"rounds": 3})
    by_dict = fedcluster.run(__import__("json").loads(config.json))
    assert same_metrics(by_path, by_text) and same_metrics(by_path, by_dict)
    assert by_path.metrics["round"].tolist() == [0, 1, 2]
    assert by_path.metrics["train_loss"].dtype == np.float64
    assert by_path.metrics["train_loss"][-1] < by_path.metrics["train_loss"][0]


def test_results_carry_the_summary_and_the_shaped_models(synthetic):
    result = fedcluster.run(synthetic, overrides={"rounds": 2, "algorithm.restarts": 3})
    assert result.summary["algorithm"] == "ifca" and result.summary["rounds"] == 2
    assert result.summary["final"]["train_loss"] == result.metrics["train_loss"][-1]
    assert len(result.replica_rows) == 2 * 3
    assert result.model == "linear" and result.layout == [("weight", [1, 1000])]
    assert len(result.models) == 2
    assert all(m["weight"].shape == (1, 1000) and m["weight"].dtype == np.float32 for m in result.models)


def test_thread_counts_give_identical_results():
    one = fedcluster.run(small_mixture(restarts=4), threads=1)
    two = fedcluster.run(small_mixture(restarts=4), threads=2)
    assert same_metrics(one, two)
    for a, b in zip(one.models, two.models):
        assert np.array_equal(a["weight"], b["weight"])


def test_out_writes_the_cli_run_directory(tmp_path, synthetic, repo):
    result = fedcluster.run(synthetic, overrides={"rounds": 3}, out=tmp_path / "py")
    files = sorted(os.listdir(tmp_path / "py"))
    assert {"config.toml", "metrics.csv", "summary.json", "models.safetensors"} <= set(files)
    binary = repo / "target" / "release" / "fedcluster"
    if not binary.exists():
        pytest.skip(f"no {binary} to compare with (cargo build --release)")
    subprocess.run(
        [binary, "run", synthetic, "--set", "rounds=3", "--out", tmp_path / "cli", "--quiet"],
        check=True,
        capture_output=True,
    )
    cli = (tmp_path / "cli" / "metrics.csv").read_text()
    assert (tmp_path / "py" / "metrics.csv").read_text() == cli
    assert len(cli.splitlines()) == 1 + len(result.rows)


def test_out_refuses_a_directory_that_is_not_a_run(tmp_path, synthetic):
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(fedcluster.FedclusterError, match="already exists"):
        fedcluster.run(synthetic, overrides={"rounds": 1}, out=tmp_path)
    assert (tmp_path / "keep.txt").read_text() == "mine"


def test_a_bad_config_key_raises_with_the_field_named(synthetic):
    with pytest.raises(fedcluster.ConfigError, match=r"field `algorithm\.bogus`: unknown field"):
        fedcluster.run(synthetic, overrides={"algorithm.bogus": 1})
    bad = small_mixture()
    bad["data"]["clients"] = "many"
    with pytest.raises(fedcluster.ConfigError, match=r"field `data.clients`"):
        fedcluster.run(bad)
    with pytest.raises(fedcluster.ConfigError, match="no-such.toml"):
        fedcluster.run("no-such.toml")
    with pytest.raises(fedcluster.ConfigError, match="invalid TOML"):
        fedcluster.run("rounds = = 3\n")
    with pytest.raises(TypeError, match="config"):
        fedcluster.run(42)  # type: ignore[arg-type]


def test_a_diverging_run_raises_the_cli_message():
    with pytest.raises(fedcluster.FedclusterError, match="diverged"):
        fedcluster.run(small_mixture(lr=1e6, restarts=1, aggregation="gradient"), overrides={"rounds": 30})


def test_the_errors_are_exceptions_of_the_package():
    assert issubclass(fedcluster.ConfigError, fedcluster.FedclusterError)
    assert issubclass(fedcluster.FedclusterError, Exception)


def test_the_gil_is_released_while_rust_runs(synthetic):
    # A Python loop on the main thread keeps running while another thread is
    # inside fedcluster.run: with the GIL held it would stall for the whole run.
    import threading
    import time

    done = threading.Event()
    seconds = []

    def work():
        start = time.perf_counter()
        fedcluster.run(synthetic, overrides={"rounds": 100})
        seconds.append(time.perf_counter() - start)
        done.set()

    thread = threading.Thread(target=work)
    ticks = 0
    thread.start()
    while not done.is_set():
        ticks += 1
    thread.join()
    # Millions of iterations per second of run when the GIL is free; a few
    # thousand at most (the run's Python set-up) when it is not.
    assert ticks > 100_000 * max(seconds[0], 0.1), (ticks, seconds)
