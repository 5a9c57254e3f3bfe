"""Hostile input never crashes a scan: each bad file gets one message naming it and the reason,
the other files are still checked, and the exit code is 2 (README "Guarantees").
"""

from __future__ import annotations

import ast
import os
import random
import stat
import sys
import time
from pathlib import Path

import pytest

from neuron_lint.api import check_file, check_paths, check_source
from neuron_lint.config.settings import Settings
from neuron_lint.errors import ParseError
from neuron_lint.io import discovery

CUDA = "import torch\nx = torch.ones(1).cuda()\n"  # NRN201 at 2:19
GOOD_NAME = "good.py"


def errors_by_name(result) -> dict[str, str]:
    return {Path(e.path).name: e.reason for e in result.errors}


def scan(*paths, settings: Settings | None = None):
    return check_paths([str(p) for p in paths], settings or Settings(), jobs=1)


def cuda_lines(result, name: str) -> list[tuple[int, int]]:
    return [(f.line, f.col) for f in result.findings if Path(f.path).name == name and f.code == "NRN201"]


# ---------------------------------------------------------------- contents that cannot be checked
# name -> (bytes, a phrase the reason must contain)
UNREADABLE: dict[str, tuple[bytes, str]] = {
    "syntax_error.py": (b"import torch\ndef f(:\n    pass\n", "syntax error"),
    "python2_print.py": (b'print "hello"\n', "Missing parentheses in call to 'print'"),
    "python2_octal.py": (b"mode = 0777\n", "leading zeros"),
    "python2_except.py": (b"try:\n    pass\nexcept ValueError, e:\n    pass\n", "syntax error"),
    "python2_backticks.py": (b"x = `1`\n", "syntax error"),
    "undecodable.py": (b'x = "\xff\xfe caf\xe9"\n', "cannot be decoded as utf-8"),
    "unknown_cookie.py": (b"# -*- coding: klingon -*-\nx = 1\n", "unknown encoding 'klingon'"),
    "cookie_lies.py": (b"# coding: ascii\nx = 'caf\xc3\xa9'\n", "cannot be decoded as ascii"),
    "nul_byte.py": (b"x = 1\x00\ny = 2\n", "NUL byte"),
    "binary.py": (bytes(range(256)) * 64, "NUL byte"),
    "png_named_py.py": (b"\x89PNG\r\n\x1a\n\xff\xd8\xff\xe0garbage", "cannot be decoded"),
    "unterminated.py": (b'x = """never closed\n\n', "syntax error"),
    "bad_indent.py": (b"if True:\n    x = 1\n  y = 2\n", "syntax error"),
    "tabs_and_spaces.py": (b"if True:\n        x = 1\n\ty = 2\n", "syntax error"),
    "parens_300.py": (b"x = " + b"(" * 300 + b"1" + b")" * 300 + b"\n", "too many nested parentheses"),
    "binop_100k.py": (b"x = " + b"+".join([b"a"] * 100_000) + b"\n", "too deeply nested to parse"),
    "not_100k.py": (b"x = " + b"not " * 100_000 + b"a\n", "too deeply nested to parse"),
    "indent_150.py": (b"".join(b" " * i + b"if a:\n" for i in range(150)) + b" " * 150 + b"pass\n", "too many levels of indentation"),
}


def _this_python_parses(data: bytes) -> bool:
    try:
        ast.parse(data)
    except (SyntaxError, RecursionError, MemoryError, ValueError):
        return False
    return True


# How deep a parser goes depends on the Python running it (3.10 reads a 100,000-term sum that 3.11
# refuses). Deep code this Python can parse is not unreadable: it must simply be checked.
PARSED_HERE = {n: UNREADABLE.pop(n)[0] for n in ("binop_100k.py", "not_100k.py") if _this_python_parses(UNREADABLE[n][0])}


@pytest.mark.parametrize("name", sorted(PARSED_HERE) or [pytest.param("none", marks=pytest.mark.skip(reason="this Python refuses them all"))])
def test_deep_code_this_python_parses_is_checked(tmp_path, name):
    (tmp_path / name).write_bytes(PARSED_HERE[name])
    result = check_file(tmp_path / name)
    assert result.errors == [] and result.files_checked == 1


