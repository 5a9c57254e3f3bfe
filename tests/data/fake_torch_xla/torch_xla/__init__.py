"""A stand-in for PyTorch/XLA, for running XLA-path code on CPU in tests.

The XLA device is the CPU, graph cuts do nothing, and the ``xla`` process group is gloo; the
collectives and rank queries behave as PyTorch/XLA's do (its semantics, not its speed).
"""

import torch

__version__ = "0.0-fake"


def device(index=None):
    return torch.device("cpu")


def sync(wait=False):
    return None
