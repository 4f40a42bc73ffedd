"""An algorithm's two halves, their messages carried by the caller.

:class:`Server` runs the configured server half on fedcluster's engine (the
same records as ``fedcluster run``); each round it hands out one message per
planned client and takes the clients' replies back. :class:`Client` is one
client's half. Messages and replies are bytes in the networked mode's wire
form, shown to Python as 1-D ``uint8`` arrays; any transport can carry them
(:mod:`fedcluster.flower` carries them in Flower messages).

A round::

    server = fedcluster.Server("configs/ifca-synthetic.toml")
    clients = [fedcluster.Client(server.config, i) for i in range(server.num_clients)]
    while (planned := server.plan()) is not None:
        for client, message in planned.messages:
            reply = clients[client].handle(message, round=planned.round,
                                           rounds=planned.rounds,
                                           num_clients=planned.num_clients)
            server.receive(client, reply)
        done = server.finish()
    result = server.outcome()
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _native
from ._arrays import as_message_array, float32_matrix, message_bytes, vector
from .config import Config, ConfigLike, Overrides, load_config
from .data import with_data
from .run import RunResult, metric_columns, shaped_models

__all__ = ["Client", "Planned", "RoundDone", "Server"]


@dataclass
class Planned:
    """One round's messages: ``(client id, message)`` pairs, by client id."""

    round: int
    rounds: int
    num_clients: int
    messages: list[tuple[int, np.ndarray]]


@dataclass
class RoundDone:
    """A finished round: its rows (one per replica; ``metrics`` the selected
    replica's as columns), the selected replica's models and the replies the
    server refused (``(client, why)``; they counted as not received)."""

    rows: list[dict[str, Any]]
    models: list[dict[str, np.ndarray]]
    rejected: list[tuple[int, str]]
    selected: int = 0

    @property
    def selected_row(self) -> dict[str, Any]:
        """The selected replica's row."""
        return next((r for r in self.rows if r.get("replica", 0) == self.selected), self.rows[0])

    @property
    def metrics(self) -> dict[str, np.ndarray]:
        return metric_columns(self.rows)


class Server:
    """The configured algorithm's server half on fedcluster's engine.

    Builds the config's data set (for the metrics and the clients' sizes),
    model (``model``, a :class:`fedcluster.model.ModelProtocol`, in place of
    the config's ``[model]`` where given) and server half; raises :class:`fedcluster.ConfigError` or
    :class:`fedcluster.FedclusterError` with the CLI's message when it cannot.
    With ``data`` (a :class:`fedcluster.data.FederatedData`, or a federation
    directory) the data set is that one, in place of the config's ``[data]``:
    the metrics are computed on it (those it cannot give are absent).
    """

    def __init__(
        self,
        config: ConfigLike,
        *,
        data_dir: str | os.PathLike[str] | None = None,
        threads: int = 0,
        overrides: Overrides = None,
        model: Any = None,
        data: Any = None,
    ) -> None:
        self.config: Config = with_data(load_config(config, data_dir=data_dir, overrides=overrides), data)
        self._native = _native.Server(self.config, threads, model)
        self.layout: list[tuple[str, list[int]]] = [
            (name, list(shape)) for name, shape in self._native.layout
        ]

    @property
    def num_clients(self) -> int:
        """Clients of the federation (ids ``0..num_clients``)."""
        return self._native.num_clients

    @property
    def rounds(self) -> int:
        return self.config.rounds

    def plan(self) -> Planned | None:
        """Starts the next round and returns its messages, or ``None`` once
        every round has run."""
        planned = self._native.plan()
        if planned is None:
            return None
        round_, rounds, num_clients, messages = planned
        return Planned(
            round=round_,
            rounds=rounds,
            num_clients=num_clients,
            messages=[(client, as_message_array(m)) for client, m in messages],
        )

    def receive(self, client: int, reply: Any) -> None:
        """Takes ``client``'s reply (bytes or a 1-D ``uint8`` array) to the
        open round. Refused with :class:`fedcluster.FedclusterError` when the
        client was not sent a message this round, has replied already, or the
        reply does not decode or holds a NaN or infinity."""
        if not isinstance(client, (int, np.integer)) or client < 0:
            raise TypeError(f"client: expected a client id (int >= 0), got {client!r}")
        self._native.receive(int(client), message_bytes(reply, "reply"))

    def finish(self, *, allow_missing: bool = False) -> RoundDone:
        """Ends the open round: the replies go to the server half in client-id
        order. Fails, leaving the round open, while a planned client has not
        replied, unless ``allow_missing``."""
        done = self._native.finish(allow_missing)
        return RoundDone(
            rows=json.loads(done["records"]),
            models=shaped_models(done["models"], self.layout),
            rejected=list(done["rejected"]),
            selected=done["selected"],
        )

    def outcome(self) -> RunResult:
        """The run's result (as :func:`fedcluster.run` returns it), once
        :meth:`plan` has returned ``None``."""
        return RunResult._from_native(self._native.outcome())

    def save(self, out: str | os.PathLike[str], *, overwrite: bool = False) -> str:
        """Writes the finished run's directory ``out`` as ``fedcluster run
        --out`` does; returns its path."""
        return self._native.save(os.fspath(out), overwrite)