@pytest.mark.parametrize("name", sorted(UNREADABLE))
def test_unreadable_content_is_one_error_and_the_scan_goes_on(tmp_path, name):
    data, phrase = UNREADABLE[name]
    (tmp_path / name).write_bytes(data)
    (tmp_path / GOOD_NAME).write_text(CUDA)
    result = scan(tmp_path)
    errors = errors_by_name(result)
    assert list(errors) == [name]
    assert phrase in errors[name]
    assert cuda_lines(result, GOOD_NAME) == [(2, 19)]  # the scan went on
    assert all(Path(f.path).name == GOOD_NAME for f in result.findings)


def test_syntax_error_position_is_reported(tmp_path):
    f = tmp_path / "bad.py"
    f.write_bytes(UNREADABLE["syntax_error.py"][0])
    (err,) = check_file(f).errors
    assert (err.line, err.col) == (2, 7)


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="this Python reads 3.12 syntax")
@pytest.mark.parametrize("code,feature", [
    ("type Vector = list[float]\n", "`type` alias statement"),
    ("def first[T](xs: list[T]) -> T:\n    return xs[0]\n", "type parameters"),
    ("class Box[T]:\n    pass\n", "type parameters"),
    ("x = f\"{d[\"key\"]}\"\n", "f-string"),
])
def test_code_for_a_newer_python_says_which_python_to_use(code, feature):
    with pytest.raises(ParseError) as info:
        check_source(code, "new.py")
    message = str(info.value)
    assert feature in message and "Python 3.12" in message
    assert f"runs on Python {sys.version_info[0]}.{sys.version_info[1]}" in message


@pytest.mark.skipif(sys.version_info >= (3, 14), reason="this Python reads 3.14 syntax")
def test_template_strings_point_at_python_314():
    with pytest.raises(ParseError, match=r"template string.*Python 3\.14"):
        check_source('greeting = t"hello {name}"\n', "t.py")


def test_an_ordinary_syntax_error_gets_no_newer_python_hint():
    with pytest.raises(ParseError) as info:
        check_source("def f(:\n    pass\n", "bad.py")
    assert "Python 3.1" not in str(info.value)


# ---------------------------------------------------------------- encodings, line endings, whitespace
# name -> (bytes, where NRN201 must be reported)
READABLE: dict[str, tuple[bytes, list[tuple[int, int]]]] = {
    "latin1_cookie.py": (b"# -*- coding: latin-1 -*-\nimport torch\nname = 'caf\xe9'; x = torch.ones(1).cuda()\n", [(3, 34)]),
    "cookie_line2.py": (b"#!/usr/bin/env python\n# vim: set fileencoding=cp1252 :\nimport torch\ns = '\x80'; y = torch.ones(1).cuda()\n", [(4, 28)]),
    "utf8_bom.py": (b"\xef\xbb\xbf" + CUDA.encode(), [(2, 19)]),
    "bom_and_cookie.py": (b"\xef\xbb\xbf# coding: utf-8\n" + CUDA.encode(), [(3, 19)]),
    "non_ascii_columns.py": ("import torch\nπ = 'ü'; x = torch.ones(1).cuda()\n".encode(), [(2, 28)]),
    "crlf.py": (CUDA.replace("\n", "\r\n").encode(), [(2, 19)]),
    "cr_only.py": (CUDA.replace("\n", "\r").encode(), [(2, 19)]),
    "mixed_endings.py": (b"import torch\r\na = 1\rb = 2\nx = torch.ones(1).cuda()\r\n", [(4, 19)]),
    "tabs.py": (b"import torch\nif True:\n\tx = torch.ones(1).cuda()\n", [(3, 20)]),
    "form_feeds.py": (b"import torch\n\x0c\n\x0cx = torch.ones(1).cuda()\n\x0c\n", [(3, 20)]),
    "unicode_separators.py": ("import torch\ns = 'a\u2028b\x85c\x0bd'\nx = torch.ones(1).cuda()\n".encode(), [(3, 19)]),
    "no_final_newline.py": (CUDA.rstrip("\n").encode(), [(2, 19)]),
    "trailing_backslash_line.py": (b"import torch\nx = torch.ones(1) \\\n    .cuda()\n", [(3, 6)]),
    "empty.py": (b"", []),
    "only_bom.py": (b"\xef\xbb\xbf", []),
    "only_comment.py": (b"# cuda cuda cuda\n", []),
    "whitespace_only.py": (b"\n\n   \n\t\n\x0c\n", []),
}


