"""Your own model, trained by every algorithm.

``fedcluster.run(config, model=m)``, ``Server(config, model=m)`` and
``Client(config, client, model=m)`` train ``m``, any object following
:class:`ModelProtocol`, in place of the config's ``[model]``: IFCA, SR-FCA,
CFL, FedSoft, CFL-MGD, FedAvg, local, ... see models only through it (the Rust
``Model`` trait over one flat parameter vector), so none is written twice.
:class:`fedcluster.torch.TorchModule` adapts a ``torch.nn.Module``;
:class:`NumpyMlp` is the native ``[model] kind = "mlp"`` in numpy (the
reference the tests hold to the native model's results).

Parameters cross as one flat ``float32`` array (``num_params`` values in the
order of :meth:`ModelProtocol.layout`); a batch as ``x`` (``n x input_dim``,
``float32``; images channels-last, flattened) and ``y`` (``n`` targets:
``float32`` values, or ``uint32`` class indices). A model is stateless: the
same object serves every client, each call gets the parameters it works on.

Errors: an exception in a call, an output of the wrong length or type, or a
NaN at finite parameters stops the run with one
:class:`fedcluster.FedclusterError` naming the call (``the Python model's
loss_grad raised ValueError: ...``). Every model call takes the GIL, so the
model's work runs on one core at a time (docs/python.md).
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

__all__ = ["Draws", "ModelProtocol", "NumpyMlp", "minibatch_steps"]

F32 = npt.NDArray[np.float32]


class Draws(Protocol):
    """The run's random stream, lent to :meth:`ModelProtocol.init`."""

    def uniform(self, low: float, high: float, n: int) -> F32:
        """``n`` draws from ``U[low, high)``, as a native model draws them."""
        ...

    def seed(self) -> int:
        """A 64-bit seed (``torch.manual_seed``, ``numpy.random.default_rng``)."""
        ...


class ModelProtocol(Protocol):
    """What a Python model provides. Required: ``num_params``, ``input_dim``,
    :meth:`init`, :meth:`loss`, :meth:`loss_grad`. Optional (looked up once,
    when the run starts): :meth:`layout` (default one tensor ``params``),
    ``head_start`` (where the per-cluster head starts, for IFCA's weight
    sharing; default 0), ``flops_per_sample`` (for throughput reports),
    :meth:`count_correct` (classifiers: test accuracy), :meth:`train` and
    :meth:`train_minibatch` (the model's own training loops; without them
    fedcluster runs its loops over :meth:`loss_grad`, one call per step)."""

    num_params: int
    input_dim: int

    def layout(self) -> list[tuple[str, list[int]]]:
        """The flat vector's tensors, in order (names and shapes, for
        ``models.safetensors``); their sizes add up to ``num_params``."""
        ...

    def init(self, rng: Draws) -> F32:
        """Fresh parameters, drawn from ``rng`` (the run's stream)."""
        ...

    def loss(self, params: F32, x: F32, y: npt.NDArray[Any]) -> float:
        """The mean loss over the batch."""
        ...

    def loss_grad(self, params: F32, x: F32, y: npt.NDArray[Any]) -> tuple[float, F32]:
        """The mean loss and its gradient (``num_params`` values)."""
        ...

    def count_correct(self, params: F32, x: F32, y: npt.NDArray[Any]) -> int | None:
        """Samples classified correctly (``None`` for regression)."""
        ...

    def train(self, params: F32, x: F32, y: npt.NDArray[Any], lr: float, steps: int) -> tuple[float, F32]:
        """``steps`` full-batch gradient steps of size ``lr``: the loss at the
        start and the parameters after (a NaN loss when training diverged)."""
        ...

    def train_minibatch(
        self,
        params: F32,
        x: F32,
        y: npt.NDArray[Any],
        batches: list[npt.NDArray[np.uint64]],
        optimizer: dict[str, Any],
        state: dict[str, Any],
    ) -> tuple[float, F32]:
        """One step per entry of ``batches`` (the rows of each minibatch, drawn
        by fedcluster from the client's stream) with ``optimizer`` (``name``
        ``"sgd"`` or ``"adam"``, ``lr``, ``momentum``, ``weight_decay``,
        ``batch_size``, and ``pull_mu``/``pull_centre``, a proximal pull
        ``mu/2 |w - centre|^2``, or ``None``), continuing ``state`` (``first``:
        SGD's momentum buffer or Adam's first moment, ``second``: Adam's second
        moment, ``t``: steps taken; update it in place or replace its entries).
        Returns the first minibatch's loss and the parameters after."""
        ...


def _float32_bound(fan_in: int) -> float:
    """``1/sqrt(fan_in)`` in float32, as the native models compute it."""
    return float(np.float32(1.0) / np.sqrt(np.float32(fan_in)))


