"""The user's own network: a small CNN in PyTorch, as fedcluster's model."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from fedcluster.torch import TorchModule

from .images import CLASSES, SIZE


class StrokeCnn(torch.nn.Module):
    """Two 3x3 convolutions with max pooling, then a linear head."""

    def __init__(self, classes: int = CLASSES) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 8, kernel_size=3, padding=1)
        self.conv2 = torch.nn.Conv2d(8, 16, kernel_size=3, padding=1)
        self.head = torch.nn.Linear(16 * (SIZE // 4) ** 2, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.permute(0, 3, 1, 2)  # fedcluster's images are channels-last
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.head(x.flatten(1))


def model() -> TorchModule:
    """The CNN behind fedcluster's ``Model`` trait: its initial parameters are
    PyTorch's own initialisation, seeded from the run's random stream; the
    loss is cross-entropy; every algorithm trains it."""
    return TorchModule(StrokeCnn(), input_shape=(SIZE, SIZE, 1))
