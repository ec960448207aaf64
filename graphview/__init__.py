"""graphview: watch PyTorch autograd build, run and free its graph."""

__version__ = "0.1.0"
