"""`# noqa` suppressions, the file-level `# neuron-lint: noqa`, NRN901 (unused noqa) and `--add-noqa`."""

import ast
import codecs
import os
import stat

import pytest

from neuron_lint.api import check_source
from neuron_lint.config.settings import Settings
from neuron_lint.suppress.add_noqa import add_noqa_to_text
from neuron_lint.suppress.noqa import scan

CUDA_AND_DOUBLE = "import torch\nx = torch.ones(2).cuda().double(){comment}\n"
WITH_901 = Settings(extend_select=("NRN901",))


def codes(text, settings=None):
    return [f.code for f in check_source(text, "m.py", settings)]


def apply_fixes(text, findings):
    """Apply each finding's fix edits (1-based line/char columns, end exclusive), last first."""
    lines = text.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    edits = sorted((e for f in findings if f.fix for e in f.fix.edits), reverse=True)
    for e in edits:
        start = offsets[e.line - 1] + e.col - 1
        end = offsets[e.end_line - 1] + e.end_col - 1
        text = text[:start] + e.content + text[end:]
    return text


def test_without_noqa_both_codes_are_reported():
    assert sorted(codes(CUDA_AND_DOUBLE.format(comment=""))) == ["NRN201", "NRN301"]


@pytest.mark.parametrize("comment,left", [
    ("  # noqa: NRN201", ["NRN301"]),
    ("  # noqa: NRN301", ["NRN201"]),
    ("  # noqa: NRN201, NRN301", []),
    ("  # noqa:NRN201,NRN301", []),
    ("  # noqa: NRN201 NRN301", []),
    ("  # noqa : NRN201", ["NRN301"]),
    ("  # NOQA: nrn201", ["NRN301"]),
    ("  # noqa", []),
    ("  #noqa", []),
    ("  # type: ignore  # noqa: NRN301", ["NRN201"]),
    ("  # noqa: NRN201 because the CPU path is tested elsewhere", ["NRN301"]),
    ("  # noqa: E501", ["NRN201", "NRN301"]),  # another tool's code: kept, not an error
    ("  # noqa: NRN999", ["NRN201", "NRN301"]),  # unknown code: ignored gracefully
    ("  # noqa: NRN2", ["NRN201", "NRN301"]),  # a prefix is not a code (as in ruff)
    ("  # noqa: not-a-code", ["NRN201", "NRN301"]),  # an invalid directive suppresses nothing
    ("  # noqanything", ["NRN201", "NRN301"]),
    ("  # neuron-lint: disable", ["NRN201", "NRN301"]),
])
def test_line_noqa(comment, left):
    assert sorted(codes(CUDA_AND_DOUBLE.format(comment=comment))) == left


def test_noqa_inside_a_string_is_not_a_directive():
    text = 'import torch\nx = torch.ones(2).cuda(); s = "# noqa: NRN201"\n'
    assert codes(text) == ["NRN201"]
    text = "import torch\nx = torch.ones(2).cuda(); s = '''\n# noqa\n'''\n"
    assert codes(text) == ["NRN201"]


def test_noqa_only_covers_its_own_line():
    text = "import torch\na = torch.ones(2).cuda()  # noqa: NRN201\nb = torch.ones(2).cuda()\n"
    assert [(f.code, f.line) for f in check_source(text, "m.py")] == [("NRN201", 3)]


def test_backslash_continuation_takes_the_noqa_at_its_end():
    text = "import torch\nx = torch.ones(2).cuda() + \\\n    1  # noqa: NRN201\n"
    assert codes(text) == []
    assert scan(text).target_line(2) == 3


def test_multiline_string_takes_the_noqa_at_its_end():
    text = 'import torch\nx = f"""\n{torch.ones(2).cuda()}\n"""  # noqa: NRN201\n'
    assert codes(text) == []


@pytest.mark.parametrize("header,left", [
    ("# neuron-lint: noqa\n", []),
    ("#neuron-lint:noqa\n", []),
    ("# neuron-lint: noqa: NRN301\n", ["NRN201"]),
    ("# neuron-lint: noqa: NRN201, NRN301\n", []),
    ("# noqa\n", ["NRN201", "NRN301"]),  # a bare noqa on its own line covers that line only
    ('"""# neuron-lint: noqa"""\n', ["NRN201", "NRN301"]),
])
def test_file_level_noqa(header, left):
    assert sorted(codes(header + CUDA_AND_DOUBLE.format(comment=""))) == left


# NRN901: unused suppressions (opt-in)

def test_unused_noqa_is_reported_only_when_selected():
    text = "import torch\nx = torch.ones(2)  # noqa: NRN201\n"
    assert codes(text) == []
    (f,) = check_source(text, "m.py", WITH_901)
    assert (f.code, f.line, f.col) == ("NRN901", 2, 20)
    assert "NRN201" in f.message
    assert f.fix is not None and f.fix.applicability == "safe"


