"""fedcluster.Server and fedcluster.Client: the halves driven from Python give
the run's results, and refuse what they cannot use."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import SMALL_ALGORITHMS, small_mixture, small_run
from test_run import same_metrics

import fedcluster


def drive(server: fedcluster.Server, answer) -> list[fedcluster.RoundDone]:
    rounds = []
    while (planned := server.plan()) is not None:
        for client, message in planned.messages:
            server.receive(client, answer(planned, client, message))
        rounds.append(server.finish())
    return rounds


def test_driving_the_halves_gives_the_runs_metrics(synthetic):
    config = fedcluster.load_config(synthetic, overrides={"rounds": 4})
    server = fedcluster.Server(config)
    clients = fedcluster.Client.many(config, range(server.num_clients))
    rounds = drive(
        server,
        lambda p, c, m: clients[c].handle(m, round=p.round, num_clients=p.num_clients),
    )
    result = server.outcome()
    assert same_metrics(result, fedcluster.run(config))
    assert [r.rows[0]["round"] for r in rounds] == [0, 1, 2, 3]
    assert np.array_equal(rounds[-1].models[0]["weight"], result.models[0]["weight"])
    assert server.plan() is None


def test_client_state_saved_and_restored_between_rounds_gives_the_same_run():
    # Adam's moments live in the client half: a client rebuilt every round
    # (as in a Flower ClientApp) must restore them to match the run.
    config = fedcluster.load_config(
        small_mixture(aggregation="model", local_steps=3, lr=0.05, optimizer={"kind": "adam", "batch_size": 5})
    )
    states: dict[int, bytes] = {}

    def answer(planned, client, message):
        half = fedcluster.Client(config, client)
        if client in states:
            half.restore(states[client])
        reply = half.handle(message, round=planned.round, num_clients=planned.num_clients)
        states[client] = half.state()
        return reply

    server = fedcluster.Server(config)
    drive(server, answer)
    assert same_metrics(server.outcome(), fedcluster.run(config))

    # Without the state, the run differs: the test can fail.
    server = fedcluster.Server(config)
    drive(server, lambda p, c, m: fedcluster.Client(config, c).handle(m, round=p.round, num_clients=p.num_clients))
    assert not same_metrics(server.outcome(), fedcluster.run(config))


def test_the_server_refuses_replies_it_cannot_use():
    config = fedcluster.load_config(small_mixture())
    server = fedcluster.Server(config)
    with pytest.raises(fedcluster.FedclusterError, match="call plan first"):
        server.receive(0, b"")
    planned = server.plan()
    client, message = planned.messages[0]
    half = fedcluster.Client(config, client)
    reply = half.handle(message, round=0, num_clients=planned.num_clients)
    with pytest.raises(TypeError, match="reply: expected a uint8 array, got dtype float32"):
        server.receive(client, np.zeros(4, dtype=np.float32))
    with pytest.raises(ValueError, match="reply: expected a 1-D array"):
        server.receive(client, np.zeros((2, 2), dtype=np.uint8))
    with pytest.raises(fedcluster.FedclusterError, match="undecodable reply"):
        server.receive(client, b"\xff\xff\xff")
    with pytest.raises(fedcluster.FedclusterError, match="client 999 was not sent a message"):
        server.receive(999, reply)
    with pytest.raises(fedcluster.FedclusterError, match="still open"):
        server.plan()
    server.receive(client, reply)
    with pytest.raises(fedcluster.FedclusterError, match="already replied"):
        server.receive(client, reply)
    with pytest.raises(fedcluster.FedclusterError, match="have not replied"):
        server.finish()
    done = server.finish(allow_missing=True)
    assert done.rows[0]["participants"] == 1


def test_a_non_finite_reply_is_refused():
    config = fedcluster.load_config(small_mixture())
    server = fedcluster.Server(config)
    planned = server.plan()
    client, message = planned.messages[0]
    up = fedcluster.ifca.decode_up(fedcluster.Client(config, client).handle(message, round=0, num_clients=24))
    payload = up.payload.reshape(len(up.chosen), -1).copy()
    # encode_up itself refuses NaN; forge the bytes by hand instead.
    good = fedcluster.ifca.encode_up(up.chosen, up.losses, payload, up.samples).tobytes()
    nan = np.float32(np.nan).tobytes()
    at = good.index(payload[0, :1].tobytes())
    forged = good[:at] + nan + good[at + 4 :]
    with pytest.raises(fedcluster.FedclusterError, match="non-finite"):
        server.receive(client, forged)


def test_the_client_refuses_wrong_dtypes_shapes_and_messages():
    config = fedcluster.load_config(small_mixture())
    half = fedcluster.Client(config, 0)
    with pytest.raises(TypeError, match="message: expected a uint8 array, got dtype float64"):
        half.handle(np.zeros(8), round=0, num_clients=24)
    with pytest.raises(TypeError, match="message: expected bytes"):
        half.handle([1, 2, 3], round=0, num_clients=24)
    with pytest.raises(fedcluster.FedclusterError, match="undecodable message"):
        half.handle(b"\x01\x02", round=0, num_clients=24)
    with pytest.raises(fedcluster.FedclusterError, match="not in a federation of 0 clients"):
        half.handle(b"", round=0, num_clients=0)
    with pytest.raises(fedcluster.FedclusterError, match="undecodable state"):
        half.restore(b"\x00garbage")
    with pytest.raises(fedcluster.FedclusterError, match="data set has 24 clients"):
        fedcluster.Client(config, 24)
    x = np.zeros((5, 8), dtype=np.float32)
    with pytest.raises(TypeError, match="features: expected dtype float32, got float64"):
        fedcluster.Client.from_arrays(config, 0, x.astype(np.float64), np.zeros(5, dtype=np.float32))
    with pytest.raises(ValueError, match="features: expected a 2-D array"):
        fedcluster.Client.from_arrays(config, 0, x.ravel(), np.zeros(5, dtype=np.float32))
    with pytest.raises(ValueError, match="targets: expected 5 entries, got 4"):
        fedcluster.Client.from_arrays(config, 0, x, np.zeros(4, dtype=np.float32))
    with pytest.raises(TypeError, match="targets: expected float32 regression targets"):
        fedcluster.Client.from_arrays(config, 0, x, np.zeros(5, dtype=np.int64))
    with pytest.raises(ValueError, match="class labels must lie in 0..9"):
        fedcluster.Client.from_arrays(config, 0, x, np.array([0, 1, 2, 3, 10]), classes=10)


def test_a_client_from_arrays_answers_like_the_data_sets_client():
    # The same points given as arrays give the same reply bytes.
    config = fedcluster.load_config(small_mixture())
    server = fedcluster.Server(config)
    planned = server.plan()
    client, message = planned.messages[3]
    own = fedcluster.Client(config, client)
    x, y = own.data()
    assert x.shape == (20, 8) and x.dtype == np.float32 and y.dtype == np.float32
    given = fedcluster.Client.from_arrays(config, client, x, y)
    reply = own.handle(message, round=0, num_clients=24)
    assert given.handle(message, round=0, num_clients=24).tobytes() == reply.tobytes()
    other = fedcluster.Client.from_arrays(config, client, x, y + 1.0)
    assert other.handle(message, round=0, num_clients=24).tobytes() != reply.tobytes()


# -- any algorithm's messages, read by its name ----------------------------------


def exchange(config, rounds: int = 3):
    """Runs ``rounds`` rounds of ``config`` through the halves; yields each
    round's ``(planned, client, message, reply)`` and the round's result."""
    server = fedcluster.Server(config)
    clients = fedcluster.Client.many(server.config, range(server.num_clients))
    for _ in range(rounds):
        planned = server.plan()
        if planned is None:
            return
        replies = []
        for client, message in planned.messages:
            reply = clients[client].handle(message, round=planned.round, num_clients=planned.num_clients)
            server.receive(client, reply)
            replies.append((client, message, reply))
        done = server.finish()
        assert done.rejected == []
        yield server, planned, replies, done


@pytest.mark.parametrize("name", fedcluster.messages.algorithm_names())
def test_every_algorithms_messages_decode_by_its_name(name):
    seen = 0
    for _, _, replies, _ in exchange(small_run(name, rounds=4), rounds=4):
        for _, message, reply in replies:
            down = fedcluster.messages.decode_down(name, message)
            up = fedcluster.messages.decode_up(name, reply)
            assert isinstance(down, (dict, str, type(None))) and isinstance(up, (dict, str, type(None)))
            seen += 1
    assert seen > 0


def test_the_table_lists_every_algorithm_with_its_type_name_and_title():
    table = fedcluster.messages.algorithms()
    assert [a.name for a in table] == fedcluster.messages.algorithm_names()
    assert set(fedcluster.messages.algorithm_names()) == set(SMALL_ALGORITHMS) | {"twophase"}
    by_name = {a.name: a for a in table}
    assert by_name["local-kmeans"].type_name == "LocalKMeans"
    assert by_name["fedavgm"].type_name == "FedAvgM"
    assert all(a.title and "\n" not in a.title for a in table)


def test_a_fedavgm_message_and_reply_decode_to_their_fields():
    config = small_run("fedavgm", rounds=2)
    rounds = list(exchange(config, rounds=2))
    server = rounds[0][0]
    first, second = rounds
    # Round 1 sends the model round 0 ended with, value for value.
    _, _, _, done = first
    model = np.concatenate([done.models[0][name].ravel() for name, _ in server.layout])
    _, _, replies, _ = second
    client, message, reply = replies[0]
    down = fedcluster.messages.decode_down("fedavgm", message)
    assert down["cluster"] == 0
    assert np.array_equal(np.array(down["model"], dtype=np.float32), model)
    up = fedcluster.messages.decode_up("fedavgm", reply)
    assert sorted(up) == ["loss", "payload", "samples"]
    assert up["samples"] == 20 and len(up["payload"]) == model.size and np.isfinite(up["loss"])
    # The uint8 array Client.handle returns and its bytes read the same.
    assert fedcluster.messages.decode_up("fedavgm", reply.tobytes()) == up


def test_ifca_messages_read_by_name_match_the_numpy_reader():
    _, _, replies, _ = next(exchange(small_mixture(), rounds=1))
    _, message, reply = replies[0]
    down, numpy_down = fedcluster.messages.decode_down("ifca", message), fedcluster.ifca.decode_down(message)
    assert np.array_equal(np.array(down["models"], dtype=np.float32), numpy_down.models.ravel())
    assert down["lrs"] == list(numpy_down.lrs) and (down["replicas"], down["k"]) == (1, 2)
    up, numpy_up = fedcluster.messages.decode_up("ifca", reply), fedcluster.ifca.decode_up(reply)
    assert np.array_equal(np.array(up["payload"], dtype=np.float32), numpy_up.payload)
    assert up["chosen"] == list(numpy_up.chosen) and up["samples"] == numpy_up.samples


def test_the_decoder_refuses_unknown_names_and_malformed_bytes():
    _, _, replies, _ = next(exchange(small_run("global", rounds=1), rounds=1))
    _, message, reply = replies[0]
    message, reply = message.tobytes(), reply.tobytes()
    with pytest.raises(ValueError, match=r"unknown algorithm `fedfoo`: expected one of ifca, cflmgd, .*fedavgm"):
        fedcluster.messages.decode_down("fedfoo", message)
    with pytest.raises(ValueError, match="unknown algorithm `Global`"):
        fedcluster.messages.decode_up("Global", reply)
    with pytest.raises(ValueError, match=r"not a `global` server-to-client message \(3 bytes\)"):
        fedcluster.messages.decode_down("global", b"\xff\xff\xff")
    with pytest.raises(ValueError, match="not a `global` client-to-server message"):
        fedcluster.messages.decode_up("global", reply[: len(reply) // 2])
    with pytest.raises(ValueError, match="1 bytes after the message"):
        fedcluster.messages.decode_down("global", message + b"\x00")
    with pytest.raises(ValueError, match="not a `ifca` server-to-client message"):
        fedcluster.messages.decode_down("ifca", message)
    with pytest.raises(TypeError, match="message: expected a uint8 array, got dtype float32"):
        fedcluster.messages.decode_down("global", np.zeros(4, dtype=np.float32))
