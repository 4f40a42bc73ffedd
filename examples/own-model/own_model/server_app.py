"""The ServerApp: fedcluster's server half (the config's algorithm) as a
Flower strategy, drawing the CNN's initial models and scoring them on the
federation's test clients; the config, the federation directory
(``data-dir``) and the rounds come from the run config."""

from pathlib import Path

import torch

from fedcluster.flower import server_app

from .net import model

# One torch thread per call: a small network, many clients (see run.py).
torch.set_num_threads(1)
app = server_app(base_dir=Path(__file__).parent, model=model())
