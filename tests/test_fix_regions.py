"""A fix pass computes LibCST metadata and visits only the statements that hold its targets
(neuron_lint/fixes/regions.py). These tests hold it to what the whole module gives."""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from neuron_lint.catalog.loading import load_catalog
from neuron_lint.config.settings import Settings
from neuron_lint.engine.pipeline import analyze_source
from neuron_lint.fixes import regions, rewrite

ROOT = Path(__file__).resolve().parent.parent

NESTED = textwrap.dedent('''\
    import torch


    class Trainer:
        """Docstring."""

        # a comment before the method
        @staticmethod
        def step(x):  # trailing comment
            doc = """a string
    over lines, not indented"""; y = x.cuda()
            if x is not None:
                for i in range(3):
                    z = torch.zeros(3, device="cuda")
                    # footer comment of the loop
            return (doc,
                    y.cuda())

        def other(self):
            with torch.no_grad():
                return torch.ones(1).cuda()
    ''')


#: Nodes of layout only (blank and comment lines, newlines, spaces): no fix targets them.
LAYOUT = (cst.EmptyLine, cst.TrailingWhitespace, cst.Newline, cst.SimpleWhitespace, cst.ParenthesizedWhitespace)


def _all_statements(module: regions.Module, path=()):
    for i, _child in enumerate(module._children(path)):
        here = path + (i,)
        yield here
        if regions._block(module.node_at(here)) is not None:
            yield from _all_statements(module, here)


def _sources():
    yield "nested", NESTED
    yield "no trailing newline", NESTED.rstrip("\n")
    yield "crlf", NESTED.replace("\n", "\r\n")
    for path in sorted((ROOT / "neuron_lint" / "fixes").glob("*.py"))[:6]:
        yield path.name, path.read_text()


@pytest.mark.parametrize("name,text", list(_sources()), ids=[n for n, _ in _sources()])
def test_a_statement_alone_gives_every_node_the_position_it_has_in_the_whole_module(name, text):
    module = regions.Module(text)
    whole = MetadataWrapper(module.tree, unsafe_skip_copy=True).resolve(PositionProvider)
    checked = 0
    for path in _all_statements(module):
        region = module.region(path)
        root = module.node_at(path)

        class Collect(cst.CSTVisitor):
            def on_visit(self, node):
                nonlocal checked
                if isinstance(node, LAYOUT):  # never a fix's target
                    return True
                if region is not module.region(path[:1]) or len(path) == 1:
                    assert region.position(node) == whole[node], (path, type(node).__name__)
                    checked += 1
                return True

        root.visit(Collect())
    assert checked > 10


def test_a_target_is_found_in_the_smallest_statement_that_holds_it():
    module = regions.Module(NESTED)
    fs = [f for f in analyze_source(NESTED, "t.py", Settings(unsafe_fixes=True))[0] if f.fix and f.fix.fixer]
    assert len(fs) >= 4
    paths = {module.path_of(f.fix.target) for f in fs}
    assert all(p is not None and len(p) >= 3 for p in paths), paths  # a method's statements, not the class
    # each measured on its own, none falling back to its top-level statement
    assert all(module.region(p) is not module.region(p[:1]) for p in paths)


def _both_ways(text, planned, settings, monkeypatch):
    """``rewrite`` of ``text`` statement by statement, and with the whole module as one region."""
    rewrite.forget()
    by_region = rewrite.rewrite(text, planned, settings)
    rewrite.forget()
    with monkeypatch.context() as m:
        m.setattr(regions.Module, "paths_of", lambda self, targets: None)
        whole = rewrite.rewrite(text, planned, settings)
    rewrite.forget()
    return by_region, whole


def _examples():
    for rule in load_catalog().rules:
        for n, code in enumerate((*rule.bad, *rule.fixed)):
            yield f"{rule.code}-{n}", code


@pytest.mark.slow  # every rule example, twice in two modes: the quick loop keeps the layout variants below
@pytest.mark.parametrize("name,code", list(_examples()), ids=[n for n, _ in _examples()])
def test_rewriting_only_the_statements_with_targets_gives_the_whole_module_rewrite(name, code, monkeypatch):
    for unsafe in (False, True):
        settings = Settings(unsafe_fixes=unsafe)
        try:
            findings = [f for f in analyze_source(code, "example.py", settings)[0] if f.fix is not None]
        except Exception:  # not Python (a manifest example)
            return
        planned = [f for f in findings if f.fix.fixer and f.fix.target]
        if not planned:
            continue
        by_region, whole = _both_ways(code, planned, settings, monkeypatch)
        assert by_region.text == whole.text
        assert len(by_region.applied) == len(whole.applied)


