"""IfcaClient, IFCA's client protocol for a model written in Python, against
the Rust IFCA client on the same data: the same cluster choices, the same
updates to float tolerance. CI checks it with a numpy model; the PyTorch
adapter's test runs wherever torch is installed."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from conftest import small_mixture

import fedcluster
from fedcluster.ifca import IfcaClient, decode_down, decode_up, encode_up


class NumpyLinear:
    """fedcluster's linear regression (mean squared error, not halved) in numpy."""

    def __init__(self, x: np.ndarray, y: np.ndarray):
        self.x, self.y = x.astype(np.float64), y.astype(np.float64)

    @property
    def num_samples(self) -> int:
        return len(self.y)

    def loss(self, params):
        r = self.x @ params.astype(np.float64) - self.y
        return float(np.mean(r * r))

    def gradient(self, params):
        r = self.x @ params.astype(np.float64) - self.y
        return float(np.mean(r * r)), (2.0 / len(self.y)) * (self.x.T @ r)

    def train(self, params, lr, steps):
        theta = params.astype(np.float64)
        for _ in range(steps):
            theta = theta - lr * self.gradient(theta)[1]
        return theta


def compare_round(config, make_model) -> int:
    """Answers round 0 and a later round of ``config`` with the Rust client
    and with IfcaClient over ``make_model(x, y)``; returns the clients compared."""
    server = fedcluster.Server(config)
    clients = fedcluster.Client.many(config, range(server.num_clients))
    compared = 0
    while (planned := server.plan()) is not None:
        for client, message in planned.messages:
            rust = clients[client].handle(message, round=planned.round, num_clients=planned.num_clients)
            x, y = clients[client].data()
            ours = decode_up(IfcaClient.from_config(config, make_model(x, y)).handle(message))
            theirs = decode_up(rust)
            assert ours.chosen.tolist() == theirs.chosen.tolist(), f"round {planned.round}, client {client}"
            np.testing.assert_allclose(ours.payload, theirs.payload, rtol=2e-4, atol=2e-5)
            np.testing.assert_allclose(ours.losses, theirs.losses, rtol=1e-4)
            assert ours.samples == theirs.samples
            server.receive(client, rust)
            compared += 1
        server.finish()
    return compared


@pytest.mark.parametrize(
    "algorithm",
    [
        {"aggregation": "gradient", "restarts": 3},
        {"aggregation": "model", "local_steps": 4, "lr": 0.05, "restarts": 2},
    ],
)
def test_the_numpy_ifca_client_chooses_as_the_rust_client(algorithm):
    config = fedcluster.load_config(small_mixture(**algorithm))
    assert compare_round(config, NumpyLinear) == 24 * 4


def test_a_run_answered_by_the_python_client_finds_the_clusters():
    config = fedcluster.load_config(small_mixture(restarts=3), overrides={"rounds": 30})
    server = fedcluster.Server(config)
    halves = fedcluster.Client.many(config, range(server.num_clients))
    adapters = [IfcaClient.from_config(config, NumpyLinear(*h.data())) for h in halves]
    while (planned := server.plan()) is not None:
        for client, message in planned.messages:
            server.receive(client, adapters[client].handle(message))
        server.finish()
    ours = server.outcome()
    rust = fedcluster.run(config)
    assert ours.summary["final"]["misclustering"] == rust.summary["final"]["misclustering"] == 0.0
    np.testing.assert_allclose(ours.metrics["train_loss"], rust.metrics["train_loss"], rtol=1e-3)


def test_the_messages_refuse_wrong_inputs():
    with pytest.raises(fedcluster.FedclusterError, match="not an IFCA message"):
        decode_down(b"\x05\x01")
    with pytest.raises(TypeError, match="payload: expected a 2-D float32 array"):
        encode_up(np.zeros(2, dtype=np.uint32), [1.0, 1.0], np.zeros((2, 3)), 5)
    with pytest.raises(fedcluster.FedclusterError, match="2 chosen clusters and 1 losses"):
        encode_up(np.zeros(2, dtype=np.uint32), [1.0], np.zeros((2, 3), dtype=np.float32), 5)
    with pytest.raises(fedcluster.FedclusterError, match="non-finite"):
        encode_up(np.zeros(1, dtype=np.uint32), [float("nan")], np.zeros((1, 3), dtype=np.float32), 5)
    with pytest.raises(ValueError, match="IfcaClient speaks IFCA's protocol only"):
        cfg = small_mixture()
        cfg["algorithm"] = {"name": "global", "lr": 0.1}
        IfcaClient.from_config(cfg, NumpyLinear(np.zeros((2, 8)), np.zeros(2)))


torch_missing = importlib.util.find_spec("torch") is None


@pytest.mark.skipif(torch_missing, reason="torch is not installed (pip install 'fedcluster[torch]')")
@pytest.mark.parametrize("aggregation", ["gradient", "model"])
def test_the_torch_adapter_chooses_as_the_rust_client(aggregation):
    import torch

    from fedcluster.torch import TorchModel

    config = fedcluster.load_config(small_mixture(aggregation=aggregation, local_steps=3, lr=0.05, restarts=2))
    layout = fedcluster.Server(config).layout

    def make_model(x, y):
        data = torch.utils.data.TensorDataset(torch.from_numpy(x), torch.from_numpy(y))
        loader = torch.utils.data.DataLoader(data, batch_size=7)
        return TorchModel(lambda: torch.nn.Linear(8, 1, bias=False), loader, layout=layout)

    assert compare_round(config, make_model) == 24 * 4
