"""`neuron-lint fix` on real files: what it writes, what it keeps, what it refuses."""

import ast
import os
import stat

import pytest

from neuron_lint.catalog.loading import load_catalog
from neuron_lint.config.settings import Settings
from neuron_lint.engine.pipeline import analyze_source
from neuron_lint.fixes import files as fixing
from neuron_lint.fixes.apply import fix_text
from neuron_lint.fixes.files import fix_file

# The module-level device of a script, as `ruff format` would print it (within 88 columns).
IDIOM = (
    "DEVICE = (\n"
    "    torch.accelerator.current_accelerator()\n"
    "    if torch.accelerator.is_available()\n"
    '    else torch.device("cpu")\n'
    ")\n"
)

SCRIPT = '''\
"""Train on the GPU."""
import torch  # the framework

# -- model ---------------------------------------------------------------


def build(width):
    model = torch.nn.Linear(width, width).cuda()   # keep   spacing
    x = torch.zeros(2, width, device="cuda")
    return model(x.cuda(non_blocking=True))


if torch.cuda.is_available():
    torch.cuda.synchronize()
'''


def write(path, content, mode=None):
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    if mode is not None:
        os.chmod(path, mode)
    return path


def test_fix_rewrites_every_site_with_one_device_definition():
    result = fix_text(SCRIPT, "train.py")
    out = result.text
    assert out.count(IDIOM) == 1  # several fixes asked for it; it is inserted once
    assert "cuda" not in out.replace("torch.cuda", "").lower() or "torch.cuda" not in out
    assert ".to(DEVICE)" in out and ".to(DEVICE, non_blocking=True)" in out and "device=DEVICE.type" in out
    assert "torch.accelerator.is_available()" in out and "torch.accelerator.synchronize()" in out
    ast.parse(out)
    assert fix_text(out, "train.py").text == out


def test_bytes_outside_the_edits_are_kept():
    out = fix_text(SCRIPT, "train.py").text
    kept = [line for line in SCRIPT.splitlines(keepends=True) if "cuda" not in line]
    it = iter(out.splitlines(keepends=True))
    for line in kept:  # every untouched line is still there, in order, byte for byte
        assert any(line == other for other in it), f"lost or changed: {line!r}"
    assert "# keep   spacing" in out and '"cuda"' not in out


def test_crlf_bom_and_mode_are_kept(tmp_path):
    path = write(tmp_path / "m.py", b"\xef\xbb\xbf" + SCRIPT.replace("\n", "\r\n").encode(), 0o751)
    result = fix_file(path)
    assert result.written and result.changed and not result.error
    data = path.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf")
    assert b"\n" not in data.replace(b"\r\n", b"")  # every line, new ones included, ends in CRLF
    assert IDIOM.replace("\n", "\r\n").encode() in data
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o751
    assert [p.name for p in tmp_path.iterdir()] == ["m.py"]  # no temporary file left behind


def test_latin1_cookie_is_kept(tmp_path):
    src = "# -*- coding: latin-1 -*-\nimport torch\nnom = 'café'\nx = torch.ones(2).cuda()\n"
    path = write(tmp_path / "l.py", src.encode("latin-1"))
    assert fix_file(path).written
    data = path.read_bytes()
    assert data.startswith(b"# -*- coding: latin-1 -*-\n")
    assert "café".encode("latin-1") in data
    assert data.decode("latin-1").endswith("x = torch.ones(2).to(DEVICE)\n")


def test_file_changed_while_fixing_is_left_alone(tmp_path, monkeypatch):
    path = write(tmp_path / "m.py", SCRIPT)
    real = fixing.fix_text

    def fix_and_meanwhile_edit(*args, **kwargs):
        out = real(*args, **kwargs)
        path.write_text(SCRIPT + "# edited by someone else\n")
        return out

    monkeypatch.setattr(fixing, "fix_text", fix_and_meanwhile_edit)
    result = fix_file(path)
    assert not result.written
    assert "changed on disk" in result.error.reason
    assert path.read_text().endswith("# edited by someone else\n")