@pytest.mark.parametrize("name", sorted(READABLE))
def test_odd_but_valid_files_are_checked_at_the_right_place(tmp_path, name):
    data, where = READABLE[name]
    path = tmp_path / name
    path.write_bytes(data)
    result = check_file(path)
    assert result.errors == []
    assert result.files_checked == 1
    assert cuda_lines(result, name) == where


def test_form_feeds_do_not_shift_the_source_excerpt(tmp_path, cli):
    path = tmp_path / "form_feeds.py"
    path.write_bytes(READABLE["form_feeds.py"][0])
    r = cli("check", "--no-cache", str(path), cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    # the excerpt under 3:20 shows line 3 as Python counts lines (str.splitlines would show line 2)
    (excerpt,) = [line for line in r.stdout.splitlines() if line.startswith("3 | ")]
    assert excerpt.endswith("x = torch.ones(1).cuda()")


# ---------------------------------------------------------------- size and nesting
def test_a_file_over_the_size_limit_is_skipped_with_its_size(tmp_path):
    big = tmp_path / "generated.py"
    line = b"x = 'cuda'  # a generated table row\n"
    with open(big, "wb") as fh:
        fh.write(line * (25 * 1024 * 1024 // len(line) + 1))
    (tmp_path / GOOD_NAME).write_text(CUDA)
    start = time.monotonic()
    result = scan(tmp_path)
    assert time.monotonic() - start < 30
    reason = errors_by_name(result)["generated.py"]
    assert reason.startswith("skipped: 25.0 MB is over the 10 MB size limit")
    assert cuda_lines(result, GOOD_NAME) == [(2, 19)]


def test_the_size_limit_is_a_setting(tmp_path):
    path = tmp_path / "small.py"
    path.write_text(CUDA * 100)
    assert check_file(path, Settings(max_file_bytes=1000)).errors[0].reason.startswith("skipped:")
    assert not check_file(path, Settings(max_file_bytes=len(CUDA) * 100)).errors


def test_a_file_that_grows_after_it_was_measured_is_not_read_past_the_limit(tmp_path, monkeypatch):
    path = tmp_path / "growing.py"
    path.write_text(CUDA * 1000)
    real_fstat = os.fstat

    def shrunk(fd):  # the size seen before reading is stale: the file grew since
        st = real_fstat(fd)
        return os.stat_result((st.st_mode, *st[1:6], 10, *st[7:]))

    monkeypatch.setattr(os, "fstat", shrunk)
    (err,) = check_file(path, Settings(max_file_bytes=1000)).errors
    assert "grew past the" in err.reason


def test_a_large_generated_file_under_the_limit_is_checked_in_linear_time(tmp_path):
    functions = 4000  # about 0.5 MB; the 19 MB case runs in the fuzz campaign
    body = "".join(f"def f{i}(x):\n    y = torch.ones({i}).cuda()\n    return x + y * {i}\n" for i in range(functions))
    path = tmp_path / "generated.py"
    path.write_text("import torch\n" + body)
    start = time.monotonic()
    result = check_file(path)
    elapsed = time.monotonic() - start
    assert result.errors == []
    assert len(result.findings) == functions
    assert elapsed < 20, f"{elapsed:.1f}s for {path.stat().st_size} bytes"


def test_many_findings_on_one_long_non_ascii_line_take_linear_time():
    """Minified or generated code: one line, thousands of findings, a non-ASCII character first."""
    n = 12000
    text = "import torch\nπ = 'ü'; " + "torch.ones(1).cuda(); " * n + "\n"
    start = time.monotonic()
    findings = check_source(text, "minified.py")
    elapsed = time.monotonic() - start
    assert len(findings) == n
    assert [f.col for f in findings[:2]] == [24, 46]  # characters, not bytes (π and ü are 2 bytes each)
    assert elapsed < 60, f"{elapsed:.0f}s: per-finding work grows with the line"  # was quadratic: minutes


def test_character_columns_match_python_on_any_line():
    from neuron_lint.io.positions import LineIndex

    rnd = random.Random(5)
    alphabet = "aZ _(π)é€😀\t\x0c中"
    for _ in range(500):
        line = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 40)))
        index = LineIndex("first\r\n" + line + "\n")
        byte = 0
        for chars, ch in enumerate(line + "."):
            assert index.char_col(2, byte) == chars, (line, byte)
            byte += len(ch.encode("utf-8"))


