"""Bring your own PyTorch model.

:class:`TorchModule` makes a ``torch.nn.Module`` a
:class:`fedcluster.model.ModelProtocol`, so every algorithm trains it
(``fedcluster.run(config, model=TorchModule(net, input_shape=...))``, ``Server``
and ``Client`` with ``model=``): the server draws its initial models from the
module and scores them with it, any architecture.

:class:`TorchModule` is thread-safe: each thread the run calls it from works
on its own copy of the module (torch releases the GIL inside its kernels, so
calls from two threads into one module would mix their parameters).

The older IFCA-only adapter: :class:`TorchModel` is a
``torch.nn.Module`` and a client's data loader as an
:class:`fedcluster.ifca.LocalModel`, so :class:`fedcluster.ifca.IfcaClient`
answers the Rust IFCA server with it (``pip install 'fedcluster[torch]'``).

:class:`TorchModel`'s parameters are read and written as fedcluster's flat vector: in
the order of the fedcluster model's layout when ``layout`` is given (its
PyTorch names, e.g. ``weight`` or ``fc1.weight``, matched to
``named_parameters()``), else in ``parameters()`` order. The server's model
(the config's ``[model]``) must have the same tensors: it draws the initial
models and scores them on the server's test clients.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import torch

from ._torch_module import TorchModule, mean_loss, summed_loss

__all__ = ["TorchModel", "TorchModule", "mean_loss", "summed_loss"]


class TorchModel:
    """A module built by ``module_factory`` and the client's ``loader``
    (batches of ``(inputs, targets)``), with ``loss_fn(outputs, targets)``
    the batch's *summed* loss (default :func:`summed_loss`). Losses and
    gradients are means over every sample the loader yields; a training step
    is one full-batch gradient step (IFCA's local update)."""

    def __init__(
        self,
        module_factory: Callable[[], torch.nn.Module],
        loader: Iterable[Any],
        *,
        loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = summed_loss,
        layout: list[tuple[str, list[int]]] | None = None,
    ) -> None:
        self.module = module_factory()
        self.loader = loader
        self.loss_fn = loss_fn
        named = dict(self.module.named_parameters())
        if layout is None:
            self.params = list(self.module.parameters())
        else:
            missing = [name for name, _ in layout if name not in named]
            if missing:
                raise ValueError(
                    f"the module has no parameters {missing}; it has {sorted(named)}"
                )
            self.params = [named[name] for name, _ in layout]
            for (name, shape), p in zip(layout, self.params):
                if list(p.shape) != list(shape):
                    raise ValueError(f"parameter {name}: the module's shape {list(p.shape)}, fedcluster's {shape}")
        self.num_params = sum(p.numel() for p in self.params)
        self._samples: int | None = None

    @property
    def num_samples(self) -> int:
        if self._samples is None:
            self._samples = sum(len(targets) for _, targets in self.loader)
        return self._samples

    def _load(self, flat: np.ndarray) -> None:
        if flat.shape != (self.num_params,):
            raise ValueError(f"expected {self.num_params} parameters, got shape {flat.shape}")
        values = torch.from_numpy(np.ascontiguousarray(flat, dtype=np.float32))
        with torch.no_grad():
            at = 0
            for p in self.params:
                p.copy_(values[at : at + p.numel()].view_as(p))
                at += p.numel()

    def _flat(self) -> np.ndarray:
        return torch.cat([p.detach().reshape(-1) for p in self.params]).numpy().astype(np.float32)

    def _mean_loss(self, grad: bool) -> float:
        total, n = 0.0, self.num_samples
        if grad:
            self.module.zero_grad(set_to_none=False)
        for inputs, targets in self.loader:
            with torch.set_grad_enabled(grad):
                loss = self.loss_fn(self.module(inputs), targets) / n
                if grad:
                    loss.backward()
            total += float(loss.detach())
        return total

    def loss(self, params: np.ndarray) -> float:
        self._load(params)
        return self._mean_loss(grad=False)

    def gradient(self, params: np.ndarray) -> tuple[float, np.ndarray]:
        self._load(params)
        loss = self._mean_loss(grad=True)
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in self.params]
        return loss, torch.cat([g.reshape(-1) for g in grads]).numpy().astype(np.float32)

    def train(self, params: np.ndarray, lr: float, steps: int) -> np.ndarray:
        self._load(params)
        for _ in range(steps):
            self._mean_loss(grad=True)
            with torch.no_grad():
                for p in self.params:
                    if p.grad is not None:
                        p -= lr * p.grad
        return self._flat()
