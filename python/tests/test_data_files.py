"""``fedcluster.data``: a user's own federated data, written and read in the
federation format of ``[data] kind = "files"``, taken by ``run``, ``Server``
and ``Client`` as ``data=``; metrics computed on it (the same as the CLI's on
the same files), absent (and said so) where it has no test clients or truth."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import fedcluster
from fedcluster.cli import main
from fedcluster.data import FederatedData, save

REPO = Path(__file__).resolve().parents[2]
SYNTHETIC = REPO / "configs" / "ifca-synthetic.toml"
SMALL = ["data.clients=8", "data.points_per_client=6", "data.test_points_per_client=4", "data.dim=5"]
RUN = {"rounds": 3, "algorithm.restarts": 2}


def two_groups(seed: int = 0, test: bool = True):
    """Eight regression clients of two groups (true parameters ``w[k]``)."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=(2, 4)).astype(np.float32)

    def client(k: int):
        x = rng.normal(size=(10, 4)).astype(np.float32)
        return x, x @ w[k] + 0.01 * rng.normal(size=10).astype(np.float32)

    groups = [0, 1] * 4
    train = [client(k) for k in groups]
    tests = [client(k) for k in groups] if test else None
    return train, tests, groups, w


@pytest.mark.parametrize("fmt", ["npz", "safetensors"])
def test_save_then_load_gives_the_same_arrays(tmp_path, fmt):
    train, test, groups, w = two_groups()
    save(tmp_path / "fed", train, test, groups, test_clusters=groups, truth_params=w, format=fmt)
    back = FederatedData.load(tmp_path / "fed")
    for (x, y), (bx, by) in zip(train + test, back.train + back.test):
        np.testing.assert_array_equal(x, bx)
        np.testing.assert_array_equal(y, by)
    assert back.clusters == groups and back.test_clusters == groups
    np.testing.assert_array_equal(back.truth_params, w)
    with pytest.raises(FileExistsError, match="force=True"):
        save(tmp_path / "fed", train, format=fmt)
    images = [(np.zeros((3, 4, 4, 2), np.float32), np.array([0, 2, 1]))]
    save(tmp_path / "img", images, force=True, format=fmt)
    loaded = FederatedData.load(tmp_path / "img")
    assert loaded.classes == 3 and loaded.sample_shape == (4, 4, 2)


def test_python_metrics_match_the_cli_on_the_same_files(tmp_path):
    fed = tmp_path / "fed"
    sets = [a for s in SMALL for a in ("--set", s)]
    assert main(["data", "export", str(SYNTHETIC), "--out", str(fed), "--format", "npz", *sets]) == 0
    config = SYNTHETIC.read_text().split("[data]")[0] + (
        f'[data]\nkind = "files"\ndata_dir = "{fed}"\n\n[model]' + SYNTHETIC.read_text().split("[model]")[1]
    )
    (tmp_path / "files.toml").write_text(config)
    cli = tmp_path / "cli"
    run_sets = [a for k, v in RUN.items() for a in ("--set", f"{k}={v}")]
    assert main(["run", str(tmp_path / "files.toml"), "-q", "--out", str(cli), *run_sets]) == 0
    built_in = fedcluster.run(SYNTHETIC, overrides=[*SMALL, *(f"{k}={v}" for k, v in RUN.items())])
    expected = (cli / "metrics.csv").read_text()

    from_path = tmp_path / "from-path"
    fedcluster.run(SYNTHETIC, overrides=RUN, data=fed, out=from_path)
    assert (from_path / "metrics.csv").read_text() == expected
    loaded = FederatedData.load(fed)
    arrays = FederatedData(loaded.train, loaded.test, loaded.clusters,
                           test_clusters=loaded.test_clusters, truth_params=loaded.truth_params)
    from_arrays = tmp_path / "from-arrays"
    result = fedcluster.run(SYNTHETIC, overrides=RUN, data=arrays, out=from_arrays)
    assert (from_arrays / "metrics.csv").read_text() == expected
    np.testing.assert_allclose(result.metrics["test_loss"], built_in.metrics["test_loss"])

    server = fedcluster.Server(SYNTHETIC, overrides=RUN, data=arrays)
    clients = fedcluster.Client.many(server.config, list(range(server.num_clients)), data=arrays)
    assert server.num_clients == len(arrays.train) == 8
    while (planned := server.plan()) is not None:
        for client, message in planned.messages:
            reply = clients[client].handle(message, round=planned.round, rounds=planned.rounds,
                                           num_clients=planned.num_clients)
            server.receive(client, reply)
        server.finish()
    np.testing.assert_array_equal(server.outcome().metrics["param_error"], result.metrics["param_error"])


def test_without_test_clients_or_truth_those_metrics_are_absent_and_said_so():
    train, _, _, _ = two_groups(test=False)
    result = fedcluster.run(SYNTHETIC, overrides=RUN, data=FederatedData(train))
    last = result.rows[-1]
    assert last["train_loss"] is not None and math.isfinite(last["train_loss"])
    for metric in ("test_loss", "misclustering", "param_error"):
        assert last.get(metric) is None, (metric, last)
    absent = result.summary["metrics_absent"]
    assert absent["test_loss"] == "the data set has no test clients"
    assert absent["misclustering"] == "the data set gives no true clusters"
    assert absent["param_error"] == "the data set gives no true cluster parameters"

    train, test, groups, w = two_groups()
    scored = fedcluster.run(SYNTHETIC, overrides=RUN, data=FederatedData(train, test, groups, test_clusters=groups))
    assert scored.rows[-1]["misclustering"] is not None and scored.rows[-1]["test_loss"] is not None
    assert set(scored.summary["metrics_absent"]) == {"param_error"}


def test_bad_arrays_raise_naming_the_client():
    train, _, _, _ = two_groups(test=False)
    bad = list(train)
    bad[3] = (train[3][0].copy(), train[3][1][:4])
    with pytest.raises(ValueError, match="train client 3: x has 10 samples, y has shape"):
        FederatedData(bad)
    nan = train[2][0].copy()
    nan[1, 1] = np.nan
    with pytest.raises(ValueError, match="train client 2: x holds NaN"):
        FederatedData([train[0], train[1], (nan, train[2][1])])
    with pytest.raises(ValueError, match="test client 0: no samples"):
        FederatedData(train, [(np.zeros((0, 4), np.float32), np.zeros(0, np.float32))])
    labels = [(np.zeros((2, 3), np.float32), np.array([0, 5]))]
    with pytest.raises(ValueError, match="train client 0: labels must lie in 0..3"):
        FederatedData(labels, classes=4)
    with pytest.raises(ValueError, match="every training and test client"):
        FederatedData(train, train, [0] * len(train))
