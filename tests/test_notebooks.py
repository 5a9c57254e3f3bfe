"""Jupyter notebooks: checked, located by cell, suppressed, fixed and written back byte for byte."""

from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path

import jsonschema
import pytest

from neuron_lint.api import check_paths
from neuron_lint.config.settings import Settings
from neuron_lint.fixes.files import fix_file
from neuron_lint.output import RenderOptions, get_renderer
from neuron_lint.suppress.add_noqa import add_noqa

DATA = Path(__file__).parent / "data"


def cell(kind: str, source, **extra) -> dict:
    out = {"cell_type": kind, "metadata": {}, "source": source}
    if kind == "code":
        out.update({"execution_count": None, "outputs": []})
    out.update(extra)
    return out


def notebook(*cells, language: str = "python", **meta) -> dict:
    return {
        "cells": list(cells),
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": language, "name": "python3"},
                     "language_info": {"name": language}, **meta},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def lines(text: str) -> list[str]:
    """A cell source as Jupyter stores it: a list of lines, each with its newline but the last."""
    return text.splitlines(keepends=True)


def write_jupyter(path: Path, nb: dict, **dump) -> bytes:
    """As Jupyter writes a notebook: one-space indent, sorted keys, UTF-8, a final newline."""
    options = {"indent": 1, "sort_keys": True, "ensure_ascii": False, **dump}
    data = (json.dumps(nb, **options) + "\n").encode("utf-8")
    path.write_bytes(data)
    return data


PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

TRAINING = notebook(
    cell("markdown", lines("# Train a small model\nOn the GPU.")),
    cell("code", lines("%matplotlib inline\nimport torch\n!nvidia-smi")),
    cell("code", lines("device = 'cuda'\nmodel = torch.nn.Linear(2, 2).cuda()\nx = torch.ones(2, device=device)"),
         execution_count=3,
         outputs=[{"output_type": "display_data", "data": {"image/png": PNG, "text/plain": ["<Figure>"]}, "metadata": {}}]),
    cell("code", lines("%%bash\n  nvidia-smi --query-gpu=name --format=csv\n  python -c 'import torch; torch.ones(1).cuda()'\n")),
    cell("code", lines("for step in range(2):\n    %time y = model(x)\ntorch.cuda.synchronize()")),
    cell("code", []),
)


def render(result, fmt: str) -> str:
    out = io.StringIO()
    get_renderer(fmt)(result, out, RenderOptions(color=False))
    return out.getvalue()


@pytest.fixture
def training(tmp_path: Path) -> Path:
    path = tmp_path / "train.ipynb"
    write_jupyter(path, TRAINING)
    return path


def test_findings_are_located_in_their_cells(training: Path):
    result = check_paths([str(training)], Settings())
    assert not result.errors
    got = {(f.cell, f.line, f.col, f.code) for f in result.findings}
    # cell 1 is markdown: the code cells are 2..6; magics (%, !, %%bash, %time) give nothing
    assert got == {(3, 1, 10, "NRN202"), (3, 2, 31, "NRN201"), (5, 3, 1, "NRN203")}
    text = render(result, "concise")
    assert f"{training}:cell 3:2:31: NRN201" in text or "train.ipynb:cell 3:2:31: NRN201" in text
    full = render(result, "full")
    assert "2 | model = torch.nn.Linear(2, 2).cuda()" in full  # the source line comes from the cell


def test_json_and_sarif_carry_the_cell(training: Path):
    settings = Settings(fix_edits=True)
    result = check_paths([str(training)], settings)
    items = json.loads(render(result, "json"))
    assert {(i["cell"], i["location"]["row"]) for i in items} == {(3, 1), (3, 2), (5, 3)}
    cuda = next(i for i in items if i["code"] == "NRN201")
    # the edits of the fix are in cell coordinates too, each naming its cell
    assert all("cell" in e for e in cuda["fix"]["edits"])
    assert any(e["cell"] == 3 and e["location"]["row"] == 2 for e in cuda["fix"]["edits"])
    log = json.loads(render(result, "sarif"))
    schema = json.loads((DATA / "sarif-schema-2.1.0.json").read_text())
    jsonschema.validate(log, schema)
    locations = [r["locations"][0] for r in log["runs"][0]["results"]]
    assert {(loc["properties"]["cell"], loc["physicalLocation"]["region"]["startLine"]) for loc in locations} == {
        (3, 1), (3, 2), (5, 3)}
    github = render(result, "github")
    assert "line=" not in github.split("\n")[0] and "cell 3:1:10: NRN202" in github


