"""fedcluster.Server and fedcluster.Client: the halves driven from Python give
the run's results, and refuse what they cannot use."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import small_mixture
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
