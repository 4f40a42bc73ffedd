"""A model written in Python behind the Rust ``Model`` trait
(``fedcluster.run(config, model=...)``, ``Server``/``Client`` with ``model=``):
the numpy MLP gives the native MLP's metrics under IFCA, SR-FCA and FedSoft;
a bad model stops the run with one error naming the call."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import fedcluster
from fedcluster.model import NumpyMlp, minibatch_steps

DIM, HIDDEN, CLASSES = 16, 8, 4

ALGORITHMS = {
    "ifca": {"name": "ifca", "clusters": 2, "lr": 0.1},
    # Adam on minibatches: the flat loop over the model's loss_grad.
    "srfca": {"name": "srfca", "threshold": {"kind": "quantile", "value": 0.3}, "local_steps": 10,
              "local_lr": 0.05, "refine_rounds": 2, "lr": 0.1,
              "local_optimizer": {"kind": "adam", "batch_size": 8}},
    "fedsoft": {"name": "fedsoft", "clusters": 2, "lr": 0.05, "local_steps": 3, "participation": 0.7},
}
COLUMNS = ("train_loss", "test_loss", "test_accuracy", "misclustering", "clusters_found")


def images(algorithm: dict, rounds: int = 4) -> dict:
    """A small classification run: 4x4 synthetic images, 4 classes, 2 clusters."""
    return {
        "name": "py-model",
        "seed": 3,
        "rounds": rounds,
        "eval_every": 1,
        "data": {"kind": "synthetic-images", "clients": 8, "points_per_client": 20,
                 "test_points_per_client": 10, "clusters": 2, "classes": CLASSES,
                 "height": 4, "width": 4, "channels": 1, "noise_std": 0.5},
        "model": {"kind": "mlp", "hidden": HIDDEN},
        "algorithm": algorithm,
    }


def assert_same_run(native: fedcluster.RunResult, python: fedcluster.RunResult, rtol: float = 1e-6) -> None:
    """The same metrics and final models, to float rounding (numpy's and the
    native kernels' sums differ in order: about 1e-8 here, where a gradient 1%
    off moves the losses by 1e-4)."""
    for column in COLUMNS:
        np.testing.assert_allclose(
            python.metrics[column], native.metrics[column], rtol=rtol, atol=rtol / 10, err_msg=column
        )
    assert len(python.models) == len(native.models)
    for ours, theirs in zip(python.models, native.models):
        assert list(ours) == list(theirs)
        for name in theirs:
            np.testing.assert_allclose(ours[name], theirs[name], rtol=10 * rtol, atol=rtol, err_msg=name)


@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
def test_the_numpy_mlp_gives_the_native_mlps_results(algorithm: str) -> None:
    config = images(ALGORITHMS[algorithm])
    native = fedcluster.run(config)
    python = fedcluster.run(config, model=NumpyMlp(DIM, HIDDEN, CLASSES))
    assert np.isfinite(native.metrics["train_loss"]).all()
    assert python.model == "python" and python.layout == NumpyMlp(DIM, HIDDEN, CLASSES).layout()
    assert_same_run(native, python)


class OwnMinibatchMlp(NumpyMlp):
    """The numpy MLP with its own minibatch loop (the protocol's optional
    ``train_minibatch``), in numpy."""

    def train_minibatch(self, params, x, y, batches, optimizer, state):
        return minibatch_steps(self.loss_grad, params, x, y, batches, optimizer, state)


def test_a_models_own_minibatch_loop_follows_the_runs_draws_and_optimizer() -> None:
    config = images(ALGORITHMS["srfca"])
    native = fedcluster.run(config)
    # Adam's bias corrections in numpy's float32 powers, not Rust's powi: 3e-6.
    assert_same_run(native, fedcluster.run(config, model=OwnMinibatchMlp(DIM, HIDDEN, CLASSES)), rtol=2e-5)


class OwnTrainMlp(NumpyMlp):
    """The numpy MLP with its own full-batch gradient descent (the
    protocol's optional ``train``): one crossing per client round."""

    def train(self, params, x, y, lr, steps):
        w, first = params.copy(), float("nan")
        for step in range(steps):
            loss, grad = self.loss_grad(w, x, y)
            first = loss if step == 0 else first
            w -= np.float32(lr) * grad
        return first, w


def test_a_models_own_full_batch_training_gives_the_native_results() -> None:
    config = images({**ALGORITHMS["ifca"], "aggregation": "model", "local_steps": 3})
    native = fedcluster.run(config)
    assert_same_run(native, fedcluster.run(config, model=OwnTrainMlp(DIM, HIDDEN, CLASSES)))


def test_two_threads_give_the_same_records_and_do_not_deadlock() -> None:
    config = images(ALGORITHMS["ifca"])
    model = NumpyMlp(DIM, HIDDEN, CLASSES)
    one = fedcluster.run(config, threads=1, model=model)
    two = fedcluster.run(config, threads=2, model=model)
    assert one.rows == [dict(r, seconds=s["seconds"]) for r, s in zip(two.rows, one.rows)]


def test_the_halves_train_the_python_model_as_the_run_does() -> None:
    config = images(ALGORITHMS["ifca"], rounds=3)
    model = NumpyMlp(DIM, HIDDEN, CLASSES)
    server = fedcluster.Server(config, model=model)
    assert server.layout == model.layout()
    clients = fedcluster.Client.many(server.config, list(range(server.num_clients)), model=model)
    while (planned := server.plan()) is not None:
        for client, message in planned.messages:
            reply = clients[client].handle(message, round=planned.round, num_clients=planned.num_clients)
            server.receive(client, reply)
        server.finish()
    assert_same_run(fedcluster.run(config, model=model), server.outcome())


class ShrinkingMlp(NumpyMlp):
    """Its gradient loses a value after the first call."""

    calls = 0

    def loss_grad(self, params, x, y):
        loss, grad = super().loss_grad(params, x, y)
        self.calls += 1
        return loss, grad if self.calls == 1 else grad[:-1]


class RaisingMlp(NumpyMlp):
    def loss_grad(self, params, x, y):
        raise ValueError("no gradient today")


class NanMlp(NumpyMlp):
    def loss_grad(self, params, x, y):
        _, grad = super().loss_grad(params, x, y)
        return float("nan"), grad


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (ShrinkingMlp, r"the Python model's loss_grad returned 171 gradient values .*the model has 172 "
                       r"parameters, and that may not change between calls"),
        (RaisingMlp, r"^the Python model's loss_grad raised ValueError: no gradient today$"),
        (NanMlp, r"^the Python model's loss_grad returned a NaN loss at finite parameters$"),
    ],
)
@pytest.mark.parametrize("algorithm", ["ifca", "srfca"])
def test_a_bad_model_stops_the_run_with_one_error_naming_the_call(model, message, algorithm, tmp_path) -> None:
    out = tmp_path / "run"
    with pytest.raises(fedcluster.FedclusterError, match=message):
        fedcluster.run(images(ALGORITHMS[algorithm]), model=model(DIM, HIDDEN, CLASSES), out=out)
    assert not out.exists(), "a failed model leaves no run directory"


