"""A script's CUDA-or-CPU device choice agrees with the one a project module it imports keeps.

gluonts' ``train_adv.py`` chose ``"cuda" if torch.cuda.is_available() else "cpu"`` and imported
``SparseNet`` from ``sparse_layer.py``, which chooses ``torch.device("cuda:0" if ... else "cpu")``
when imported and creates its noise there. That choice stays (an indexed device in a library module);
rewritten alone, the script put the net on ``neuron`` while the noise stayed on the CPU, and
training that ran on the CPU of a Trainium host failed on its first batch (read set 91).
"""

from __future__ import annotations

from neuron_lint.api import check_source
from neuron_lint.config.settings import Settings
from neuron_lint.fixes.apply import fix_text

LAYER = (
    "import torch\n"
    "import torch.nn as nn\n\n"
    "device = {choice}\n\n\n"
    "class SparseNet(nn.Module):\n"
    "    def forward(self, x):\n"
    "        return x + torch.randn(x.shape).to(device)\n"
)
SCRIPT = (
    "import torch\n\n"
    "from sparse_layer import SparseNet\n\n"
    "device = torch.device(\"cuda\" if torch.cuda.is_available() else \"cpu\")\n"
    "net = SparseNet().to(device)\n"
)
SETTINGS = Settings(select=("NRN2",), unsafe_fixes=True)


def _project(tmp_path, choice: str) -> str:
    (tmp_path / "setup.py").write_text("")
    (tmp_path / "sparse_layer.py").write_text(LAYER.format(choice=choice))
    script = tmp_path / "train_adv.py"
    script.write_text(SCRIPT)
    return str(script)


def test_a_choice_the_imported_module_keeps_stays_in_the_script(tmp_path):
    path = _project(tmp_path, 'torch.device("cuda:0" if torch.cuda.is_available() else "cpu")')
    assert fix_text(SCRIPT, path, SETTINGS).text == SCRIPT
    notes = [f.fix_note for f in check_source(SCRIPT, path, SETTINGS) if f.code == "NRN202"]
    assert notes and "`sparse_layer` (sparse_layer.py:4) chooses its own device" in notes[0]


def test_a_choice_the_imported_module_rewrites_too_is_rewritten(tmp_path):
    path = _project(tmp_path, 'torch.device("cuda" if torch.cuda.is_available() else "cpu")')
    fixed = fix_text(SCRIPT, path, SETTINGS).text
    assert "torch.accelerator.current_accelerator()" in fixed
    assert "torch.cuda" not in fixed


def test_a_module_without_its_own_choice_changes_nothing(tmp_path):
    path = _project(tmp_path, '"cpu"')
    assert "torch.accelerator.current_accelerator()" in fix_text(SCRIPT, path, SETTINGS).text
