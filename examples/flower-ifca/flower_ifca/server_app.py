"""The ServerApp: fedcluster's IFCA server half as a Flower strategy, the
config and rounds from the run config (pyproject.toml, ``--run-config``)."""

from pathlib import Path

from fedcluster.flower import server_app

app = server_app(base_dir=Path(__file__).parent)
