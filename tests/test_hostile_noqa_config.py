"""Hostile files and configurations, second round (issue 18): ``--add-noqa`` never writes inside a
string or after a ``\\`` continuation and is idempotent, free text after ``noqa:`` is read one way,
configuration mistakes are one clear error naming the file, non-text codecs are a per-file error,
configuration work is done once per run (not per file), and unreadable folders are named, not fatal.
"""

from __future__ import annotations

import ast
import io
import os
import time
import tokenize
from pathlib import Path

import pytest
from conftest import as_other_user

from neuron_lint.api import analyze_source, check_paths
from neuron_lint.catalog.loading import load_catalog
from neuron_lint.config import files as config
from neuron_lint.config.settings import Settings
from neuron_lint.io import discovery
from neuron_lint.suppress.add_noqa import add_noqa, add_noqa_to_text

CUDA = "import torch\nx = torch.ones(1).cuda()\n"  # NRN201 at 2:19


def nrn201(result) -> list[tuple[str, int]]:
    return sorted((Path(f.path).name, f.line) for f in result.findings if f.code == "NRN201")


def strings_of(text: str) -> list[str]:
    return [t.string for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type == tokenize.STRING]


# ---------------------------------------------------------------- 1. --add-noqa places comments safely
# source -> the line its `# noqa: NRN201` must end up on
PLACEMENT = {
    "string_after_the_call": ('import torch\nx = torch.ones(1).cuda() if """\nabc""" else 1\n', [3]),
    "string_after_a_semicolon": ('import torch\ns = torch.ones(1).cuda(); t = """a\nb\n"""\n', [4]),
    "backslash": ("import torch\nz = torch.ones(1).cuda() + \\\n    1\n", [3]),
    "backslash_chain": ("import torch\nz = torch.ones(1).cuda() + \\\n    1 + \\\n    2\n", [4]),
    "string_then_backslash": ('import torch\nx = f(torch.ones(1).cuda(), """\n""", \\\n  2)\n', [4]),
    "crlf_backslash": ("import torch\r\nz = torch.ones(1).cuda() + \\\r\n    1\r\n", [3]),
    "cr_only_string": ('import torch\rx = torch.ones(1).cuda(); s = """\r"""\r', [3]),
    "no_final_newline": ("import torch\nz = torch.ones(1).cuda() + \\\n    1", [3]),
    "indented_backslash": ("import torch\nif True:\n    x = torch.ones(1).cuda() \\\n        + 1\n", [4]),
}


@pytest.mark.parametrize("name", sorted(PLACEMENT))
def test_add_noqa_never_writes_inside_a_string_or_after_a_backslash(tmp_path, name):
    source, expected = PLACEMENT[name]
    f = tmp_path / "m.py"
    f.write_bytes(source.encode())
    assert "noqa" not in source  # the case the issue found: a file with no noqa yet
    result = add_noqa([str(f)], Settings())
    assert result.errors == [] and result.added == 1
    new = f.read_bytes().decode()
    compile(new, "m.py", "exec")  # still parses
    normal = new.replace("\r\n", "\n").replace("\r", "\n")
    assert ast.dump(ast.parse(normal)) == ast.dump(ast.parse(source.replace("\r\n", "\n").replace("\r", "\n")))
    assert strings_of(normal) == strings_of(source.replace("\r\n", "\n").replace("\r", "\n"))
    lines = normal.split("\n")
    assert [i for i, line in enumerate(lines, 1) if line.endswith("# noqa: NRN201")] == expected
    assert nrn201(check_paths([str(f)], Settings(), jobs=1)) == []  # and it is read as a suppression
    assert add_noqa([str(f)], Settings()).added == 0 and f.read_bytes().decode() == new  # idempotent


def test_add_noqa_to_text_refuses_rather_than_writing_a_comment_that_is_not_read(monkeypatch):
    """The result is verified: if a placement were ever wrong, nothing is written."""
    from neuron_lint.suppress import add_noqa as module

    text, _ = PLACEMENT["backslash"]
    findings, _ = analyze_source(text, "m.py", Settings(), load_catalog())
    monkeypatch.setattr(module, "comment_lines", lambda tokens: [1, 2, 3])  # a wrong table: line 2 ends in "\"
    with pytest.raises(module.NoqaPlacementError):
        add_noqa_to_text(text, findings)


# ---------------------------------------------------------------- 2. free text after `noqa:`
FREE_TEXT = "import torch\nx = torch.ones(1).cuda()  # noqa: see-ticket-12\n"


