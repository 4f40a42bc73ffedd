#!/usr/bin/env python3
"""Your own CNN on your own images, clustered by IFCA and SR-FCA, from Python.

Writes the user's image data set in fedcluster's federation format
(``fedcluster.data.save``), then runs each config of own_model/ on it with the
CNN of own_model/net.py (``fedcluster.run(config, model=..., data=...)``),
and FedAvg's single model as the baseline. Each run's directory
(``metrics.csv``, ``curves.svg``, ``summary.json``, ``models.safetensors``)
goes under ``--out``.

    python3 examples/own-model/run.py [--out DIR] [--data DIR] [--clients N] [--rounds R]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

import fedcluster

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from own_model.images import write_federation  # noqa: E402
from own_model.net import model  # noqa: E402

ALGORITHMS = ("ifca", "srfca", "global")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "runs", help="where the run directories go")
    parser.add_argument("--data", type=Path, default=HERE / "data" / "federation",
                        help="where the federation directory is written")
    parser.add_argument("--clients", type=int, default=16, help="training clients (half of them turned)")
    parser.add_argument("--per-client", type=int, default=60, help="images per training client")
    parser.add_argument("--rounds", type=int, default=0, help="> 0 replaces the configs' rounds")
    parser.add_argument("--algorithms", default=",".join(ALGORITHMS),
                        help=f"configs of own_model/ to run, comma-separated (default {','.join(ALGORITHMS)})")
    args = parser.parse_args(argv)
    # A small network: one torch thread per call, the run's threads train
    # clients side by side (torch's own threads on top oversubscribe the cores).
    torch.set_num_threads(1)

    data = write_federation(args.data, clients=args.clients, per_client=args.per_client)
    print(f"federation: {args.data} ({len(data.train)} training clients, {len(data.test)} test clients, "
          f"images {'x'.join(map(str, data.sample_shape))}, {data.classes} classes)")
    overrides = {"rounds": args.rounds} if args.rounds > 0 else None
    for name in args.algorithms.split(","):
        out = args.out / name
        result = fedcluster.run(HERE / "own_model" / f"{name}.toml", model=model(), data=data,
                                overrides=overrides, out=out, overwrite=True)
        final = result.summary["final"]
        shown = {k: "-" if final.get(k) is None else f"{final[k]:.3g}"
                 for k in ("misclustering", "test_accuracy", "clusters_found")}
        print(f"{name:>6}: {len(result.rows)} rounds, final misclustering {shown['misclustering']}, "
              f"test accuracy {shown['test_accuracy']}, clusters found {shown['clusters_found']} ({out})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
