"""Flower's deployment engine on loopback, for the tests: a SuperLink and
SuperNodes as processes (insecure, 127.0.0.1 only, free ports), each in its
own FLWR_HOME, stopped (SIGTERM, then SIGKILL) however the test ends."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {seconds} s")


class Deployment:
    """A running SuperLink and its SuperNodes; :meth:`run` starts an app."""

    def __init__(self, root: Path, port: int):
        self.root = root
        self.port = port
        self.home = root / "cli-home"
        self.home.mkdir(parents=True, exist_ok=True)
        (self.home / "config.toml").write_text(
            '[superlink]\ndefault = "loopback"\n\n'
            f'[superlink.loopback]\naddress = "127.0.0.1:{port}"\ninsecure = true\n'
        )

    def run(self, app: Path, run_config: str, timeout: float) -> tuple[str, dict]:
        """``flwr run APP loopback --run-config ... --stream``: its output and
        the run's entry in ``flwr ls`` (with its status)."""
        env = {**os.environ, "FLWR_HOME": str(self.home), "FLWR_TELEMETRY_ENABLED": "0"}
        proc = subprocess.run(
            ["flwr", "run", str(app), "loopback", "--run-config", run_config, "--stream"],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        output = proc.stdout + proc.stderr
        listed = subprocess.run(
            ["flwr", "ls", "loopback", "--format", "json"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        runs = json.loads(listed.stdout or "{}").get("runs", [])
        return output, (runs[-1] if runs else {})


@contextmanager
def deployment(root: Path, node_configs: list[str], start_timeout: float = 60) -> Iterator[Deployment]:
    """A SuperLink and one SuperNode per node config, on loopback."""
    port = free_port()
    procs: list[subprocess.Popen] = []
    logs = []

    def start(name: str, args: list[str]) -> None:
        home = root / name
        home.mkdir(parents=True, exist_ok=True)
        log = open(root / f"{name}.log", "w")
        logs.append(log)
        procs.append(
            subprocess.Popen(
                args,
                env={**os.environ, "FLWR_HOME": str(home), "FLWR_TELEMETRY_ENABLED": "0"},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )

    try:
        start(
            "superlink",
            ["flower-superlink", "--insecure", "--host", "127.0.0.1", "--port", str(port),
             "--disable-runtime-dependency-installation"],
        )
        wait_for_port(port, start_timeout)
        for i, node_config in enumerate(node_configs):
            start(
                f"supernode{i}",
                ["flower-supernode", "--insecure", "--superlink", f"127.0.0.1:{port}",
                 "--host", "127.0.0.1", "--port", str(free_port()), "--node-config", node_config],
            )
        yield Deployment(root, port)
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in reversed(procs):
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=15)
        for log in logs:
            log.close()


def flower_available() -> bool:
    return all(shutil.which(tool) for tool in ("flwr", "flower-superlink", "flower-supernode"))