def test_no_fix_without_changes_leaves_file_untouched(tmp_path):
    path = write(tmp_path / "ok.py", "import torch\nx = torch.ones(2)\n")
    before = os.stat(path).st_mtime_ns
    result = fix_file(path)
    assert not result.changed and not result.written
    assert os.stat(path).st_mtime_ns == before


def test_unsafe_fixes_only_when_asked():
    src = "import torch\ntorch.backends.cudnn.allow_tf32 = True\nx = 1\n"
    assert fix_text(src, "m.py").text == src
    assert fix_text(src, "m.py", Settings(unsafe_fixes=True)).text == "import torch\nx = 1\n"


def test_a_guard_and_the_device_it_chooses_are_rewritten_together():
    # The availability guard inside the device definition is part of NRN202's rewrite of the value.
    src = 'import torch\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\nm = Net().cuda()\n'
    result = fix_text(src, "m.py")
    assert result.text == "import torch\n" + IDIOM.replace("DEVICE", "device") + "m = Net().to(device)\n"
    assert {"NRN201", "NRN202"} <= {f.code for f in result.applied}
    assert not result.remaining


def test_user_alias_is_kept_and_torch_imported_when_missing():
    out = fix_text("import torch as th\nth.cuda.synchronize()\ny = x.cuda()\n", "m.py").text
    assert "th.accelerator.synchronize()" in out and "th.accelerator.current_accelerator()" in out
    assert "import torch\n" not in out
    # The CUDA import is removed once its last use is rewritten, and torch is imported instead.
    out = fix_text("from torch.cuda import synchronize\nsynchronize()\n", "m.py").text
    assert out == "import torch\n\ntorch.accelerator.synchronize()\n"


def test_a_torch_imported_only_when_available_is_not_imported_unconditionally():
    src = (
        "from .utils import is_torch_available\n"
        "if is_torch_available():\n"
        "    import torch\n"
        "\n"
        "\n"
        "def sync():\n"
        "    torch.cuda.synchronize()\n"
    )
    out = fix_text(src, "m.py").text
    assert "torch.accelerator.synchronize()" in out
    assert out.count("import torch") == 1  # no unconditional `import torch`: the package still imports without torch
    # nor a helper whose annotation names torch: defining it would raise NameError without torch
    moved = fix_text(src.replace("torch.cuda.synchronize()", "return torch.zeros(1).cuda()"), "m.py").text
    assert "def _current_device():" in moved and "-> torch.device" not in moved, moved
    ns = {"__name__": "m", "is_torch_available": lambda: False}
    exec(compile(moved.replace("from .utils import is_torch_available\n", ""), "m.py", "exec"), ns)


def test_a_library_module_never_probes_the_device_at_import():
    src = "import torch\n\n\ndef to_device(x):\n    return x.cuda()\n"
    out = fix_text(src, "lib.py").text
    assert "DEVICE =" not in out and "def _current_device() -> torch.device:" in out
    assert "return x.to(_current_device())" in out
    ns = {}
    exec(compile(out, "lib.py", "exec"), ns)  # importing it runs no device query; calling it works on a CPU host
    torch = pytest.importorskip("torch")
    assert ns["to_device"](torch.ones(1)).device.type == "cpu"


def test_a_local_device_in_scope_is_reused():
    src = (
        "import torch\n\n\n"
        "def run(model, x):\n"
        "    device = torch.device(\"cuda\")\n"
        "    model = model.cuda()\n"
        "    return model(x.cuda())\n"
    )
    out = fix_text(src, "lib.py", Settings(select=("NRN201",))).text
    assert "model = model.to(device)" in out and "model(x.to(device))" in out
    assert "_current_device" not in out


