"""The imports a fix leaves unused are removed, and only those (``fixes/imports.py``).

What is still in use is read from the ``ast`` of the rewritten code instead of LibCST's scope
analysis of the whole module; on the cases where LibCST's ``RemoveImportsVisitor`` is right, the
two give the same text, and where in doubt an import is kept.
"""

from __future__ import annotations

import ast

import libcst as cst
import pytest
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import RemoveImportsVisitor

from neuron_lint.config.settings import Settings
from neuron_lint.fixes.apply import fix_text
from neuron_lint.fixes.imports import remove_unused_imports

UNSAFE = Settings(unsafe_fixes=True)

# (source, imports asked to be removed as (module, obj, asname))
AGREE = [
    ("from torch.cuda.amp import autocast, GradScaler\nx = GradScaler()\n",
     [("torch.cuda.amp", "autocast", None)]),
    ("from torch.cuda.amp import autocast\nwith autocast():\n    pass\n",
     [("torch.cuda.amp", "autocast", None)]),
    ("from torch.cuda.amp import (\n    autocast,  # mixed precision\n    GradScaler,\n)\nGradScaler()\n",
     [("torch.cuda.amp", "autocast", None)]),
    ("from torch.cuda.amp import (\n    GradScaler,\n    autocast,  # last\n)\nGradScaler()\n",
     [("torch.cuda.amp", "autocast", None)]),
    ("import torch_xla.core.xla_model as xm\nimport torch\n\ndef f():\n    return torch.ones(1)\n",
     [("torch_xla.core.xla_model", None, "xm")]),
    ("from torch.cuda.amp import autocast as ac\n__all__ = ['ac']\n", [("torch.cuda.amp", "autocast", "ac")]),
    ("import os\n\ndef f():\n    from torch.cuda.amp import autocast\n    return 1\n\ndef g():\n"
     "    from torch.cuda.amp import autocast\n    return autocast\n", [("torch.cuda.amp", "autocast", None)]),
    ("from torch.cuda.amp import autocast\n\ndef h():\n    from torch.cuda.amp import autocast\n    return autocast\n",
     [("torch.cuda.amp", "autocast", None)]),
    ("if True:\n    from torch.cuda.amp import autocast\nelse:\n    autocast = None\n",
     [("torch.cuda.amp", "autocast", None)]),
    ("def f():\n    from torch.cuda.amp import autocast\n", [("torch.cuda.amp", "autocast", None)]),
    ("from torch.cuda.amp import autocast\ndef f(x: 'autocast'):\n    pass\n", [("torch.cuda.amp", "autocast", None)]),
]


def _context(requests) -> CodemodContext:
    context = CodemodContext()
    for module, obj, asname in requests:
        RemoveImportsVisitor.remove_unused_import(context, module, obj, asname)
    return context


@pytest.mark.parametrize("source,requests", AGREE)
def test_same_removals_as_libcst(source, requests):
    tree = cst.parse_module(source)
    ours = remove_unused_imports(_context(requests), tree, tree.code).code
    theirs = RemoveImportsVisitor(_context(requests)).transform_module(tree).code
    assert ours == theirs
    ast.parse(ours)


def test_kept_where_a_class_reads_it_as_an_attribute():
    # LibCST's scopes do not see `self.autocast`; removing the import would break the method
    source = "class C:\n    from torch.cuda.amp import autocast\n\n    def m(self):\n        return self.autocast\n"
    tree = cst.parse_module(source)
    assert remove_unused_imports(_context([("torch.cuda.amp", "autocast", None)]), tree, source).code == source


def test_untouched_statements_stay_the_same_nodes():
    source = "import os\nfrom torch.cuda.amp import autocast\n\nclass A:\n    def f(self):\n        return os.sep\n"
    tree = cst.parse_module(source)
    new = remove_unused_imports(_context([("torch.cuda.amp", "autocast", None)]), tree, source)
    assert new.code == "import os\n\nclass A:\n    def f(self):\n        return os.sep\n"
    assert new.body[0] is tree.body[0] and new.body[-1] is tree.body[-1]


