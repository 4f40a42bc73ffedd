"""A user's own image data set, written in fedcluster's federation format.

Stands in for yours: 12x12 grayscale images of four strokes (0: horizontal,
1: vertical, 2: the diagonal from the top left, 3: the other diagonal), at
random places, with noise. Half the clients hold them upright, the other half
turned by 90 degrees, so a horizontal stroke labelled 0 in one group looks
like the other group's vertical stroke, labelled 1: no single model serves
both groups, and the clustering algorithms must find them. Replace
:func:`client_images` with your own arrays; :func:`write_federation` is the
one call to ``fedcluster.data.save`` a user's data needs.
"""

from __future__ import annotations

import os

import numpy as np

import fedcluster.data

SIZE = 12
CLASSES = 4


def _stroke(label: int, rng: np.random.Generator) -> np.ndarray:
    image = np.zeros((SIZE, SIZE), dtype=np.float32)
    length = int(rng.integers(6, SIZE - 1))
    start = int(rng.integers(0, SIZE - length + 1))
    at = int(rng.integers(1, SIZE - 1))
    steps = np.arange(start, start + length)
    if label == 0:
        image[at, steps] = 1.0
    elif label == 1:
        image[steps, at] = 1.0
    else:
        shift = int(rng.integers(-2, 3))
        rows = steps if label == 2 else steps[::-1]
        keep = (steps + shift >= 0) & (steps + shift < SIZE)
        image[rows[keep], steps[keep] + shift] = 1.0
    return image


def client_images(n: int, turned: bool, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``n`` images ``[n, 12, 12, 1]`` (channels-last, float32) and their
    labels; ``turned``: rotated by 90 degrees."""
    y = rng.integers(0, CLASSES, n)
    x = np.stack([_stroke(int(label), rng) for label in y])
    if turned:
        x = np.rot90(x, axes=(1, 2))
    x = x + rng.normal(0.0, 0.3, x.shape)
    return x[..., None].astype(np.float32), y.astype(np.int64)


def write_federation(
    path: str | os.PathLike[str],
    *,
    clients: int = 16,
    per_client: int = 60,
    test_clients: int = 4,
    per_test_client: int = 40,
    seed: int = 0,
) -> fedcluster.data.FederatedData:
    """Writes the federation directory ``path`` (replacing it): ``clients``
    training clients, alternately upright and turned, ``test_clients`` test
    clients likewise, and each one's group as its true cluster (read only by
    the metrics)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    rng = np.random.default_rng(seed)
    groups = [i % 2 for i in range(clients)]
    test_groups = [i % 2 for i in range(test_clients)]
    return fedcluster.data.save(
        path,
        train=[client_images(per_client, bool(g), rng) for g in groups],
        test=[client_images(per_test_client, bool(g), rng) for g in test_groups],
        clusters=groups,
        test_clusters=test_groups,
        classes=CLASSES,
        name="turned-strokes",
        force=True,
    )