@pytest.mark.parametrize("comment", [
    "  # noqa: NRN201",  # used
    "  # noqa",  # bare: other linters read it too
    "  # noqa: E501",  # another tool's code
    "  # noqa: NRN201, E501",
])
def test_used_or_foreign_noqa_is_not_reported(comment):
    text = f"import torch\nx = torch.ones(2).cuda(){comment}\n"
    assert "NRN901" not in codes(text, WITH_901)


def test_noqa_for_a_rule_not_enabled_is_not_judged():
    text = "import torch\nx = torch.ones(2)  # noqa: NRN301\n"
    assert codes(text, Settings(extend_select=("NRN901",), ignore=("NRN3",))) == []
    assert codes(text, WITH_901) == ["NRN901"]


def test_partly_used_noqa_names_only_the_unused_code_and_the_fix_keeps_the_rest():
    text = "import torch\nx = torch.ones(2).cuda()  # noqa: NRN201, NRN301, E501\n"
    (f,) = check_source(text, "m.py", WITH_901)
    assert f.message.endswith("NRN301")
    fixed = apply_fixes(text, [f])
    assert fixed == "import torch\nx = torch.ones(2).cuda()  # noqa: NRN201, E501\n"
    assert codes(fixed, WITH_901) == []


@pytest.mark.parametrize("line,after", [
    ("x = torch.ones(2)  # noqa: NRN201", "x = torch.ones(2)"),
    ("x = torch.ones(2)  # keep me  # noqa: NRN201", "x = torch.ones(2)  # keep me"),
    ("x = torch.ones(2)  # noqa: NRN201 reason", "x = torch.ones(2)  # reason"),
    ("x = torch.ones(2)  # noqa: NRN999", "x = torch.ones(2)"),
])
def test_unused_noqa_fix_never_loses_code_or_other_comments(line, after):
    text = f"import torch\n{line}\n"
    fixed = apply_fixes(text, check_source(text, "m.py", WITH_901))
    assert fixed == f"import torch\n{after}\n"
    ast.parse(fixed)
    assert codes(fixed, WITH_901) == []


def test_unused_file_level_noqa_is_reported():
    text = "# neuron-lint: noqa\nx = 1\n"
    (f,) = check_source(text, "m.py", WITH_901)
    assert f.code == "NRN901" and "file" in f.message
    text = "# neuron-lint: noqa\nimport torch\nx = torch.ones(2).cuda()\n"
    assert codes(text, WITH_901) == []


def test_unknown_nrn_code_is_reported_as_not_a_rule():
    (f,) = check_source("x = 1  # noqa: NRN999\n", "m.py", WITH_901)
    assert "not a neuron-lint rule" in f.message


# --add-noqa

def test_add_noqa_text_appends_and_extends():
    text = (
        "import torch\n"
        "a = torch.ones(2).cuda().double()\n"
        "b = torch.ones(2).cuda()  # move it\n"
        "c = torch.ones(2).cuda()  # noqa: E501\n"
        "d = torch.ones(2).cuda() + \\\n    1\n"
    )
    new, n = add_noqa_to_text(text, check_source(text, "m.py"))
    assert n == 4
    assert new == (
        "import torch\n"
        "a = torch.ones(2).cuda().double()  # noqa: NRN201, NRN301\n"
        "b = torch.ones(2).cuda()  # move it  # noqa: NRN201\n"
        "c = torch.ones(2).cuda()  # noqa: E501, NRN201\n"
        "d = torch.ones(2).cuda() + \\\n    1  # noqa: NRN201\n"
    )
    assert check_source(new, "m.py") == []
    assert add_noqa_to_text(new, check_source(new, "m.py")) == (new, 0)