def test_fix_removes_what_its_rewrites_left_unused_and_nothing_else():
    source = (
        "import torch\n"
        "from torch.cuda.amp import autocast, GradScaler\n"
        "\n"
        "def f(m, x):\n"
        "    scaler = GradScaler()\n"
        "    with autocast():\n"
        "        return m(x)\n"
        "\n"
        "def g():\n"
        "    from torch.cuda.amp import autocast\n"
        "    with autocast():\n"
        "        pass\n"
        "\n"
        "def h():\n"
        "    from torch.cuda.amp import autocast\n"
        "    return autocast\n"
    )
    fixed = fix_text(source, settings=UNSAFE).text
    assert "from torch.cuda.amp import autocast, GradScaler" not in fixed
    lines = fixed.splitlines()
    g, h = lines.index("def g():"), lines.index("def h():")
    assert not any("import autocast" in line for line in lines[g:h])  # g's only use was rewritten
    assert lines[h + 1] == "    from torch.cuda.amp import autocast"  # h still returns it
    ast.parse(fixed)


def test_libcst_decides_when_the_ast_and_the_tree_disagree(monkeypatch):
    import neuron_lint.fixes.imports as imports

    source = "from torch.cuda.amp import autocast\nx = 1\n"
    monkeypatch.setattr(imports, "imports_in_use", lambda tree: [])  # as if the ast saw no import
    tree = cst.parse_module(source)
    assert imports.remove_unused_imports(_context([("torch.cuda.amp", "autocast", None)]), tree, source).code == "x = 1\n"


ADD_SHAPES = [
    '"""Doc."""\nimport os\nfrom torch import nn\n\nx = 1\n',
    "from __future__ import annotations\n\nimport os\n\n\ndef f():\n    import torch\n    return torch\n",
    "import os; import sys\nx = 1\nimport torch\n",
    "x = 1\n",
    "try:\n    import torch\nexcept ImportError:\n    torch = None\n",
    '"""Doc."""\n',
]


@pytest.mark.parametrize("source", ADD_SHAPES)
@pytest.mark.parametrize("wanted", [("torch", None), ("os", None), ("torch.nn.attention", "sdpa_kernel")])
def test_same_additions_as_libcst(source, wanted):
    from libcst.codemod.visitors import AddImportsVisitor

    from neuron_lint.fixes.imports import TopLevelAddImports

    def context():
        c = CodemodContext()
        AddImportsVisitor.add_needed_import(c, *wanted)
        return c

    tree = cst.parse_module(source)
    assert TopLevelAddImports(context()).transform_module(tree).code == AddImportsVisitor(context()).transform_module(tree).code


def test_a_block_whose_first_statement_was_the_removed_import_does_not_open_with_a_blank_line():
    # detectron2's AMPTrainer and test_blocks.py: `from torch.cuda.amp import ...` first in a block, a
    # blank line after it; the rewrite left `if grad_scaler is None:` followed by an empty line
    src = (
        "import torch\n\n\n"
        "def make(grad_scaler=None):\n"
        "    if grad_scaler is None:\n"
        "        from torch.cuda.amp import GradScaler\n\n"
        "        grad_scaler = GradScaler()\n"
        "    return grad_scaler\n\n\n"
        "def run(m, x):\n"
        "    from torch.cuda.amp import autocast\n\n"
        "    # mixed precision\n"
        "    with autocast():\n"
        "        return m(x)\n"
    )
    fixed = fix_text(src, "amp.py", Settings(select=("NRN205",))).text
    assert "from torch.cuda.amp" not in fixed
    assert "    if grad_scaler is None:\n        grad_scaler = torch.amp.GradScaler(" in fixed
    assert "def run(m, x):\n    # mixed precision\n    with torch.autocast(" in fixed
    ast.parse(fixed)


@pytest.mark.parametrize("head,expected", [
    # fairscale's auto_wrap.py: after `import torch.nn as nn` isort wants it before
    ("import contextlib\n\nimport torch.nn as nn\n", "import contextlib\n\nimport torch\nimport torch.nn as nn\n"),
    # detectron2's DensePose config: plain imports before `from` imports of the same section
    ("from detectron2.config import CfgNode as CN\n", "import torch\nfrom detectron2.config import CfgNode as CN\n"),
    # after the stdlib ones, in their own group it stays last
    ("import os\nfrom typing import Any\n", "import os\nfrom typing import Any\n\nimport torch\n"),
])
def test_an_added_import_of_torch_goes_where_isort_wants_it(head, expected):
    src = head + "\n\ndef f(x):\n    return x.cuda()\n"
    fixed = fix_text(src, "lib.py", Settings(select=("NRN201",))).text
    assert fixed.startswith(expected), fixed


def _ruff_import_errors(path, root) -> str:
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-m", "ruff", "check", "--isolated", "--no-cache", "--select", "I001",
                          str(path)], cwd=root, capture_output=True, text=True, timeout=60)
    return "" if run.returncode == 0 else run.stdout


