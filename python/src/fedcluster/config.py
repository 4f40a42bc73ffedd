"""Run configs from a file, TOML text or a dict, with ``--set`` style overrides."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any, Union

from ._native import Config

ConfigLike = Union[str, "os.PathLike[str]", Mapping[str, Any], Config]
Overrides = Union[Sequence[str], Mapping[str, Any], None]

__all__ = ["Config", "ConfigLike", "Overrides", "load_config"]


def _toml_value(value: Any) -> str:
    """``value`` as a TOML literal (JSON's literals are TOML's for these)."""
    if isinstance(value, bool) or isinstance(value, (int, float, str)):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"override value {value!r}: expected a bool, number, string or list")


def _override_list(overrides: Overrides) -> list[str]:
    if overrides is None:
        return []
    if isinstance(overrides, Mapping):
        return [f"{key}={_toml_value(value)}" for key, value in overrides.items()]
    if isinstance(overrides, str):
        raise TypeError("overrides: expected a list of 'key=value' strings or a dict, got a str")
    return [str(o) for o in overrides]


def load_config(
    config: ConfigLike,
    *,
    data_dir: str | os.PathLike[str] | None = None,
    overrides: Overrides = None,
) -> Config:
    """A validated config.

    ``config`` is a path to a TOML file, TOML text, a dict (the TOML file's
    tables as nested dicts) or a :class:`Config`. ``overrides`` are the CLI's
    ``--set`` settings, as ``["rounds=5", "algorithm.lr=0.2"]`` or
    ``{"rounds": 5, "algorithm.lr": 0.2}``; ``data_dir`` replaces
    ``data.data_dir`` (as ``--data-dir`` does; without either, a data set's
    files are read from ``$FEDCLUSTER_DATA/<name>``, else ``data/<name>``, as
    ``fedcluster run`` reads them). Raises :class:`fedcluster.ConfigError`
    naming the field.
    """
    extra = _override_list(overrides)
    if data_dir is not None:
        extra.append(f"data.data_dir={_toml_value(os.fspath(data_dir))}")
    if isinstance(config, Config):
        if not extra:
            return config
        return Config(config.toml, "toml", extra)
    if isinstance(config, os.PathLike):
        return Config(os.fspath(config), "path", extra)
    if isinstance(config, Mapping):
        return Config(json.dumps(config), "json", extra)
    if isinstance(config, str):
        # TOML text has an `=` or a table header; a path has neither newline nor `=`.
        looks_like_toml = "\n" in config or "=" in config
        return Config(config, "toml" if looks_like_toml else "path", extra)
    raise TypeError(
        f"config: expected a path, TOML text, a dict or a Config, got {type(config).__name__}"
    )
