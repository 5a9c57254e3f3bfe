"""`check` offers a fix only when `fix` carries it out.

`check --output-format json` spells out each fix's edits; a finding with a safe fix there must be
gone after `fix`. A fix `fix` drops (the line would grow past the project's line length, the
result would not parse) gets no fix in `check` either, with a note saying why; and a device guard
whose decided code keeps its CUDA call is not rewritten alone.
"""

import textwrap
from collections import Counter

import pytest

from neuron_lint.catalog.loading import load_catalog
from neuron_lint.config.settings import Settings
from neuron_lint.engine.pipeline import analyze_source
from neuron_lint.errors import ParseError
from neuron_lint.fixes.apply import fix_text

CATALOG = load_catalog()


def _src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


# The shapes of the torchtitan/detectron2 findings `check` offered and `fix` left (LEFTOVERS.md §4)
REPRODUCERS = {
    "ternary_in_def": _src("""
        import torch


        def f():
            m = torch.cuda.max_memory_allocated()
            return m
    """),
    "ternary_in_if": _src("""
        import torch

        if True:
            m = torch.cuda.max_memory_allocated()
    """),
    "skip_decorator": _src("""
        import unittest

        import torch


        class T(unittest.TestCase):
            @unittest.skipUnless(torch.cuda.device_count() >= 4, "requires 4 CUDA devices to run this test")
            def test_a(self):
                torch.ones(1, device="cuda")
    """),
    "synchronize_ternary_statement": _src("""
        import unittest

        import torch


        class T(unittest.TestCase):
            def test_a(self):
                with torch.no_grad():
                    torch.cuda.synchronize() if torch.cuda.is_available() else None
    """),
    "memory_stats_subscript": _src("""
        import torch


        class T:
            def test_a(self):
                with torch.no_grad():
                    start_mem = torch.cuda.memory_stats()["requested_bytes.all.current"]
    """),
    "backend_ternary_keyword": _src("""
        import torch.distributed as dist


        def init(pg_options, rank, world_size):
            dist.init_process_group(
                backend="nccl" if pg_options is not None else None,
                rank=rank,
                world_size=world_size,
            )
    """),
    "string_indirect_ternary": _src("""
        import torch.distributed as dist


        def launch(has_gpu, url, world_size, rank):
            try:
                dist.init_process_group(
                    backend="NCCL" if has_gpu else "GLOO",
                    init_method=url,
                    world_size=world_size,
                    rank=rank,
                )
            except Exception:
                raise
    """),
    "guard_whose_body_grows_too_long": _src("""
        import torch


        def f():
            if torch.cuda.is_available():
                some_long_variable_name_heres = torch.cuda.max_memory_allocated()  # peaks
                return some_long_variable_name_heres
            return 0
    """),
}


def _inputs():
    for rule in CATALOG.rules:
        if getattr(rule, "manifest_only", False) or not rule.fix:
            continue
        for i, text in enumerate([*rule.bad, *rule.good]):
            yield pytest.param(text, id=f"{rule.code}-{i}")
    for name, text in REPRODUCERS.items():
        yield pytest.param(text, id=name)


def _offered(text: str, settings: Settings) -> list:
    """The findings `check --output-format json` gives a safe fix (with its edits)."""
    json_settings = Settings(**{**settings.__dict__, "fix_edits": True})
    return [f for f in analyze_source(text, "example.py", json_settings, CATALOG)[0]
            if f.fix is not None and f.fix.applicability == "safe"]


def _key(f, text: str) -> tuple:
    """A finding as it stays when other lines move: its rule, message and the line it is on."""
    return (f.code, f.message, text.splitlines()[f.line - 1].strip())


@pytest.mark.parametrize("text", list(_inputs()))
def test_every_safe_fix_check_offers_is_carried_out_by_fix(text):
    settings = Settings(min_torch="2.13")
    try:
        offered = _offered(text, settings)
    except ParseError:  # an example that is not a whole module (a fragment) is not a fix input
        pytest.skip("not a module")
    if not offered:
        return
    fixed = fix_text(text, "example.py", settings, CATALOG).text
    before = Counter(_key(f, text) for f in analyze_source(text, "example.py", settings, CATALOG)[0])
    after = Counter(_key(f, fixed) for f in analyze_source(fixed, "example.py", settings, CATALOG)[0])
    wanted = Counter(_key(f, text) for f in offered)
    left = [f"{k[0]} `{k[2]}`: {k[1]}" for k, n in wanted.items() if after[k] > before[k] - n]
    assert not left, "check offered a safe fix that fix did not apply:\n" + "\n".join(left) + "\n" + fixed


def test_a_fix_fix_drops_for_the_line_length_gets_a_note_in_check():
    text = REPRODUCERS["synchronize_ternary_statement"]
    findings = analyze_source(text, "example.py", Settings(min_torch="2.13", fix_edits=True), CATALOG)[0]
    (sync, guard) = [f for f in findings if f.code == "NRN203"]
    assert sync.fix is None and guard.fix is None
    assert "the line would grow past 88 characters" in sync.fix_note
    assert fix_text(text, "example.py", Settings(min_torch="2.13"), CATALOG).text == text


