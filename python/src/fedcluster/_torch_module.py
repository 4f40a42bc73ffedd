"""``TorchModule``: a ``torch.nn.Module`` as a
:class:`fedcluster.model.ModelProtocol` (public as
:class:`fedcluster.torch.TorchModule`).

One object serves every client, and the run calls it from several threads at
once (``threads`` > 1): torch releases the GIL inside its kernels, so two
calls sharing one module would load their parameters into the same tensors
and train on each other's. Each thread therefore works on its own copy of
the module (made on the thread's first call); the module given is only the
template (its architecture and, with ``init="module"``, its initialisation).
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from .model import Draws, minibatch_steps

__all__ = ["TorchModule", "mean_loss", "summed_loss"]

_MAX_REPLICAS = 256

Optimizer = Callable[[Iterable[torch.nn.Parameter], float], torch.optim.Optimizer]


def summed_loss(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """fedcluster's losses, summed over the batch: squared error for real
    targets (linear regression, not halved), cross-entropy for class labels."""
    if targets.dtype.is_floating_point:
        return F.mse_loss(outputs.reshape(targets.shape), targets, reduction="sum")
    return F.cross_entropy(outputs, targets.long(), reduction="sum")


def mean_loss(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """fedcluster's losses, averaged over the batch: :func:`summed_loss` / n."""
    return summed_loss(outputs, targets) / max(len(targets), 1)


class _Replica:
    """One thread's copy of the module and its parameters, in order."""

    def __init__(self, module: torch.nn.Module) -> None:
        self.module = module
        self.params = [p for _, p in module.named_parameters()]

    def load(self, flat: np.ndarray) -> None:
        """Copies ``flat`` into the parameters (the caller's array is never
        aliased, so training does not write into it)."""
        values = torch.from_numpy(np.ascontiguousarray(flat, dtype=np.float32))
        with torch.no_grad():
            at = 0
            for p in self.params:
                p.copy_(values[at : at + p.numel()].view_as(p))
                at += p.numel()

    def flat(self) -> np.ndarray:
        params = [p.detach() for p in self.params]
        return torch.nn.utils.parameters_to_vector(params).numpy().astype(np.float32, copy=True)

    def grad(self) -> np.ndarray:
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in self.params]
        return torch.cat([g.reshape(-1) for g in grads]).numpy().astype(np.float32, copy=True)


