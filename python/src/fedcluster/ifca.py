"""IFCA's messages as numpy arrays, and IFCA's client protocol for a model
written in Python.

:func:`decode_down` reads what the Rust IFCA server sends a client (the same
bytes :class:`fedcluster.Client` reads); :func:`encode_up` writes the reply it
expects. :class:`IfcaClient` is IFCA's client round (Ghosh et al., Algorithm 2,
lines 6-10) over any :class:`LocalModel`: the loss of each of the ``k``
cluster models on the client's data, the lowest picked, then the gradient at
it (``aggregation = "gradient"``) or ``local_steps`` steps of full-batch
gradient descent from it (``aggregation = "model"``), returned flat.
:mod:`fedcluster.torch` adapts a ``torch.nn.Module``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from . import _native
from ._arrays import as_message_array, message_bytes
from .config import ConfigLike, load_config

__all__ = ["Down", "IfcaClient", "LocalModel", "Up", "decode_down", "decode_up", "encode_up"]


@dataclass
class Down:
    """A server-to-client IFCA message.

    ``models`` is ``replicas x k x p`` (with ``own`` set, only each replica's
    own cluster model is sent and the others are zeros); ``lrs`` a step size
    per replica; ``shared`` the leading parameters shared by the ``k`` models
    (weight sharing); ``velocities`` the momentum buffers (CFL-MGD) or None.
    """

    models: np.ndarray
    lrs: np.ndarray
    shared: int
    own: np.ndarray | None
    velocities: np.ndarray | None

    @property
    def replicas(self) -> int:
        return self.models.shape[0]

    @property
    def k(self) -> int:
        return self.models.shape[1]


@dataclass
class Up:
    """A client-to-server IFCA message (see :func:`encode_up`)."""

    chosen: np.ndarray
    losses: list[float | None]
    payload: np.ndarray
    velocity: np.ndarray
    samples: int


def decode_down(message: Any) -> Down:
    """Reads a server-to-client IFCA message (bytes or ``uint8`` array)."""
    d = _native.ifca_decode_down(message_bytes(message, "message"))
    return Down(d["models"], d["lrs"], d["shared"], d["own"], d["velocities"])


def encode_up(
    chosen: np.ndarray,
    losses: list[float | None],
    payload: np.ndarray,
    samples: int,
    velocity: np.ndarray | None = None,
) -> np.ndarray:
    """Writes a client-to-server IFCA message: per replica the ``chosen``
    cluster (``uint32``), the loss at it (None where training diverged), the
    ``payload`` (``float32``, ``replicas x p``: gradient or trained model),
    the client's training ``samples`` and, with momentum, ``velocity``."""
    chosen = np.asarray(chosen)
    if not np.issubdtype(chosen.dtype, np.integer) or chosen.ndim != 1 or (chosen < 0).any():
        raise TypeError("chosen: expected a 1-D array of cluster indices")
    for name, array in (("payload", payload), ("velocity", velocity)):
        if array is None:
            continue
        if not isinstance(array, np.ndarray) or array.dtype != np.float32 or array.ndim != 2:
            raise TypeError(f"{name}: expected a 2-D float32 array (replicas x parameters)")
    reply = _native.ifca_encode_up(
        np.ascontiguousarray(chosen, dtype=np.uint32),
        [None if v is None else float(v) for v in losses],
        np.ascontiguousarray(payload),
        int(samples),
        None if velocity is None else np.ascontiguousarray(velocity),
    )
    return as_message_array(reply)


def decode_up(reply: Any) -> Up:
    """Reads a client-to-server IFCA message."""
    u = _native.ifca_decode_up(message_bytes(reply, "reply"))
    return Up(u["chosen"], u["losses"], u["payload"], u["velocity"], u["samples"])