def test_a_guard_is_not_rewritten_when_the_fix_of_what_it_decides_is_dropped():
    text = REPRODUCERS["guard_whose_body_grows_too_long"]
    fixed = fix_text(text, "example.py", Settings(min_torch="2.13"), CATALOG).text
    # before: `if torch.accelerator.is_available():` over the CUDA-only call, which then ran on Trainium
    assert fixed == text
    findings = analyze_source(text, "example.py", Settings(min_torch="2.13", fix_edits=True), CATALOG)[0]
    assert all(f.fix is None for f in findings)
    guard = next(f for f in findings if "is_available" in f.message)
    assert "the code it guards still has" in guard.fix_note


def test_the_ternary_and_the_decorator_are_broken_as_ruff_does_and_fixed():
    fixed = fix_text(REPRODUCERS["ternary_in_def"], "example.py", Settings(min_torch="2.13"), CATALOG).text
    assert ("    m = (\n        torch.accelerator.max_memory_allocated()\n        if torch.accelerator.is_available()\n"
            "        else 0\n    )\n") in fixed
    # a device count in a skip is a device guard: unsafe (the test then runs on Trainium), and only
    # with the code it decides
    fixed = fix_text(REPRODUCERS["skip_decorator"], "example.py", Settings(min_torch="2.13", unsafe_fixes=True),
                     CATALOG).text
    assert ("    @unittest.skipUnless(\n        torch.accelerator.device_count() >= 4,\n"
            "        \"requires 4 CUDA devices to run this test\",\n    )\n") in fixed, fixed


@pytest.mark.parametrize("select", [(), ("NRN2",), ("NRN203",)])
def test_a_guard_over_code_of_an_unselected_rule_is_left_whatever_is_selected(select):
    # torchtitan tools/profiler.py: `--select NRN2` used to rewrite this guard (NRN109, the CUDA
    # profiler activity, was not looked for) while a run of every rule left it
    text = _src("""
        import torch

        activities = [torch.profiler.ProfilerActivity.CPU]
        if torch.cuda.is_available():
            activities.append(torch.profiler.ProfilerActivity.CUDA)
    """)
    settings = Settings(min_torch="2.13", select=select)
    assert fix_text(text, "example.py", settings, CATALOG).text == text
    (guard,) = [f for f in analyze_source(text, "example.py", settings, CATALOG)[0] if f.code == "NRN203"]
    assert guard.fix is None and "`NRN109`" in guard.fix_note
    reported = {f.code for f in analyze_source(text, "example.py", settings, CATALOG)[0]}
    assert reported == ({"NRN203"} if select else {"NRN203", "NRN109"})  # only what is selected is reported


def test_an_unsafe_fix_offered_without_the_option_is_one_fix_unsafe_fixes_carries_out():
    # sam2 training/utils/train_utils.py: plain `check --output-format json` offered the unsafe
    # rewrite of a memory statistic that `fix --unsafe-fixes` then dropped (the line grew past 88)
    template = _src("""
        import torch


        class Meter:
            def update(self):
                STATEMENT
    """)
    cases = {
        # generative-models scripts/tests/attention.py: no certain broken form, so dropped
        'print(torch.cuda.max_memory_allocated() * 1e-9, "GB used by the native block")': False,
        # sam2's meter: broken inside the ternary's parentheses, as ruff format does
        "self.val = torch.cuda.max_memory_allocated() // 1e9": True,
    }
    for statement, offered in cases.items():
        text = template.replace("STATEMENT", statement)
        (stat,) = analyze_source(text, "example.py", Settings(min_torch="2.6", fix_edits=True), CATALOG)[0]
        fixed = fix_text(text, "example.py", Settings(min_torch="2.6", unsafe_fixes=True), CATALOG).text
        if offered:
            assert stat.fix is not None and stat.fix.applicability == "unsafe" and not stat.fix_note
            assert ("        self.val = (\n            torch.get_device_module().max_memory_allocated()\n"
                    "            if torch.accelerator.is_available()\n            else 0\n        ) // 1e9\n") in fixed
        else:
            assert stat.fix is None and "the line would grow past 88 characters" in stat.fix_note
            assert fixed == text


def test_check_offers_the_is_cuda_fix_that_fix_carries_out_with_the_move_it_guards():
    """`if x.is_cuda: w = w.cuda()`: `fix --unsafe-fixes` rewrites the test and the move together; `check`
    said the test was not rewritten, counting `w.cuda()` as a CUDA-only call (KAIR, set 26)."""
    text = "import torch\n\n\ndef f(x, w):\n    if x.is_cuda:\n        w = w.cuda()\n    return w * x\n"
    settings = Settings(select=("NRN2",), unsafe_fixes=True, fix_edits=True)
    findings = analyze_source(text, "example.py", settings, CATALOG)[0]
    test = next(f for f in findings if f.code == "NRN208")
    assert test.fix is not None and not test.fix_note
    fixed = fix_text(text, "example.py", Settings(select=("NRN2",), unsafe_fixes=True), CATALOG).text
    assert 'if x.device.type not in ("cpu", "meta"):\n        w = w.to(_current_device())' in fixed