class TorchModule:
    """``module`` as a :class:`fedcluster.model.ModelProtocol`.

    - ``input_shape``: one sample's shape as the module takes it; each batch's
      flat rows are reshaped to ``(n, *input_shape)`` (fedcluster's images are
      channels-last: a CNN expecting ``(C, H, W)`` permutes them itself).
    - ``loss(outputs, targets)``: the batch's *mean* loss; default
      :func:`mean_loss` (cross-entropy for class labels, squared error for
      values). Class targets arrive as ``int64``, values as ``float32``.
    - ``init``: ``"module"`` (default) seeds torch from the run's stream and
      calls every submodule's ``reset_parameters()`` (the module's own
      initialisation; the global torch generator is left as it was);
      ``"uniform_fan_in"`` draws every tensor from the run's stream as the
      native models do (``U(+-1/sqrt(fan_in))``, the fan-in of its layer's
      weight): the native MLP's exact initial models.
    - ``optimizer``: ``None`` (default) trains with the run's configured
      optimizer (SGD with momentum and weight decay, or Adam, its state kept
      by the client between rounds, as the native loops do); or a factory
      ``optimizer(parameters, lr)`` returning a ``torch.optim.Optimizer``,
      used for the minibatch training of each call (its state lasts one call).
    - ``head_start``: where the per-cluster head starts (IFCA's weight
      sharing); default the first tensor of the last layer that has any.

    The parameters are ``module.named_parameters()``, in order; buffers (batch
    normalisation's statistics) are not part of the flat vector and stay with
    each thread's copy of the module. Runs on the CPU, in float32.
    """

    def __init__(
        self,
        module: torch.nn.Module,
        *,
        input_shape: tuple[int, ...],
        loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = mean_loss,
        init: str = "module",
        optimizer: Optimizer | None = None,
        head_start: int | None = None,
    ) -> None:
        if init not in ("module", "uniform_fan_in"):
            raise ValueError(f'init: expected "module" or "uniform_fan_in", got {init!r}')
        self.module = module
        self.input_shape = tuple(int(s) for s in input_shape)
        self.input_dim = int(np.prod(self.input_shape))
        self.loss_fn = loss
        self._init = init
        self._optimizer = optimizer
        self._named = list(module.named_parameters())
        if not self._named:
            raise ValueError("module: it has no parameters")
        self.num_params = sum(p.numel() for _, p in self._named)
        self.head_start = self._last_layer_start() if head_start is None else int(head_start)
        if optimizer is not None:
            self.train_minibatch = self._train_with_own_optimizer
        self._template_lock = threading.Lock()
        self._replicas: dict[int, _Replica] = {}

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("train_minibatch", None)
        del state["_template_lock"], state["_replicas"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if self._optimizer is not None:
            self.train_minibatch = self._train_with_own_optimizer
        self._template_lock = threading.Lock()
        self._replicas = {}

    def _replica(self) -> _Replica:
        """This thread's copy of the module (made on its first call). Keyed
        by the OS thread, not ``threading.local``: a Rust worker thread gets a
        fresh Python thread state for every call."""
        thread = threading.get_ident()
        replica = self._replicas.get(thread)
        if replica is None:
            with self._template_lock:
                if len(self._replicas) >= _MAX_REPLICAS:
                    self._replicas.clear()  # threads of finished runs
                replica = self._replicas[thread] = _Replica(copy.deepcopy(self.module))
        return replica

    def _last_layer_start(self) -> int:
        last = self._named[-1][0].rpartition(".")[0]
        at = 0
        for name, p in self._named:
            if name.rpartition(".")[0] == last:
                return at
            at += p.numel()
        return 0

    def layout(self) -> list[tuple[str, list[int]]]:
        return [(name, list(p.shape)) for name, p in self._named]

    def _batch(self, x: np.ndarray, y: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        inputs = torch.from_numpy(x).reshape(len(x), *self.input_shape)
        if y.dtype == np.float32:
            return inputs, torch.from_numpy(y)
        return inputs, torch.from_numpy(y.astype(np.int64))

    def init(self, rng: Draws) -> np.ndarray:
        if self._init == "module":
            with self._template_lock, torch.random.fork_rng(devices=[]):
                torch.manual_seed(rng.seed() % (1 << 63))
                for sub in self.module.modules():
                    if hasattr(sub, "reset_parameters"):
                        sub.reset_parameters()
                return _Replica(self.module).flat()
        parts = []
        weights = {name.rpartition(".")[0]: p for name, p in self._named if name.endswith("weight")}
        for name, p in self._named:
            weight = weights.get(name.rpartition(".")[0], p)
            fan_in = int(np.prod(weight.shape[1:])) if weight.dim() > 1 else weight.numel()
            bound = float(np.float32(1.0) / np.sqrt(np.float32(fan_in)))
            parts.append(rng.uniform(-bound, bound, p.numel()))
        return np.concatenate(parts)

    def loss(self, params: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
        replica = self._replica()
        replica.load(params)
        inputs, targets = self._batch(x, y)
        with torch.no_grad():
            return float(self.loss_fn(replica.module(inputs), targets))

    def loss_grad(self, params: np.ndarray, x: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
        replica = self._replica()
        replica.load(params)
        inputs, targets = self._batch(x, y)
        replica.module.zero_grad(set_to_none=True)
        loss = self.loss_fn(replica.module(inputs), targets)
        loss.backward()
        return float(loss.detach()), replica.grad()

    def count_correct(self, params: np.ndarray, x: np.ndarray, y: np.ndarray) -> int | None:
        if y.dtype == np.float32:
            return None
        replica = self._replica()
        replica.load(params)
        inputs, targets = self._batch(x, y)
        with torch.no_grad():
            return int((replica.module(inputs).argmax(dim=1) == targets).sum())

    def train(self, params: np.ndarray, x: np.ndarray, y: np.ndarray, lr: float, steps: int) -> tuple[float, np.ndarray]:
        """Full-batch gradient descent in torch (one crossing per call)."""
        if steps == 0:
            return self.loss(params, x, y), np.array(params, dtype=np.float32)
        replica = self._replica()
        replica.load(params)
        inputs, targets = self._batch(x, y)
        first = float("nan")
        for step in range(steps):
            replica.module.zero_grad(set_to_none=True)
            loss = self.loss_fn(replica.module(inputs), targets)
            loss.backward()
            value = float(loss.detach())
            if step == 0:
                first = value
            grads = [p.grad for p in replica.params if p.grad is not None]
            if not np.isfinite(value) or not all(bool(torch.isfinite(g).all()) for g in grads):
                return float("nan"), replica.flat()
            with torch.no_grad():
                for p in replica.params:
                    if p.grad is not None:
                        p -= lr * p.grad
        return first, replica.flat()

    def train_minibatch(self, params, x, y, batches, optimizer, state):
        """The run's optimizer on fedcluster's minibatches (see the class doc)."""
        return minibatch_steps(self.loss_grad, params, x, y, batches, optimizer, state)

    def _train_with_own_optimizer(self, params, x, y, batches, optimizer, state):
        """The user's optimizer (``optimizer=``) on fedcluster's minibatches,
        with the run's step size and proximal pull."""
        replica = self._replica()
        replica.load(params)
        opt = self._optimizer(replica.params, optimizer["lr"])
        mu, centre = optimizer.get("pull_mu"), optimizer.get("pull_centre")
        centre = None if centre is None else torch.from_numpy(np.asarray(centre, dtype=np.float32))
        first = float("nan")
        for step, rows in enumerate(batches):
            inputs, targets = self._batch(x[rows.astype(np.int64)], y[rows.astype(np.int64)])
            opt.zero_grad(set_to_none=True)
            loss = self.loss_fn(replica.module(inputs), targets)
            if step == 0:
                first = float(loss.detach())
            if mu is not None and centre is not None:
                flat = torch.nn.utils.parameters_to_vector(replica.params)
                loss = loss + 0.5 * mu * ((flat - centre) ** 2).sum()
            if not torch.isfinite(loss):
                return float("nan"), replica.flat()
            loss.backward()
            opt.step()
        state["t"] += len(batches)
        flat = replica.flat()
        return (first if np.all(np.isfinite(flat)) else float("nan")), flat
