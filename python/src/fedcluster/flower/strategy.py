"""fedcluster's server half as a Flower strategy (Flower's Message API).

Each round, ``configure_train`` asks the Rust server half for its plan and
turns it into Flower messages: one per planned client (``messages =
"per-client"``, the default), or one per node carrying the messages of every
planned client it holds (``"per-node"``: Flower starts one ClientApp process
per message, so this is much faster with many small clients). Either way each
client gets its own message (its cluster models, its phase's payload),
as ``ArrayRecord`` entries keyed by client id, with a ``ConfigRecord``
holding the round, the run's config and the clients addressed.
``aggregate_train`` hands the replies to the server half (client-id order)
and returns the selected replica's cluster models and the round's metrics:
the same records ``fedcluster run`` writes for the same config and seed.
Evaluation is fedcluster's own (the server's held-out test clients, in the
round's records), so ``configure_evaluate`` sends nothing.

Every algorithm of fedcluster's table (:func:`fedcluster.messages.algorithms`)
also has its own subclass, built from the table when this module is imported
and named as the algorithm's Rust type (:class:`Ifca`, :class:`CflMgd`,
:class:`SrFca`, :class:`LocalKMeans`, :class:`FedProx`, :class:`FedAvgM`, ...;
:data:`STRATEGIES` maps each algorithm name to its class): it refuses a config
of another algorithm.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from logging import INFO, WARNING
from typing import Any, Callable, ClassVar

import numpy as np
from flwr.app import Array, ArrayRecord, ConfigRecord, Message, MessageType, MetricRecord, RecordDict
from flwr.common.logger import log
from flwr.serverapp import Grid
from flwr.serverapp.strategy import Result, Strategy

from .._native import FedclusterError
from ..config import ConfigLike, Overrides
from ..halves import RoundDone, Server
from ..messages import AlgorithmInfo, algorithms
from ..run import RunResult
from .nodes import ARRAYS, CONFIG

MESSAGE_MODES = ("per-client", "per-node")


class ClusteredStrategy(Strategy):
    """The configured fedcluster algorithm as a Flower strategy.

    ``config`` is a path, TOML text, a dict or a :class:`fedcluster.Config`;
    ``data_dir`` and ``overrides`` as for :func:`fedcluster.run`. The server
    builds the config's data set for its metrics (the test clients and, for
    the scores, the truth); the nodes build only their own clients.

    ``model`` (a :class:`fedcluster.model.ModelProtocol`, e.g. a
    :class:`fedcluster.torch.TorchModule`) replaces the config's ``[model]``:
    the server draws the initial models from it and scores them with it; the
    nodes' ClientApps must train the same model (``client_app(model=...)``).
    ``data`` (a :class:`fedcluster.data.FederatedData` or a federation
    directory) replaces the config's ``[data]``, as for :func:`fedcluster.run`:
    the config the nodes get names its directory.

    ``node_timeout`` bounds the wait for nodes holding every client;
    ``allow_missing`` lets a round finish without the replies that did not
    come (a node failed or timed out), as ``serve --min-clients`` does.
    """

    #: The algorithm a subclass runs (None: any).
    algorithm: ClassVar[str | None] = None

    def __init__(
        self,
        config: ConfigLike,
        *,
        data_dir: str | os.PathLike[str] | None = None,
        overrides: Overrides = None,
        threads: int = 0,
        messages: str = "per-client",
        allow_missing: bool = False,
        node_timeout: float = 300.0,
        model: Any = None,
        data: Any = None,
    ) -> None:
        if messages not in MESSAGE_MODES:
            raise ValueError(f"messages: expected one of {MESSAGE_MODES}, got {messages!r}")
        self.server = Server(
            config, data_dir=data_dir, threads=threads, overrides=overrides, model=model, data=data
        )
        self.config = self.server.config
        if self.algorithm is not None and self.config.algorithm != self.algorithm:
            raise ValueError(
                f"{type(self).__name__} runs `{self.algorithm}`, but the config's algorithm is "
                f"`{self.config.algorithm}` (use ClusteredStrategy for any algorithm)"
            )
        self.messages = messages
        self.allow_missing = allow_missing
        self.node_timeout = node_timeout
        #: Every replica's rows of every round so far (``metrics.csv``'s).
        self.rows: list[dict[str, Any]] = []
        self._node_of: dict[int, int] = {}
        self._rounds_done = 0
        self._toml = self.config.toml

    # -- Flower's Strategy API -------------------------------------------------

    def start(
        self,
        grid: Grid,
        initial_arrays: ArrayRecord | None = None,
        num_rounds: int | None = None,
        timeout: float = 3600,
        train_config: ConfigRecord | None = None,
        evaluate_config: ConfigRecord | None = None,
        evaluate_fn: Callable[[int, ArrayRecord], MetricRecord | None] | None = None,
    ) -> Result:
        """Flower's loop over the config's rounds (the server half draws the
        initial models: ``initial_arrays`` is not used)."""
        rounds = self.server.rounds
        if num_rounds is not None and num_rounds != rounds:
            raise ValueError(
                f"num_rounds={num_rounds}, but the config runs {rounds} rounds "
                f"(set them with overrides={{'rounds': {num_rounds}}})"
            )
        return super().start(
            grid,
            initial_arrays if initial_arrays is not None else ArrayRecord(),
            num_rounds=rounds,
            timeout=timeout,
            train_config=train_config,
            evaluate_config=evaluate_config,
            evaluate_fn=evaluate_fn,
        )

    def summary(self) -> None:
        log(
            INFO,
            "\t├── fedcluster `%s` (%s), %d clients, %d rounds, seed %d, messages %s",
            self.config.algorithm,
            self.config.name or "unnamed config",
            self.server.num_clients,
            self.server.rounds,
            self.config.seed,
            self.messages,
        )

    def configure_train(
        self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid
    ) -> Iterable[Message]:
        planned = self.server.plan()
        if planned is None:
            raise FedclusterError(f"round {server_round}: the run has no round left")
        if planned.round != server_round - 1:
            raise FedclusterError(
                f"Flower's round {server_round} is fedcluster's round {planned.round + 1}"
            )
        self._locate(grid, [c for c, _ in planned.messages])
        batches: dict[int, list[tuple[int, np.ndarray]]] = {}
        out = []
        for client, message in planned.messages:
            node = self._node_of[client]
            if self.messages == "per-client":
                out.append(self._message(node, planned, [(client, message)]))
            else:
                batches.setdefault(node, []).append((client, message))
        out.extend(self._message(node, planned, batch) for node, batch in sorted(batches.items()))
        return out

    def aggregate_train(
        self, server_round: int, replies: Iterable[Message]
    ) -> tuple[ArrayRecord | None, MetricRecord | None]:
        for reply in replies:
            self._receive(server_round, reply)
        done = self.server.finish(allow_missing=self.allow_missing)
        for client, why in done.rejected:
            log(WARNING, "round %d: the reply of client %d was refused: %s", server_round, client, why)
        self.rows.extend(done.rows)
        self._rounds_done += 1
        return _models_record(done), _metrics_record(done)

    def configure_evaluate(
        self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid
    ) -> Iterable[Message]:
        return []

    def aggregate_evaluate(self, server_round: int, replies: Iterable[Message]) -> MetricRecord | None:
        return None

    # -- results -----------------------------------------------------------------

    def outcome(self) -> RunResult:
        """The run's result once every round has run (as
        :func:`fedcluster.run` returns it)."""
        self._end()
        return self.server.outcome()

    def save(self, out: str | os.PathLike[str], *, overwrite: bool = False) -> str:
        """Writes the finished run's directory as ``fedcluster run --out`` does."""
        self._end()
        return self.server.save(out, overwrite=overwrite)

    # -- helpers -----------------------------------------------------------------

    def _end(self) -> None:
        """Lets the server see the run is over (without starting a round)."""
        if self._rounds_done < self.server.rounds:
            raise FedclusterError(
                f"the run is not over: {self._rounds_done} of {self.server.rounds} rounds done"
            )
        if self.server.plan() is not None:
            raise FedclusterError("the run is not over: a round is left")

    def _message(self, node: int, planned: Any, batch: list[tuple[int, np.ndarray]]) -> Message:
        content = RecordDict(
            {
                ARRAYS: ArrayRecord({str(c): Array(m) for c, m in batch}),
                CONFIG: ConfigRecord(
                    {
                        "clients": [int(c) for c, _ in batch],
                        "round": int(planned.round),
                        "rounds": int(planned.rounds),
                        "num-clients": int(planned.num_clients),
                        "config": self._toml,
                    }
                ),
            }
        )
        return Message(content=content, dst_node_id=node, message_type=MessageType.TRAIN)

    def _receive(self, server_round: int, reply: Message) -> None:
        node = reply.metadata.src_node_id
        if reply.has_error():
            log(WARNING, "round %d: node %d answered with an error: %s", server_round, node, reply.error.reason)
            return
        try:
            replies = reply.content[ARRAYS]
        except KeyError:
            log(WARNING, "round %d: node %d sent no fedcluster replies", server_round, node)
            return
        for key, array in replies.items():
            try:
                client = int(key)
                if self._node_of.get(client) != node:
                    raise FedclusterError(f"client {client} is not held by node {node}")
                self.server.receive(client, array.numpy())
            except (ValueError, TypeError, FedclusterError) as e:
                log(WARNING, "round %d: a reply from node %d was refused: %s", server_round, node, e)

    def _locate(self, grid: Grid, clients: list[int]) -> None:
        """Finds the nodes holding ``clients``: asks every node it has not
        asked yet which clients it holds, until each is held by one node."""
        asked: set[int] = set(self._node_of.values())
        deadline = time.monotonic() + self.node_timeout
        while True:
            missing = [c for c in clients if c not in self._node_of]
            if not missing:
                return
            new = [n for n in grid.get_node_ids() if n not in asked]
            if new:
                query = [
                    Message(
                        content=RecordDict(
                            {CONFIG: ConfigRecord({"num-clients": self.server.num_clients, "config": self._toml})}
                        ),
                        dst_node_id=n,
                        message_type=MessageType.QUERY,
                    )
                    for n in new
                ]
                remaining = max(1.0, deadline - time.monotonic())
                for reply in grid.send_and_receive(query, timeout=remaining):
                    self._claim(reply)
                asked.update(new)
                continue
            if time.monotonic() > deadline:
                shown = ", ".join(map(str, missing[:8])) + (", ..." if len(missing) > 8 else "")
                raise FedclusterError(
                    f"no node holds clients {shown} after {self.node_timeout:.0f} s: start SuperNodes "
                    f"with --node-config 'clients=\"A-B\"' covering clients 0-{self.server.num_clients - 1}"
                )
            time.sleep(1.0)

    def _claim(self, reply: Message) -> None:
        node = reply.metadata.src_node_id
        if reply.has_error():
            log(WARNING, "node %d could not say which clients it holds: %s", node, reply.error.reason)
            return
        held = [int(c) for c in reply.content[CONFIG]["clients"]]
        for client in held:
            other = self._node_of.get(client)
            if other is not None and other != node:
                raise FedclusterError(f"client {client} is held by two nodes ({other} and {node})")
            if not 0 <= client < self.server.num_clients:
                raise FedclusterError(f"node {node} claims client {client}, not in the run")
            self._node_of[client] = node
        log(INFO, "node %d holds %d clients", node, len(held))


