"""Property-based tests: generated programs (hypothesmith) and mutations of the bundled examples.

* ``check`` never raises on any program: valid code gives findings, invalid code a ParseError
  (the library API) or a FileError (files), nothing else;
* a fix's output parses, a second fix changes nothing, and every byte outside the edited spans
  is kept;
* findings do not depend on how a file is checked: alone or in a directory, serially or in
  worker processes, with a cold or a warm cache.

The default suite runs short campaigns. ``python -m pytest -m fuzz`` runs the long one
(``NEURON_LINT_FUZZ_EXAMPLES`` generated programs per property, default 3000).
"""

from __future__ import annotations

import ast
import os
import random
import re
from pathlib import Path

import hypothesmith
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from neuron_lint.api import analyze_source, check_file, check_paths, check_source
from neuron_lint.catalog.loading import load_catalog
from neuron_lint.config.settings import Settings
from neuron_lint.errors import ParseError
from neuron_lint.fixes.apply import applicable, fix_text
from neuron_lint.fixes.edits import apply_edits
from neuron_lint.io.positions import LineIndex

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").rglob("*.py"))
CATALOG = load_catalog()
#: Every rule, opt-in ones too, and no prefilter: the walker sees every generated tree.
EVERYTHING = Settings(extend_select=("NRN",), prefilter=False)
UNSAFE = Settings(extend_select=("NRN",), unsafe_fixes=True)
# The same, with each fix's text edits spelled out (as JSON and SARIF output get them).
UNSAFE_EDITS = Settings(extend_select=("NRN",), unsafe_fixes=True, fix_edits=True)

FUZZ_EXAMPLES = int(os.environ.get("NEURON_LINT_FUZZ_EXAMPLES", "3000"))
QUICK = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
LONG = settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))

#: Examples run per property in this session; written to $NEURON_LINT_FUZZ_REPORT (if set) at the end.
RUNS: dict[str, int] = {}


@pytest.fixture(scope="module", autouse=True)
def _report_runs():
    yield
    report = os.environ.get("NEURON_LINT_FUZZ_REPORT")
    if report:
        with open(report, "a", encoding="utf-8") as fh:
            for name, n in sorted(RUNS.items()):
                fh.write(f"{name}\t{n}\n")


def _count(name: str) -> None:
    RUNS[name] = RUNS.get(name, 0) + 1


# Words the rules look for; generated identifiers are swapped for them so rules fire on odd code.
VOCABULARY = ["torch", "cuda", "device", "dtype", "float64", "double", "sparse", "nccl", "amp", "autocast",
              "GradScaler", "DataParallel", "to", "half", "is_cuda", "empty_cache", "backend", "compile",
              "distributed", "environ", "os", "triton", "jit", "func", "vmap", "complex64", "set_device"]
_IDENT = re.compile(r"\b(?!(?:False|None|True|and|as|assert|async|await|break|class|continue|def|del|elif|else|"
                    r"except|finally|for|from|global|if|import|in|is|lambda|nonlocal|not|or|pass|raise|return|"
                    r"try|while|with|yield|match|case|type|_)\b)[A-Za-z_]\w*\b")


def _snippets() -> list[str]:
    """Realistic code: every rule's examples (bad, good and fixed) that is Python."""
    out: list[str] = []
    for rule in CATALOG.rules:
        if rule.manifest_only:
            continue
        for text in (*rule.bad, *rule.good, *rule.fixed):
            try:
                ast.parse(text)
            except SyntaxError:
                continue
            out.append(text if text.endswith("\n") else text + "\n")
    return out


SNIPPETS = _snippets()


def check_never_raises(text: str, settings: Settings = EVERYTHING) -> list:
    """Findings, or [] for invalid code; any other exception fails the test."""
    try:
        return check_source(text, "generated.py", settings, CATALOG)
    except ParseError:
        return []


def with_vocabulary(data, program: str) -> str:
    names = sorted(set(_IDENT.findall(program)))
    if not names:
        return program
    chosen = data.draw(st.lists(st.sampled_from(names), max_size=4, unique=True), label="renamed")
    mapping = {name: data.draw(st.sampled_from(VOCABULARY), label=f"as {name}") for name in chosen}
    return _IDENT.sub(lambda m: mapping.get(m.group(0), m.group(0)), program)


