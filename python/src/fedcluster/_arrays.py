"""Checks of what Python code hands to the Rust halves: wrong dtypes and shapes
are refused with the argument named, never converted silently."""

from __future__ import annotations

from typing import Any

import numpy as np


def message_bytes(value: Any, what: str) -> bytes:
    """A message or state as bytes: ``bytes``-like, or a 1-D ``uint8`` array."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, np.ndarray):
        if value.dtype != np.uint8:
            raise TypeError(f"{what}: expected a uint8 array, got dtype {value.dtype}")
        if value.ndim != 1:
            raise ValueError(f"{what}: expected a 1-D array, got shape {value.shape}")
        return value.tobytes()
    raise TypeError(f"{what}: expected bytes or a 1-D uint8 numpy array, got {type(value).__name__}")


def as_message_array(data: bytes) -> np.ndarray:
    """Bytes as a read-only 1-D ``uint8`` array (no copy)."""
    return np.frombuffer(data, dtype=np.uint8)


def float32_matrix(value: Any, what: str) -> np.ndarray:
    """A C-contiguous 2-D ``float32`` array."""
    array = _ndarray(value, what)
    if array.dtype != np.float32:
        raise TypeError(f"{what}: expected dtype float32, got {array.dtype}")
    if array.ndim != 2:
        raise ValueError(f"{what}: expected a 2-D array (samples x features), got shape {array.shape}")
    return np.ascontiguousarray(array)


def vector(value: Any, what: str, length: int | None = None) -> np.ndarray:
    """A 1-D array (of ``length`` entries when given)."""
    array = _ndarray(value, what)
    if array.ndim != 1:
        raise ValueError(f"{what}: expected a 1-D array, got shape {array.shape}")
    if length is not None and array.shape[0] != length:
        raise ValueError(f"{what}: expected {length} entries, got {array.shape[0]}")
    return np.ascontiguousarray(array)


def _ndarray(value: Any, what: str) -> np.ndarray:
    if not isinstance(value, np.ndarray):
        raise TypeError(f"{what}: expected a numpy array, got {type(value).__name__}")
    return value
