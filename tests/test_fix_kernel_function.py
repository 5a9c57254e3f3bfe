"""A function that always calls a compiled CUDA extension keeps its CUDA code; one that calls the
project's own Python module does not, whatever that module is named.

bevfusion's ``KNN.forward`` sets CUDA's current device for ``knn_ext.knn_wrapper``, a kernel built
for CUDA only (read set 96): rewritten, Trainium's tensors got past it into the extension. rl_games'
``torch_ext`` is a Python module of the project (``rl_games/algos_torch/torch_ext.py``), named like
an extension (held-out set 92): its callers are ported as before.
"""

from __future__ import annotations

from neuron_lint.config.settings import Settings
from neuron_lint.fixes.apply import fix_text

SETTINGS = Settings(select=("NRN2",), unsafe_fixes=True)
CALLER = (
    "import torch\n\n"
    "from {package} import {module}\n\n\n"
    "def step(x):\n"
    "    torch.cuda.set_device(x.get_device())\n"
    "    out = torch.zeros(4).cuda()\n"
    "    {module}.run(x, out)\n"
    "    return out\n"
)


def _fixed(tmp_path, module: str, with_source: bool) -> str:
    (tmp_path / "setup.py").write_text("")
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    if with_source:
        (package / f"{module}.py").write_text("def run(x, out):\n    out.copy_(x.sum(0))\n")
    caller = package / "ops.py"
    text = CALLER.format(package="pkg", module=module)
    caller.write_text(text)
    return fix_text(text, str(caller), SETTINGS).text


def test_a_function_that_always_calls_a_compiled_extension_keeps_its_cuda_code(tmp_path):
    fixed = _fixed(tmp_path, "knn_ext", with_source=False)
    assert "torch.cuda.set_device(x.get_device())" in fixed
    assert "torch.zeros(4).cuda()" in fixed


def test_a_python_module_of_the_project_named_like_an_extension_is_not_one(tmp_path):
    fixed = _fixed(tmp_path, "torch_ext", with_source=True)
    assert "torch.cuda" not in fixed and ".cuda()" not in fixed, fixed
    assert "torch.accelerator.set_device_index(x.get_device())" in fixed