# hypothesmith.from_grammar() builds an LALR parser of Python's grammar (seconds) at each call: one
# for every test here (a deferred strategy builds its strategy once), and only once a test draws
# from it (not while collecting).
GRAMMAR_PROGRAMS = st.deferred(lambda: hypothesmith.from_grammar())


# ---------------------------------------------------------------- check never raises
def _check_generated(data, program: str) -> None:
    _count("generated programs checked")
    check_never_raises(program)
    check_never_raises("import torch\nimport torch.cuda as cuda\nfrom torch import *\n" + with_vocabulary(data, program))


@pytest.mark.slow
@QUICK
@given(program=GRAMMAR_PROGRAMS, data=st.data())
def test_check_never_raises_on_grammar_programs(program, data):
    _check_generated(data, program)


@pytest.mark.slow
@settings(QUICK, max_examples=10)  # libcst generation is slow; the fuzz campaign runs thousands
@given(program=hypothesmith.from_node(), data=st.data())
def test_check_never_raises_on_libcst_programs(program, data):
    _check_generated(data, program)


@pytest.mark.fuzz
@LONG
@given(program=GRAMMAR_PROGRAMS, data=st.data())
def test_fuzz_check_grammar_programs(program, data):
    _check_generated(data, program)


@pytest.mark.fuzz
@settings(max_examples=max(FUZZ_EXAMPLES // 3, 1), deadline=None, suppress_health_check=list(HealthCheck))
@given(program=hypothesmith.from_node(), data=st.data())
def test_fuzz_check_libcst_programs(program, data):
    _check_generated(data, program)


# ---------------------------------------------------------------- mutations of real code
def _example_texts() -> list[str]:
    return [p.read_text() for p in EXAMPLES] + SNIPPETS


EXAMPLE_TEXTS = _example_texts()


@st.composite
def mutated_bytes(draw) -> bytes:
    """An example file after a handful of edits a half-written or damaged file might have."""
    text = draw(st.sampled_from(EXAMPLE_TEXTS), label="base")
    data = bytearray(text.encode("utf-8"))
    for _ in range(draw(st.integers(1, 4), label="mutations")):
        kind = draw(st.sampled_from(["delete", "insert", "duplicate_line", "drop_line", "swap_lines", "truncate",
                                     "crlf", "cr", "bom", "dedent", "indent", "formfeed", "tab"]))
        pos = draw(st.integers(0, len(data)))
        lines = bytes(data).split(b"\n")
        i = draw(st.integers(0, max(len(lines) - 1, 0)))
        j = draw(st.integers(0, max(len(lines) - 1, 0)))
        if kind == "delete":
            del data[pos:pos + draw(st.integers(1, 40))]
        elif kind == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=8) | st.sampled_from(
                [b"(", b")", b":", b"\\", b'"', b"'''", b"\n    ", b"#", b"\x00", b"\xff", b"cuda", b".cuda()", b"\t"]))
        elif kind == "duplicate_line":
            lines.insert(i, lines[i])
        elif kind == "drop_line":
            del lines[i]
        elif kind == "swap_lines":
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == "truncate":
            del data[pos:]
        elif kind == "dedent":
            lines[i] = lines[i].lstrip()
        elif kind == "indent":
            lines[i] = b"    " + lines[i]
        elif kind == "formfeed":
            lines[i] = b"\x0c" + lines[i]
        elif kind == "tab":
            lines[i] = lines[i].replace(b"    ", b"\t", 1)
        if kind in ("duplicate_line", "drop_line", "swap_lines", "dedent", "indent", "formfeed", "tab"):
            data = bytearray(b"\n".join(lines))
        elif kind == "crlf":
            data = bytearray(bytes(data).replace(b"\n", b"\r\n"))
        elif kind == "cr":
            data = bytearray(bytes(data).replace(b"\n", b"\r"))
        elif kind == "bom" and not data.startswith(b"\xef\xbb\xbf"):
            data[0:0] = b"\xef\xbb\xbf"
    return bytes(data)


