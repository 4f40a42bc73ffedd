"""fedcluster's Flower strategies and ClientApp: in process over a stand-in
grid (fast, every failure path), and for real on Flower's deployment engine
on loopback (a SuperLink and two SuperNodes as processes, ``flwr run``):
the same metrics.csv as ``fedcluster run``, byte for byte."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

flower_missing = importlib.util.find_spec("flwr") is None
pytestmark = pytest.mark.skipif(flower_missing, reason="flwr is not installed (pip install './python[flower]')")

import fedcluster  # noqa: E402
from conftest import small_mixture, small_run  # noqa: E402
from test_run import same_metrics  # noqa: E402


class LocalGrid:
    """A stand-in for Flower's Grid: nodes in this process, each a ClientApp
    with its own node config and persistent context state."""

    def __init__(self, node_configs: list[dict], app=None):
        from flwr.app import Context, RecordDict

        from flwr.supercore.task_identity import TaskIdentity

        from fedcluster.flower import app as default_app

        # What Flower's runtime sets in a ServerApp process.
        TaskIdentity.run_id, TaskIdentity.node_id, TaskIdentity.task_id = 1, 0, 1
        self.app = app or default_app
        self.nodes = {
            1000 + i: Context(run_id=1, node_id=1000 + i, node_config=nc, state=RecordDict(), run_config={})
            for i, nc in enumerate(node_configs)
        }
        self.sent = 0

    def get_node_ids(self):
        return list(self.nodes)

    def send_and_receive(self, messages, *, timeout=None):
        from flwr.app import Error, Message

        replies = []
        for msg in messages:
            self.sent += 1
            node = msg.metadata.dst_node_id
            msg.metadata.__dict__["_message_id"] = f"m{self.sent}"
            try:
                reply = self.app(msg, self.nodes[node])
            except Exception as e:  # the engine turns a ClientApp's exception into an error reply
                reply = Message(Error(code=1, reason=str(e)), reply_to=msg)
            reply.metadata.__dict__["_src_node_id"] = node
            replies.append(reply)
        return replies


def test_node_clients_reads_both_node_configs():
    from fedcluster.flower import node_clients

    assert node_clients({"clients": "3-5"}, 10) == [3, 4, 5]
    assert node_clients({"clients": 7}, 10) == [7]
    assert node_clients({"partition-id": 1, "num-partitions": 3}, 10) == [3, 4, 5]
    with pytest.raises(ValueError, match="clients 0-9"):
        node_clients({"clients": "5-12"}, 10)
    with pytest.raises(ValueError, match="expected A-B"):
        node_clients({"clients": "five"}, 10)
    with pytest.raises(ValueError, match="does not say which clients it holds"):
        node_clients({}, 10)


@pytest.mark.parametrize("messages", ["per-client", "per-node"])
def test_the_strategy_over_two_nodes_gives_the_runs_metrics(messages):
    from fedcluster.flower import Ifca

    config = small_mixture(aggregation="model", local_steps=2, optimizer={"kind": "adam", "batch_size": 5})
    strategy = Ifca(config, messages=messages)
    grid = LocalGrid([{"clients": "0-11"}, {"partition-id": 1, "num-partitions": 2}])
    result = strategy.start(grid, timeout=60)
    outcome = strategy.outcome()
    assert same_metrics(outcome, fedcluster.run(config))
    assert sorted(result.train_metrics_clientapp) == [1, 2, 3, 4]
    assert result.train_metrics_clientapp[4]["train_loss"] == outcome.metrics["train_loss"][-1]
    assert "cluster1.weight" in result.arrays
    per_round = 24 if messages == "per-client" else 2
    assert grid.sent == 2 + 4 * per_round  # the two queries, then the rounds


@pytest.mark.parametrize("name", fedcluster.messages.algorithm_names())
def test_every_algorithm_runs_as_its_strategy_with_the_runs_metrics(name):
    from fedcluster.flower import STRATEGIES

    config = small_run(name)
    strategy = STRATEGIES[name](config, messages="per-node")
    strategy.start(LocalGrid([{"partition-id": 0, "num-partitions": 2}, {"partition-id": 1, "num-partitions": 2}]))
    assert same_metrics(strategy.outcome(), fedcluster.run(config))


def test_every_algorithm_of_the_table_has_a_strategy_class():
    import pickle

    import fedcluster.flower as flower

    table = fedcluster.messages.algorithms()
    assert list(flower.STRATEGIES) == [a.name for a in table]
    for a in table:
        cls = getattr(flower, a.type_name)
        assert flower.STRATEGIES[a.name] is cls and a.type_name in flower.__all__
        assert issubclass(cls, flower.ClusteredStrategy) and cls.algorithm == a.name
        assert (cls.__module__, cls.__qualname__) == ("fedcluster.flower.strategy", a.type_name)
        assert a.title in cls.__doc__ and f'name = "{a.name}"' in cls.__doc__
        assert pickle.loads(pickle.dumps(cls)) is cls
    # The names the strategies had before they came from the table, and the two new ones.
    for name in ("Ifca", "CflMgd", "SrFca", "FedSoft", "Cfl", "TwoPhase", "OneShot", "Global", "Local",
                 "LocalKMeans", "Oracle", "FedProx", "FedAvgM"):
        assert name in flower.__all__

    class Tuned(flower.FedProx):
        """A user's subclass keeps the algorithm check."""

    with pytest.raises(ValueError, match="Tuned runs `fedprox`, but the config's algorithm is `ifca`"):
        Tuned(small_mixture())


