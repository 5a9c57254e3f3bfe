"""An index argument spelled with a name the project binds to a device object stays.

Amphion (read set 106) sets ``args.local_rank = torch.device("cuda")`` in its entry scripts and
moves its models with ``.cuda(self.args.local_rank)`` and ``torch.cuda.device(args.local_rank)``,
which take a device as well as an index. ``torch.device(type, index)`` and
``torch.accelerator.device_index(index)`` take an index only: rewritten so, both raised
``TypeError`` on CUDA.
"""

from __future__ import annotations

from neuron_lint.config.settings import Settings
from neuron_lint.fixes.apply import fix_text
from neuron_lint.fixes.project_scan import forget_project_reads

SETTINGS = Settings(select=("NRN2",), unsafe_fixes=True, min_torch="2.13")
MODEL = '''import torch


class Inference:
    def __init__(self, args, model):
        self.args = args
        self.model = model.cuda(self.args.local_rank)

    def run(self, x):
        with torch.cuda.device(self.args.local_rank):
            return self.model(x)
'''
ENTRY = '''import torch


def main(args):
    args.local_rank = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
    return args
'''


def _project(tmp_path, entry: str | None):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    if entry is not None:
        (tmp_path / "entry.py").write_text(entry)
    path = tmp_path / "model.py"
    path.write_text(MODEL)
    forget_project_reads()
    return str(path)


def test_an_index_named_like_a_device_the_project_binds_stays(tmp_path):
    result = fix_text(MODEL, _project(tmp_path, ENTRY), SETTINGS)
    assert result.text == MODEL
    notes = [f.fix_note or "" for f in result.remaining]
    assert sum("`local_rank` (elsewhere in the project)" in n for n in notes) == 2, notes


def test_an_index_the_project_never_binds_to_a_device_is_rewritten(tmp_path):
    fixed = fix_text(MODEL, _project(tmp_path, ENTRY.replace("args.local_rank =", "args.rank =")), SETTINGS).text
    assert "torch.device(" in fixed and "torch.accelerator.device_index(self.args.local_rank)" in fixed
    assert ".cuda(" not in fixed
