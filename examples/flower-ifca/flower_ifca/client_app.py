"""The ClientApp: fedcluster's client half for the clients this SuperNode
holds (``--node-config 'clients="0-49"'`` or ``partition-id=0 num-partitions=2``)."""

from fedcluster.flower import app

__all__ = ["app"]
