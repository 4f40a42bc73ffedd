"""The ClientApp: fedcluster's client half, training the CNN, for the
clients this SuperNode holds (``--node-config 'clients="0-7"'``)."""

import torch

from fedcluster.flower import client_app

from .net import model

# One torch thread per call: a small network, many clients (see run.py).
torch.set_num_threads(1)
app = client_app(model=model())
