"""Where the package finds a data set's files: as ``fedcluster run`` does,
``data_dir`` (``--data-dir``), else the config's ``data.data_dir``, else
``$FEDCLUSTER_DATA/<name>``, else ``data/<name>``; a missing data set is the
CLI's one line naming every way to give it."""

from __future__ import annotations

import pytest

import fedcluster

MNIST = {
    "name": "mnist-nowhere",
    "seed": 1,
    "rounds": 1,
    "data": {"kind": "mnist", "transforms": ["identity"], "clients": 2, "points_per_client": 5, "test_clients": 0},
    "model": {"kind": "logistic"},
    "algorithm": {"name": "global", "lr": 0.1},
}


def test_a_missing_data_set_names_the_field_the_flag_the_variable_and_the_fetch(tmp_path, monkeypatch):
    monkeypatch.setenv("FEDCLUSTER_DATA", str(tmp_path))
    expected = (
        f"MNIST: no data in {tmp_path}/mnist: set data.data_dir, pass --data-dir DIR, or set "
        "FEDCLUSTER_DATA to a directory holding mnist/; `fedcluster data fetch mnist` downloads it"
    )
    with pytest.raises(fedcluster.FedclusterError) as e:
        fedcluster.run(MNIST)
    assert expected in str(e.value)


def test_data_dir_comes_before_the_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("FEDCLUSTER_DATA", str(tmp_path / "root"))
    with pytest.raises(fedcluster.FedclusterError, match="no data in .*given/mnist: "):
        fedcluster.run(fedcluster.load_config(MNIST, data_dir=tmp_path / "given" / "mnist"))


def test_without_the_variable_the_files_are_under_data(tmp_path, monkeypatch):
    monkeypatch.delenv("FEDCLUSTER_DATA", raising=False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(fedcluster.FedclusterError, match="MNIST: no data in data/mnist: "):
        fedcluster.run(MNIST)