@pytest.mark.parametrize("src", [
    "x = y.cuda()",  # no newline at the end of the file
    "#!/usr/bin/env python\n# -*- coding: utf-8 -*-\nx = y.cuda()\n",  # shebang and cookie stay first
])
def test_definition_placement(src):
    out = fix_text(src, "m.py").text
    ast.parse(out)
    assert out.splitlines()[-1] == "x = y.to(DEVICE)"
    if src.startswith("#!"):
        assert out.startswith("#!/usr/bin/env python\n# -*- coding: utf-8 -*-\n")


# ---------------------------------------------------------------------- command line
def test_fix_diff_writes_nothing_and_exit_codes(cli, tmp_path):
    path = write(tmp_path / "t.py", SCRIPT)
    r = cli("fix", "--diff", str(path))
    assert r.returncode == 1, r.stderr
    assert r.stdout.startswith(f"--- {path}\n+++ {path}\n")
    assert "".join("+" + line + "\n" for line in IDIOM.splitlines()) in r.stdout
    assert "Would fix" in r.stderr
    assert path.read_text() == SCRIPT
    clean = write(tmp_path / "clean.py", "import torch\nx = torch.ones(2)\n")
    r = cli("fix", "--diff", str(clean))
    assert r.returncode == 0 and r.stdout == ""


def test_fix_reports_changes_and_what_is_left(cli, tmp_path):
    path = write(tmp_path / "t.py", SCRIPT + "torch.backends.cudnn.allow_tf32 = True\nname = torch.cuda.get_device_name(0)\n")
    r = cli("fix", str(path))
    assert r.returncode == 1  # something is left
    assert f"Fixed 5 findings in {path}" in r.stdout
    assert "2 findings remain (2 fixable with `--unsafe-fixes`)" in r.stdout
    assert "torch.cuda.get_device_name(0)" in path.read_text()
    check = cli("check", "--output-format", "concise", str(path))
    assert "NRN204" in check.stdout and "2 more with `--unsafe-fixes`" in check.stdout
    r = cli("fix", "--unsafe-fixes", str(path))
    assert "torch.get_device_module().get_device_name(0)" in path.read_text()


def test_check_fix_and_device_neuron(cli, tmp_path):
    path = write(tmp_path / "t.py", SCRIPT)
    r = cli("check", "--fix", "--device", "neuron", "--output-format", "concise", str(path))
    text = path.read_text()
    assert '.to("neuron")' in text and 'device="neuron"' in text and "DEVICE" not in text
    assert r.returncode == 0, r.stdout + r.stderr


def test_bad_options_and_bad_files(cli, tmp_path):
    assert cli("fix", "--device", "tpu", str(tmp_path)).returncode == 2
    assert cli("fix", "--min-torch", "two", str(tmp_path)).returncode == 2
    write(tmp_path / "a_broken.py", "def f(:\n")
    good = write(tmp_path / "b_good.py", "import torch\nx = torch.ones(2).cuda()\n")
    r = cli("fix", str(tmp_path))
    assert r.returncode == 2
    assert "a_broken.py:1" in r.stderr and "Traceback" not in r.stderr
    assert ".to(DEVICE)" in good.read_text()  # the other file was still fixed


def test_flag_lines_never_leave_an_empty_block():
    src = (
        "import logging\nimport torch\n"
        "if torch.backends.cudnn.is_available():\n"
        "    torch.backends.cuda.matmul.allow_tf32 = True\n"
        "    torch.backends.cudnn.benchmark = True\n"
        "_logger = logging.getLogger('validate')\n"
    )
    out = fix_text(src, "m.py", Settings(select=("NRN209",), unsafe_fixes=True)).text
    ast.parse(out)
    assert "pass" not in out and "_logger = logging.getLogger('validate')" in out
    assert "torch.set_float32_matmul_precision('high')" in out  # the device-agnostic equivalent of TF32 on