def _check_mutant(tmp_path: Path, data: bytes) -> None:
    _count("mutated example files checked")
    path = tmp_path / "mutant.py"
    path.write_bytes(data)
    result = check_file(path, EVERYTHING, CATALOG)  # raises nothing: errors are data
    assert result.files_checked + len(result.errors) == 1
    for error in result.errors:
        assert not error.reason.startswith("internal error"), error.reason
        assert not error.reason.startswith("too complex"), error.reason


@QUICK
@given(data=mutated_bytes())
def test_mutated_examples_are_checked_or_reported(tmp_path_factory, data):
    _check_mutant(tmp_path_factory.mktemp("mutant"), data)


@pytest.mark.fuzz
@LONG
@given(data=mutated_bytes())
def test_fuzz_mutated_examples(tmp_path_factory, data):
    _check_mutant(tmp_path_factory.mktemp("mutant"), data)


# ---------------------------------------------------------------- fixes keep code
@st.composite
def fixable_programs(draw) -> tuple[str, str]:
    """Several rule examples stitched together, with blank lines and comments between, in some line ending."""
    parts = draw(st.lists(st.sampled_from(SNIPPETS), min_size=1, max_size=5), label="snippets")
    glue = draw(st.lists(st.sampled_from(["\n", "# a comment about cuda\n", "\n\n", "x = 1  # keep me\n", "\x0c\n"]),
                         min_size=len(parts), max_size=len(parts)), label="glue")
    text = "".join(g + p for g, p in zip(glue, parts))
    newline = draw(st.sampled_from(["\n", "\r\n"]), label="newline")
    return text.replace("\n", newline), newline


def _only_edited_spans_changed(before: str, after: str, edits: list[tuple[int, int, str]], newline: str) -> None:
    """``after`` is ``before`` with each edit's span replaced by its content, and every other byte kept."""
    pos, out = 0, 0
    for start, end, content in sorted(set(edits)):
        kept = before[pos:start]
        assert after[out:out + len(kept)] == kept, f"bytes {pos}-{start} outside the edits changed"
        out += len(kept)
        content = content.replace("\n", newline) if newline != "\n" else content
        assert after[out:out + len(content)] == content, f"edit at {start}-{end} not applied as written"
        out += len(content)
        pos = end
    assert after[out:] == before[pos:], "bytes after the last edit changed"


def _check_fix_properties(text: str, newline: str) -> None:
    _count("stitched programs")
    try:
        findings = analyze_source(text, "f.py", UNSAFE_EDITS, CATALOG)[0]
    except ParseError:
        return  # the stitched snippets may not form a valid module (e.g. an indented block)
    _count("stitched programs that parsed, fixed")
    # One pass by hand: only the edited spans change.
    wanted = [f for f in findings if applicable(f, UNSAFE)]
    once, used = apply_edits(text, wanted, newline)
    lines = LineIndex(text)
    edits = [(lines.offset(e.line, e.col), lines.offset(e.end_line, e.end_col), e.content) for f in used for e in f.fix.edits]
    _only_edited_spans_changed(text, once, edits, newline)
    # The whole fix, to its fixed point: parses, and a second fix changes nothing.
    fixed = fix_text(text, "f.py", UNSAFE, CATALOG, newline=newline)
    ast.parse(fixed.text)
    assert fix_text(fixed.text, "f.py", UNSAFE, CATALOG, newline=newline).text == fixed.text
    if newline == "\r\n":
        assert "\n" not in fixed.text.replace("\r\n", "")  # inserted lines use the file's line ending


@QUICK
@given(program=fixable_programs())
@example(program=("import torch\nx = torch.ones(2).cuda()\n# a comment about cuda\ny = x.to('cuda')\n", "\n"))
def test_fixes_parse_are_idempotent_and_keep_other_bytes(program):
    _check_fix_properties(*program)


@pytest.mark.fuzz
@LONG
@given(program=fixable_programs())
def test_fuzz_fixes(program):
    _check_fix_properties(*program)


