#!/usr/bin/env python3
"""FedEM's synthetic mixture (Marfoq et al., NeurIPS 2021, Table 2) as a
`kind = "files"` federation.

A port of the public code's `data/synthetic/generate_data.py` (omarfoq/FedEM)
at the paper's Table 2 arguments: 300 clients, 2 classes, M = 3 components,
dimension 150, noise 0.1, Dirichlet(0.4) mixture weights, x ~ U[-1, 1]^150,
client sizes min(lognormal(4, 2) + 50, 1000), seed 12345. Each component m
labels a point y = round(sigmoid(<x, theta_m> + noise)), theta_m ~ U[-1, 1]^150.

As in the public code, the loop that labels each component's share of a
client's points never advances its start index (`current_index` stays 0), so
the points past the largest component's share keep the label 0 and the first
points are labelled by the last component whose share covers them. Table 2's
numbers come from data made that way; `--fixed` advances the index instead.

Only numpy; the sampling order follows the public code, but sklearn's
`shuffle` is a numpy permutation here, so the draws are not the code's bits.
The test split is `--n-test` points per client (the paper: 5000; default 1000
here to keep the files small). Each client's `cluster` is its largest mixture
weight (ground truth for the metrics only).

    python3 scripts/fedem_synthetic_data.py --out /tmp/fedem-synthetic
"""

import argparse
import json
import os

import numpy as np


def num_samples(n_tasks, lo=50, hi=1000):
    sizes = np.random.lognormal(4, 2, n_tasks).astype(int)
    return [min(s + lo, hi) for s in sizes]


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def client_data(weights, theta, n, dim, noise, fixed):
    counts = np.random.multinomial(n, weights)
    y = np.zeros(n)
    x = np.random.uniform(-1.0, 1.0, size=(n, dim))
    start = 0
    for m, c in enumerate(counts):
        logits = x[start : start + c] @ theta[m]
        eps = np.random.normal(size=c, scale=noise)
        y[start : start + c] = np.round(sigmoid(logits + eps)).astype(int)
        if fixed:
            start += c
    order = np.random.permutation(n)
    return x[order].astype(np.float32), y[order].astype(np.int64)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--n-tasks", type=int, default=300)
    p.add_argument("--n-components", type=int, default=3)
    p.add_argument("--dim", type=int, default=150)
    p.add_argument("--noise", type=float, default=0.1)
    p.add_argument("--alpha", type=float, default=0.4)
    p.add_argument("--n-test", type=int, default=1000)
    p.add_argument("--seed", type=int, default=12345)
    p.add_argument("--fixed", action="store_true", help="advance the index")
    a = p.parse_args()

    np.random.seed(a.seed)
    sizes = num_samples(a.n_tasks)
    weights = np.stack(
        [np.random.dirichlet(a.alpha * np.ones(a.n_components)) for _ in range(a.n_tasks)]
    )
    theta = np.random.uniform(-1.0, 1.0, size=(a.n_components, a.dim))

    os.makedirs(os.path.join(a.out, "train"), exist_ok=True)
    os.makedirs(os.path.join(a.out, "test"), exist_ok=True)
    train, test = [], []
    for t in range(a.n_tasks):
        cluster = int(np.argmax(weights[t]))
        for split, n, rows in (("train", sizes[t], train), ("test", a.n_test, test)):
            x, y = client_data(weights[t], theta, n, a.dim, a.noise, a.fixed)
            name = f"{split}/{t}.npz"
            np.savez(os.path.join(a.out, name), x=x, y=y)
            rows.append({"file": name, "samples": int(n), "cluster": cluster})
    manifest = {
        "format": 1,
        "name": "fedem-synthetic" + ("-fixed" if a.fixed else ""),
        "task": "classification",
        "classes": 2,
        "features": a.dim,
        "clusters": a.n_components,
        "train": train,
        "test": test,
    }
    with open(os.path.join(a.out, "federation.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print(f"{a.out}: {a.n_tasks} clients, {sum(sizes)} training points")


if __name__ == "__main__":
    main()
