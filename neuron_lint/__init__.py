"""neuron-lint: find and rewrite CUDA-specific PyTorch code for AWS Trainium (TorchNeuron).

The public library API lives in :mod:`neuron_lint.api`; it is re-exported here lazily so
that ``neuron-lint --version`` does not pay for importing the engine.
"""

__version__ = "0.1.0"

__all__ = ["__version__", "check_source", "check_paths", "Settings", "load_catalog"]


def __getattr__(name):  # PEP 562: keep `import neuron_lint` cheap
    if name in ("check_source", "check_paths", "Settings"):
        from . import api

        return getattr(api, name)
    if name == "load_catalog":
        from .catalog.loading import load_catalog

        return load_catalog
    raise AttributeError(name)
