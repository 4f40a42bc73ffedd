"""One client's file of arrays in the federation format (docs/data.md),
``.npz`` (numpy's own) or ``.safetensors`` (its 8-byte header length, JSON
header and little-endian data, written and read here without the
``safetensors`` package): what :mod:`fedcluster.data` saves and loads."""

from __future__ import annotations

import json
import struct
from typing import Any

import numpy as np

__all__ = ["read_arrays", "write_arrays"]

# safetensors dtype names as numpy dtypes.
SAFETENSORS_DTYPES = {
    "F32": "<f4", "F64": "<f8", "I8": "i1", "I16": "<i2", "I32": "<i4", "I64": "<i8",
    "U8": "u1", "U16": "<u2", "U32": "<u4", "U64": "<u8", "BOOL": "?",
}


def write_arrays(path: str, arrays: dict[str, np.ndarray]) -> None:
    """Writes ``arrays`` to ``path``, ``.npz`` or ``.safetensors`` by its name
    (floats as float32, integers as int64)."""
    if path.endswith(".npz"):
        np.savez(path, **arrays)
        return
    header: dict[str, Any] = {}
    blobs, offset = [], 0
    for name, a in arrays.items():
        a = np.ascontiguousarray(a)
        dtype = {"f": "F32", "i": "I64"}[a.dtype.kind]
        blob = a.astype("<f4" if dtype == "F32" else "<i8").tobytes()
        header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def read_arrays(path: str, names: tuple[str, ...] = ("x", "y")) -> tuple[np.ndarray, ...]:
    """The arrays ``names`` of the file at ``path``."""
    if path.endswith(".npz"):
        with np.load(path) as archive:
            return tuple(archive[n] for n in names)
    with open(path, "rb") as f:
        raw = f.read()
    (length,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + length])
    data = raw[8 + length :]
    out = []
    for n in names:
        info = header[n]
        start, end = info["data_offsets"]
        dtype = np.dtype(SAFETENSORS_DTYPES[info["dtype"]])
        out.append(np.frombuffer(data[start:end], dtype=dtype).reshape(info["shape"]))
    return tuple(out)
