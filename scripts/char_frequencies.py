"""What a character model learns when it learns only how often each character
occurs: the numbers behind the FedSoft row of `reproduce srfca-shakespeare`.

Reads a federation directory written by `fedcluster data export` (npz arrays,
targets `y` as class indices) and prints, over the training clients pooled,
the entropy of the next-character frequencies (the training loss of a model
that predicts those frequencies for every window), the most frequent
character's share of the test targets, and the mean over clients of the test
accuracy of always predicting it; with a list of client ids that score 0
(the clients a run never drew), that mean with those at 0.

    fedcluster data export results/srfca-shakespeare/runs/shakespeare/fedsoft-k1/seed-1/config.toml \\
        --data-dir ../shared/data/shakespeare --format npz --out /tmp/shakespeare-export
    python3 scripts/char_frequencies.py /tmp/shakespeare-export [2,3,4,12,14,22,24,35,43,46,47,48,49]

Not part of the test suite (it needs numpy); see docs/reproductions.md.
"""

import json
import sys
from pathlib import Path

import numpy as np


def class_counts(root: Path, federation: dict, split: str) -> list[np.ndarray]:
    """Per client of `split`, how often each class is the target."""
    classes = federation["classes"]
    counts = []
    for client in federation[split]:
        with np.load(root / client["file"]) as arrays:
            targets = arrays["y"].astype(np.int64).ravel()
        counts.append(np.bincount(targets, minlength=classes))
    return counts


def main() -> None:
    if len(sys.argv) not in (2, 3):
        sys.exit(
            f"usage: {sys.argv[0]} FEDERATION_DIR [NEVER_DRAWN_IDS] "
            "(FEDERATION_DIR from `fedcluster data export --format npz`; ids comma-separated)"
        )
    root = Path(sys.argv[1])
    never = {int(i) for i in sys.argv[2].split(",")} if len(sys.argv) == 3 else set()
    federation = json.loads((root / "federation.json").read_text())
    train = np.sum(class_counts(root, federation, "train"), axis=0)
    frequencies = train / train.sum()
    seen = frequencies > 0
    entropy = -(frequencies[seen] * np.log(frequencies[seen])).sum()
    test = class_counts(root, federation, "test")
    most = int(np.argmax(train))
    pooled_test = np.sum(test, axis=0)
    share = pooled_test[most] / pooled_test.sum()
    per_client = [c[most] / c.sum() if c.sum() > 0 else 0.0 for c in test]
    accuracy = np.mean(per_client)
    print(f"training clients' next-character entropy: {entropy:.4f} nats")
    print(f"most frequent character: class {most}, {100 * share:.2f}% of the test targets")
    print(f"always predicting it: {100 * accuracy:.2f}% test accuracy, averaged over the clients")
    if never:
        scored = np.mean([0.0 if i in never else a for i, a in enumerate(per_client)])
        print(f"with the {len(never)} never-drawn clients at 0: {float(scored)!r} (a fraction, as the run reports it)")


if __name__ == "__main__":
    main()
