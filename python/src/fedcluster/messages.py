"""Any algorithm's messages, read by the algorithm's name.

fedcluster's algorithm table (the Rust ``AlgorithmConfig``) is the one list of
algorithms: :func:`algorithm_names` gives its names and :func:`algorithms` its
lines (name, type name, title); the Flower strategy classes derive from them.

:func:`decode_down` and :func:`decode_up` read the bytes :class:`fedcluster.Server`
and :class:`fedcluster.Client` exchange (the networked mode's wire form) as
the named algorithm's message, in the form serde gives it in JSON: a dict of
its fields; a phase's message as ``{"Phase": ...}``; a message without fields
as the phase's name or None. Parameter vectors are lists of floats, each the
``float32`` sent exactly as ``np.float32`` reads it (a non-finite value is
None). An unknown name, or bytes that are no such message, are a
``ValueError``. :mod:`fedcluster.ifca` reads IFCA's messages as numpy arrays
instead.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from . import _native
from ._arrays import message_bytes

__all__ = ["AlgorithmInfo", "algorithm_names", "algorithms", "decode_down", "decode_up"]


@dataclass(frozen=True)
class AlgorithmInfo:
    """One line of the algorithm table."""

    #: The ``name`` a config's ``[algorithm]`` table gives it (``"local-kmeans"``).
    name: str
    #: Its type's CamelCase name (``"LocalKMeans"``), its strategy class's name.
    type_name: str
    #: One line on what it is and where it comes from.
    title: str


def algorithm_names() -> list[str]:
    """Every algorithm name, in the table's order."""
    return list(_native.algorithm_names())


def algorithms() -> list[AlgorithmInfo]:
    """Every line of the algorithm table, in its order."""
    return [AlgorithmInfo(*line) for line in _native.algorithm_table()]


def decode_down(algorithm: str, message: Any) -> Any:
    """A server-to-client message of ``algorithm`` (bytes or a ``uint8``
    array, as :meth:`fedcluster.Server.plan` hands it out), mostly a dict."""
    return json.loads(_native.decode_down(str(algorithm), message_bytes(message, "message")))


def decode_up(algorithm: str, reply: Any) -> Any:
    """A client-to-server message of ``algorithm`` (as
    :meth:`fedcluster.Client.handle` returns it), mostly a dict."""
    return json.loads(_native.decode_up(str(algorithm), message_bytes(reply, "reply")))
