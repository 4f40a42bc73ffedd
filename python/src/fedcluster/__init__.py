"""fedcluster: clustered federated learning, its Rust engine driven from Python.

- :func:`run` runs a config in process, as ``fedcluster run`` does, and returns
  the per-round metrics, the summary and the final cluster models as numpy.
- :class:`Server` and :class:`Client` are an algorithm's two halves, their
  messages (bytes, the networked mode's wire form) carried by the caller.
- :mod:`fedcluster.model`: your own model (any architecture, e.g. a PyTorch
  module through :class:`fedcluster.torch.TorchModule`) trained by every
  algorithm: ``run(config, model=...)``, ``Server``/``Client`` with ``model=``.
- :mod:`fedcluster.data` holds a user's own federated data
  (:class:`fedcluster.data.FederatedData`, ``save``, ``load``), which ``run``,
  ``Server`` and ``Client`` take as ``data=``.
- :mod:`fedcluster.messages` lists the algorithm table and reads any
  algorithm's messages, by its name, as dicts.
- :mod:`fedcluster.ifca` reads and writes IFCA's messages as numpy arrays, and
  :class:`fedcluster.ifca.IfcaClient` speaks IFCA's client protocol for a model
  written in Python (:mod:`fedcluster.torch` adapts a ``torch.nn.Module``).
- :mod:`fedcluster.flower` has the Flower strategies and ClientApp
  (``pip install 'fedcluster[flower]'``).
- :mod:`fedcluster.cli` is the ``fedcluster`` console command that ``pip``
  installs: the Rust binary's command line (``fedcluster run``, ``reproduce``,
  ``list``, ...), run in process.
"""

from . import data, ifca, messages, model
from ._native import ConfigError, FedclusterError, default_config
from .config import Config, load_config
from .halves import Client, Planned, RoundDone, Server
from .run import RunResult, run

__all__ = [
    "Client",
    "Config",
    "ConfigError",
    "data",
    "FedclusterError",
    "default_config",
    "ifca",
    "messages",
    "model",
    "Planned",
    "RoundDone",
    "RunResult",
    "Server",
    "load_config",
    "run",
]
