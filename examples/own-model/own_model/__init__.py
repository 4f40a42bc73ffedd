"""Your own CNN (PyTorch) on your own images, clustered by fedcluster."""