@pytest.mark.parametrize("expression", [
    "+".join(["a"] * 1500) + " + torch.ones(1).cuda()",  # 1500 nested BinOps: parses, deeper than 1000 frames
    "torch.ones(1)" + ".float()" * 700 + ".cuda()",  # 700 chained calls: 1400 nested nodes
    "not " * 2000 + "torch.ones(1).cuda()",
    "[" * 190 + "torch.ones(1).cuda()" + "]" * 190,
])
def test_deep_but_valid_expressions_are_analyzed_not_refused(expression):
    findings = check_source(f"import torch\nx = {expression}\n", "deep.py")
    assert [f.code for f in findings] == ["NRN201"]


def test_deep_nesting_leaves_the_recursion_limit_as_it_was():
    before = sys.getrecursionlimit()
    check_source("import torch\nx = " + "+".join(["a"] * 2000) + " + torch.ones(1).cuda()\n")
    assert sys.getrecursionlimit() == before


def test_a_walk_that_hits_the_recursion_limit_is_retried_with_room(monkeypatch):
    """Whatever the recursion limit at the time, a tree ast.parse returned is walked in full."""
    code = "import torch\nx = " + "+".join(["a"] * 400) + " + torch.ones(1).cuda()\n"
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(300)  # the walk of 400 levels cannot fit in the calling thread
    try:
        from neuron_lint.engine import pipeline as api

        tree = api.parse(code)  # parse before lowering further
        monkeypatch.setattr(api, "parse", lambda text, path="<string>": tree)
        findings = check_source(code, "deep.py")
    finally:
        sys.setrecursionlimit(limit)
    assert [f.code for f in findings] == ["NRN201"]


# ---------------------------------------------------------------- things that are not files
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_pipe_named_py_is_not_read(tmp_path):
    os.mkfifo(tmp_path / "pipe.py")
    start = time.monotonic()
    (err,) = check_file(tmp_path / "pipe.py").errors  # named explicitly: a walk skips it anyway
    assert time.monotonic() - start < 5
    assert "not a regular file" in err.reason


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_an_endless_device_is_not_read():
    (err,) = check_file("/dev/zero").errors
    assert "not a regular file" in err.reason


def test_a_directory_named_like_a_file(tmp_path):
    (tmp_path / "package.py").mkdir()
    (tmp_path / "package.py" / "inner.py").write_text(CUDA)
    assert check_file(tmp_path / "package.py").errors[0].reason == "is a directory"
    assert cuda_lines(scan(tmp_path), "inner.py") == [(2, 19)]  # a walk descends into it


# ---------------------------------------------------------------- symbolic links
needs_symlinks = pytest.mark.skipif(not hasattr(os, "symlink") or sys.platform == "win32", reason="needs symlinks")


@needs_symlinks
@pytest.mark.parametrize("follow", [False, True])
def test_symlink_loops_end(tmp_path, follow):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text(CUDA)
    os.symlink(tmp_path, tmp_path / "pkg" / "loop")  # a folder link to an ancestor
    os.symlink("self.py", tmp_path / "self.py")  # a file link to itself
    os.symlink("ping.py", tmp_path / "pong.py")
    os.symlink("pong.py", tmp_path / "ping.py")
    result = scan(tmp_path, settings=Settings(follow_symlinks=follow))
    assert cuda_lines(result, "mod.py") == [(2, 19)]  # once, whatever the loop
    assert result.errors == []  # a walk skips links that lead nowhere, as git does


