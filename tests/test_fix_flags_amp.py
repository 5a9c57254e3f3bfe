"""NRN205's disabling autocast decorator and NRN209's default-restating cuDNN flags: what the fixes
write, the traps they stay out of, and that the result means the same on this CPU-only torch (with
CUDA mapped to the CPU) while taking the current device's path elsewhere."""

import ast
import textwrap
import warnings

import pytest

from neuron_lint.api import check_source
from neuron_lint.config.settings import Settings
from neuron_lint.fixes.apply import fix_text

torch = pytest.importorskip("torch")


def _fix(src: str, *codes: str, path: str = "rotary.py", unsafe: bool = True) -> str:
    return fix_text(textwrap.dedent(src), path, Settings(select=codes, unsafe_fixes=unsafe)).text


def _findings(src: str, code: str, path: str = "rotary.py"):
    return [f for f in check_source(textwrap.dedent(src), path, Settings(select=(code,), unsafe_fixes=True))
            if f.code == code]


def _load(src: str) -> dict:
    scope = {"__name__": "rotary"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(src, "rotary.py", "exec"), scope)
    return scope


# ------------------------------------------------------------------ NRN205: @autocast(..., enabled=False)
ROTARY = """
import torch
from torch.amp import autocast


class Rotary(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("inv_freq", torch.linspace(0.1, 1.0, 4))

    @autocast('cuda', enabled = False)
    def forward(self, t):
        return torch.einsum("i,j->ij", t, self.inv_freq) @ torch.ones(4, 4)


@autocast("cuda", enabled=False)
def project(x, w):
    '''x @ w in full precision.'''
    return x @ w
"""


def test_disabling_decorator_moves_into_the_body_of_a_library_function():
    fixed = _fix(ROTARY, "NRN205")
    assert "@autocast" not in fixed
    assert fixed.count("with autocast(_current_device().type, enabled") == 2
    assert "    '''x @ w in full precision.'''\n    with autocast(" in fixed  # the docstring stays first
    ast.parse(fixed)
    assert _fix(fixed, "NRN205") == fixed  # a second run changes nothing
    assert not _findings(fixed, "NRN205")
    # safe: applied without --unsafe-fixes
    assert _fix(ROTARY, "NRN205", unsafe=False) == fixed


def test_disabling_decorator_fix_means_the_same_with_cuda_mapped_to_the_cpu():
    fixed = _load(_fix(ROTARY, "NRN205"))
    mapped = _load(textwrap.dedent(ROTARY).replace("'cuda'", "'cpu'").replace('"cuda"', '"cpu"'))
    untouched = _load(textwrap.dedent(ROTARY))
    x, w = torch.randn(3, 4), torch.randn(4, 5)
    t = torch.arange(3.0)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = (fixed["project"](x, w), fixed["Rotary"]()(t))
        want = (mapped["project"](x, w), mapped["Rotary"]()(t))
        old = untouched["project"](x, w)
    # the current device's autocast is off inside, as the mapped original's is ...
    assert [g.dtype for g in got] == [torch.float32, torch.float32]
    for g, v in zip(got, want):
        torch.testing.assert_close(g, v, rtol=0, atol=0)
    # ... while the original only switched CUDA autocast off (on Trainium: Neuron autocast stayed on)
    assert old.dtype == torch.bfloat16
    # and with no autocast around, nothing changes
    torch.testing.assert_close(fixed["project"](x, w), untouched["project"](x, w), rtol=0, atol=0)


def test_disabling_decorator_in_a_script_stays_a_decorator_naming_device():
    src = ROTARY + '\n\nif __name__ == "__main__":\n    print(project(torch.ones(2, 4), torch.ones(4, 2)))\n'
    fixed = _fix(src, "NRN205")
    assert fixed.count("@autocast(DEVICE.type, enabled") == 2 and "_current_device" not in fixed


@pytest.mark.parametrize("snippet,why", [
    ('@autocast("cuda", enabled=False)\ndef chunks(x):\n    yield x.float()\n', "generator"),
    ('@autocast("cuda", enabled=False)\nasync def run(x):\n    return x.float()\n', "async"),
    ('@autocast("cuda", enabled=False)\n@torch.no_grad()\ndef frozen(x):\n    return x.float()\n', "other decorators"),
    ('@autocast("cuda", enabled=False)\ndef one(x): return x.float()\n', "shares the `def` line"),
    ('@autocast("cuda")\ndef fast(x):\n    return x @ x\n', "library module must not probe"),
    ('@autocast("cuda", enabled=flag)\ndef maybe(x):\n    return x @ x\n', "library module must not probe"),
    ('@autocast("cuda", enabled=False)\nclass Block:\n    pass\n', "class"),
])
def test_disabling_decorator_traps_are_left_with_a_note(snippet, why):
    src = "import torch\nfrom torch.amp import autocast\n\nflag = False\n\n\n" + snippet
    assert _fix(src, "NRN205") == src
    notes = [f.fix_note for f in _findings(src, "NRN205")]
    assert notes and all(why in n for n in notes), notes