def test_the_two_phase_method_runs_as_a_strategy_with_the_runs_metrics(repo):
    from fedcluster.flower import TwoPhase

    config = fedcluster.load_config(
        repo / "configs" / "two-phase-mixed-regression.toml",
        overrides={"rounds": 8, "algorithm.phase1.iterations": 3},
    )
    strategy = TwoPhase(config, messages="per-node")
    strategy.start(LocalGrid([{"partition-id": 0, "num-partitions": 2}, {"partition-id": 1, "num-partitions": 2}]))
    assert same_metrics(strategy.outcome(), fedcluster.run(config))


def test_a_strategy_refuses_another_algorithms_config():
    from fedcluster.flower import ClusteredStrategy, SrFca

    with pytest.raises(ValueError, match="SrFca runs `srfca`, but the config's algorithm is `ifca`"):
        SrFca(small_mixture())
    with pytest.raises(ValueError, match="messages"):
        ClusteredStrategy(small_mixture(), messages="broadcast")
    with pytest.raises(ValueError, match="num_rounds=9, but the config runs 4 rounds"):
        ClusteredStrategy(small_mixture()).start(LocalGrid([{"clients": "0-23"}]), num_rounds=9)


def test_clients_held_by_no_node_stop_the_run_with_their_ids():
    from fedcluster.flower import ClusteredStrategy

    strategy = ClusteredStrategy(small_mixture(), node_timeout=0.5)
    with pytest.raises(fedcluster.FedclusterError, match=r"no node holds clients 12, 13, 14"):
        strategy.start(LocalGrid([{"clients": "0-11"}]), timeout=5)


def test_a_failed_node_fails_the_round_unless_missing_replies_are_allowed():
    from fedcluster.flower import ClusteredStrategy

    grid = LocalGrid([{"clients": "0-11"}, {"clients": "12-23", "data-dir": "/no/such/dir"}])
    broken = grid.app

    def failing(msg, context):
        if context.node_id == 1001 and msg.metadata.message_type == "train":
            raise RuntimeError("node lost")
        return broken(msg, context)

    grid.app = failing
    with pytest.raises(fedcluster.FedclusterError, match="12 planned client"):
        ClusteredStrategy(small_mixture(), messages="per-node").start(grid, timeout=5)
    tolerant = ClusteredStrategy(small_mixture(), messages="per-node", allow_missing=True)
    tolerant.start(grid, timeout=5)
    assert (tolerant.outcome().metrics["participants"] == 12).all()


def test_a_reply_for_another_nodes_client_is_refused():
    from flwr.app import Array, ArrayRecord

    from fedcluster.flower import ClusteredStrategy

    grid = LocalGrid([{"clients": "0-11"}, {"clients": "12-23"}])
    honest = grid.app

    def impostor(msg, context):
        reply = honest(msg, context)
        if context.node_id == 1000 and msg.metadata.message_type == "train":
            replies = reply.content["fedcluster"]
            replies["12"] = Array(replies["0"].numpy())
            reply.content["fedcluster"] = ArrayRecord(dict(replies.items()))
        return reply

    grid.app = impostor
    strategy = ClusteredStrategy(small_mixture(), messages="per-node")
    strategy.start(grid, timeout=5)
    assert same_metrics(strategy.outcome(), fedcluster.run(small_mixture()))


# -- Flower's deployment engine, for real -------------------------------------


def deployment_tools() -> bool:
    return all(shutil.which(t) for t in ("flwr", "flower-superlink", "flower-supernode"))


@pytest.mark.skipif(not deployment_tools(), reason="Flower's command-line tools are not on PATH")
@pytest.mark.parametrize(
    ("messages", "rounds", "clients", "nodes"),
    [
        ("per-node", 3, 100, ['clients="0-49"', 'clients="50-99"']),
        # Each client is a message through the SuperLink here (about 2 s each
        # on a 2-core machine), so 10 clients rather than the config's 100.
        ("per-client", 1, 10, ["partition-id=0 num-partitions=2", "partition-id=1 num-partitions=2"]),
    ],
)
def test_flwr_run_on_a_loopback_deployment_matches_fedcluster_run(
    tmp_path, repo, messages, rounds, clients, nodes
):
    from flower_deployment import deployment

    app = tmp_path / "app"
    # Without what the example's run.sh leaves there (Flower's state, its run).
    shutil.copytree(repo / "examples" / "flower-ifca", app, ignore=shutil.ignore_patterns(".flwr", "runs"))
    config = tmp_path / "ifca-synthetic.toml"
    resolved = fedcluster.load_config(
        repo / "configs" / "ifca-synthetic.toml", overrides={"data.clients": clients}
    )
    config.write_text(resolved.toml)
    out = tmp_path / "out"
    with deployment(tmp_path / "flower", nodes) as d:
        output, run = d.run(
            app,
            f'config="{config}" rounds={rounds} messages="{messages}" out="{out}"',
            timeout=600,
        )
    assert run.get("status") == "finished:completed", output[-4000:]
    expected = fedcluster.run(config, overrides={"rounds": rounds}, out=tmp_path / "in-process")
    assert len(expected.rows) == rounds
    got = (out / "metrics.csv").read_text()
    assert got == (tmp_path / "in-process" / "metrics.csv").read_text()
    assert f"{rounds}" in (out / "config.toml").read_text()
    assert Path(out / "models.safetensors").exists()