@needs_symlinks
def test_a_named_symlink_loop_is_an_error(tmp_path):
    os.symlink("self.py", tmp_path / "self.py")
    (err,) = check_file(tmp_path / "self.py").errors
    assert "cannot be read" in err.reason and "symbolic links" in err.reason


@needs_symlinks
def test_dangling_symlinks(tmp_path):
    os.symlink(tmp_path / "gone.py", tmp_path / "dangling.py")
    (tmp_path / GOOD_NAME).write_text(CUDA)
    result = scan(tmp_path)
    assert result.errors == [] and cuda_lines(result, GOOD_NAME) == [(2, 19)]  # not followed in a walk
    named = scan(tmp_path / "dangling.py")
    assert errors_by_name(named) == {"dangling.py": "is a broken symbolic link"}


@needs_symlinks
def test_a_symlink_out_of_the_tree_is_not_followed(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text(CUDA)
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / GOOD_NAME).write_text(CUDA)
    os.symlink(outside, tree / "linked_dir")
    os.symlink(outside / "secret.py", tree / "linked_file.py")
    result = scan(tree)
    assert [Path(f.path).name for f in result.findings] == [GOOD_NAME]
    followed = scan(tree, settings=Settings(follow_symlinks=True))
    assert sorted(Path(f.path).name for f in followed.findings) == [GOOD_NAME, "linked_file.py", "secret.py"]


# ---------------------------------------------------------------- the tree changes during the scan
def _mutate_after_discovery(monkeypatch, victim: str, change):
    """Let discovery find every file, then change ``victim`` before it is read."""
    real = discovery.iter_python_files

    def racing(paths, settings):
        found = list(real(paths, settings))
        for item in found:
            if isinstance(item, Path) and item.name == victim:
                change(item)
        return iter(found)

    monkeypatch.setattr(discovery, "iter_python_files", racing)


def _replace_with_directory(p: Path) -> None:
    p.unlink()
    p.mkdir()


def _replace_with_loop(p: Path) -> None:
    p.unlink()
    os.symlink(p.name, p)


@pytest.mark.parametrize("change,phrase", [
    (Path.unlink, "vanished before it could be read"),
    (_replace_with_directory, "is a directory"),
    (lambda p: p.write_bytes(b"\x00\x01binary now"), "NUL byte"),
    (lambda p: p.write_text("def broken(:\n"), "syntax error"),
    pytest.param(_replace_with_loop, "symbolic links", marks=needs_symlinks),
])
@pytest.mark.parametrize("jobs", [1, 2])
def test_a_file_changed_during_the_scan(tmp_path, monkeypatch, change, phrase, jobs):
    for i in range(12):  # enough files (and bytes) for jobs=2 to start workers
        (tmp_path / f"m{i:02}.py").write_text(CUDA + "# padding\n" * 5000)
    _mutate_after_discovery(monkeypatch, "m05.py", change)
    result = check_paths([str(tmp_path)], Settings(), jobs=jobs)
    errors = errors_by_name(result)
    assert list(errors) == ["m05.py"] and phrase in errors["m05.py"]
    assert len(result.findings) == 11


def test_a_file_replaced_between_walk_and_read_is_read_as_it_is_now(tmp_path, monkeypatch):
    (tmp_path / "m.py").write_text("x = 1\n")
    _mutate_after_discovery(monkeypatch, "m.py", lambda p: p.write_text(CUDA))
    result = scan(tmp_path)
    assert result.errors == [] and cuda_lines(result, "m.py") == [(2, 19)]


# ---------------------------------------------------------------- permissions
root_only_reads_everything = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root reads every file and folder"
)


@root_only_reads_everything
def test_a_directory_without_read_permission_is_named(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "hidden.py").write_text(CUDA)
    (tmp_path / GOOD_NAME).write_text(CUDA)
    locked.chmod(0)
    try:
        result = scan(tmp_path)
    finally:
        locked.chmod(0o755)
    assert errors_by_name(result) == {"locked": "directory cannot be read: Permission denied"}
    assert cuda_lines(result, GOOD_NAME) == [(2, 19)]


