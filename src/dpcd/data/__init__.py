"""Datasets: registry, download, loaders, generators, preprocessing, splits."""