@pytest.mark.slow
def test_fix_properties_hold_on_the_example_project():
    for path in EXAMPLES:
        _check_fix_properties(path.read_text(), "\n")


# ---------------------------------------------------------------- the same findings however checked
def _mixed_tree(root: Path, seed: int) -> None:
    """Examples, mutants (some broken) and generated junk, in nested folders."""
    rnd = random.Random(seed)
    for i in range(24):
        folder = root / f"pkg{i % 3}" / ("sub" if i % 2 else "")
        folder.mkdir(parents=True, exist_ok=True)
        text = rnd.choice(EXAMPLE_TEXTS) * rnd.randint(1, 40)  # some big enough to be worth a worker
        data = text.encode()
        if i % 4 == 1:  # damage it
            pos = rnd.randrange(len(data))
            data = data[:pos] + rnd.choice([b"(", b"\xff", b"\x00", b":\n  ", b"\n\tx"]) + data[pos:]
        if i % 5 == 2:
            data = data.replace(b"\n", b"\r\n")
        (folder / f"m{i:02}.py").write_bytes(data)


def _snapshot(result) -> tuple:
    findings = sorted((Path(f.path).name, f.line, f.col, f.end_line, f.end_col, f.code, f.message,
                       repr(f.fix.to_dict()) if f.fix else "") for f in result.findings)
    errors = sorted((Path(e.path).name, e.reason, e.line, e.col) for e in result.errors)
    return findings, errors, result.files_checked


def test_findings_do_not_depend_on_how_files_are_checked(tmp_path, monkeypatch):
    tree = tmp_path / "tree"
    _mixed_tree(tree, seed=7)
    monkeypatch.chdir(tree)
    settings_ = Settings()
    serial = check_paths(["."], settings_, jobs=1)
    assert serial.errors and serial.findings  # the tree has both
    from neuron_lint.engine import runner
    from neuron_lint.engine.cache import Cache

    monkeypatch.setattr(runner, "SERIAL_BYTES", 0)  # use workers even for this small tree
    monkeypatch.setattr(runner, "SERIAL_FILES", 1)
    parallel = check_paths(["."], settings_, jobs=2)
    cache_dir = tmp_path / "cache"
    cold = check_paths(["."], settings_, jobs=2, cache=Cache(cache_dir, settings_))
    warm = check_paths(["."], settings_, jobs=1, cache=Cache(cache_dir, settings_))
    alone = [check_file(p, settings_) for p in sorted(Path(".").rglob("*.py"))]
    from neuron_lint.model import CheckResult

    one_by_one = CheckResult()
    for r in alone:
        one_by_one.extend(r)
    by_folder = CheckResult()
    for folder in sorted({p.parent for p in Path(".").rglob("*.py")}):
        by_folder.extend(check_paths([str(folder)], settings_, jobs=1))
    want = _snapshot(serial)
    for name, other in [("parallel", parallel), ("cold cache", cold), ("warm cache", warm),
                        ("file by file", one_by_one)]:
        assert _snapshot(other) == want, name
    # Folder by folder sees nested folders twice (pkg0 and pkg0/sub): compare as sets.
    assert set(_snapshot(by_folder)[0]) == set(want[0])


@QUICK
@given(program=GRAMMAR_PROGRAMS, data=st.data())
def test_a_generated_file_alone_or_among_others_gives_the_same_findings(tmp_path_factory, program, data):
    program = "import torch\n" + with_vocabulary(data, program)
    folder = tmp_path_factory.mktemp("alone")
    path = folder / "gen.py"
    path.write_text(program, encoding="utf-8")
    (folder / "other.py").write_text(EXAMPLE_TEXTS[0])
    alone = check_file(path, EVERYTHING, CATALOG)
    among = check_paths([str(folder)], EVERYTHING, CATALOG, jobs=1)
    pick = lambda r: sorted((f.line, f.col, f.code) for f in r.findings if Path(f.path).name == "gen.py")  # noqa: E731
    assert pick(alone) == pick(among)
    assert [e.reason for e in alone.errors] == [e.reason for e in among.errors if Path(e.path).name == "gen.py"]