def test_add_noqa_command_suppresses_everything_and_is_idempotent(cli, tmp_path):
    crlf = tmp_path / "crlf.py"
    crlf.write_bytes(b"import torch\r\nx = torch.ones(2).cuda()\r\n")
    bom = tmp_path / "bom.py"
    bom.write_bytes(codecs.BOM_UTF8 + "import torch\nx = torch.ones(2).cuda()  # café\n".encode())
    latin = tmp_path / "latin.py"
    latin.write_bytes("# -*- coding: latin-1 -*-\nimport torch\ny = torch.ones(2).double()  # déjà\n".encode("latin-1"))
    clean = tmp_path / "clean.py"
    clean.write_text("x = 1\n")
    os.chmod(crlf, 0o750)
    before_clean = clean.stat().st_mtime_ns

    r = cli("check", "--add-noqa", ".", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "Added 3 noqa directives in 3 files" in r.stderr
    assert crlf.read_bytes() == b"import torch\r\nx = torch.ones(2).cuda()  # noqa: NRN201\r\n"
    assert bom.read_bytes() == codecs.BOM_UTF8 + "import torch\nx = torch.ones(2).cuda()  # café  # noqa: NRN201\n".encode()
    assert latin.read_bytes() == "# -*- coding: latin-1 -*-\nimport torch\ny = torch.ones(2).double()  # déjà  # noqa: NRN301\n".encode("latin-1")
    assert stat.S_IMODE(crlf.stat().st_mode) == 0o750
    assert clean.stat().st_mtime_ns == before_clean
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".neuron-lint")]  # no temporary files left

    snapshot = {p: p.read_bytes() for p in (crlf, bom, latin)}
    r = cli("check", "--add-noqa", ".", cwd=tmp_path)
    assert r.returncode == 0 and "Added 0 noqa directives" in r.stderr
    assert {p: p.read_bytes() for p in snapshot} == snapshot

    r = cli("check", ".", cwd=tmp_path)
    assert r.returncode == 0, r.stdout
    r = cli("check", ".", "--extend-select", "NRN901", cwd=tmp_path)
    assert r.returncode == 0, r.stdout  # every suppression it wrote is used


def test_add_noqa_comments_dependency_manifests_too(cli, tmp_path):
    # (issue 15: a requirements line honours `# noqa`, so --add-noqa writes one; tests/test_workflow.py has the rest)
    req = tmp_path / "requirements.txt"
    req.write_text("torch\nflash-attn==2.5.8\n")
    (tmp_path / "train.py").write_text("import torch\nx = torch.ones(2).cuda()\n")
    r = cli("check", "--add-noqa", ".", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert req.read_text() == "torch\nflash-attn==2.5.8  # noqa: NRN680\n"
    assert (tmp_path / "train.py").read_text().endswith("# noqa: NRN201\n")
    r = cli("check", ".", "--output-format", "concise", cwd=tmp_path)
    assert r.returncode == 0 and "requirements.txt" not in r.stdout and "train.py" not in r.stdout


def test_add_noqa_reports_unparsable_files_and_still_does_the_others(cli, tmp_path):
    (tmp_path / "broken.py").write_text("def f(:\n")
    good = tmp_path / "ok.py"
    good.write_text("import torch\nx = torch.ones(2).cuda()\n")
    r = cli("check", "--add-noqa", ".", cwd=tmp_path)
    assert r.returncode == 2
    assert "broken.py" in r.stderr
    assert good.read_text().endswith("  # noqa: NRN201\n")


def test_fix_removes_unused_noqa_when_nrn901_is_selected(cli, tmp_path):
    src = tmp_path / "a.py"
    src.write_text("import torch\nx = torch.ones(2)  # noqa: NRN201\ny = 1  # keep  # noqa: NRN301, E501\n")
    r = cli("fix", "--extend-select", "NRN901", ".", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert src.read_text() == "import torch\nx = torch.ones(2)\ny = 1  # keep  # noqa: E501\n"
    assert cli("check", "--extend-select", "NRN901", ".", cwd=tmp_path).returncode == 0


TRICKY = "\n".join([
    r'a = "# noqa: NRN201 not a comment"  # noqa: NRN101',
    r"b = 'it\'s # noqa'  # noqa",
    'c = """',
    "# noqa inside a docstring",
    '"""  # noqa: NRN301',
    r"d = r'\\'  # NOQA:NRN201",
    "e = f\"{x!r} # noqa\" + \'\'\'#\'\'\' # noqa: E501",
    "f = x + \\",
    "    y  # noqa",
    r"""g = "\"" '#' "# noqa" """,
    "",
])


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_comment_finder_agrees_with_tokenize(newline):
    """The fast lexer finds exactly the comments Python's tokenizer finds (on tricky text and our own code)."""
    import io
    import tokenize
    from pathlib import Path

    from neuron_lint.suppress.noqa import _lex

    root = Path(__file__).resolve().parent.parent
    texts = [TRICKY] + [p.read_text() for p in sorted((root / "neuron_lint").rglob("*.py"))]
    texts += [p.read_text() for p in sorted((root / "tests").glob("*.py"))]
    for text in texts:
        text = text.replace("\n", newline)
        expected = [
            (t.start[0], t.start[1], t.string.rstrip("\r"))
            for t in tokenize.generate_tokens(io.StringIO(text, newline=None).readline)
            if t.type == tokenize.COMMENT and "noqa" in t.string.lower()
        ]
        assert [(a, b, c.rstrip("\r")) for a, b, c in _lex(text)[0]] == expected
