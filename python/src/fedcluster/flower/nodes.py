"""Which of a config's clients a Flower node holds, from its ``--node-config``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: Keys of the records fedcluster's messages carry.
ARRAYS = "fedcluster"
CONFIG = "fedcluster-config"


def node_clients(node_config: Mapping[str, Any], num_clients: int) -> list[int]:
    """The clients a node holds: ``clients`` (``"A-B"``, ``"A"`` or an int)
    or Flower's ``partition-id`` and ``num-partitions`` (the P-th of N
    contiguous blocks of the ``num_clients`` clients)."""
    if "clients" in node_config:
        spec = str(node_config["clients"]).strip()
        try:
            first, _, last = spec.partition("-")
            a, b = int(first), int(last) if last else int(first)
        except ValueError:
            raise ValueError(f"node config clients={spec!r}: expected A-B or A (client ids)") from None
        if not 0 <= a <= b < num_clients:
            raise ValueError(
                f"node config clients={spec!r}: the run's data set has clients 0-{num_clients - 1}"
            )
        return list(range(a, b + 1))
    if "partition-id" in node_config and "num-partitions" in node_config:
        p, n = int(node_config["partition-id"]), int(node_config["num-partitions"])
        if not 0 <= p < n:
            raise ValueError(f"node config partition-id={p}: expected 0..{n - 1} (num-partitions={n})")
        return list(range(p * num_clients // n, (p + 1) * num_clients // n))
    raise ValueError(
        "this node does not say which clients it holds: start the SuperNode with "
        "--node-config 'clients=\"A-B\"' or 'partition-id=P num-partitions=N'"
    )
