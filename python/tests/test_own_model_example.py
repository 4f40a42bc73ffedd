"""examples/own-model at tiny size: the user's PyTorch CNN on the user's
images (written by ``fedcluster.data.save``), clustered by IFCA and SR-FCA
from Python (run.py), and the example's Flower apps giving run.py's metrics
(in process, over test_flower.py's stand-in grid). The full example, with
Flower's deployment engine, is ``examples/own-model/run.sh``."""

from __future__ import annotations

import importlib.util
import json
import sys

import pytest

from conftest import REPO

EXAMPLE = REPO / "examples" / "own-model"
CLIENTS, ROUNDS = 8, 5


@pytest.fixture
def example(monkeypatch):
    """The example's package importable, torch at one thread (as run.py sets
    it) and restored after."""
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed (pip install torch): the own-model example needs it")
    import torch

    monkeypatch.syspath_prepend(str(EXAMPLE))
    threads = torch.get_num_threads()
    yield EXAMPLE
    torch.set_num_threads(threads)
    for name in [m for m in sys.modules if m == "own_model" or m.startswith("own_model.") or m == "run"]:
        del sys.modules[name]


def test_run_py_clusters_the_users_images_with_the_users_cnn(example, tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("run", example / "run.py")
    run_py = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run_py)
    status = run_py.main(["--out", str(tmp_path / "runs"), "--data", str(tmp_path / "federation"),
                          "--clients", str(CLIENTS), "--rounds", str(ROUNDS), "--algorithms", "ifca,srfca"])
    printed = capsys.readouterr().out
    print(printed)  # shown with pytest -s
    assert status == 0
    assert f"({CLIENTS} training clients, 4 test clients, images 12x12x1, 4 classes)" in printed
    assert (tmp_path / "federation" / "federation.json").exists()
    for name in ("ifca", "srfca"):
        summary = json.loads((tmp_path / "runs" / name / "summary.json").read_text())
        assert summary["final"]["misclustering"] == 0, (name, summary["final"])
        assert summary["final"]["clusters_found"] == 2, (name, summary["final"])
        assert f"{name}: {ROUNDS} rounds, final misclustering 0," in printed
    ifca = json.loads((tmp_path / "runs" / "ifca" / "summary.json").read_text())
    assert ifca["final"]["test_accuracy"] > 0.8, ifca["final"]


@pytest.mark.parametrize("algorithm", ["ifca", "srfca"])
def test_the_examples_flower_apps_give_run_pys_metrics(example, tmp_path, algorithm):
    if importlib.util.find_spec("flwr") is None:
        pytest.skip("flwr is not installed (pip install './python[flower]')")
    import torch

    import fedcluster
    from fedcluster.flower import STRATEGIES
    from own_model.client_app import app
    from own_model.images import write_federation
    from own_model.net import model
    from test_flower import LocalGrid
    from test_run import same_metrics

    torch.set_num_threads(1)
    data = write_federation(tmp_path / "federation", clients=CLIENTS, per_client=30)
    config, rounds = example / "own_model" / f"{algorithm}.toml", {"rounds": 3}
    # What own_model/server_app.py builds from the run config's data-dir.
    strategy = STRATEGIES[algorithm](
        config, model=model(), data_dir=data.directory(), overrides=rounds, messages="per-node"
    )
    strategy.start(LocalGrid([{"clients": "0-3"}, {"clients": "4-7"}], app=app), timeout=60)
    expected = fedcluster.run(config, model=model(), data=data, overrides=rounds)
    assert same_metrics(strategy.outcome(), expected)
    assert strategy.outcome().model == "python"