def test_disabling_decorator_with_comments_and_blank_lines():
    src = '''
    import torch


    # full precision for the rotation
    @torch.amp.autocast(device_type="cuda", enabled=False)  # keep fp32
    def rotate(t):
        """Rotate."""

        # the angles
        angles = t.cos()
        return angles
    '''
    fixed = _fix(src, "NRN205")
    assert "# full precision for the rotation\ndef rotate(t):" in fixed
    assert '    """Rotate."""\n\n    with torch.amp.autocast(device_type=_current_device().type, enabled=False):\n' \
           "        # the angles\n        angles = t.cos()\n        return angles\n" in fixed
    # the decorator's own trailing comment goes with it; nothing else is lost
    assert "keep fp32" not in fixed and "# the angles" in fixed


# ------------------------------------------------------------------ NRN209: flags that restate defaults
def test_cudnn_tf32_true_is_removed_and_the_cudnn_state_is_the_default():
    src = """
    import torch
    torch.backends.cuda.matmul.allow_tf32 = True # allow tf32 on matmul
    torch.backends.cudnn.allow_tf32 = True # allow tf32 on cudnn
    x = 1
    """
    fixed = _fix(src, "NRN209")
    assert "cudnn" not in fixed and 'torch.set_float32_matmul_precision("high") # allow tf32 on matmul' in fixed
    assert _fix(src, "NRN209", unsafe=False).count("cudnn.allow_tf32") == 1  # unsafe: not without the flag
    previous = torch.get_float32_matmul_precision()
    try:
        _load(fixed)
        assert torch.backends.cudnn.allow_tf32 is True  # what the removed line set: the default
    finally:
        torch.set_float32_matmul_precision(previous)


@pytest.mark.parametrize("src,why", [
    # it may undo the module's own `False`
    ("import torch\nif strict:\n    torch.backends.cudnn.allow_tf32 = False\nx = 1\n"
     "torch.backends.cudnn.allow_tf32 = True\ny = 2\n", "also sets `torch.backends.cudnn.allow_tf32`"),
    ("import torch\ntorch.backends.cudnn.conv.fp32_precision = 'ieee'\ntorch.backends.cudnn.allow_tf32 = True\n"
     "y = 2\n", "also sets"),
    # never into an empty block
    ("import torch\nif fast:\n    torch.backends.cudnn.allow_tf32 = True\n", "alone in its block"),
    # a comment above it would be left describing other code
    ("import torch\n# TF32 convolutions\ntorch.backends.cudnn.allow_tf32 = True\nx = 1\n", "comment above"),
])
def test_cudnn_tf32_true_traps(src, why):
    fixed = _fix(src, "NRN209")
    assert fixed.count("torch.backends.cudnn.allow_tf32 = True") == 1, fixed
    assert any(why in f.fix_note for f in _findings(src, "NRN209")), [f.fix_note for f in _findings(src, "NRN209")]


def test_benchmark_false_and_a_determinism_switch_say_why_they_stay():
    src = """
    import torch


    def set_determinism(debug):
        if debug.deterministic:
            torch.use_deterministic_algorithms(True, warn_only=debug.warn_only)
            torch.backends.cudnn.deterministic = True
            torch.backends.cudnn.benchmark = False
    """
    assert _fix(src, "NRN209") == textwrap.dedent(src)
    det, bench = (f.fix_note for f in _findings(src, "NRN209"))
    assert "other code may read the flag" in det and "add that call by hand" in det
    assert "turned on earlier" in bench and "default algorithm" in bench


def test_two_removable_flags_in_one_block_leave_one():
    src = """
    import torch
    if fast:
        torch.backends.cudnn.allow_tf32 = True
        torch.backends.cudnn.benchmark = True
    if tf32:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    """
    fixed = _fix(src, "NRN209")
    tree = ast.parse(fixed)
    blocks = [node.body for node in ast.walk(tree) if isinstance(node, ast.If)]
    assert [len(b) for b in blocks] == [1, 1], fixed
    assert 'torch.set_float32_matmul_precision("high")' in fixed and fixed.count("cudnn.allow_tf32") == 0
    assert _fix(fixed, "NRN209") == fixed


def test_disabling_decorator_is_not_moved_where_the_deeper_body_breaks_the_line_length():
    body = "    return x + " + " + ".join(["x"] * 19)  # 88 characters: one more level is 92
    src = 'import torch\nfrom torch.amp import autocast\n\n\n@autocast("cuda", enabled=False)\ndef f(x):\n' + body + "\n"
    assert _fix(src, "NRN205") == src
    assert _fix(src.replace(" + x\n", "\n"), "NRN205") != src.replace(" + x\n", "\n")  # 84: moved


def test_disabling_decorator_never_names_a_local_assigned_in_the_body():
    src = """
    import torch
    from torch.amp import autocast


    @autocast("cuda", enabled=False)
    def f(x):
        device = torch.device("cuda")
        return x.to(device).float()
    """
    fixed = _fix(src, "NRN205")
    assert "with autocast(_current_device().type, enabled=False):" in fixed, fixed
    assert "device.type" not in fixed.split("with autocast", 1)[1].split("\n", 1)[0]