@root_only_reads_everything
def test_a_file_without_read_permission_is_named(tmp_path):
    locked = tmp_path / "locked.py"
    locked.write_text(CUDA)
    (tmp_path / GOOD_NAME).write_text(CUDA)
    locked.chmod(0)
    try:
        result = scan(tmp_path)
    finally:
        locked.chmod(0o644)
    assert errors_by_name(result) == {"locked.py": "cannot be read: Permission denied"}
    assert cuda_lines(result, GOOD_NAME) == [(2, 19)]


def test_an_unlistable_directory_is_named_even_as_root(tmp_path, monkeypatch):
    """The same path as the chmod test, with the refusal simulated so it also runs as root."""
    locked = tmp_path / "sub" / "locked"
    locked.mkdir(parents=True)
    (locked / "hidden.py").write_text(CUDA)
    (tmp_path / "sub" / GOOD_NAME).write_text(CUDA)
    real_scandir = os.scandir

    def refusing(path="."):
        if Path(path).name == "locked":
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(discovery.os, "scandir", refusing)
    result = scan(tmp_path)
    assert [(e.path, e.reason) for e in result.errors] == [(str(locked), "directory cannot be read: Permission denied")]
    assert cuda_lines(result, GOOD_NAME) == [(2, 19)]


def test_a_directory_removed_during_the_walk_is_not_an_error(tmp_path, monkeypatch):
    (tmp_path / "gone").mkdir()
    (tmp_path / "gone" / "a.py").write_text(CUDA)
    (tmp_path / GOOD_NAME).write_text(CUDA)
    real_scandir = os.scandir

    def vanishing(path="."):
        if Path(path).name == "gone":
            raise FileNotFoundError(2, "No such file or directory", str(path))
        return real_scandir(path)

    monkeypatch.setattr(discovery.os, "scandir", vanishing)
    result = scan(tmp_path)
    assert result.errors == [] and cuda_lines(result, GOOD_NAME) == [(2, 19)]