def _models_record(done: RoundDone) -> ArrayRecord:
    """The selected replica's models, ``cluster{j}.{layer}`` (as in
    ``models.safetensors``)."""
    return ArrayRecord(
        {
            f"cluster{j}.{name}": Array(np.ascontiguousarray(tensor))
            for j, model in enumerate(done.models)
            for name, tensor in model.items()
        }
    )


def _metrics_record(done: RoundDone) -> MetricRecord:
    """The selected replica's measured metrics of the round (numbers only)."""
    row = done.selected_row
    return MetricRecord(
        {
            k: v
            for k, v in row.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and k != "replica"
        }
    )


def _strategy_class(line: AlgorithmInfo) -> type[ClusteredStrategy]:
    """The strategy class of one line of fedcluster's algorithm table: named
    as the algorithm's Rust type, defined in this module (so it pickles and
    shows in docs like a class written out)."""
    doc = (
        f"{line.title}\n\n"
        f"As a Flower strategy: :class:`ClusteredStrategy` for a config whose\n"
        f"``[algorithm]`` table has ``name = \"{line.name}\"`` (its section's\n"
        f"other keys are the algorithm's options); any other config is a\n"
        f"``ValueError``.\n"
    )
    return type(
        line.type_name,
        (ClusteredStrategy,),
        {"__doc__": doc, "__module__": __name__, "__qualname__": line.type_name, "algorithm": line.name},
    )


#: One strategy class per algorithm of fedcluster's table, by algorithm name
#: (``STRATEGIES["local-kmeans"]`` is :class:`LocalKMeans`), in table order.
STRATEGIES: dict[str, type[ClusteredStrategy]] = {}
for _line in algorithms():
    if _line.type_name in globals():
        raise ImportError(f"algorithm `{_line.name}`: its class name {_line.type_name} is taken in {__name__}")
    STRATEGIES[_line.name] = globals()[_line.type_name] = _strategy_class(_line)
del _line
