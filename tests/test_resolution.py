"""Name resolution: the ways real code imports torch, and the traps that must stay silent."""

import pytest

from neuron_lint.api import check_source


def codes(src: str) -> list[str]:
    return [f.code for f in check_source(src, "t.py")]


@pytest.mark.parametrize(
    "src,code",
    [
        ("import torch as th\nth.sparse.mm(a, b)\n", "NRN101"),
        ("import torch.nn.functional as F\nF.embedding(i, w, sparse=True)\n", "NRN101"),
        ("from torch import cuda, sparse\nsparse.mm(a, b)\n", "NRN101"),
        ("from torch.func import vmap\nvmap(f)(x)\n", "NRN102"),
        ("import functorch\nfunctorch.vmap(f)\n", "NRN102"),
        ("def f():\n    import torch\n    return torch.nested.nested_tensor([])\n", "NRN103"),
        # a function body sees module imports written below it, as Python does at call time
        ("def f():\n    return torch.float64\nimport torch\n", "NRN301"),
        ("import torch.distributions as D\nD.Normal(0, 1)\n", "NRN104"),
        ("import torch\nF = torch.func\nF.grad(f)\n", "NRN102"),
        ("class A:\n    def m(self):\n        return self.x.double()\n", "NRN301"),
        ("import torch\n@torch.func.grad\ndef loss(x):\n    return x\n", "NRN102"),
        ("import torch\nf = lambda x: torch.vmap(g)(x)\n", "NRN102"),
        # fastai v1 (DeOldify): torch comes in through a star import, relative or not
        ("from ..imports.torch import *\nuse_gpu = torch.cuda.is_available()\n", "NRN203"),
        ("from fastai import *\ntorch.cuda.empty_cache()\n", "NRN203"),
    ],
)
def test_resolved(src, code):
    assert code in codes(src)


@pytest.mark.parametrize(
    "src",
    [
        "def vmap(f):\n    return f\nvmap(abs)\n",  # a user function named vmap
        "from torch.nested import nested_tensor\ndef g(nested_tensor):\n    return nested_tensor(1)\n",  # a parameter hides the import
        "sparse = 1\nnested = 2\nprint(sparse.real, nested)\n",
        "import numpy as np\nx = np.float64(1.0)\ny = np.zeros(2, dtype=np.float64)\n",
        "s = 'call .cuda() and torch.sparse here'\n# x.cuda()\n",
        "import torch\nif x.dtype == torch.float64:\n    pass\n",
        "from .sparse import mm\nmm(a, b)\n",  # a relative import is the project's own module
        "import mylib\nmylib.torch.sparse.mm(a)\n",
    ],
)
def test_silent(src):
    assert codes(src) == []


def test_positions_are_one_based_characters():
    src = "import torch\nπ = torch.zeros(1, dtype=torch.float64)\n"
    (f,) = check_source(src, "t.py")
    assert (f.line, f.col, f.end_line, f.end_col) == (2, 26, 2, 39)
    assert src.splitlines()[1][f.col - 1: f.end_col - 1] == "torch.float64"


def test_method_span_covers_name_and_arguments():
    src = "y = model.to(dtype).cuda(\n    non_blocking=True)\n"
    (f,) = check_source(src, "t.py")
    assert (f.line, f.col, f.end_line, f.end_col) == (1, 21, 2, 23)


def test_guarded_import_is_not_an_error():
    src = "try:\n    import functorch\nexcept ImportError:\n    functorch = None\n"
    assert codes(src) == []


def test_value_alias_is_reported_once_where_assigned():
    src = (
        "import torch\n"
        "dtype = torch.float64\n"
        "x = torch.rand(2, dtype=dtype)\n"
        "m = model.to(dtype=dtype)\n"
    )
    assert [(f.code, f.line) for f in check_source(src, "t.py")] == [("NRN301", 2)]


def test_isinstance_class_argument_is_inert():
    src = (
        "import torch\n"
        "from torch.nn import DataParallel\n"
        "assert not isinstance(model, DataParallel)\n"
        "ok = issubclass(t, (torch.nn.DataParallel, int))\n"
        "model = DataParallel(model)\n"
    )
    assert [(f.code, f.line) for f in check_source(src, "t.py")] == [("NRN210", 5)]