def test_free_text_after_noqa_colon_silences_nothing_and_add_noqa_is_idempotent(tmp_path):
    """Decision: `# noqa: <not a code>` is not a directive (as in ruff: a mistyped code list must
    not silence every rule). --add-noqa adds one real directive after it, once."""
    f = tmp_path / "m.py"
    f.write_text(FREE_TEXT)
    assert nrn201(check_paths([str(f)], Settings(), jobs=1)) == [("m.py", 2)]
    assert add_noqa([str(f)], Settings()).added == 1
    once = f.read_text()
    assert once == "import torch\nx = torch.ones(1).cuda()  # noqa: see-ticket-12  # noqa: NRN201\n"
    assert nrn201(check_paths([str(f)], Settings(), jobs=1)) == []
    for _ in range(2):
        assert add_noqa([str(f)], Settings()).added == 0
        assert f.read_text() == once


FREE_TEXT_FORMS = {  # comment -> whether it silences NRN201
    "# noqa: see-ticket-12": False,
    "# noqa: see-ticket-12  # noqa: NRN201": True,  # a later directive in the same comment counts
    "# noqa: NRN201 see ticket 12": True,  # text after a code list is a reason
    "# neuron-lint: noqa: NRN301  # noqa: NRN201": True,  # a line directive after a file-level one
    "# neuron-lint: noqa: see-ticket  # noqa: NRN201": True,
}


def test_free_text_is_read_the_same_way_by_check_and_add_noqa(tmp_path):
    for i, (comment, silenced) in enumerate(FREE_TEXT_FORMS.items()):
        f = tmp_path / f"m{i}.py"
        f.write_text(f"import torch\nx = torch.ones(1).cuda()  {comment}\n")
        assert (nrn201(check_paths([str(f)], Settings(), jobs=1)) == []) is silenced, comment
        before = f.read_text()
        add_noqa([str(f)], Settings())
        add_noqa([str(f)], Settings())
        after = f.read_text()
        assert after.count("# noqa: NRN201") == 1 and (after == before) is silenced, (comment, after)
        assert nrn201(check_paths([str(f)], Settings(), jobs=1)) == []


# ---------------------------------------------------------------- 3. deeply nested pyproject.toml
DEEP_TOML = b"[tool.neuron-lint]\nx = " + b"[" * 100_000 + b"\n"


def test_deeply_nested_pyproject_is_one_error_naming_the_file(tmp_path):
    (tmp_path / "pyproject.toml").write_bytes(DEEP_TOML)
    with pytest.raises(config.ConfigError, match=r"pyproject\.toml: cannot be read: nested too deeply"):
        config.load_config(tmp_path / "pyproject.toml")
    with pytest.raises(config.ConfigError, match=r"pyproject\.toml: cannot be read: nested too deeply"):
        config.find_config([str(tmp_path)])


