"""Importing it makes ``init_process_group("xla", init_method="xla://")`` work: here, as gloo from the environment."""

import torch.distributed as dist

_original = dist.init_process_group


def _init_process_group(backend=None, init_method=None, *args, **kwargs):
    if backend == "xla":
        backend = "gloo"
    if init_method == "xla://":
        init_method = "env://"
    return _original(backend, init_method, *args, **kwargs)


dist.init_process_group = _init_process_group