class Client:
    """One client's half of the configured algorithm, with its data and model.

    ``Client(config, client)`` holds client ``client`` of the config's data
    set (its training data only, as ``fedcluster join`` does);
    :meth:`from_arrays` holds data given as numpy arrays. With ``data`` (a
    :class:`fedcluster.data.FederatedData`) the client is that data set's
    client ``client``, as the server given the same ``data`` numbers it. With ``model`` (a
    :class:`fedcluster.model.ModelProtocol`) the half trains it in place of
    the config's ``[model]`` (the server must train the same model).
    """

    def __init__(
        self,
        config: ConfigLike,
        client: int,
        *,
        data_dir: str | os.PathLike[str] | None = None,
        overrides: Overrides = None,
        model: Any = None,
        data: Any = None,
    ) -> None:
        if not isinstance(client, (int, np.integer)) or client < 0:
            raise TypeError(f"client: expected a client id (int >= 0), got {client!r}")
        self.config: Config = with_data(load_config(config, data_dir=data_dir, overrides=overrides), data)
        self._native = _native.Client(self.config, int(client), model)

    @classmethod
    def many(
        cls,
        config: ConfigLike,
        clients: list[int],
        *,
        data_dir: str | os.PathLike[str] | None = None,
        overrides: Overrides = None,
        model: Any = None,
        data: Any = None,
    ) -> list[Client]:
        """Clients ``clients`` of the config's data set (built once), training
        ``model`` where given."""
        loaded = with_data(load_config(config, data_dir=data_dir, overrides=overrides), data)
        ids = [int(c) for c in clients]
        if any(c < 0 for c in ids):
            raise ValueError("clients: client ids must be >= 0")
        return [cls._wrap(loaded, native) for native in _native.Client.many(loaded, ids, model)]

    @classmethod
    def from_arrays(
        cls,
        config: ConfigLike,
        client: int,
        features: np.ndarray,
        targets: np.ndarray,
        *,
        classes: int | None = None,
        model: Any = None,
    ) -> Client:
        """Client ``client`` holding ``features`` (``float32``, samples x
        features) and ``targets``: ``float32`` values for regression, or
        integer class indices below ``classes`` for classification. Wrong
        dtypes and shapes raise ``TypeError``/``ValueError`` naming the
        argument."""
        loaded = load_config(config)
        x = float32_matrix(features, "features")
        y = vector(targets, "targets", length=x.shape[0])
        if classes is None:
            if y.dtype != np.float32:
                raise TypeError(
                    f"targets: expected float32 regression targets (or pass classes= for "
                    f"class labels), got dtype {y.dtype}"
                )
            return cls._wrap(loaded, _native.Client.with_real_targets(loaded, int(client), x, y, model))
        if not np.issubdtype(y.dtype, np.integer):
            raise TypeError(f"targets: expected integer class labels, got dtype {y.dtype}")
        if y.size and (y.min() < 0 or y.max() >= classes):
            raise ValueError(f"targets: class labels must lie in 0..{classes - 1}")
        labels = y.astype(np.uint32)
        native = _native.Client.with_class_targets(loaded, int(client), x, labels, int(classes), model)
        return cls._wrap(loaded, native)

    @classmethod
    def _wrap(cls, config: Config, native: _native.Client) -> Client:
        """A Client around a native half built for ``config``."""
        client = cls.__new__(cls)
        client.config = config
        client._native = native
        return client

    @property
    def id(self) -> int:
        return self._native.id

    def data(self) -> tuple[np.ndarray, np.ndarray]:
        """This client's training data: features (``float32``, samples x
        features) and targets (``float32`` values or ``uint32`` classes), as
        the client half sees them; e.g. for a PyTorch model's data loader."""
        return self._native.data()

    def handle(self, message: Any, *, round: int, num_clients: int, rounds: int | None = None) -> np.ndarray:
        """Answers round ``round``'s message (bytes or a 1-D ``uint8`` array)
        with the reply, as a ``uint8`` array. ``rounds`` defaults to the
        config's. The client's random stream is ``(seed, client, round)``, as
        in process, so replies are the same bytes."""
        rounds = self.config.rounds if rounds is None else rounds
        reply = self._native.handle(message_bytes(message, "message"), round, rounds, num_clients)
        return as_message_array(reply)

    def state(self) -> bytes:
        """The half's state between rounds (e.g. its optimizer's moments)."""
        return self._native.state()

    def restore(self, state: Any) -> None:
        """Restores what :meth:`state` returned."""
        self._native.restore(message_bytes(state, "state"))
