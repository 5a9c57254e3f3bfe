"""The word prefilter and the pruned walk give exactly the findings of a full walk.

`neuron_lint.catalog.prefilter.active` decides, from a file's words, which matches can fire there; the
analyzer then leaves out the work of the others, and a file where none can is not walked. The
reference walks every file with every match and every matcher (``Settings(prefilter=False)``): on
every file both must give the same findings, syntax errors included.

The fast test runs on every rule's examples (opt-in rules too) and the example project; the slow one
on real code: the installed torch's own sources (when torch is installed; found, never imported) and
the folders named in ``NEURON_LINT_CORPUS`` (``os.pathsep``-separated, e.g. checkouts of detectron2
or diffusers). It skips when there is none.
"""

from __future__ import annotations

import dataclasses
import os
from importlib.util import find_spec
from pathlib import Path

import pytest

from neuron_lint.catalog.index import build_index
from neuron_lint.catalog.prefilter import active
from neuron_lint.config.settings import Settings
from neuron_lint.engine import pipeline as api
from neuron_lint.engine.parents import TreeParents, parent_map
from neuron_lint.errors import ParseError
from neuron_lint.io.source import SourceError, decode

ROOT = Path(__file__).resolve().parent.parent
EVERY_RULE = Settings(extend_select=("NRN",))
#: Packages of torch with much CUDA- and device-specific code (a few hundred files).
TORCH_PARTS = ("cuda", "distributed", "amp", "backends", "utils/data", "nn/parallel", "profiler")


def _findings(text: str, path: str, settings: Settings, catalog):
    try:
        return [f.to_dict() for f in api.check_source(text, path, settings, catalog)]
    except ParseError as exc:
        return ("syntax error", str(exc), exc.line, exc.col)


def _full_walk(text: str, path: str, settings: Settings, catalog):
    """The reference: every file walked, every kind of match and every matcher run."""
    return _findings(text, path, dataclasses.replace(settings, prefilter=False), catalog)


def _compare(sources, settings: Settings, catalog) -> tuple[int, int, int]:
    """(files, files the new prefilter skipped, files with findings); fails on the first difference."""
    files = skipped = with_findings = 0
    for path, text in sources:
        new = _findings(text, path, settings, catalog)
        assert new == _full_walk(text, path, settings, catalog), f"{path}: findings differ"
        index = build_index(catalog, frozenset(settings.codes_for(path, catalog)))
        files += 1
        skipped += active(text, index) is None
        with_findings += bool(new) and isinstance(new, list)
    return files, skipped, with_findings


def _python_files(root: Path):
    for path in sorted(root.rglob("*.py")):
        try:
            text = decode(path.read_bytes()).text
        except (OSError, SourceError):
            continue
        yield str(path.relative_to(root)), text


def test_examples_same_findings(catalog):
    sources = []
    for rule in catalog.rules:
        if rule.manifest_only:
            continue
        for kind in ("bad", "good", "fixed"):
            for i, snippet in enumerate(getattr(rule, kind)):
                sources.append((f"{rule.code}_{kind}_{i}.py", snippet))
    sources += list(_python_files(ROOT / "examples"))
    files, _skipped, with_findings = _compare(sources, EVERY_RULE, catalog)
    assert files > 100 and with_findings > 50


def _real_corpora() -> list[Path]:
    roots = [Path(p) for p in os.environ.get("NEURON_LINT_CORPUS", "").split(os.pathsep) if p]
    spec = find_spec("torch")
    if spec is not None and spec.origin:
        torch_dir = Path(spec.origin).parent
        roots += [torch_dir / part for part in TORCH_PARTS]
    return [r for r in roots if r.is_dir()]


@pytest.mark.slow
@pytest.mark.parametrize("settings", [Settings(), EVERY_RULE], ids=["default", "every-rule"])
def test_real_code_same_findings(catalog, settings):
    roots = _real_corpora()
    if not roots:
        pytest.skip("no real corpus: torch is not installed and NEURON_LINT_CORPUS is not set")
    files = skipped = 0
    for root in roots:
        f, s, _ = _compare(_python_files(root), settings, catalog)
        files += f
        skipped += s
    assert files > 0