def test_a_python_file_has_no_cell(tmp_path: Path):
    (tmp_path / "a.py").write_text("import torch\nx = torch.ones(1).cuda()\n")
    items = json.loads(render(check_paths([str(tmp_path / "a.py")], Settings()), "json"))
    assert items[0]["cell"] is None
    assert ":2:19: NRN201" in render(check_paths([str(tmp_path / "a.py")], Settings()), "concise")


def test_noqa_works_inside_a_cell(tmp_path: Path):
    path = tmp_path / "nb.ipynb"
    write_jupyter(path, notebook(cell("code", lines("import torch\nx = torch.ones(1).cuda()  # noqa: NRN201\ny = x.cuda()"))))
    result = check_paths([str(path)], Settings())
    assert [(f.cell, f.line, f.code) for f in result.findings] == [(1, 3, "NRN201")]


def test_cells_are_one_module(tmp_path: Path):
    """An alias imported in one cell is known in a later one."""
    path = tmp_path / "nb.ipynb"
    write_jupyter(path, notebook(cell("code", lines("import torch as T")), cell("markdown", "text"),
                                 cell("code", lines("T.cuda.synchronize()"))))
    result = check_paths([str(path)], Settings())
    assert [(f.cell, f.line, f.code) for f in result.findings] == [(3, 1, "NRN203")]


def test_fix_rewrites_only_the_changed_cell_sources(training: Path):
    original = training.read_bytes()
    done = fix_file(training, Settings())
    assert done.error is None and done.written
    fixed = training.read_bytes()
    before, after = json.loads(original), json.loads(fixed)
    # everything but the code of cells 2, 3 and 5 is as it was: outputs, metadata, counts, markdown
    for key in ("metadata", "nbformat", "nbformat_minor"):
        assert after[key] == before[key]
    assert len(after["cells"]) == len(before["cells"])
    changed = [i for i, (a, b) in enumerate(zip(before["cells"], after["cells"])) if a != b]
    assert changed == [1, 2, 4]
    for a, b in zip(before["cells"], after["cells"]):
        assert {k: v for k, v in a.items() if k != "source"} == {k: v for k, v in b.items() if k != "source"}
    assert after["cells"][1]["source"][0] == "%matplotlib inline\n"  # magics come back as they were
    assert after["cells"][1]["source"][-1] == "!nvidia-smi"
    assert after["cells"][4]["source"] == ["for step in range(2):\n", "    %time y = model(x)\n",
                                           "torch.accelerator.synchronize()"]
    assert "".join(after["cells"][2]["source"]).startswith("device = DEVICE.type\n")
    # and byte for byte: the lines of the file that differ are lines of source lists
    diff = [line for line in _changed_lines(original.decode(), fixed.decode())]
    assert diff and all(re.fullmatch(r'\s*"(?:[^"\\]|\\.)*",?', line) for line in diff), diff
    assert fixed.endswith(b"}\n")
    # a second fix changes nothing, and does not write the file
    stat = os.stat(training)
    again = fix_file(training, Settings())
    assert not again.changed and training.read_bytes() == fixed and os.stat(training).st_mtime_ns == stat.st_mtime_ns


def _changed_lines(a: str, b: str) -> list[str]:
    import difflib

    return [line[2:] for line in difflib.ndiff(a.splitlines(), b.splitlines()) if line[:2] in ("+ ", "- ")]


def test_the_fixed_code_runs_as_the_cells_do(tmp_path: Path):
    """The fixed cells, run in order on this CPU-only host, define the model on the CPU."""
    pytest.importorskip("torch")
    path = tmp_path / "nb.ipynb"
    write_jupyter(path, notebook(cell("code", lines("import torch")),
                                 cell("code", lines("model = torch.nn.Linear(2, 2).cuda()\nout = model(torch.ones(1, 2).cuda())"))))
    assert fix_file(path, Settings()).written
    namespace: dict = {}
    for c in json.loads(path.read_text())["cells"]:
        exec("".join(c["source"]), namespace)  # noqa: S102 - our own fixed test code
    assert namespace["out"].device.type == "cpu"


