"""The package's ``fedcluster`` console command: the Rust binary's command line
(the same subcommands, output and exit statuses), through the entry point pip
installed and through ``python -m fedcluster.cli``."""

from __future__ import annotations

import signal
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest

import fedcluster
from fedcluster.cli import main


def entry_point() -> list[str]:
    """The installed ``fedcluster`` script (not a Rust binary of that name
    elsewhere on PATH)."""
    script = Path(sysconfig.get_path("scripts")) / "fedcluster"
    if not script.exists():
        pytest.skip(f"no console script at {script} (pip install ./python installs it)")
    return [str(script)]


MODULE = [sys.executable, "-m", "fedcluster.cli"]


def fedcluster_cmd(command: list[str], *args, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([*command, *map(str, args)], capture_output=True, text=True, timeout=120, **kwargs)


@pytest.mark.parametrize("how", ["entry point", "module"])
def test_version_and_list_print_what_the_binary_prints(how):
    command = entry_point() if how == "entry point" else MODULE
    version = fedcluster_cmd(command, "--version")
    assert version.returncode == 0, version.stderr
    assert version.stdout.strip() == "fedcluster 0.1.0"
    listed = fedcluster_cmd(command, "list")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.startswith("reproductions (fedcluster reproduce NAME):\n")
    assert "  ifca-synthetic-success " in listed.stdout
    assert "benchmarks (fedcluster bench NAME):" in listed.stdout
    helped = fedcluster_cmd(command, "run", "--help")
    assert helped.returncode == 0 and "Usage: fedcluster run [OPTIONS] [CONFIG]" in helped.stdout


def test_a_tiny_run_writes_the_run_directory_of_fedcluster_run(tmp_path):
    out = tmp_path / "run"
    done = fedcluster_cmd(entry_point(), "run", "--set", "rounds=3", "--out", out, "--quiet")
    assert done.returncode == 0, done.stderr
    assert "| misclustering " in done.stdout and f"run directory: {out}" in done.stdout
    names = {"config.toml", "metrics.csv", "timing.csv", "summary.json", "curves.svg", "models.safetensors"}
    assert names <= {p.name for p in out.iterdir()}
    # The same run as the package's in-process one, byte for byte.
    fedcluster.run(fedcluster.default_config(), overrides={"rounds": 3}, out=tmp_path / "py")
    assert (out / "metrics.csv").read_text() == (tmp_path / "py" / "metrics.csv").read_text()
    assert (out / "curves.svg").read_bytes() == (tmp_path / "py" / "curves.svg").read_bytes()


def test_exit_statuses_are_the_binarys(tmp_path):
    usage = fedcluster_cmd(MODULE, "--bogus")
    assert usage.returncode == 2 and "unexpected argument '--bogus'" in usage.stderr
    failed = fedcluster_cmd(MODULE, "run", tmp_path / "no-such.toml")
    assert failed.returncode == 1
    assert failed.stderr.startswith("error: cannot read config ") and failed.stderr.count("\n") == 1


def test_main_returns_the_status_in_process(capfd):
    handler = signal.getsignal(signal.SIGINT)
    assert main(["--version"]) == 0
    assert capfd.readouterr().out.strip() == "fedcluster 0.1.0"
    assert main(["run", "--set", "rounds=-1"]) == 1
    assert "error: " in capfd.readouterr().err
    # Python's own SIGINT handler is back once the command returns.
    assert signal.getsignal(signal.SIGINT) is handler


def test_ctrl_c_stops_a_run_at_once_leaving_it_resumable(tmp_path):
    out = tmp_path / "long"
    proc = subprocess.Popen(
        [*MODULE, "run", "--set", "rounds=1000000", "--out", str(out), "--checkpoint-every", "20", "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        checkpoint = tmp_path / "long.partial" / "checkpoint.bin"
        deadline = time.monotonic() + 60
        while not checkpoint.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert checkpoint.exists(), proc.communicate(timeout=5)
        proc.send_signal(signal.SIGINT)
        # Killed by the signal, as the binary is (not a KeyboardInterrupt after the run).
        assert proc.wait(timeout=10) == -signal.SIGINT
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not out.exists() and checkpoint.exists()
