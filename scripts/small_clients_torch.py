"""The `fedcluster bench small-clients` round in batched PyTorch, for comparison.

One round: 100 of the 25,004 anchored-MNIST clients (2 images of 14x14 each,
k = 4 rotations), each runs 5 full-batch gradient steps (lr 0.1) of logistic
regression 196 -> 10 from the global model, and the server takes the
sample-weighted mean. All 100 clients train at once with batched matrix
products (torch.bmm), one thread, CPU. Prints the median of the timed rounds.

    python scripts/small_clients_torch.py data/mnist [rounds]

Not part of the test suite (it needs torch and numpy); see docs/performance.md.
"""

import gzip
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch


def read_images(path: Path) -> np.ndarray:
    with gzip.open(path) as f:
        raw = f.read()
    n, rows, cols = (int.from_bytes(raw[i : i + 4], "big") for i in (4, 8, 12))
    return np.frombuffer(raw, np.uint8, offset=16).reshape(n, rows, cols)


def read_labels(path: Path) -> np.ndarray:
    with gzip.open(path) as f:
        raw = f.read()
    return np.frombuffer(raw, np.uint8, offset=8).astype(np.int64)


def main() -> None:
    data_dir = Path(sys.argv[1])
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 500
    torch.set_num_threads(1)
    images = read_images(data_dir / "train-images-idx3-ubyte.gz").astype(np.float32) / 255.0
    labels = read_labels(data_dir / "train-labels-idx1-ubyte.gz")
    small = images.reshape(-1, 14, 2, 14, 2).mean(axis=(2, 4))
    rng = np.random.default_rng(1)
    order = rng.permutation(len(small))
    k, anchors, clients, per_client = 4, 20, 25_000, 2
    rest = order[k * anchors :][: clients * per_client].reshape(clients, per_client)
    rotation = rng.permutation(np.arange(clients) % k)
    x = np.stack([np.rot90(small[rest[i]], rotation[i], axes=(1, 2)) for i in range(clients)])
    x = torch.from_numpy(x.reshape(clients, per_client, 196).copy())
    y = torch.from_numpy(labels[rest].copy())

    w = torch.zeros(10, 196)
    b = torch.zeros(10)
    lr, steps, participants = 0.1, 5, 100
    times = []
    for r in range(rounds + 5):
        start = time.perf_counter()
        chosen = torch.from_numpy(rng.choice(clients, participants, replace=False))
        xs, ys = x[chosen], y[chosen]
        onehot = torch.nn.functional.one_hot(ys, 10).float()
        ws = w.expand(participants, 10, 196).clone()
        bs = b.expand(participants, 10).clone()
        for _ in range(steps):
            logits = torch.bmm(xs, ws.transpose(1, 2)) + bs[:, None, :]
            delta = (torch.softmax(logits, dim=2) - onehot) / per_client
            ws -= lr * torch.bmm(delta.transpose(1, 2), xs)
            bs -= lr * delta.sum(dim=1)
        # Every client holds 2 samples, so the sample-weighted mean is the mean.
        w, b = ws.mean(dim=0), bs.mean(dim=0)
        if r >= 5:
            times.append(time.perf_counter() - start)
    print(
        f"torch {torch.__version__}, 1 thread, {rounds} rounds: "
        f"median {statistics.median(times) * 1e3:.3f} ms, best {min(times) * 1e3:.3f} ms"
    )


if __name__ == "__main__":
    main()