def test_the_edits_of_many_fixes_in_one_file_add_up_to_the_fix():
    # JSON and SARIF carry each fix's edits; past a handful of fixes they come from one
    # transformation of the file, and applied together they must give what `fix` writes.
    from neuron_lint.api import check_source
    from neuron_lint.fixes.edits import apply_edits
    from neuron_lint.fixes.rewrite import ALONE_LIMIT

    body = "".join(f"    x{i} = torch.ones({i + 1}).cuda()\n    y{i} = torch.zeros(2, device=\"cuda\")\n"
                   for i in range(ALONE_LIMIT * 2))
    src = "import torch\n\n\ndef main():\n" + body + "\n\nif __name__ == \"__main__\":\n    main()\n"
    findings = check_source(src, "train.py", Settings(fix_edits=True))
    fixable = [f for f in findings if f.fix is not None]
    assert len(fixable) == ALONE_LIMIT * 4 and all(f.fix.edits for f in fixable)
    together, applied = apply_edits(src, fixable)
    assert len(applied) == len(fixable)
    assert together == fix_text(src, "train.py", Settings()).text
    ast.parse(together)


def test_no_fix_adds_a_line_past_the_line_length_even_in_a_file_that_has_long_lines():
    long_comment = "# " + "x" * 110  # already past 88: the file fails E501 before the fix
    # a statement with a comment is not broken up (tests/test_fix_wrap.py): the fix is dropped
    tight = "    all_valid_tokens = torch.tensor(number_of_tokens, device=\"cuda\")  # tokens, all rank"
    assert len(tight) <= 88 < len(tight) - len('"cuda"') + len("DEVICE.type")
    src = ("import torch\n\n" + long_comment + "\n\n\ndef main(number_of_tokens):\n" + tight + "\n"
           "    y = torch.ones(2).cuda()\n    return all_valid_tokens, y\n\n\n"
           "if __name__ == \"__main__\":\n    main(3)\n")
    result = fix_text(src, "train.py", Settings())
    long_lines = [line for line in result.text.splitlines() if len(line) > 88]
    assert long_lines == [long_comment]  # the tight line is left as it was, with a note
    # and so is the function's other placement: half moved to the accelerator, it would mix devices
    # (InternImage's collect_results_gpu, set 41)
    assert result.text == src and not result.applied
    (left,) = [f for f in result.remaining if f.code == "NRN202"]
    assert "88 characters" in left.fix_note
    (tied,) = [f for f in result.remaining if f.code == "NRN201"]
    assert "same function or `__main__` block (line 7)" in tied.fix_note and "mixes devices" in tied.fix_note, tied.fix_note
    # what `fix` leaves is no longer offered as fixable (`[*]`), and `check` says the same, with the same reasons
    assert left.fix is None and tied.fix is None
    offered = analyze_source(src, "train.py", Settings(fix_edits=True), load_catalog())[0]
    assert {(f.code, f.fix, f.fix_note) for f in offered if f.code in ("NRN201", "NRN202")} == {
        (f.code, None, f.fix_note) for f in (left, tied)}
    # a placement in another function is not held back
    other = src.replace("if __name__", "def other():\n    return torch.zeros(1).cuda()\n\n\nif __name__")
    fixed = fix_text(other, "train.py", Settings()).text
    assert "return torch.zeros(1).to(DEVICE)" in fixed and "    y = torch.ones(2).cuda()" in fixed


def test_a_file_whose_code_already_passes_the_line_length_is_not_held_to_it():
    long_code = "    settings = dict(" + ", ".join(f"option_{i}={i}" for i in range(12)) + ")"  # code, past 88
    assert len(long_code) > 88
    src = ("import torch\n\nnumber_of_tokens = 3\n\n\ndef main():\n" + long_code + "\n"
           "    all_valid_tokens = torch.tensor(number_of_tokens, dtype=torch.float, device=\"cuda\")\n"
           "    return settings, all_valid_tokens\n\n\nif __name__ == \"__main__\":\n    main()\n")
    result = fix_text(src, "train.py", Settings())
    assert '"cuda"' not in result.text  # the project does not keep to 88 characters: neither do we


