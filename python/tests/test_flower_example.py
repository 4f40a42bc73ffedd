"""The Flower example as its README shows it: ``examples/flower-ifca/run.sh``
starts a SuperLink and two SuperNodes, runs the app with ``flwr run`` until
IFCA has found the clusters, says where the run directory is, and stops what
it started, however it ends."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

import fedcluster

TOOLS = ("flwr", "flower-superlink", "flower-supernode")


def script(repo: Path) -> Path:
    """The example's script; the test skipped, saying why, without Flower."""
    if importlib.util.find_spec("flwr") is None:
        pytest.skip("SKIPPED the Flower example: flwr is not installed (pip install './python[flower]')")
    if missing := [t for t in TOOLS if shutil.which(t) is None]:
        pytest.skip(f"SKIPPED the Flower example: {', '.join(missing)} not on PATH")
    return repo / "examples" / "flower-ifca" / "run.sh"


def listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def superlink_port(output: str) -> int:
    found = re.search(r"SuperLink listening on 127\.0\.0\.1:(\d+)", output)
    assert found, output[-4000:]
    return int(found.group(1))


def test_the_example_script_finds_the_clusters_and_stops_its_processes(repo, tmp_path):
    run_sh = script(repo)
    out = tmp_path / "flower-ifca"
    started = time.monotonic()
    done = subprocess.run(
        [str(run_sh), str(out)], cwd=repo, capture_output=True, text=True, timeout=300
    )
    seconds = time.monotonic() - started
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["final"]["misclustering"] == 0, summary
    assert summary["rounds"] == 6
    assert f"fedcluster run directory: {out}" in done.stdout
    assert "final misclustering 0" in done.stdout
    assert {"metrics.csv", "curves.svg", "models.safetensors"} <= {p.name for p in out.iterdir()}
    # The run `fedcluster run` makes of the app's config, to the byte.
    config = run_sh.parent / "flower_ifca" / "ifca-synthetic-small.toml"
    fedcluster.run(config, out=tmp_path / "in-process")
    for name in ("metrics.csv", "curves.svg"):
        assert (out / name).read_bytes() == (tmp_path / "in-process" / name).read_bytes(), name
    # Flower's config went to the example's own directory, written whole.
    flower_config = (run_sh.parent / ".flwr" / "cli" / "config.toml").read_text()
    assert flower_config.count("[superlink.local-deployment]") == 1
    assert not listening(superlink_port(done.stdout)), "the SuperLink still runs"
    print(f"the Flower example took {seconds:.0f} s")


def test_ctrl_c_stops_everything_the_example_started(repo, tmp_path):
    run_sh = script(repo)
    proc = subprocess.Popen(
        [str(run_sh), str(tmp_path / "interrupted")],
        cwd=repo,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        # As from a terminal, where Ctrl-C reaches the script: a shell that
        # starts with SIGINT ignored cannot trap it, and pytest inherits
        # that disposition when run as a background job (`cmd &` in a
        # script ignores SIGINT in what it starts).
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert proc.stdout is not None
        seen = ""
        for line in proc.stdout:
            seen += line
            if "SuperLink listening" in line:
                break
        port = superlink_port(seen)
        assert listening(port)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not listening(port), "the SuperLink outlived the script"
