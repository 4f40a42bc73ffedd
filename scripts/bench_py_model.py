#!/usr/bin/env python3
"""The cost of a model written in Python: one small IFCA run on synthetic
images with the native MLP (``[model] kind = "mlp"``) and with
``fedcluster.model.NumpyMlp`` (the same network in numpy, behind the Rust
``Model`` trait), each on 1 and 2 threads; prints seconds per round and the
ratio.

    python3 scripts/bench_py_model.py [--rounds 5] [--repeats 3]

Every call into the Python model takes the GIL, so the numpy model's work runs
on one core at a time whatever the thread count (docs/python.md).
"""

from __future__ import annotations

import argparse
import time

import fedcluster
from fedcluster.model import NumpyMlp

SIDE, HIDDEN, CLASSES = 8, 32, 10


def config(rounds: int) -> dict:
    return {
        "name": "bench-py-model",
        "seed": 1,
        "rounds": rounds,
        "data": {"kind": "synthetic-images", "clients": 20, "points_per_client": 100,
                 "test_points_per_client": 20, "clusters": 2, "classes": CLASSES,
                 "height": SIDE, "width": SIDE, "channels": 1, "noise_std": 0.5},
        "model": {"kind": "mlp", "hidden": HIDDEN},
        "algorithm": {"name": "ifca", "clusters": 2, "lr": 0.1, "local_steps": 5, "aggregation": "model"},
    }


def seconds_per_round(rounds: int, repeats: int, threads: int, model: object | None) -> float:
    """The best of ``repeats`` runs' wall-clock seconds, per round."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fedcluster.run(config(rounds), threads=threads, model=model)
        best = min(best, time.perf_counter() - start)
    return best / rounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    numpy_mlp = NumpyMlp(SIDE * SIDE, HIDDEN, CLASSES)
    print(f"IFCA, 20 clients x 100 images {SIDE}x{SIDE}, MLP {SIDE * SIDE}-{HIDDEN}-{CLASSES}, "
          f"5 local steps, {args.rounds} rounds, best of {args.repeats}")
    print(f"{'threads':>7} {'native s/round':>15} {'numpy s/round':>14} {'ratio':>7}")
    for threads in (1, 2):
        native = seconds_per_round(args.rounds, args.repeats, threads, None)
        python = seconds_per_round(args.rounds, args.repeats, threads, numpy_mlp)
        print(f"{threads:>7} {native:>15.4f} {python:>14.4f} {python / native:>7.1f}")


if __name__ == "__main__":
    main()
