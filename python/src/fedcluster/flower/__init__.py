"""fedcluster's algorithms on Flower's deployment engine (``flwr==1.41.0``).

- :class:`ClusteredStrategy`: a Flower ``Strategy`` (the Message API:
  ``configure_train``/``aggregate_train``/...) whose server half is
  fedcluster's, running in Rust; every algorithm of fedcluster's table works
  through it. Each algorithm of the table also has its own subclass, built
  from the table (:data:`STRATEGIES`, by algorithm name): :class:`Ifca`,
  :class:`CflMgd`, :class:`SrFca`, :class:`FedSoft`, :class:`Cfl`,
  :class:`TwoPhase`, :class:`FedProx`, :class:`FedAvgM` and the rest, each
  checking that the config names its algorithm.
- :func:`client_app` (and the ready-made :data:`app`): a Flower ``ClientApp``
  that runs fedcluster's client half for the clients the node holds.
- :func:`server_app`: a ``ServerApp`` running a config from the run config.

Each SuperNode says which of the config's clients it holds with
``--node-config``: ``clients="A-B"`` (clients A to B), or Flower's
``partition-id=P num-partitions=N`` (the P-th of N contiguous blocks).
"""

from .client_app import app, client_app
from .nodes import node_clients
from .server_app import server_app
from .strategy import STRATEGIES, ClusteredStrategy

# One strategy class per algorithm of the table (Ifca, CflMgd, ..., FedProx,
# FedAvgM), under the names strategy.py gives them.
globals().update({cls.__name__: cls for cls in STRATEGIES.values()})

__all__ = [
    "ClusteredStrategy",
    "STRATEGIES",
    *sorted(cls.__name__ for cls in STRATEGIES.values()),
    "app",
    "client_app",
    "node_clients",
    "server_app",
]