class NumpyMlp:
    """The native ``[model] kind = "mlp"`` in numpy: ``logits = W2 relu(W1 x +
    b1) + b2`` with softmax cross-entropy, parameters ``fc1.weight`` (``hidden
    x input``), ``fc1.bias``, ``fc2.weight`` (``classes x hidden``),
    ``fc2.bias``, each drawn from ``U(+-1/sqrt(fan_in))`` in the native order,
    so a run with it gives the native MLP's results (to float rounding)."""

    def __init__(self, input_dim: int, hidden: int, classes: int) -> None:
        if input_dim < 1 or hidden < 1 or classes < 2:
            raise ValueError("NumpyMlp: input_dim and hidden must be >= 1, classes >= 2")
        self.input_dim, self.hidden, self.classes = input_dim, hidden, classes
        d, h, c = input_dim, hidden, classes
        self._b1, self._w2, self._b2 = h * d, h * d + h, h * d + h + c * h
        self.num_params = self._b2 + c
        self.head_start = self._w2
        self.flops_per_sample = 2 * (d * h + h * c)

    def layout(self) -> list[tuple[str, list[int]]]:
        d, h, c = self.input_dim, self.hidden, self.classes
        return [("fc1.weight", [h, d]), ("fc1.bias", [h]), ("fc2.weight", [c, h]), ("fc2.bias", [c])]

    def init(self, rng: Draws) -> F32:
        first = _float32_bound(self.input_dim)
        second = _float32_bound(self.hidden)
        return np.concatenate(
            [rng.uniform(-first, first, self._w2), rng.uniform(-second, second, self.num_params - self._w2)]
        )

    def _unpack(self, params: F32) -> tuple[F32, F32, F32, F32]:
        d, h, c = self.input_dim, self.hidden, self.classes
        return (
            params[: self._b1].reshape(h, d),
            params[self._b1 : self._w2],
            params[self._w2 : self._b2].reshape(c, h),
            params[self._b2 :],
        )

    def _forward(self, params: F32, x: F32) -> tuple[F32, F32]:
        w1, b1, w2, b2 = self._unpack(params)
        a = np.maximum(x @ w1.T + b1, np.float32(0))
        return a, a @ w2.T + b2

    @staticmethod
    def _losses(z: F32, y: npt.NDArray[Any]) -> tuple[npt.NDArray[np.float64], F32]:
        """Per-sample cross-entropy (float64) and ``softmax(z)`` (float32)."""
        m = z.max(axis=1, keepdims=True)
        e = np.exp(z - m)
        s = e.sum(axis=1, keepdims=True)
        zy = z[np.arange(len(y)), y.astype(np.int64)]
        losses = m[:, 0].astype(np.float64) - zy.astype(np.float64) + np.log(s[:, 0].astype(np.float64))
        return losses, e / s

    def loss(self, params: F32, x: F32, y: npt.NDArray[Any]) -> float:
        _, z = self._forward(params, x)
        return float(self._losses(z, y)[0].mean())

    def loss_grad(self, params: F32, x: F32, y: npt.NDArray[Any]) -> tuple[float, F32]:
        w1, b1, w2, b2 = self._unpack(params)
        a, z = self._forward(params, x)
        losses, delta = self._losses(z, y)
        delta[np.arange(len(y)), y.astype(np.int64)] -= np.float32(1)
        scale = np.float32(1.0 / len(y))
        dh = (delta @ w2) * (a > 0)
        grad = np.concatenate(
            [
                ((dh.T @ x) * scale).ravel(),
                dh.sum(axis=0) * scale,
                ((delta.T @ a) * scale).ravel(),
                delta.sum(axis=0) * scale,
            ]
        ).astype(np.float32, copy=False)
        return float(losses.mean()), grad

    def count_correct(self, params: F32, x: F32, y: npt.NDArray[Any]) -> int:
        _, z = self._forward(params, x)
        return int((z.argmax(axis=1) == y).sum())


def minibatch_steps(
    loss_grad: Any,
    params: F32,
    x: F32,
    y: npt.NDArray[Any],
    batches: list[npt.NDArray[np.uint64]],
    optimizer: dict[str, Any],
    state: dict[str, Any],
) -> tuple[float, F32]:
    """fedcluster's minibatch loop in numpy over ``loss_grad(params, x, y)``:
    a :meth:`ModelProtocol.train_minibatch` for a numpy model (SGD with
    momentum and weight decay, or Adam with PyTorch's defaults, plus the
    optional proximal pull), the same formulas as the native loop. Stops with
    a NaN loss when a step is not finite."""
    w = np.array(params, dtype=np.float32)
    lr = np.float32(optimizer["lr"])
    mu, centre = optimizer.get("pull_mu"), optimizer.get("pull_centre")
    first: float = float("nan")
    for step, rows in enumerate(batches):
        rows = rows.astype(np.int64)
        loss, g = loss_grad(w, x[rows], y[rows])
        if step == 0:
            first = loss
        if not np.isfinite(loss) or not np.all(np.isfinite(g)):
            return float("nan"), w
        if mu is not None:
            g = g + np.float32(mu) * (w - centre)
        state["t"] += 1
        if optimizer["name"] == "adam":
            t = state["t"]
            b1, b2 = np.float32(0.9), np.float32(0.999)
            m = state["first"] = b1 * state["first"] + (np.float32(1) - b1) * g
            v = state["second"] = b2 * state["second"] + (np.float32(1) - b2) * g * g
            m_hat = m / (np.float32(1) - b1**t)
            v_hat = v / (np.float32(1) - b2**t)
            w -= lr * m_hat / (np.sqrt(v_hat) + np.float32(1e-8))
        else:
            g = g + np.float32(optimizer["weight_decay"]) * w
            u = state["first"] = np.float32(optimizer["momentum"]) * state["first"] + g
            w -= lr * u
    return (first if np.all(np.isfinite(w)) else float("nan")), w
