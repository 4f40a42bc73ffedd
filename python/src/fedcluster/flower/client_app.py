"""fedcluster's client half as a Flower ClientApp.

A node holds some of the config's clients (``--node-config``, see
:func:`fedcluster.flower.node_clients`). On a ``query`` it says which; on a
``train`` message it builds the addressed clients from the config the message
carries (only their training data, as ``fedcluster join`` does: the data set's
files under the node's ``data-dir`` node config, when given), restores each
one's state from the node's context, runs the client half on its message and
replies with the encoded replies, keyed by client id. The client halves'
state between rounds lives in ``context.state`` (Flower starts a process per
message).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from flwr.app import Array, ArrayRecord, ConfigRecord, Context, Message, RecordDict
from flwr.clientapp import ClientApp

from ..config import load_config
from ..halves import Client
from .nodes import ARRAYS, CONFIG, node_clients

#: Where a node keeps its clients' states: one uint8 array per client id.
STATE = "fedcluster-state"


def client_app(model: Any = None) -> ClientApp:
    """A ClientApp answering fedcluster strategies' messages; its clients
    train ``model`` (a :class:`fedcluster.model.ModelProtocol`, e.g. a
    :class:`fedcluster.torch.TorchModule`) in place of the config's
    ``[model]`` where given: the strategy's server must have the same one."""
    app = ClientApp()

    @app.query()
    def query(msg: Message, context: Context) -> Message:
        num_clients = int(msg.content[CONFIG]["num-clients"])
        held = node_clients(context.node_config, num_clients)
        return Message(RecordDict({CONFIG: ConfigRecord({"clients": held})}), reply_to=msg)

    @app.train()
    def train(msg: Message, context: Context) -> Message:
        return Message(_train(msg, context, model), reply_to=msg)

    return app


def _train(msg: Message, context: Context, model: Any) -> RecordDict:
    settings = msg.content[CONFIG]
    clients = [int(c) for c in settings["clients"]]
    num_clients = int(settings["num-clients"])
    held = set(node_clients(context.node_config, num_clients))
    foreign = [c for c in clients if c not in held]
    if foreign:
        raise ValueError(f"clients {foreign} are not held by this node")
    data_dir = context.node_config.get("data-dir")
    config = load_config(str(settings["config"]), data_dir=data_dir)
    halves = Client.many(config, clients, model=model)
    messages = msg.content[ARRAYS]
    states = context.state[STATE] if STATE in context.state else ArrayRecord()
    replies = {}
    for client, half in zip(clients, halves):
        key = str(client)
        if key in states:
            half.restore(states[key].numpy())
        reply = half.handle(
            messages[key].numpy(),
            round=int(settings["round"]),
            rounds=int(settings["rounds"]),
            num_clients=num_clients,
        )
        replies[key] = Array(np.array(reply))
        states[key] = Array(np.frombuffer(half.state(), dtype=np.uint8).copy())
    context.state[STATE] = states
    return RecordDict({ARRAYS: ArrayRecord(replies), CONFIG: ConfigRecord({"clients": clients})})


#: A ready-made ClientApp (``clientapp = "fedcluster.flower:app"``).
app = client_app()