class LocalModel(Protocol):
    """A client's model and training data, as :class:`IfcaClient` uses them.
    Parameters are flat ``float32`` vectors in fedcluster's layout (the
    model's tensors in order, PyTorch's names and shapes)."""

    @property
    def num_samples(self) -> int: ...

    def loss(self, params: np.ndarray) -> float:
        """Mean training loss at ``params``."""
        ...

    def gradient(self, params: np.ndarray) -> tuple[float, np.ndarray]:
        """Mean training loss and its full-batch gradient at ``params``."""
        ...

    def train(self, params: np.ndarray, lr: float, steps: int) -> np.ndarray:
        """``params`` after ``steps`` steps of full-batch gradient descent."""
        ...


class IfcaClient:
    """IFCA's client protocol over a :class:`LocalModel`.

    ``aggregation`` is ``"gradient"`` (option I: send the gradient at the
    chosen model) or ``"model"`` (option II: ``local_steps`` steps of local
    gradient descent from it, send the model). :meth:`from_config` reads them
    from a fedcluster config.
    """

    def __init__(self, model: LocalModel, *, aggregation: str = "gradient", local_steps: int = 1):
        if aggregation not in ("gradient", "model"):
            raise ValueError(f"aggregation: expected 'gradient' or 'model', got {aggregation!r}")
        if local_steps < 1:
            raise ValueError(f"local_steps: expected at least 1, got {local_steps}")
        self.model = model
        self.aggregation = aggregation
        self.local_steps = local_steps

    @classmethod
    def from_config(cls, config: ConfigLike, model: LocalModel) -> IfcaClient:
        """The client the config's ``[algorithm]`` (``ifca``) describes.
        Momentum (CFL-MGD) and minibatch optimizers are the Rust client's only."""
        algorithm = json.loads(load_config(config).json)["algorithm"]
        if algorithm["name"] != "ifca":
            raise ValueError(f"algorithm `{algorithm['name']}`: IfcaClient speaks IFCA's protocol only")
        if algorithm.get("momentum", 0.0) != 0.0:
            raise ValueError("algorithm.momentum: momentum (CFL-MGD) is not supported by IfcaClient")
        if algorithm.get("optimizer", {}).get("kind", "gd") != "gd":
            raise ValueError("algorithm.optimizer: IfcaClient trains with full-batch gradient descent only")
        return cls(model, aggregation=algorithm["aggregation"], local_steps=algorithm.get("local_steps", 1))

    def choose(self, down: Down) -> tuple[np.ndarray, np.ndarray]:
        """Per replica the chosen cluster and the loss of every cluster model
        (``nan`` where not evaluated: with ``own``, only its cluster)."""
        losses = np.full((down.replicas, down.k), np.nan)
        chosen = np.zeros(down.replicas, dtype=np.uint32)
        for r in range(down.replicas):
            if down.own is not None:
                c = int(down.own[r])
                losses[r, c] = self.model.loss(down.models[r, c])
            else:
                for j in range(down.k):
                    losses[r, j] = self.model.loss(down.models[r, j])
                finite = np.where(np.isfinite(losses[r]), losses[r], np.inf)
                c = int(np.argmin(finite))
            chosen[r] = c
        return chosen, losses

    def handle(self, message: Any) -> np.ndarray:
        """Answers an IFCA message with the encoded reply."""
        down = decode_down(message)
        if down.velocities is not None:
            raise ValueError("message carries momentum buffers: IfcaClient does not do momentum")
        chosen, all_losses = self.choose(down)
        p = down.models.shape[2]
        payload = np.zeros((down.replicas, p), dtype=np.float32)
        losses: list[float | None] = []
        for r in range(down.replicas):
            start = down.models[r, chosen[r]]
            loss = float(all_losses[r, chosen[r]])
            if self.aggregation == "gradient":
                loss, update = self.model.gradient(start)
            else:
                update = self.model.train(start, float(down.lrs[r]), self.local_steps)
            update = np.asarray(update, dtype=np.float32)
            if np.isfinite(loss) and np.isfinite(update).all():
                payload[r] = update
                losses.append(loss)
            else:
                losses.append(None)
        return encode_up(chosen, losses, payload, self.model.num_samples)