@pytest.mark.parametrize("ending", ["", "\n", "\n\n"])
def test_a_cell_given_the_device_definition_ends_as_it_did(tmp_path: Path, ending: str):
    """The ``DEVICE`` definition goes at the end of the cell of imports; that cell keeps its ending
    (Jupyter stores a cell's last line without a newline), so the fixed notebook adds no blank line."""
    path = tmp_path / "nb.ipynb"
    write_jupyter(path, notebook(cell("code", lines("import torch" + ending)),
                                 cell("code", lines("model = torch.nn.Linear(2, 2).cuda()"))))
    assert fix_file(path, Settings()).written
    first = "".join(json.loads(path.read_text())["cells"][0]["source"])
    assert first.startswith("import torch\n\nDEVICE = (\n") and first.endswith(")" + ending), first


def test_cells_written_with_crlf_keep_it(tmp_path: Path):
    """A notebook whose cells end their lines with ``\r\n`` (Grad-TTS's inference notebook, read set
    93) keeps them in the cells a fix changes: new lines too, and a second run changes nothing."""
    path = tmp_path / "nb.ipynb"
    write_jupyter(path, notebook(cell("code", lines("import torch\r\n\r\nx = 1\r\n")),
                                 cell("code", lines("model = torch.nn.Linear(2, 2).cuda()\r\ny = 2"))))
    assert fix_file(path, Settings()).written
    sources = ["".join(c["source"]) for c in json.loads(path.read_text())["cells"]]
    assert "DEVICE = (\r\n" in sources[0] and ".to(DEVICE)\r\ny = 2" in sources[1]
    assert all(text.count("\n") == text.count("\r\n") for text in sources)
    assert not fix_file(path, Settings()).written


def test_an_added_import_and_device_go_below_the_setup_cells(tmp_path: Path):
    """d3rlpy's tutorials (set 62) start with a Colab-only cell of `!apt-get`/`!pip install` lines,
    skipped elsewhere: the `import torch` and `DEVICE` a fix adds go into the cell of the first
    imports, after the installs, not into that cell (a NameError where it is skipped)."""
    path = tmp_path / "tutorial.ipynb"
    write_jupyter(path, notebook(cell("code", lines("!apt-get install -y xvfb\n!pip install pygame")),
                                 cell("code", lines("!pip install d3rlpy")),
                                 cell("code", lines("import d3rlpy\n\ndataset = d3rlpy.datasets.get_cartpole()")),
                                 cell("code", lines("cql = d3rlpy.algos.DQNConfig().create(device='cuda:0')\ncql.fit(dataset)"))))
    assert fix_file(path, Settings()).written
    sources = ["".join(c["source"]) for c in json.loads(path.read_text())["cells"]]
    assert sources[:2] == ["!apt-get install -y xvfb\n!pip install pygame", "!pip install d3rlpy"]
    assert sources[2].startswith("import d3rlpy\nimport torch\n\nDEVICE = (\n"), sources[2]
    assert "create(device=f'{DEVICE.type}:0')" in sources[3]


def test_a_notebook_with_nothing_to_fix_is_not_rewritten(tmp_path: Path):
    path = tmp_path / "clean.ipynb"
    write_jupyter(path, notebook(cell("code", lines("import torch\nx = torch.ones(1)"))))
    before = os.stat(path)
    done = fix_file(path, Settings())
    assert not done.changed and not done.written
    assert os.stat(path).st_mtime_ns == before.st_mtime_ns and os.stat(path).st_ino == before.st_ino


def dump(nb: dict, style: str) -> bytes:
    """``nb`` as a given writer stores it."""
    text = json.dumps(nb, indent=2 if style == "vscode" else 1, ensure_ascii=style == "ascii")
    if style != "no-final-newline":
        text += "\n"
    if style == "crlf":
        text = text.replace("\n", "\r\n")
    return (b"\xef\xbb\xbf" if style == "bom" else b"") + text.encode()