@pytest.mark.parametrize("name,text", [
    (".flake8", "[flake8]\nmax-line-length = 100\n"),
    ("setup.cfg", "[metadata]\nname = d\n\n[flake8]\nmax_line_length=100  # black's 100\n"),
    ("tox.ini", "[flake8]\nmax-line-length = 100\n"),
    ("setup.cfg", "[isort]\nline_length=100\nmulti_line_output=3\n"),  # detectron2
    # composer: ruff configured without a line length (and without E501), yapf formatting at 100+
    ("pyproject.toml", "[tool.ruff.lint]\nselect = [\"F401\"]\n\n[tool.yapf]\ncolumn_limit = 100\n"),
    ("pyproject.toml", "[tool.ruff]\ntarget-version = \"py39\"\n\n[tool.isort]\nline_length = 100\n"),
])
def test_flake8_and_isort_line_lengths_are_the_projects_too(tmp_path, name, text):
    # detectron2 keeps 100 in setup.cfg: held to 88, a file of 100-character lines counted as one
    # that does not keep a line length, and the AMP rewrites left 111-character lines in it
    (tmp_path / name).write_text(text)
    kept = "    " + "total = first_value_of_the_batch + second_value_of_the_batch + third_value_ok + 1.0 + 2.0 + 3.0"
    assert 88 < len(kept) <= 100
    grown = "    scaler = torch.cuda.amp.GradScaler(init_scale=2.0**16, growth_interval=2000, enabled=True)"
    src = "import torch\n\n\ndef main(first_value_of_the_batch, second_value_of_the_batch, third_value_ok):\n" + \
        kept + "\n" + grown + "\n    return total, scaler\n"
    path = tmp_path / "pkg" / "train.py"
    path.parent.mkdir()
    path.write_text(src)
    assert fix_file(path, Settings(select=("NRN205",))).written
    fixed = path.read_text()
    assert "torch.amp.GradScaler(" in fixed and kept in fixed
    assert max(len(line) for line in fixed.splitlines()) <= 100, fixed


@pytest.mark.parametrize("hook,expected", [
    ("-   repo: https://github.com/psf/black\n    rev: 23.7.0\n    hooks:\n    - id: black\n", 88),
    ("- repo: https://github.com/psf/black\n  hooks:\n    - id: black\n      args: [--line-length=100]\n"
     "- repo: https://github.com/pycqa/flake8\n  hooks:\n    - id: flake8\n", 100),
    ("- repo: https://github.com/pycqa/flake8\n  hooks:\n    - id: flake8\n", 110),
])
def test_a_formatter_run_by_pre_commit_decides_before_flake8(tmp_path, hook, expected):
    # theseus (set 74): flake8 allows 100, but pre-commit and CI run black at its default 88;
    # wrapped at 100, four fixed files failed `black --check`
    from neuron_lint.fixes.line_length import line_length_of

    (tmp_path / "setup.cfg").write_text("[flake8]\nmax-line-length = 110\n")
    (tmp_path / ".pre-commit-config.yaml").write_text("repos:\n" + hook)
    assert line_length_of(str(tmp_path)) == expected


def test_inserted_definitions_follow_the_indentation_most_of_the_file_uses():
    """RWKV-v8's layers (held out) indent one helper with tabs and everything else with spaces;
    LibCST takes the first indented block's tabs, and the inserted DEVICE block was tab-indented."""
    settings = Settings(select=("NRN2",))
    mixed = ("import torch\n\n\ndef rosa(x):\n\treturn x\n\n\nclass Layer(torch.nn.Module):\n"
             "    def __init__(self):\n        super().__init__()\n        self.w = 1\n\n\n"
             "layer = Layer().cuda()\n")
    fixed = fix_text(mixed, "layer.py", settings).text
    assert "DEVICE = (\n    torch.accelerator.current_accelerator()\n" in fixed
    assert "def rosa(x):\n\treturn x\n" in fixed  # the file's own tabs stay
    tabbed = "import torch\n\n\ndef main():\n\tif True:\n\t\treturn torch.zeros(2).cuda()\n"
    assert 'def _current_device() -> torch.device:\n\t"""' in fix_text(tabbed, "main.py", settings).text  # a tabbed file keeps tabs