def test_deeply_nested_pyproject_through_the_cli(tmp_path, cli):
    (tmp_path / "pyproject.toml").write_bytes(DEEP_TOML)
    (tmp_path / "good.py").write_text(CUDA)
    r = cli("check", "--no-cache", ".", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.startswith("neuron-lint: error: pyproject.toml: cannot be read: nested too deeply"), r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr and r.stderr.count("\n") == 1


# ---------------------------------------------------------------- 4. coding cookies that are not text encodings
@pytest.mark.parametrize("codec", ["rot13", "base64", "zlib", "hex"])
def test_a_codec_that_is_not_a_text_encoding_is_a_per_file_error(tmp_path, codec):
    (tmp_path / "bad.py").write_bytes(f"# coding: {codec}\nx = 1\n".encode())
    (tmp_path / "good.py").write_text(CUDA)
    result = check_paths([str(tmp_path)], Settings(), jobs=1)
    assert [(Path(e.path).name, e.reason) for e in result.errors] == [
        ("bad.py", f"cannot be decoded: `{codec}` is not a text encoding")]
    assert nrn201(result) == [("good.py", 2)]  # the scan went on


def test_a_non_text_codec_through_the_cli(tmp_path, cli):
    (tmp_path / "rot.py").write_bytes(b"# coding: rot13\nx = 1\n")
    (tmp_path / "good.py").write_text(CUDA)
    r = cli("check", "--no-cache", "--output-format", "concise", ".", cwd=tmp_path)
    assert r.returncode == 2
    assert "rot.py: cannot be decoded: `rot13` is not a text encoding" in r.stderr, r.stderr
    assert "internal error" not in r.stderr + r.stdout and "Traceback" not in r.stderr
    assert "good.py:2:19: NRN201" in r.stdout


# ---------------------------------------------------------------- 5. configuration work is done once per run
def _tree(root: Path, n: int = 200) -> list[Path]:
    files = []
    for i in range(n):
        d = root / f"pkg{i % 10}"
        d.mkdir(exist_ok=True)
        files.append(d / f"m{i}.py")
        files[-1].write_text("x = 1\n")
    return files


def _within(seconds: float, items, what: str):
    """Iterate ``items``, failing as soon as the whole loop has taken longer than ``seconds``."""
    t0 = time.perf_counter()
    for item in items:
        yield item
        if time.perf_counter() - t0 > seconds:
            pytest.fail(f"{what} took over {seconds} s: configuration work is redone per file")


def test_a_50000_entry_select_and_ignore_are_resolved_once(tmp_path):
    """Expected well under a second (linear validation, rules resolved once); 111 s before."""
    codes = load_catalog().codes
    select = [codes[-1 - i % 3] for i in range(50_000)]  # most rules are in none of the 50,000 entries
    ignore = [codes[-2]] * 50_000
    (tmp_path / "neuron-lint.toml").write_text(
        "select = [" + ",".join(f'"{c}"' for c in select) + "]\n"
        "ignore = [" + ",".join(f'"{c}"' for c in ignore) + "]\n")
    files = _tree(tmp_path)
    t0 = time.perf_counter()
    settings = config.resolve([str(tmp_path)]).settings
    assert time.perf_counter() - t0 < 10
    catalog = load_catalog()
    expected = settings.enabled_codes(catalog)
    assert expected == {codes[-1], codes[-3]}
    for f in _within(10, files, "200 files with a 50,000-entry select"):
        assert settings.codes_for(str(f), catalog) == expected


def test_10000_exclude_globs_over_200_files_are_compiled_once(tmp_path):
    """Expected about a second (globs compiled once, a few regex calls per path); 15 minutes before."""
    globs = [f"generated_{i}/*.py" if i % 2 else f"*_gen_{i}.py" for i in range(10_000)] + ["pkg3/*"]
    (tmp_path / "neuron-lint.toml").write_text("extend-exclude = [" + ", ".join(f'"{g}"' for g in globs) + "]\n")
    _tree(tmp_path)
    settings = config.resolve([str(tmp_path)]).settings
    assert len(settings.extend_exclude) > 10_000  # anchored copies of the path globs too
    found = list(_within(30, discovery.iter_python_files([str(tmp_path)], settings), "10,000 globs over 200 files"))
    names = {p.parent.name for p in found if isinstance(p, Path) and p.suffix == ".py"}
    assert names == {f"pkg{i}" for i in range(10) if i != 3}  # the globs still work


def test_10000_per_file_ignores_are_compiled_once(tmp_path):
    pairs = {f"generated_{i}/*.py": ["NRN201"] for i in range(10_000)}
    pairs["pkg3/*"] = ["NRN2"]
    body = "\n".join(f'"{g}" = {codes!r}'.replace("'", '"') for g, codes in pairs.items())
    (tmp_path / "neuron-lint.toml").write_text("[per-file-ignores]\n" + body + "\n")
    files = _tree(tmp_path)
    settings = config.resolve([str(tmp_path)]).settings
    catalog = load_catalog()
    for f in _within(30, files, "10,000 per-file-ignores over 200 files"):
        codes = settings.codes_for(str(f), catalog)
        assert ("NRN201" in codes) is (f.parent.name != "pkg3")


def test_glob_matching_is_unchanged_by_compiling():
    """The compiled glob set matches exactly what fnmatch per pattern matched (name, path, tail, absolute)."""
    import fnmatch

    from neuron_lint.config.settings import GlobSet

    patterns = ["build", "*.pyi", "legacy/*.py", "a/b", "[ab]?.py", "x*/y", "/abs/dir/*", "deep/*/z.py", "q"]
    paths = ["build", "src/build", "m.pyi", "legacy/x.py", "src/legacy/x.py", "a/b", "z/a/b", "aa.py", "c1.py",
             "xx/y", "w/xx/y", "/abs/dir/f.py", "deep/1/2/z.py", "q/r.py", "src/q", "legacyx/y.py", "ab/b"]

    def old(path: str) -> bool:
        posix, name = Path(path).as_posix(), Path(path).name
        if any(fnmatch.fnmatchcase(name, p) or fnmatch.fnmatchcase(posix, p) or fnmatch.fnmatchcase(posix, f"*/{p}")
               for p in patterns):
            return True
        return any(fnmatch.fnmatchcase(Path(os.path.abspath(path)).as_posix(), p) for p in patterns if os.path.isabs(p))

    globs = GlobSet(patterns)
    assert [globs.match(p) for p in paths] == [old(p) for p in paths]


# ---------------------------------------------------------------- 6. folders without search permission
def _refuse_under(monkeypatch, locked: Path) -> None:
    """What the kernel does for a non-root user when ``locked`` has mode 0: stat of anything in it,
    opening anything in it and listing it fail with EACCES (simulated, so the test runs as root)."""
    inside = str(locked) + os.sep

    def guard(real, also_itself=False):
        def wrapper(path, *args, **kwargs):
            p = os.path.abspath(os.fspath(path)) if not isinstance(path, int) else ""
            if p.startswith(inside) or (also_itself and p == str(locked)):
                raise PermissionError(13, "Permission denied", os.fspath(path))
            return real(path, *args, **kwargs)
        return wrapper

    monkeypatch.setattr(os, "stat", guard(os.stat))
    monkeypatch.setattr(os, "lstat", guard(os.lstat))
    monkeypatch.setattr(os, "open", guard(os.open))
    monkeypatch.setattr(os, "scandir", guard(os.scandir, also_itself=True))


def test_a_folder_without_search_permission_is_named_and_the_scan_goes_on(tmp_path, monkeypatch):
    locked = tmp_path / "sub" / "locked"
    locked.mkdir(parents=True)
    (locked / "hidden.py").write_text(CUDA)
    (tmp_path / "sub" / "good.py").write_text(CUDA)
    _refuse_under(monkeypatch, locked)
    result = check_paths([str(tmp_path)], Settings(), jobs=1)
    assert [(e.path, e.reason) for e in result.errors] == [(str(locked), "directory cannot be read: Permission denied")]
    assert nrn201(result) == [("good.py", 2)]


def test_a_file_named_under_an_unsearchable_folder_is_named_as_unreadable(tmp_path, monkeypatch):
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "hidden.py").write_text(CUDA)
    (tmp_path / "good.py").write_text(CUDA)
    _refuse_under(monkeypatch, locked)
    result = check_paths([str(locked / "hidden.py"), str(tmp_path / "good.py")], Settings(), jobs=1)
    assert [(Path(e.path).name, e.reason) for e in result.errors] == [("hidden.py", "cannot be read: Permission denied")]
    assert nrn201(result) == [("good.py", 2)]