@pytest.mark.parametrize("style", ["vscode", "ascii", "one-string", "crlf", "no-final-newline", "bom"])
def test_fix_keeps_the_files_own_style(tmp_path: Path, style: str):
    code = "import torch\n# é: déjà vu\nx = torch.ones(1).cuda()"
    source = code if style == "one-string" else lines(code)
    nb = notebook(cell("code", source), cell("markdown", lines("Ünïcode *text*")))
    path = tmp_path / "nb.ipynb"
    path.write_bytes(dump(nb, style))
    assert fix_file(path, Settings()).written
    fixed = path.read_bytes()
    new_source = json.loads(fixed.decode("utf-8-sig"))["cells"][0]["source"]
    new_code = new_source if isinstance(new_source, str) else "".join(new_source)
    assert ".to(DEVICE)" in new_code and "# é: déjà vu" in new_code
    assert isinstance(new_source, str) == (style == "one-string")
    # what the same writer would have written with the new source: the very same bytes
    nb["cells"][0]["source"] = new_source
    assert fixed == dump(nb, style)
    if style == "ascii":
        assert "\\u00e9" in fixed.decode("ascii")


def test_add_noqa_writes_into_the_cells(training: Path):
    done = add_noqa([str(training)], Settings())
    assert done.added == 3 and not done.errors
    assert check_paths([str(training)], Settings()).findings == []
    cells = json.loads(training.read_text())["cells"]
    assert cells[2]["source"][1] == "model = torch.nn.Linear(2, 2).cuda()  # noqa: NRN201\n"
    assert cells[2]["outputs"][0]["data"]["image/png"] == PNG


@pytest.mark.parametrize("content, why", [
    (b"{not json", "is not a valid notebook"),
    (b'{"cells": 3}', 'no "cells" list'),
    (b'{"worksheets": [], "nbformat": 3}', "nbformat 3"),
    (b'{"cells": [{"cell_type": "code", "source": 3}]}', "cell 1 has a source that is not text"),
    (b"[" * 5000 + b"]" * 5000, "nested too deeply"),
    (b"\xff\xfe{}", "not UTF-8"),
])
def test_a_malformed_notebook_is_one_error_and_the_scan_goes_on(tmp_path: Path, content: bytes, why: str):
    (tmp_path / "bad.ipynb").write_bytes(content)
    (tmp_path / "good.py").write_text("import torch\nx = torch.ones(1).cuda()\n")
    result = check_paths([str(tmp_path)], Settings())
    assert len(result.errors) == 1 and result.errors[0].path.endswith("bad.ipynb")
    assert why in result.errors[0].reason
    assert [f.code for f in result.findings] == ["NRN201"]
    done = fix_file(tmp_path / "bad.ipynb", Settings())
    assert done.error is not None and why in done.error.reason and (tmp_path / "bad.ipynb").read_bytes() == content


def test_a_syntax_error_is_located_in_its_cell(tmp_path: Path):
    path = tmp_path / "nb.ipynb"
    write_jupyter(path, notebook(cell("code", lines("import torch")), cell("code", lines("x = 1\ny = (\n"))))
    result = check_paths([str(path)], Settings())
    (error,) = result.errors
    assert error.cell == 2 and error.line == 2 and error.where.endswith(":cell 2:2:5")


def test_a_notebook_in_another_language_is_skipped_with_a_warning(tmp_path: Path):
    path = tmp_path / "r.ipynb"
    write_jupyter(path, notebook(cell("code", lines("library(torch)\nx <- torch_ones(1)$cuda()")), language="R"))
    result = check_paths([str(path)], Settings())
    assert not result.errors and not result.findings
    assert [w.reason for w in result.warnings] == ["a notebook in R, not Python; skipped"]


def test_a_directory_walk_checks_notebooks(tmp_path: Path):
    write_jupyter(tmp_path / "a.ipynb", notebook(cell("code", lines("import torch\ntorch.cuda.synchronize()"))))
    (tmp_path / "b.py").write_text("x = 1\n")
    result = check_paths([str(tmp_path)], Settings())
    assert result.files_checked == 2 and [f.path.endswith("a.ipynb") for f in result.findings] == [True]


def test_fix_diff_shows_each_changed_cell(cli, training: Path):
    run = cli("fix", "--diff", str(training))
    assert run.returncode == 1
    assert f"--- a/{training}:cell 3" in run.stdout or ":cell 3\n" in run.stdout
    assert "-torch.cuda.synchronize()" in run.stdout and "+torch.accelerator.synchronize()" in run.stdout
    assert "cell 4" not in run.stdout  # the %%bash cell is not touched


