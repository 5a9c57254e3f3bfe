"""Run a script with CUDA mapped to the CPU: `python cuda_on_cpu.py SCRIPT [ARGS...]`.

The reference for tests/test_fix_runs_on_cpu.py: the ORIGINAL (unfixed) CUDA programs take their
CUDA branches on a CPU-only host. `torch.cuda.is_available()` says yes, CUDA devices given to
`.to()`/`.cuda()` and to the factories become the CPU, and streams are no-ops (on one device, work
on a side stream gives the same values as work on the default stream). It counts the CUDA calls
the script made and prints them to stderr at exit, so a test can see the CUDA branches ran.
It shares no code with neuron-lint.
"""
import atexit
import collections
import contextlib
import runpy
import sys

import torch

calls = collections.Counter()
atexit.register(lambda: print("cuda-on-cpu calls:", dict(sorted(calls.items())), file=sys.stderr))


def _cpu(value):
    if isinstance(value, str) and value.startswith("cuda"):
        return "cpu"
    if isinstance(value, torch.device) and value.type == "cuda":
        return torch.device("cpu")
    return value


def _map_device(f):
    def wrapper(*args, **kwargs):
        return f(*map(_cpu, args), **{k: _cpu(v) for k, v in kwargs.items()})
    return wrapper


for _name in ("tensor", "as_tensor", "zeros", "ones", "empty", "full", "rand", "randn", "randint", "arange"):
    setattr(torch, _name, _map_device(getattr(torch, _name)))
torch.Tensor.to = _map_device(torch.Tensor.to)
torch.nn.Module.to = _map_device(torch.nn.Module.to)


def _tensor_cuda(self, device=None, non_blocking=False, **kwargs):
    calls["Tensor.cuda"] += 1
    return self


def _module_cuda(self, device=None):
    calls["Module.cuda"] += 1
    return self


class _Stream:
    def __init__(self, device=None, priority=0, **kwargs):
        calls["Stream"] += 1

    def wait_stream(self, stream):
        calls["wait_stream"] += 1

    def synchronize(self):
        pass


def _stream(stream=None):
    calls["stream"] += 1
    return contextlib.nullcontext()


torch.Tensor.cuda = _tensor_cuda
torch.nn.Module.cuda = _module_cuda
torch.cuda.is_available = lambda: True
torch.cuda.device_count = lambda: 1
torch.cuda.Stream = _Stream
torch.cuda.stream = _stream


def _current_stream(device=None):
    calls["current_stream"] += 1
    return _Stream.__new__(_Stream)


torch.cuda.current_stream = _current_stream
torch.cuda.synchronize = lambda device=None: None

script = sys.argv[1]
sys.argv = sys.argv[1:]
runpy.run_path(script, run_name="__main__")
