"""The user's own model (and data) through Flower: a strategy built with
``model=`` and ClientApps built with ``client_app(model=...)`` give the
metrics of ``fedcluster.run(config, model=...)`` on the same config, in
process over the stand-in grid of test_flower.py."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

flower_missing = importlib.util.find_spec("flwr") is None
pytestmark = pytest.mark.skipif(flower_missing, reason="flwr is not installed (pip install './python[flower]')")

import fedcluster  # noqa: E402
from fedcluster.data import FederatedData  # noqa: E402
from fedcluster.model import NumpyMlp  # noqa: E402
from test_flower import LocalGrid  # noqa: E402
from test_py_model import ALGORITHMS, CLASSES, DIM, HIDDEN, images  # noqa: E402
from test_run import same_metrics  # noqa: E402

TWO_NODES = [{"partition-id": 0, "num-partitions": 2}, {"partition-id": 1, "num-partitions": 2}]


def own_data() -> FederatedData:
    """Two groups of 4x4 images whose labels follow two different rules."""
    rng = np.random.default_rng(11)

    def client(group: int, n: int):
        x = rng.normal(size=(n, 4, 4, 1)).astype(np.float32)
        score = x[:, :2].sum(axis=(1, 2, 3)) if group == 0 else x[:, 2:].sum(axis=(1, 2, 3))
        return x, np.digitize(score, [-1.0, 0.0, 1.0]).astype(np.int64)

    groups = [0, 0, 0, 1, 1, 1]
    return FederatedData(
        [client(g, 24) for g in groups], [client(g, 12) for g in (0, 1)], groups,
        test_clusters=[0, 1], classes=CLASSES,
    )


@pytest.mark.parametrize("algorithm", ["ifca", "srfca"])
def test_a_strategy_and_client_apps_with_the_numpy_mlp_give_the_runs_metrics(algorithm):
    from fedcluster.flower import STRATEGIES, client_app

    config = images(ALGORITHMS[algorithm])
    model = NumpyMlp(DIM, HIDDEN, CLASSES)
    strategy = STRATEGIES[algorithm](config, model=model, messages="per-node")
    result = strategy.start(LocalGrid(TWO_NODES, app=client_app(model=model)), timeout=60)
    outcome = strategy.outcome()
    expected = fedcluster.run(config, model=model)
    assert outcome.model == "python" and same_metrics(outcome, expected)
    assert np.isfinite(outcome.metrics["train_loss"]).all()
    assert "cluster1.fc2.weight" in result.arrays


def test_own_model_and_own_data_through_flower_give_the_runs_metrics():
    from fedcluster.flower import Ifca, client_app

    config = images(ALGORITHMS["ifca"], rounds=3)
    data, model = own_data(), NumpyMlp(DIM, HIDDEN, CLASSES)
    strategy = Ifca(config, model=model, data=data, messages="per-client")
    strategy.start(LocalGrid(TWO_NODES, app=client_app(model=model)), timeout=60)
    outcome = strategy.outcome()
    assert same_metrics(outcome, fedcluster.run(config, model=model, data=data))
    # Scored on the user's 6 clients and their truth, not the config's 8.
    assert (outcome.metrics["participants"] == 6).all()
    assert np.isfinite(outcome.metrics["misclustering"]).all()


def test_client_apps_training_another_model_fail_the_round():
    from fedcluster.flower import ClusteredStrategy

    config = images(ALGORITHMS["ifca"], rounds=1)
    # The server's model has 193 parameters, the nodes' (the config's MLP)
    # 172: each node answers with an error naming the sizes, the round fails.
    strategy = ClusteredStrategy(config, model=NumpyMlp(DIM, HIDDEN + 1, CLASSES), messages="per-node")
    with pytest.raises(fedcluster.FedclusterError, match=r"8 planned client\(s\) have not replied"):
        strategy.start(LocalGrid(TWO_NODES), timeout=5)