def test_configuration_lookup_under_an_unsearchable_folder_goes_on(tmp_path, monkeypatch):
    locked = tmp_path / "locked"
    (locked / "inner").mkdir(parents=True)
    (tmp_path / "neuron-lint.toml").write_text('ignore = ["NRN301"]\n')
    _refuse_under(monkeypatch, locked)
    # the file under the locked folder cannot be seen; the walk up finds the one above it
    assert config.find_config([str(locked / "inner" / "m.py")]) == tmp_path / "neuron-lint.toml"
    assert config.resolve([str(locked / "inner")]).settings.ignore == ("NRN301",)
    with pytest.raises(config.ConfigError, match="--config: .*c.toml: cannot be read: Permission denied"):
        config.resolve(config=str(locked / "c.toml"))


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root searches every folder")
def test_a_folder_readable_but_not_searchable_is_named(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "hidden.py").write_text(CUDA)
    (tmp_path / "good.py").write_text(CUDA)
    locked.chmod(0o600)  # listable, but nothing in it can be opened or stat'ed
    try:
        result = check_paths([str(tmp_path)], Settings(), jobs=1)
    finally:
        locked.chmod(0o755)
    assert [(Path(e.path).name, e.reason) for e in result.errors] == [("locked", "directory cannot be read: Permission denied")]
    assert nrn201(result) == [("good.py", 2)]


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to act as a second user")
def test_a_folder_another_user_cannot_read_is_named_for_that_user():
    # The same case as a real second user (the suite runs as root in CI): root's folder, mode 0700.
    import json
    import shutil
    import tempfile

    top = Path(tempfile.mkdtemp(prefix="nl-locked-", dir="/tmp"))
    try:
        top.chmod(0o755)
        locked = top / "locked"
        locked.mkdir()
        (locked / "hidden.py").write_text(CUDA)
        (top / "good.py").write_text(CUDA)
        (top / "good.py").chmod(0o644)
        locked.chmod(0o700)
        def check_it() -> bytes:
            result = check_paths([str(top)], Settings(), jobs=1)
            said = {"errors": [(Path(e.path).name, e.reason) for e in result.errors], "found": nrn201(result)}
            return json.dumps(said).encode()

        said = json.loads(as_other_user(check_it) or b"{}")
        assert said["errors"] == [["locked", "directory cannot be read: Permission denied"]]
        assert said["found"] == [["good.py", 2]]
    finally:
        shutil.rmtree(top)
