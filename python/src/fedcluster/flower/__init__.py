"""fedcluster's algorithms on Flower's deployment engine (``flwr==1.41.0``).

- :class:`ClusteredStrategy`: a Flower ``Strategy`` (the Message API:
  ``configure_train``/``aggregate_train``/...) whose server half is
  fedcluster's, running in Rust; every algorithm of fedcluster's table works
  through it, and :class:`Ifca`, :class:`CflMgd`, :class:`SrFca`,
  :class:`FedSoft`, :class:`Cfl`, :class:`TwoPhase` (and the rest) check that
  the config names their algorithm.
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
from .strategy import (
    Cfl,
    CflMgd,
    ClusteredStrategy,
    FedSoft,
    Global,
    Ifca,
    Local,
    LocalKMeans,
    OneShot,
    Oracle,
    SrFca,
    TwoPhase,
)

__all__ = [
    "Cfl",
    "CflMgd",
    "ClusteredStrategy",
    "FedSoft",
    "Global",
    "Ifca",
    "Local",
    "LocalKMeans",
    "OneShot",
    "Oracle",
    "SrFca",
    "TwoPhase",
    "app",
    "client_app",
    "node_clients",
    "server_app",
]
