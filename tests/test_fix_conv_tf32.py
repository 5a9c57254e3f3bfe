"""`torch.backends.cudnn.allow_tf32 = True` restates PyTorch's default and is removed under
`--unsafe-fixes`, but not where the project turns it off somewhere: in a pytest run, an earlier test
module's `= False` stays in force and the line put it back (FastVideo's parity tests, read set 112)."""

from neuron_lint.config.settings import Settings
from neuron_lint.fixes.files import fix_file
from conftest import write_project

PARITY = '''import torch


def test_parity():
    torch.backends.cudnn.allow_tf32 = True
    assert torch.ones(2).sum() == 2
'''

OTHER = '''import torch


def test_exact():
    torch.backends.cudnn.allow_tf32 = False
    assert torch.ones(2).sum() == 2
'''


def _project(tmp_path, turns_off: bool):
    files = {"tests/test_parity.py": PARITY, **({"tests/test_exact.py": OTHER} if turns_off else {})}
    return write_project(tmp_path, files) / "tests" / "test_parity.py"


def test_kept_where_the_project_turns_it_off(tmp_path):
    parity = _project(tmp_path, turns_off=True)
    assert not fix_file(parity, Settings(select=("NRN209",), unsafe_fixes=True)).written
    assert parity.read_text() == PARITY


def test_removed_where_nothing_turns_it_off(tmp_path):
    parity = _project(tmp_path, turns_off=False)
    assert fix_file(parity, Settings(select=("NRN209",), unsafe_fixes=True)).written
    assert "allow_tf32" not in parity.read_text()
