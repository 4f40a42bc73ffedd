"""A Flower ServerApp running a fedcluster config with a strategy."""

from __future__ import annotations

import json
import os
from logging import INFO
from pathlib import Path
from typing import Any

from flwr.app import Context
from flwr.common.logger import log
from flwr.serverapp import Grid, ServerApp

from .._native import default_config
from .strategy import ClusteredStrategy


def server_app(base_dir: str | os.PathLike[str] | None = None, *, model: Any = None) -> ServerApp:
    """A ServerApp whose run config (``[tool.flwr.app.config]``, ``flwr run
    --run-config``) says what to run, training ``model`` (a
    :class:`fedcluster.model.ModelProtocol`) in place of the config's
    ``[model]`` where given (the ClientApp's ``client_app(model=...)`` must
    train the same model):

    - ``config``: the fedcluster config file (relative to ``base_dir``, the
      app's directory, when not absolute), or ``default`` for the embedded
      default (``fedcluster run``'s: IFCA on a synthetic mixture);
    - ``rounds`` (optional, > 0): replaces the config's rounds;
    - ``messages`` (optional): ``per-client`` (default) or ``per-node``;
    - ``out`` (optional): where to write the run directory (as ``fedcluster
      run --out``), e.g. ``metrics.csv`` and ``summary.json``;
    - ``data-dir`` (optional): the server's data directory;
    - ``timeout`` (optional): seconds a round waits for replies (default 600).
    """
    app = ServerApp()

    @app.main()
    def main(grid: Grid, context: Context) -> None:
        settings: dict[str, Any] = dict(context.run_config)
        config: Any = Path(str(settings["config"]))
        if str(config) == "default":
            config = default_config()
        elif not config.is_absolute() and base_dir is not None:
            config = Path(base_dir) / config
        overrides = {}
        if int(settings.get("rounds", 0)) > 0:
            overrides["rounds"] = int(settings["rounds"])
        strategy = ClusteredStrategy(
            config,
            data_dir=settings.get("data-dir") or None,
            overrides=overrides,
            messages=str(settings.get("messages", "per-client")),
            model=model,
        )
        strategy.start(grid, timeout=float(settings.get("timeout", 600)))
        result = strategy.outcome()
        log(INFO, "fedcluster summary: %s", json.dumps(result.summary["final"]))
        out = str(settings.get("out", ""))
        if out:
            written = strategy.save(out, overwrite=bool(settings.get("overwrite", False)))
            log(INFO, "fedcluster run directory: %s", written)

    return app