def test_the_command_line_on_a_notebook_and_a_non_python_file(cli, training: Path, tmp_path: Path):
    (tmp_path / "README.md").write_text("# Train\nRun `model.cuda()` first.\n")
    run = cli("check", "--output-format", "concise", str(training), str(tmp_path / "README.md"))
    assert run.returncode == 1, run.stderr
    assert "train.ipynb:cell 5:3:1: NRN203" in run.stdout
    assert f"warning: {tmp_path / 'README.md'}: not a Python file, skipped" in run.stderr
    assert "error" not in run.stderr
    clean = cli("check", str(tmp_path / "README.md"))
    assert clean.returncode == 0 and "not a Python file, skipped" in clean.stderr


def test_a_script_without_a_suffix_is_checked_when_its_shebang_says_python(tmp_path: Path):
    script = tmp_path / "train"
    script.write_text("#!/usr/bin/env python3\nimport torch\nx = torch.ones(1).cuda()\n")
    other = tmp_path / "Makefile"
    other.write_text("all:\n\tpython train.py\n")
    result = check_paths([str(script), str(other)], Settings())
    assert [f.code for f in result.findings] == ["NRN201"]
    assert [w.path for w in result.warnings] == [str(other)] and not result.errors


def test_automagic_lines_are_ipython_not_syntax_errors(tmp_path: Path):
    path = tmp_path / "nb.ipynb"
    write_jupyter(path, notebook(cell("code", lines("pip install diffusers torch")),
                                 cell("code", lines("cd /content\nimport torch\ntorch.cuda.synchronize()"))))
    result = check_paths([str(path)], Settings())
    assert not result.errors
    assert [(f.cell, f.line, f.code) for f in result.findings] == [(2, 3, "NRN203")]


def test_each_section_that_imports_torch_again_gets_the_device_it_uses(tmp_path: Path):
    """captum's Distributed_Attribution (set 35) imports torch again for Part 2, which it runs after a
    kernel restart: the definition went after that second import only, so Part 1 raised NameError on
    CUDA; now Part 1 defines it after its own imports, and Part 2 again after its own. Each part run
    alone in a fresh namespace finds it."""
    pytest.importorskip("torch")
    path = tmp_path / "nb.ipynb"
    write_jupyter(path, notebook(
        cell("code", lines("import torch")),
        cell("code", lines("x = torch.ones(2).cuda()")),
        cell("markdown", lines("## Part 2: restart the kernel first")),
        cell("code", lines("import os\n\nimport torch")),
        cell("code", lines("y = torch.zeros(2).cuda()")),
    ))
    assert fix_file(path, Settings(select=("NRN2",))).written
    sources = ["".join(c["source"]) for c in json.loads(path.read_text())["cells"]]
    assert sources[0].startswith("import torch\n\nDEVICE = (") and sources[3].startswith("import os\n\nimport torch\n\nDEVICE = (")
    for part in (sources[:2], sources[3:]):
        namespace: dict = {}
        for source in part:
            exec(source, namespace)  # noqa: S102 - our own fixed test code
    assert namespace["y"].device.type == "cpu"
    assert not fix_file(path, Settings(select=("NRN2",))).written  # a second run changes nothing


def test_a_cell_magic_stays_its_cells_first_line(tmp_path: Path):
    """axolotl's Colab example (set 41): its first cell is `%%capture` and pip installs. The `import
    torch` and the device definition went above `%%capture`, where IPython no longer reads it as a
    cell magic and the install cell fails; they now go to the next cell that starts with Python."""
    path = tmp_path / "nb.ipynb"
    write_jupyter(path, notebook(cell("code", lines("%%capture\n!pip install axolotl")),
                                 cell("code", lines("from collections import OrderedDict\nx = OrderedDict()")),
                                 cell("code", lines("m = make_model().to('cuda')"))))
    assert fix_file(path, Settings()).written
    sources = ["".join(c["source"]) for c in json.loads(path.read_text())["cells"]]
    assert sources[0] == "%%capture\n!pip install axolotl", sources
    # after the cell's standard-library import, as isort sorts them, the device after both
    assert sources[1].startswith("from collections import OrderedDict\n\nimport torch\n\nDEVICE = (\n"), sources
    assert sources[1].endswith(")\n\nx = OrderedDict()"), sources
    assert sources[2] == "m = make_model().to(DEVICE)", sources
    assert not fix_file(path, Settings()).written  # a second run changes nothing
