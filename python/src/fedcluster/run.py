"""``fedcluster.run``: a whole run in process, as ``fedcluster run`` makes it."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import _native
from .config import ConfigLike, Overrides, load_config
from .data import with_data

__all__ = ["METRIC_COLUMNS", "RunResult", "metric_columns", "run", "shaped_models"]

#: ``metrics.csv``'s columns, in its order, then the round's wall-clock seconds.
METRIC_COLUMNS = (
    "round",
    "train_loss",
    "param_error",
    "misclustering",
    "majority_misclustering",
    "clusters_found",
    "test_loss",
    "test_accuracy",
    "test_misclustering",
    "round_misclustering",
    "ari",
    "nmi",
    "participants",
    "bytes_down",
    "bytes_up",
    "diverged",
    "seconds",
)
_INTEGER = {"round", "participants", "bytes_down", "bytes_up"}


def metric_columns(rows: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    """Rows (one dict per round) as one numpy array per column: integers as
    ``int64``, ``diverged`` as ``bool``, the rest ``float64`` with ``nan``
    where a metric was not measured that round (``clusters_found`` too)."""
    columns: dict[str, np.ndarray] = {}
    for name in METRIC_COLUMNS:
        values = [row.get(name) for row in rows]
        if name in _INTEGER:
            columns[name] = np.array(values, dtype=np.int64)
        elif name == "diverged":
            columns[name] = np.array(values, dtype=bool)
        else:
            columns[name] = np.array([np.nan if v is None else v for v in values], dtype=np.float64)
    return columns


def shaped_models(flat: list[np.ndarray], layout: list[tuple[str, list[int]]]) -> list[dict[str, np.ndarray]]:
    """Flat models as ``{layer name: array of its shape}``, in the layout's order."""
    shaped = []
    for model in flat:
        tensors, at = {}, 0
        for name, shape in layout:
            size = int(np.prod(shape)) if shape else 1
            tensors[name] = model[at : at + size].reshape(shape)
            at += size
        shaped.append(tensors)
    return shaped


@dataclass
class RunResult:
    """What a run produced.

    - ``metrics``: the selected replica's per-round metrics, one numpy array
      per column (``METRIC_COLUMNS``); ``rows`` the same as one dict per round.
    - ``replica_rows``: every replica's rows (with a ``replica`` key).
    - ``summary``: ``summary.json`` as a dict.
    - ``models``: the selected replica's final models (one per cluster, or per
      client for ``local``), each ``{layer name: float32 array}`` with
      PyTorch's names and shapes; ``layout`` lists the names and shapes.
    """

    metrics: dict[str, np.ndarray]
    rows: list[dict[str, Any]]
    replica_rows: list[dict[str, Any]]
    summary: dict[str, Any]
    models: list[dict[str, np.ndarray]]
    model: str
    layout: list[tuple[str, list[int]]] = field(default_factory=list)
    selected: int = 0

    @classmethod
    def _from_native(cls, outcome: dict[str, Any]) -> RunResult:
        records = json.loads(outcome["records"])
        selected = outcome["selected"]
        rows = [r for r in records if r.get("replica", 0) == selected]
        layout = [(name, list(shape)) for name, shape in outcome["layout"]]
        return cls(
            metrics=metric_columns(rows),
            rows=rows,
            replica_rows=records,
            summary=json.loads(outcome["summary"]),
            models=shaped_models(outcome["models"], layout),
            model=outcome["model"],
            layout=layout,
            selected=selected,
        )


def run(
    config: ConfigLike,
    *,
    data_dir: str | os.PathLike[str] | None = None,
    threads: int = 0,
    overrides: Overrides = None,
    out: str | os.PathLike[str] | None = None,
    overwrite: bool = False,
    model: Any = None,
    data: Any = None,
) -> RunResult:
    """Runs ``config`` (a path, TOML text, a dict or a :class:`Config`) in
    process, exactly as ``fedcluster run`` does (the same metrics for the same
    config and seed), without writing a run directory.

    ``threads`` > 0 replaces the config's ``threads``; ``data_dir`` its
    ``data.data_dir``; ``overrides`` are ``--set`` settings. With ``out``,
    the run directory is written there too, as ``fedcluster run --out``
    writes it (``metrics.csv``, ``summary.json``, ``models.safetensors``,
    ...; ``out`` new or empty, or a run directory with ``overwrite``). With
    ``model`` (any object following :class:`fedcluster.model.ModelProtocol`,
    e.g. :class:`fedcluster.torch.TorchModule`), the run trains it in place of
    the config's ``[model]``. With ``data`` (a
    :class:`fedcluster.data.FederatedData`, or a federation directory) the
    run trains and scores on it in place of the config's ``[data]``. The GIL is released while Rust runs. Raises :class:`fedcluster.ConfigError` for a
    config it cannot run (the field named) and :class:`fedcluster.FedclusterError`
    for a run that fails (e.g. diverges), with the CLI's message.
    """
    if not isinstance(threads, int) or threads < 0:
        raise ValueError(f"threads: expected an int >= 0, got {threads!r}")
    loaded = with_data(load_config(config, data_dir=data_dir, overrides=overrides), data)
    target = None if out is None else os.fspath(out)
    return RunResult._from_native(_native.run(loaded, threads, target, overwrite, model))
