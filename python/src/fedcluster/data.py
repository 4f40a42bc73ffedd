"""A user's own federated data: :class:`FederatedData` and :func:`save`.

A :class:`FederatedData` holds training clients (a list of ``(x, y)`` numpy
pairs), optional test clients and optional true clusters. ``fedcluster.run``,
:class:`fedcluster.Server` and :class:`fedcluster.Client` all take it as
``data=``: the run then trains and scores on these clients, in place of the
config's ``[data]`` (which is ignored), and the input shape and sizes come
from the data. Without test clients the test metrics are absent, without
true clusters the clustering metrics (empty in ``metrics.csv``, listed with
the reason under ``metrics_absent`` in ``summary.json``): they are never
computed on other data.

On disk it is the federation format of ``[data] kind = "files"``
(docs/data.md): ``federation.json`` and one ``.npz`` or ``.safetensors``
file of arrays ``x`` and ``y`` per client. :func:`save` writes it,
:meth:`FederatedData.load` reads it, and ``fedcluster data export`` writes
any built-in data set in it. The Rust side reads the same directory, so a
run from Python and ``fedcluster run`` on the same files give the same
metrics.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import tomllib
import weakref
from collections.abc import Sequence
from typing import Any, Union

import numpy as np

from ._array_files import read_arrays as _read_arrays
from ._array_files import write_arrays as _write_arrays
from ._native import Config

__all__ = ["FederatedData", "load", "save", "with_data"]

FORMAT = 1
MANIFEST = "federation.json"

Pair = tuple[Any, Any]
DataLike = Union["FederatedData", str, "os.PathLike[str]"]


class FederatedData:
    """Training clients, optional test clients and optional true clusters.

    ``train`` and ``test`` are lists of ``(x, y)``: ``x`` of ``n`` samples
    (``[n, features]``, or images ``[n, height, width, channels]`` or
    ``[n, height, width]``), converted to float32; ``y`` ``n`` integer class
    labels (classification, ``classes`` default: the largest label + 1) or
    floats (regression). ``clusters`` gives each training client's true
    cluster and ``test_clusters`` each test client's (both, or neither when
    there are test clients); ``truth_params`` (``[clusters, P]``) the true
    cluster parameters, for the parameter error. Raises ``ValueError`` naming
    the client for data that do not fit together.
    """

    def __init__(
        self,
        train: Sequence[Pair],
        test: Sequence[Pair] | None = None,
        clusters: Sequence[int] | None = None,
        *,
        test_clusters: Sequence[int] | None = None,
        classes: int | None = None,
        truth_params: Any = None,
        name: str = "user-data",
    ) -> None:
        self.train = [_pair(x, y, f"train client {i}") for i, (x, y) in enumerate(train)]
        self.test = [_pair(x, y, f"test client {i}") for i, (x, y) in enumerate(test or [])]
        if not self.train:
            raise ValueError("train: no training clients")
        self.name = name
        shapes = {x.shape[1:] for x, _ in self.train + self.test}
        if len(shapes) != 1:
            raise ValueError(f"x: the clients' sample shapes differ: {sorted(shapes)}")
        self.sample_shape = shapes.pop()
        kinds = {y.dtype.kind for _, y in self.train + self.test}
        self.classification = kinds <= {"i", "u", "b"}
        if not self.classification and kinds & {"i", "u", "b"}:
            raise ValueError("y: some clients have integer labels, some float targets")
        self.classes = None
        if self.classification:
            largest = max(int(y.max()) for _, y in self.train + self.test)
            self.classes = int(classes) if classes is not None else largest + 1
            for split, pairs in (("train", self.train), ("test", self.test)):
                for i, (_, y) in enumerate(pairs):
                    if y.min() < 0 or y.max() >= self.classes:
                        raise ValueError(
                            f"{split} client {i}: labels must lie in 0..{self.classes - 1}"
                        )
        elif classes is not None:
            raise ValueError("classes: float targets are a regression, which has no classes")
        self.clusters = None if clusters is None else [int(c) for c in clusters]
        self.test_clusters = None if test_clusters is None else [int(c) for c in test_clusters]
        if self.clusters is not None and len(self.clusters) != len(self.train):
            raise ValueError(f"clusters: {len(self.clusters)} for {len(self.train)} training clients")
        given_test = self.test_clusters is not None
        if (self.clusters is None and given_test) or (
            self.clusters is not None and self.test and not given_test
        ):
            raise ValueError("clusters / test_clusters: give a true cluster for every training "
                             "and test client, or none")
        if self.clusters is not None and not self.test:
            self.test_clusters = []
        if self.test_clusters is not None and len(self.test_clusters) != len(self.test):
            raise ValueError(f"test_clusters: {len(self.test_clusters)} for {len(self.test)} test clients")
        self.truth_params = None
        if truth_params is not None:
            if self.clusters is None:
                raise ValueError("truth_params: needs the clients' true clusters")
            self.truth_params = np.ascontiguousarray(truth_params, dtype=np.float32)
        self._dir: str | None = None

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> FederatedData:
        """The federation in the directory ``path`` (``.npz`` or
        ``.safetensors`` clients; a LEAF federation is read by Rust: pass its
        path as ``data=`` instead)."""
        root = os.fspath(path)
        with open(os.path.join(root, MANIFEST), encoding="utf-8") as f:
            manifest = json.load(f)
        if manifest.get("format") != FORMAT:
            raise ValueError(f"{root}/{MANIFEST}: format {manifest.get('format')!r} is not {FORMAT}")
        if "leaf" in manifest:
            raise ValueError(f"{root}: a LEAF federation; pass the path itself as data=")

        def clients(split: str) -> list[Pair]:
            return [_read_arrays(os.path.join(root, c["file"])) for c in manifest.get(split, [])]

        labels = [c.get("cluster") for c in manifest.get("train", [])]
        test_labels = [c.get("cluster") for c in manifest.get("test", [])]
        params = manifest.get("truth_params")
        data = cls(
            clients("train"),
            clients("test"),
            None if None in labels else labels,
            test_clusters=None if None in labels else test_labels,
            classes=manifest.get("classes"),
            truth_params=None if params is None else _read_arrays(os.path.join(root, params), ("params",))[0],
            name=manifest.get("name", os.path.basename(root)),
        )
        if "image" in manifest:
            image = manifest["image"]
            data.sample_shape = (image["height"], image["width"], image["channels"])
        data._dir = root
        return data

    def save(self, path: str | os.PathLike[str], *, format: str = "npz", force: bool = False) -> str:
        """Writes the federation directory ``path`` (``format``: ``"npz"`` or
        ``"safetensors"``): whole or not at all, through ``path.partial``; an
        existing ``path`` that is not an empty directory is replaced only with
        ``force``. Returns ``path``."""
        if format not in ("npz", "safetensors"):
            raise ValueError(f"format: npz or safetensors, got {format!r}")
        out = os.fspath(path)
        if os.path.exists(out) and (not os.path.isdir(out) or os.listdir(out)) and not force:
            raise FileExistsError(f"{out}: exists and is not an empty directory (force=True replaces it)")
        partial = out + ".partial"
        os.mkdir(partial)
        try:
            self._write(partial, format)
            if os.path.exists(out):
                shutil.rmtree(out) if os.path.isdir(out) else os.remove(out)
            os.rename(partial, out)
        except BaseException:
            shutil.rmtree(partial, ignore_errors=True)
            raise
        return out

    def _write(self, root: str, format: str) -> None:
        manifest: dict[str, Any] = {"format": FORMAT, "name": self.name}
        if self.classification:
            manifest.update(task="classification", classes=self.classes)
        else:
            manifest["task"] = "regression"
        if len(self.sample_shape) == 1:
            manifest["features"] = int(self.sample_shape[0])
        else:
            h, w, *c = self.sample_shape
            manifest["image"] = {"height": int(h), "width": int(w), "channels": int(c[0]) if c else 1}
        for split, pairs, labels in (("train", self.train, self.clusters),
                                     ("test", self.test, self.test_clusters)):
            os.mkdir(os.path.join(root, split))
            entries = []
            for i, (x, y) in enumerate(pairs):
                file = f"{split}/{i}.{format}"
                y_out = y.astype(np.int64) if self.classification else y.astype(np.float32)
                _write_arrays(os.path.join(root, file), {"x": x, "y": y_out})
                entry: dict[str, Any] = {"file": file, "samples": int(len(y))}
                if labels is not None:
                    entry["cluster"] = labels[i]
                entries.append(entry)
            manifest[split] = entries
        if self.truth_params is not None:
            manifest["truth_params"] = f"truth.{format}"
            _write_arrays(os.path.join(root, f"truth.{format}"), {"params": self.truth_params})
        with open(os.path.join(root, MANIFEST), "w", encoding="utf-8") as f:
            json.dump(manifest, f, indent=2)
            f.write("\n")

    def directory(self) -> str:
        """The federation directory a run reads: where it was loaded from,
        else a temporary one written once (removed with this object)."""
        if self._dir is None:
            parent = tempfile.mkdtemp(prefix="fedcluster-data-")
            weakref.finalize(self, shutil.rmtree, parent, True)
            self._dir = self.save(os.path.join(parent, "federation"))
        return self._dir


def save(
    path: str | os.PathLike[str],
    train: Sequence[Pair],
    test: Sequence[Pair] | None = None,
    clusters: Sequence[int] | None = None,
    *,
    format: str = "npz",
    force: bool = False,
    **kwargs: Any,
) -> FederatedData:
    """Writes numpy arrays as a federation directory (see
    :class:`FederatedData` for the arguments, :meth:`FederatedData.save` for
    ``format`` and ``force``) and returns its :class:`FederatedData`."""
    data = FederatedData(train, test, clusters, **kwargs)
    data._dir = data.save(path, format=format, force=force)
    return data


def load(path: str | os.PathLike[str]) -> FederatedData:
    """:meth:`FederatedData.load`."""
    return FederatedData.load(path)


def with_data(config: Config, data: DataLike | None) -> Config:
    """``config`` reading ``data`` (a :class:`FederatedData`, or the path of a
    federation directory) as its ``[data]`` (``kind = "files"``), in place of
    the config's own."""
    if data is None:
        return config
    directory = data.directory() if isinstance(data, FederatedData) else os.fspath(data)
    table = tomllib.loads(config.toml)
    table["data"] = {"kind": "files", "data_dir": os.path.abspath(directory)}
    return Config(json.dumps(table), "json")


def _pair(x: Any, y: Any, what: str) -> Pair:
    x = np.ascontiguousarray(x, dtype=np.float32)
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if x.ndim < 2 or x.ndim > 4:
        raise ValueError(f"{what}: x has shape {x.shape}: [n, features] or [n, height, width(, channels)]")
    if y.ndim != 1 or len(y) != len(x):
        raise ValueError(f"{what}: x has {len(x)} samples, y has shape {y.shape}")
    if len(y) == 0:
        raise ValueError(f"{what}: no samples")
    if not np.isfinite(x).all():
        raise ValueError(f"{what}: x holds NaN or infinite values")
    if y.dtype.kind == "f":
        y = y.astype(np.float32)
        if not np.isfinite(y).all():
            raise ValueError(f"{what}: y holds NaN or infinite values")
    elif y.dtype.kind not in "iub":
        raise ValueError(f"{what}: y must be integer class labels or float targets, got {y.dtype}")
    return x, y
