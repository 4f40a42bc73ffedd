"""IFCA on Flower with fedcluster's server half."""