def _trees(catalog):
    import ast

    for rule in catalog.rules:
        if rule.manifest_only:
            continue
        for snippet in (*rule.bad, *rule.good):
            try:
                yield ast.parse(snippet)
            except SyntaxError:
                continue
    for _path, text in _python_files(ROOT / "neuron_lint"):
        yield ast.parse(text)


class _Unbounded(TreeParents):
    """Searches by position however many nodes they look at (no switch to the whole map)."""

    __slots__ = ()
    BUDGET = 10**12


def test_module_scans_match_the_fix_planners(catalog):
    """api's one-loop scans, and the parents found on demand, answer as `ast.walk` and
    `fixes.plan.bound_names` do."""
    import ast

    from neuron_lint.fixes.plan import bound_names as planners_bound_names

    for tree in _trees(catalog):
        parents = {}
        for p in ast.walk(tree):
            for child in ast.iter_child_nodes(p):
                parents[id(child)] = p
        assert parent_map(tree) == parents
        on_demand = _Unbounded(tree)  # asked node by node, in an order unlike the walk's
        nodes = [n for n in reversed(list(ast.walk(tree)))
                 if not isinstance(n, (ast.expr_context, ast.boolop, ast.operator, ast.unaryop, ast.cmpop))]
        placed = [n for n in nodes if getattr(n, "end_col_offset", None) is not None]
        for node in placed:  # found by position (decorators above their `def` included)
            assert on_demand.of(node) is parents.get(id(node)), ast.dump(node)[:80]
        assert on_demand._whole is None  # without mapping the whole module
        for node in nodes:
            assert on_demand.of(node) is parents.get(id(node)), ast.dump(node)[:80]
        assert api.bound_names(tree) == planners_bound_names(tree)


@pytest.mark.parametrize("text", [
    # words the Python matchers look at, in places none of them can fire: nothing to walk
    "import torch\nx = torch.tensor([1, 2])\ny = x.to(dtype=torch.float32)\n",
    "import re\nPATTERN = re.compile(r'step [0-9]+')  # the steps of a CUDA log\n",
    "import torch\nmodel = torch.compile(model)\nprint(torch.__version__, 'generate with full tensors')\n",
])
def test_matcher_words_alone_do_not_make_a_file_walked(catalog, text):
    index = build_index(catalog, frozenset(Settings().codes_for("m.py", catalog)))
    assert active(text, index) is None
    assert api.check_source(text, "m.py", Settings(), catalog) == []


@pytest.mark.parametrize("text, code", [
    ('x = torch.full((2,), 2**40, device=dev)\n', "NRN304"),
    ("d = {'cuda': 'nccl', 'cpu': 'gloo'}\n", "NRN213"),
    ('os.environ["TORCH_NCCL_BLOCKING_WAIT"] = "1"\nENV = "TORCH_NCCL_ASYNC_ERROR_HANDLING"\n', "NRN207"),
    ("scaler = ShardedGradScaler()\n", "NRN502"),
])
def test_each_trigger_lets_its_finding_through(catalog, text, code):
    imports = "import os\nimport torch\nfrom torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler\n"
    found = {f.code for f in api.check_source(imports + text, "m.py", EVERY_RULE, catalog)}
    assert code in found


@pytest.mark.parametrize("text", [
    "torch.cuda.is_available() and x_1",
    "naïve_device = 'cuda:0'  # é ends a word: naïve -> na, ve_device",
    "日本語cuda\u00a0dtype\tfloat\r\n",
    b"bad \xff byte cuda_x".decode("utf-8", "surrogateescape"),  # an undecodable byte, as read
])
def test_words_are_the_regular_expressions_words(text):
    import re

    from neuron_lint.catalog.prefilter import words_of

    assert words_of(text) == {w.encode() for w in re.findall(r"[A-Za-z0-9_]+", text)}