# ---------------------------------------------------------------- configuration and noqa
@pytest.mark.parametrize("content,phrase", [
    (b"[tool.neuron-lint\nselect = [", "not valid TOML"),
    (b"[tool.neuron-lint]\nselect = 'NRN2'\nselect = 'NRN3'\n", "not valid TOML"),
    (b"[tool.neuron-lint]\nselect = 5\n", "key 'select'"),
    (b"[tool.neuron-lint]\nselect = [\"NRN999\"]\n", "unknown rule code"),
    (b"[tool.neuron-lint]\nno-such-key = true\n", "no-such-key"),
    (b"[tool.neuron-lint]\nper-file-ignores = { \"*.py\" = 3 }\n", "per-file-ignores"),
    (b"\xff\xfe[tool.neuron-lint]\n", "pyproject.toml"),
    (b"[tool]\nneuron-lint = 3\n", "pyproject.toml"),
])
def test_broken_configuration_is_one_clear_error(tmp_path, cli, content, phrase):
    (tmp_path / "pyproject.toml").write_bytes(content)
    (tmp_path / GOOD_NAME).write_text(CUDA)
    r = cli("check", "--no-cache", ".", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.startswith("neuron-lint: error: pyproject.toml:") and phrase in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1


def test_unknown_codes_in_noqa_suppress_nothing_else(tmp_path, cli):
    (tmp_path / "n.py").write_text(
        "import torch\n"
        "a = torch.ones(1).cuda()  # noqa: NRN999, XYZ123, E501\n"
        "b = torch.ones(1).cuda()  # noqa: nrn201,,  ,\n"
        "c = torch.ones(1).cuda()  # noqa:NRN201 trailing words\n"
        "d = torch.ones(1).cuda()  # noqa: \x00\n".replace("\x00", "\u00e9\u2028")
    )
    r = cli("check", "--no-cache", "--output-format", "concise", "n.py", cwd=tmp_path)
    assert "Traceback" not in r.stderr
    lines = [line.split(":")[1] for line in r.stdout.splitlines() if ": NRN201" in line]
    assert "2" in lines  # unknown codes do not silence NRN201
    assert r.returncode in (0, 1)


# ---------------------------------------------------------------- the whole zoo through the CLI
def _zoo(root: Path) -> None:
    for name, (data, _) in UNREADABLE.items():
        (root / name).write_bytes(data)
    for name, (data, _) in READABLE.items():
        (root / name).write_bytes(data)
    (root / GOOD_NAME).write_text(CUDA)
    if hasattr(os, "symlink") and sys.platform != "win32":
        os.symlink("loop.py", root / "loop.py")
        os.symlink(root / "missing.py", root / "dangling.py")
        os.symlink(root, root / "parent_link")


def test_the_cli_reports_every_bad_file_once_and_exits_2(tmp_path, cli):
    _zoo(tmp_path)
    r = cli("check", "--no-cache", "--output-format", "concise", ".", cwd=tmp_path)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr + r.stdout
    error_lines = [line for line in r.stderr.splitlines() if line.startswith("error: ")]
    named = sorted(line.split(":")[1].strip() for line in error_lines)
    assert named == sorted(UNREADABLE)
    for name, (_, phrase) in UNREADABLE.items():
        (line,) = [x for x in error_lines if x.startswith(f"error: {name}:")]
        assert phrase in line
    reported = {line.split(":")[0] for line in r.stdout.splitlines() if ": NRN201" in line}
    assert reported == {name for name, (_, where) in READABLE.items() if where} | {GOOD_NAME}
    assert f"{len(UNREADABLE)} files could not be checked" in r.stdout + r.stderr


def test_the_cli_exit_code_with_only_good_files_is_unchanged(tmp_path, cli):
    (tmp_path / GOOD_NAME).write_text(CUDA)
    (tmp_path / "empty.py").write_bytes(b"")
    assert cli("check", "--no-cache", ".", cwd=tmp_path).returncode == 1
    (tmp_path / GOOD_NAME).write_text("x = 1\n")
    assert cli("check", "--no-cache", ".", cwd=tmp_path).returncode == 0


def test_an_internal_error_in_one_file_does_not_stop_the_scan(tmp_path, monkeypatch):
    from neuron_lint.engine import pipeline as api

    real = api.analyze_source

    def flaky(text, path="<string>", *args, **kwargs):
        if path.endswith("boom.py"):
            raise KeyError("simulated bug")
        return real(text, path, *args, **kwargs)

    monkeypatch.setattr(api, "analyze_source", flaky)
    (tmp_path / "boom.py").write_text(CUDA)
    (tmp_path / GOOD_NAME).write_text(CUDA)
    result = scan(tmp_path)
    reason = errors_by_name(result)["boom.py"]
    assert reason.startswith("internal error: KeyError") and "please report" in reason
    assert cuda_lines(result, GOOD_NAME) == [(2, 19)]


def test_modes_do_not_matter_for_reading(tmp_path):
    path = tmp_path / "exec.py"
    path.write_text(CUDA)
    path.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        assert cuda_lines(check_file(path), "exec.py") == [(2, 19)]
    finally:
        path.chmod(0o644)


# ---------------------------------------------------------------- long runs (python -m pytest -m fuzz)
@pytest.mark.fuzz
def test_fuzz_a_file_just_under_the_size_limit_is_checked(tmp_path):
    limit = Settings().max_file_bytes
    block = "".join(f"def f{i}(x):\n    y = torch.ones({i}).cuda()\n    return x + y * {i}\n" for i in range(1000))
    path = tmp_path / "generated.py"
    with open(path, "w") as fh:
        fh.write("import torch\n")
        n = 0
        while fh.tell() + len(block) < limit:
            fh.write(block.replace("def f", f"def g{n}_"))
            n += 1
    start = time.monotonic()
    result = check_file(path)
    elapsed = time.monotonic() - start
    assert result.errors == [] and len(result.findings) == 1000 * n
    assert elapsed < 300, f"{elapsed:.0f}s for {path.stat().st_size / 2**20:.1f} MB"


@pytest.mark.fuzz
@pytest.mark.parametrize("shape", ["binop", "chain", "not", "subscript", "lambda", "ifexp", "call_args"])
def test_fuzz_every_nesting_depth_is_analyzed_or_refused_cleanly(shape):
    build = {
        "binop": lambda n: "+".join(["a"] * n) + " + torch.ones(1).cuda()",
        "chain": lambda n: "torch.ones(1)" + ".float()" * n + ".cuda()",
        "not": lambda n: "not " * n + "torch.ones(1).cuda()",
        "subscript": lambda n: "torch.ones(1).cuda()" + "[0]" * n,
        "lambda": lambda n: "lambda: " * n + "torch.ones(1).cuda()",
        "ifexp": lambda n: "a if b else " * n + "torch.ones(1).cuda()",
        "call_args": lambda n: "f(" * min(n, 180) + "torch.ones(1).cuda()" + ")" * min(n, 180),
    }[shape]
    for depth in (10, 100, 300, 500, 800, 1000, 1500, 2000, 3000, 5000, 20000):
        try:
            findings = check_source(f"import torch\nx = {build(depth)}\n", "deep.py")
        except ParseError as exc:  # Python's parser refuses it: a clear reason, no crash
            assert "nested" in str(exc) or "recursion" in str(exc), str(exc)
            continue
        assert "NRN201" in [f.code for f in findings], depth


def test_a_worker_that_dies_does_not_hang_the_scan(tmp_path, monkeypatch):
    """A worker killed for memory (or crashing) must not leave the run waiting forever."""
    from neuron_lint.engine import pipeline as api
    from neuron_lint.engine import runner

    for i in range(12):
        (tmp_path / f"m{i:02}.py").write_text(CUDA + "# padding\n" * 5000)
    real = api.check_file

    def dies_on_m05(path, *args, **kwargs):
        if str(path).endswith("m05.py"):
            os._exit(9)  # what the kernel's OOM killer looks like from the pool's side
        return real(path, *args, **kwargs)

    monkeypatch.setattr(api, "check_file", dies_on_m05)
    monkeypatch.setattr(runner, "SERIAL_BYTES", 0)
    monkeypatch.setattr(runner, "SERIAL_FILES", 1)
    start = time.monotonic()
    result = check_paths([str(tmp_path)], Settings(), jobs=2)
    assert time.monotonic() - start < 120
    errors = errors_by_name(result)
    assert list(errors) == ["m05.py"] and "died" in errors["m05.py"]
    assert len(result.findings) == 11


@pytest.mark.skipif(not hasattr(os, "mkfifo") or not os.path.exists("/dev/zero"), reason="needs pipes and /dev/zero")
@pytest.mark.parametrize("planted", ["fifo", "dev_zero"])
def test_planted_pipes_and_devices_as_gitignore_or_config_do_not_hang(tmp_path, cli, planted):
    def plant(path: Path) -> None:
        if planted == "fifo":
            os.mkfifo(path)
        else:
            os.symlink("/dev/zero", path)

    (tmp_path / ".git").mkdir()
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / GOOD_NAME).write_text(CUDA)
    plant(tmp_path / ".gitignore")
    plant(sub / ".gitignore")
    r = cli("check", "--no-cache", "--output-format", "concise", ".", cwd=tmp_path)
    assert r.returncode == 1 and "sub/good.py:2:19: NRN201" in r.stdout, r.stderr
    plant(tmp_path / "pyproject.toml")  # not a regular file: not a configuration file either
    r = cli("check", "--no-cache", ".", cwd=tmp_path)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    r = cli("check", "--no-cache", "--config", "pyproject.toml", ".", cwd=tmp_path)  # named: refused
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.startswith("neuron-lint: error:") and "pyproject.toml" in r.stderr, r.stderr


def test_no_thread_for_a_deep_walk_is_a_clear_error(monkeypatch):
    """Where no big-stack thread can start (capped virtual memory), the file is refused by name."""
    import threading

    from neuron_lint.engine import recursion as deep

    def no_threads(self):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", no_threads)
    with pytest.raises(ParseError, match="too deeply nested to analyze"):
        check_source("import torch\nx = " + "+".join(["a"] * 1500) + " + torch.ones(1).cuda()\n", "deep.py")
    assert threading.stack_size() == 0 and deep.STACK_BYTES > 0
