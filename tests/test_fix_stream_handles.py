"""A CUDA stream handed out of its function stays a `torch.cuda.Stream` where the project reads
streams' `cuda_stream` handles: vLLM's `current_stream()` (copied by FastVideo, read set 112) keeps
`torch.cuda.current_stream()` in a global and returns it, and its NCCL wrapper passes
`stream.cuda_stream` to the library. A generic `torch.Stream` has no such handle, even on CUDA."""

from neuron_lint.config.settings import Settings
from neuron_lint.fixes.files import fix_file
from conftest import write_project

UTILS = '''import torch

_current_stream = None


def current_stream():
    global _current_stream
    if _current_stream is None:
        _current_stream = torch.cuda.current_stream()
    return _current_stream
'''

COMM = '''from .utils import current_stream


def all_reduce(lib, comm, tensor):
    stream = current_stream()
    lib.all_reduce(tensor.data_ptr(), comm, stream.cuda_stream)
'''


def _project(tmp_path, reads_handle: bool):
    files = {"pkg/__init__.py": "", "pkg/utils.py": UTILS, **({"pkg/comm.py": COMM} if reads_handle else {})}
    return write_project(tmp_path, files) / "pkg" / "utils.py"


def test_a_returned_stream_stays_cuda_where_the_project_reads_its_handle(tmp_path):
    utils = _project(tmp_path, reads_handle=True)
    assert not fix_file(utils, Settings(select=("NRN203",), unsafe_fixes=True)).written
    assert utils.read_text() == UTILS


def test_a_returned_stream_is_rewritten_where_no_handle_is_read(tmp_path):
    utils = _project(tmp_path, reads_handle=False)
    assert fix_file(utils, Settings(select=("NRN203",), unsafe_fixes=True)).written
    assert "torch.accelerator.current_stream()" in utils.read_text()