class LossRaisingMlp(NumpyMlp):
    def loss(self, params, x, y):
        raise RuntimeError("no loss either")


def test_a_bad_model_stops_the_server_and_the_client_and_the_server_closes() -> None:
    config = images(ALGORITHMS["ifca"])
    model = NumpyMlp(DIM, HIDDEN, CLASSES)
    server = fedcluster.Server(config, model=LossRaisingMlp(DIM, HIDDEN, CLASSES))
    clients = fedcluster.Client.many(server.config, list(range(server.num_clients)), model=model)
    bad = fedcluster.Client(server.config, 0, model=RaisingMlp(DIM, HIDDEN, CLASSES))
    planned = server.plan()
    with pytest.raises(fedcluster.FedclusterError, match="^the Python model's loss_grad raised ValueError"):
        bad.handle(planned.messages[0][1], round=0, num_clients=planned.num_clients)
    for client, message in planned.messages:
        server.receive(client, clients[client].handle(message, round=0, num_clients=planned.num_clients))
    # The server scores the round on its test clients with its own model.
    with pytest.raises(fedcluster.FedclusterError, match="^the Python model's loss raised RuntimeError: no loss"):
        server.finish()
    del server  # joins the engine thread with the GIL released: no deadlock


def test_a_model_that_does_not_fit_is_refused_before_the_run() -> None:
    config = images(ALGORITHMS["ifca"])
    with pytest.raises(fedcluster.FedclusterError, match="the model takes 15 features per sample, but the data's "
                                                          "samples have 16"):
        fedcluster.run(config, model=NumpyMlp(DIM - 1, HIDDEN, CLASSES))

    class NoGradient:
        num_params, input_dim = 4, DIM

        def init(self, rng):
            return rng.uniform(-1.0, 1.0, 4)

        def loss(self, params, x, y):
            return 0.0

    with pytest.raises(TypeError, match="the Python model has no method `loss_grad`"):
        fedcluster.run(config, model=NoGradient())


def test_init_draws_from_the_runs_stream_like_a_native_model() -> None:
    config = images(ALGORITHMS["ifca"], rounds=1)
    native = fedcluster.Server(config).plan()
    python = fedcluster.Server(config, model=NumpyMlp(DIM, HIDDEN, CLASSES)).plan()
    # IFCA's first messages carry the server's initial models: the same bytes.
    assert [m.tobytes() for _, m in python.messages] == [m.tobytes() for _, m in native.messages]


needs_torch = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="torch is not installed (pip install torch)"
)


def torch_mlp(init: str = "uniform_fan_in"):
    """The native MLP's architecture as a ``torch.nn.Module``."""
    import torch

    from fedcluster.torch import TorchModule

    module = torch.nn.Sequential()
    module.add_module("fc1", torch.nn.Linear(DIM, HIDDEN))
    module.add_module("relu", torch.nn.ReLU())
    module.add_module("fc2", torch.nn.Linear(HIDDEN, CLASSES))
    return TorchModule(module, input_shape=(DIM,), init=init)


@needs_torch
@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
def test_a_torch_mlp_gives_the_native_mlps_results(algorithm: str) -> None:
    # Measured: 6e-8 relative under IFCA and FedSoft, 3.4e-6 under SR-FCA
    # (Adam's bias corrections in numpy's float32 powers); 4 threads, so that
    # calls from several threads at once are exercised on any machine.
    config = images(ALGORITHMS[algorithm])
    native = fedcluster.run(config, threads=4)
    assert_same_run(native, fedcluster.run(config, threads=4, model=torch_mlp()), rtol=1e-4)


@needs_torch
def test_a_torch_module_gives_the_same_records_on_one_thread_and_on_four() -> None:
    # torch releases the GIL inside its kernels: one module shared by the
    # run's threads mixed their parameters (train_loss 1.427 against 1.409 in
    # round 0), so each thread trains its own copy.
    import torch

    config = images(ALGORITHMS["fedsoft"])
    models = torch_mlp(init="module"), torch_mlp(init="module")
    generator = torch.random.get_rng_state()
    one = fedcluster.run(config, threads=1, model=models[0])
    four = fedcluster.run(config, threads=4, model=models[1])
    assert one.rows == [dict(r, seconds=s["seconds"]) for r, s in zip(four.rows, one.rows)]
    assert torch.equal(torch.random.get_rng_state(), generator), "init leaves torch's generator as it was"