@pytest.mark.parametrize("head,expected", [
    # detectron2's DensePose: the project's own `detectron2` is a section after the third-party torch
    ("from mypkg.config import CN\n", "import torch\n\nfrom mypkg.config import CN\n"),
    ("import os\n\nfrom mypkg.config import CN\n", "import os\n\nimport torch\n\nfrom mypkg.config import CN\n"),
    ("import numpy as np\n\nfrom mypkg import config\n",
     "import numpy as np\nimport torch\n\nfrom mypkg import config\n"),
    # a relative import is the project's own too
    ("import os\n\nfrom . import sibling\n", "import os\n\nimport torch\n\nfrom . import sibling\n"),
    # a module that does not resolve in the project is third-party
    ("import os\n\nfrom elsewhere import CN\n", "import os\n\nimport torch\nfrom elsewhere import CN\n"),
])
def test_the_added_import_of_torch_goes_before_the_projects_own_modules(tmp_path, head, expected):
    (tmp_path / "tools").mkdir()
    _fixed_in_a_project(tmp_path, "tools/train.py", head + "\n\ndef f(x):\n    return x.cuda()\n", "NRN201", expected)


def _fixed_in_a_project(root, name: str, src: str, code: str, expected: str) -> None:
    """Fix ``src`` as ``name`` in a project whose own package is ``mypkg``: the result starts with
    ``expected``, and ruff's isort finds nothing wrong before or after."""
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (root / "mypkg").mkdir(exist_ok=True)
    (root / "mypkg" / "__init__.py").write_text("")
    (root / "mypkg" / "config.py").write_text("CN = object\n")
    path = root / name
    path.write_text(src)
    assert _ruff_import_errors(path, root) == ""
    fixed = fix_text(src, str(path), Settings(select=(code,))).text
    assert fixed.startswith(expected), fixed
    path.write_text(fixed)
    assert _ruff_import_errors(path, root) == ""


@pytest.mark.parametrize("head,expected", [
    # axolotl's evaluate.py (set 41): among the third-party `from` imports, in the order of their modules
    ("import os\n\nimport torch\nfrom datasets import D\nfrom zzz import Z\n\nfrom mypkg.config import CN\n",
     "import os\n\nimport torch\nfrom datasets import D\nfrom torch.nn.attention import SDPBackend, sdpa_kernel\n"
     "from zzz import Z\n\nfrom mypkg.config import CN\n"),
    # at the end of the third-party section, before the project's own
    ("import torch\nfrom datasets import D\n\nfrom mypkg.config import CN\n",
     "import torch\nfrom datasets import D\nfrom torch.nn.attention import SDPBackend, sdpa_kernel\n\n"
     "from mypkg.config import CN\n"),
    # a section of its own after the standard library
    ("import os\n\nimport torch\n", "import os\n\nimport torch\nfrom torch.nn.attention import SDPBackend, sdpa_kernel\n"),
])
def test_an_added_from_import_of_torch_goes_where_isort_wants_it(tmp_path, head, expected):
    src = head + ("\n\ndef f(flash):\n    with torch.backends.cuda.sdp_kernel(enable_flash=False):\n"
                  "        return flash\n")
    _fixed_in_a_project(tmp_path, "mypkg/evaluate.py", src, "NRN209", expected)


COLLECT_ENV = '''\
import sys

try:
    import torch.utils.collect_env as torchenv
    from torch.cuda import device_count as cuda_device_count
    from torch.cuda import get_device_name as accel_device_name
    from torch.cuda import is_available as cuda_available
    TORCH_AVAILABLE = True
except (ImportError,):
    TORCH_AVAILABLE = False


def get_gpu_model() -> str:
    return accel_device_name(None) if cuda_available() else "N/A"


def get_cuda_device_count() -> int:
    return cuda_device_count() if TORCH_AVAILABLE else 0
'''


def test_no_import_of_torch_is_added_to_a_module_that_imports_from_torch_only_when_it_can():
    # composer's collect_env imports torch's submodules under `try ... except ImportError`, binding
    # no `torch`: a fix that needed the name added `import torch` at the top, and the module no
    # longer imported without torch
    result = fix_text(COLLECT_ENV, "collect_env.py", UNSAFE)
    assert "\nimport torch\n" not in result.text
    ast.parse(result.text)
    assert all("imports from torch only when torch is available" in f.fix_note for f in result.remaining)
    # the same code with torch imported at the top gets its fixes
    plain = fix_text(COLLECT_ENV.replace("import sys\n", "import sys\n\nimport torch\n"), "collect_env.py", UNSAFE).text
    assert "torch.accelerator.device_count()" in plain