@pytest.mark.parametrize("name,text", list(_sources()), ids=[n for n, _ in _sources()])
def test_statement_lines_read_off_the_ast_are_those_of_the_generated_code(name, text):
    module = regions.Module(text)
    blocks = [()] + [p for p in _all_statements(module) if regions._block(module.node_at(p)) is not None]
    paired = 0
    for path in blocks:
        from_ast = module._from_ast(path)
        if from_ast is None:
            continue
        paired += 1
        starts, ends = module._from_code(path)
        assert from_ast[0] == starts, path
        assert all(a <= c for a, c in zip(from_ast[1], ends)), path  # the last line of code, before any trailing comment
    assert paired == len(blocks)


VARIANTS = {
    "plain": NESTED,
    "no trailing newline": NESTED.rstrip("\n"),
    "crlf": NESTED.replace("\n", "\r\n"),
    "header and footer comments": "# header\n\n" + NESTED + "\n# footer\n\n",
    "no torch import": NESTED.replace("import torch\n", "import os\n"),
}


@pytest.mark.parametrize("name", list(VARIANTS))
def test_a_module_rewritten_statement_by_statement_reads_as_the_whole_module_rewritten(name, monkeypatch):
    text = VARIANTS[name]
    for unsafe in (False, True):
        settings = Settings(unsafe_fixes=unsafe)
        planned = [f for f in analyze_source(text, "t.py", settings)[0] if f.fix is not None and f.fix.fixer]
        assert planned
        by_region, whole = _both_ways(text, planned, settings, monkeypatch)
        assert by_region.applied and by_region.text == whole.text


SPLICED = textwrap.dedent('''\
    import torch


    class Net(torch.nn.Module):
        def forward(self, x, flash):
            """Run.

            Indented docstring."""
            if flash:
                with torch.backends.cuda.sdp_kernel(enable_mem_efficient=False):
                    y = x.cuda()
            z = torch.zeros(3,
                device="cuda")  # a continuation at its own column
            s = """a
      b""" + str(x.cuda())

            return y, z, s
    ''')
SPLICED_VARIANTS = {
    "spaces": SPLICED,
    "tabs": SPLICED.replace("    ", "\t"),
    "crlf": SPLICED.replace("\n", "\r\n"),
    "nested class": SPLICED.replace("\nclass Net", "\nclass Outer:\n  class Net").replace("\n    ", "\n      "),
}


def _spliced_and_generated(text, monkeypatch):
    """``rewrite`` of ``text`` with replaced statements set into the file's text, whether each
    top-level statement was set so, and ``rewrite`` with every rebuilt statement generated whole."""
    used = []
    real = regions.spliced_statement

    def spy(*args):
        out = real(*args)
        used.append(out is not None)
        return out

    settings = Settings(unsafe_fixes=True)
    planned = [f for f in analyze_source(text, "t.py", settings)[0] if f.fix is not None and f.fix.fixer]
    assert len(planned) >= 4
    rewrite.forget()
    with monkeypatch.context() as m:
        m.setattr(regions, "spliced_statement", spy)
        spliced = rewrite.rewrite(text, planned, settings)
    rewrite.forget()
    with monkeypatch.context() as m:
        m.setattr(regions, "spliced_statement", lambda *args: None)
        generated = rewrite.rewrite(text, planned, settings)
    rewrite.forget()
    return spliced, used, generated


@pytest.mark.parametrize("name", list(SPLICED_VARIANTS))
def test_a_statement_set_into_the_file_text_reads_as_the_whole_statement_generated(name, monkeypatch):
    """``code_of`` generates only the statements a fix replaced inside a long class or function and
    indents them as LibCST would (a multi-line rewrite, a continuation at an absolute column, tabs,
    CRLF, blank lines added above the class): the text is the one generating the whole statement
    gives, and the splice is used."""
    text = SPLICED_VARIANTS[name]
    compile(text, "t.py", "exec")
    spliced, used, generated = _spliced_and_generated(text, monkeypatch)
    assert spliced.text == generated.text
    assert len(spliced.applied) == len(generated.applied) >= 4
    assert any(used)
    compile(spliced.text, "t.py", "exec")
    assert "sdpa_kernel(" in spliced.text and ".cuda()" not in spliced.text


def test_a_file_with_mixed_line_breaks_is_generated_whole(monkeypatch):
    text = SPLICED.replace("\n", "\r\n", 3)
    spliced, used, generated = _spliced_and_generated(text, monkeypatch)
    assert spliced.text == generated.text
    assert used and not any(used)
