#!/usr/bin/env python3
"""How long the language server takes to answer an edit with fresh diagnostics.

    python bench/server_latency.py [--changes 20] [--pause 0.4] [--json out.json] [FILE.py ...]

What it does:

1. Builds a ~2,000-line Python module with CUDA code: real training and model files (nanoGPT,
   timm, minGPT under ``/work/repos``, read only) concatenated until there are at least
   ``--lines`` lines, ``from __future__`` lines dropped so that the result still parses; or the
   files given on the command line; or, when neither exists, a generated module.
2. Starts ``python -m neuron_lint server`` with pygls's own LSP client (a second client besides the
   one the tests use), initializes it and opens the module as a document (the first diagnostics
   include the engine's imports: reported as "open").
3. ``--changes`` times: an incremental ``didChange`` that edits one line (the findings stay), then
   waits for the ``publishDiagnostics`` of that document version; the time between the two is the
   latency an editor user sees. Changes are ``--pause`` seconds apart, longer than the debounce,
   so each one is checked on its own.
4. Also times one code action request where a fixable finding is (the fixes are planned then,
   and that fix's edits computed) and a "fix all" resolve (the whole fix pipeline) on the module.
5. Prints the median and the spread, the server's debounce (which the latency includes) and the
   rest (the check itself), and the same check run in this process for comparison, with the
   machine's load average (other work on the machine slows every figure).

It is a benchmark, not a test: nothing here runs under pytest.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SOURCES = [  # (repository folder under /work/repos, file)
    ("nanoGPT", "model.py"), ("nanoGPT", "train.py"), ("nanoGPT", "bench.py"), ("nanoGPT", "sample.py"),
    ("timm", "validate.py"), ("minGPT", "mingpt/model.py"), ("minGPT", "mingpt/trainer.py"),
    ("minGPT", "mingpt/utils.py"), ("nanoGPT", "configurator.py"), ("timm", "train.py"),
]
TARGET_S = 0.5


def build_module(files: list[Path], lines: int) -> tuple[str, list[str]]:
    """The module's text and the files it is made of."""
    import ast

    if not files:
        files = [Path("/work/repos") / repo / name for repo, name in SOURCES]
    parts, used, count = [], [], 0
    for path in files:
        if count >= lines:
            break
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            continue
        text = "".join(line for line in text.splitlines(keepends=True) if not line.startswith("from __future__"))
        try:
            ast.parse("".join(parts) + text)
        except SyntaxError:
            continue
        parts.append(text if text.endswith("\n") else text + "\n")
        used.append(str(path))
        count += text.count("\n")
    if count < lines:  # not enough real files here: a generated module of the same shape
        parts.append(generated(lines - count))
        used.append(f"generated ({lines - count} lines)")
    return "".join(parts), used


def generated(lines: int) -> str:
    block = [
        "class Block{n}(torch.nn.Module):",
        "    def __init__(self, dim):",
        "        super().__init__()",
        "        self.proj = torch.nn.Linear(dim, dim).cuda()",
        "    def forward(self, x):",
        "        if torch.cuda.is_available():",
        "            torch.cuda.synchronize()",
        "        with torch.autocast('cuda', dtype=torch.bfloat16):",
        "            return self.proj(x.to('cuda:0'))",
        "",
    ]
    out = ["import torch", ""]
    n = 0
    while len(out) < lines:
        out += [line.format(n=n) for line in block]
        n += 1
    return "\n".join(out) + "\n"


async def measure(text: str, changes: int, pause: float, workdir: Path) -> dict:
    from lsprotocol import types
    from pygls.lsp.client import LanguageClient

    client = LanguageClient("neuron-lint-bench", "1")
    arrived: dict[int, float] = {}
    counts: dict[int, int] = {}
    waiters: dict[int, asyncio.Future] = {}

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
        arrived[params.version] = time.perf_counter()
        counts[params.version] = len(params.diagnostics)
        future = waiters.pop(params.version, None)
        if future is not None and not future.done():
            future.set_result(None)

    async def until_version(version: int) -> float:
        if version not in arrived:
            waiters[version] = asyncio.get_running_loop().create_future()
            await asyncio.wait_for(waiters[version], 60)
        return arrived[version]

    path = workdir / "bench_module.py"
    path.write_text(text, encoding="utf-8")
    uri = path.as_uri()
    await client.start_io(sys.executable, "-m", "neuron_lint", "server", cwd=str(workdir))
    await client.initialize_async(types.InitializeParams(
        process_id=os.getpid(), root_uri=workdir.as_uri(),
        capabilities=types.ClientCapabilities(text_document=types.TextDocumentClientCapabilities(
            code_action=types.CodeActionClientCapabilities(
                resolve_support=types.ClientCodeActionResolveOptions(properties=["edit"]))))))
    client.initialized(types.InitializedParams())

    started = time.perf_counter()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
    opened = await until_version(1) - started

    latencies = []
    edited = text.count("\n") // 2  # a line in the middle: every finding stays, every line is checked
    for version in range(2, changes + 2):
        await asyncio.sleep(pause)
        change = types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=edited, character=0), end=types.Position(line=edited, character=0)),
            text=f"# edit {version}\n" if version == 2 else "#")
        started = time.perf_counter()
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version), content_changes=[change]))
        latencies.append(await until_version(version) - started)

    actions = await time_code_actions(client, types, uri, text)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return {"open_s": opened, "change_s": latencies, "findings": counts.get(changes + 1, 0), **actions}


async def time_code_actions(client, types, uri: str, text: str) -> dict:
    """One code action request on the line of the first fixable finding (the fixes are planned and
    that fix's edits computed with LibCST: the first request for a text), and one "fix all" resolve."""
    from neuron_lint.api import check_source

    fixable = [f for f in check_source(text, "bench_module.py") if f.fix is not None and f.fix.applicability == "safe"]
    line = fixable[0].line - 1 if fixable else 0
    rng = types.Range(start=types.Position(line=line, character=0), end=types.Position(line=line, character=200))
    started = time.perf_counter()
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=rng,
        context=types.CodeActionContext(diagnostics=[])))
    quick = time.perf_counter() - started

    async def resolve_s(action) -> float | None:
        if action is None:
            return None
        started = time.perf_counter()
        await client.code_action_resolve_async(action)
        return time.perf_counter() - started

    one_fix = next((a for a in actions or () if a.kind == "quickfix" and a.title.startswith("Fix NRN")), None)
    fix_all = next((a for a in actions or () if a.kind == "source.fixAll.neuron-lint"), None)
    return {"quick_fix_s": quick, "quick_fixes": sum(1 for a in actions or () if a.kind == "quickfix"),
            "quick_fix_resolve_s": await resolve_s(one_fix), "fix_all_resolve_s": await resolve_s(fix_all)}


def in_process_check_s(text: str, path: str, with_fixes: bool, reps: int = 5) -> float:
    """The median time of the check the server runs for diagnostics (no fixes planned), or of the
    full check (``with_fixes``: what ``check`` does), in this process."""
    from neuron_lint.api import check_source
    from neuron_lint.config.settings import Settings
    from neuron_lint.server.analysis import Engine
    from neuron_lint.server.document_settings import SettingsCache

    engine = Engine(SettingsCache())
    catalog = engine.catalog if with_fixes else engine.detection_catalog
    check_source(text, path, Settings(), catalog)
    times = []
    for _ in range(reps):
        started = time.perf_counter()
        check_source(text, path, Settings(), catalog)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="*", type=Path, help="Python files to make the module of (default: see above)")
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--changes", type=int, default=20)
    parser.add_argument("--pause", type=float, default=0.4, help="seconds between changes")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    from neuron_lint.server.scheduler import DEBOUNCE_SECONDS

    text, used = build_module(args.files, args.lines)
    with tempfile.TemporaryDirectory(prefix="neuron-lint-server-bench-") as tmp:
        (Path(tmp) / ".git").mkdir()  # a project of its own: no configuration from above
        result = asyncio.run(measure(text, args.changes, args.pause, Path(tmp)))
        check_s = in_process_check_s(text, str(Path(tmp) / "bench_module.py"), with_fixes=False)
        full_check_s = in_process_check_s(text, str(Path(tmp) / "bench_module.py"), with_fixes=True)
    changes = result["change_s"]
    median = statistics.median(changes)
    report = {
        "module_lines": text.count("\n"), "made_of": used, "findings": result["findings"],
        "cpus": os.cpu_count(), "open_s": result["open_s"],
        "change_median_s": median, "change_min_s": min(changes), "change_max_s": max(changes),
        "debounce_s": DEBOUNCE_SECONDS, "change_median_less_debounce_s": median - DEBOUNCE_SECONDS,
        "in_process_check_s": check_s, "in_process_check_with_fixes_s": full_check_s,
        "load_average_1min": os.getloadavg()[0] if hasattr(os, "getloadavg") else None, "quick_fix_request_s": result["quick_fix_s"],
        "quick_fixes": result["quick_fixes"], "quick_fix_resolve_s": result["quick_fix_resolve_s"],
        "fix_all_resolve_s": result["fix_all_resolve_s"],
        "target_s": TARGET_S, "changes": len(changes),
    }
    print(f"module: {report['module_lines']} lines, {report['findings']} findings ({', '.join(used)})")
    print(f"open -> first diagnostics:       {report['open_s']:.3f} s (includes the engine's imports)")
    print(f"change -> fresh diagnostics:     median {median:.3f} s, min {min(changes):.3f}, max {max(changes):.3f} "
          f"({len(changes)} changes)")
    print(f"  of which the debounce:         {DEBOUNCE_SECONDS:.3f} s; the rest: {median - DEBOUNCE_SECONDS:.3f} s")
    print(f"  the same check in-process:     {check_s:.3f} s (with the fixes planned, as `check` does: {full_check_s:.3f} s)")
    print(f"code action request:             {report['quick_fix_request_s']:.3f} s ({report['quick_fixes']} quick fixes, "
          "listed without their edits)")
    for name, label in (("quick_fix_resolve_s", "one quick fix's edit (resolve)"), ("fix_all_resolve_s", "fix-all edit (resolve)")):
        if report[name] is not None:
            print(f"{label + ':':<33}{report[name]:.3f} s")
    verdict = "meets" if median < TARGET_S else "MISSES"
    load = f", load average {report['load_average_1min']:.1f}" if report["load_average_1min"] is not None else ""
    print(f"target: median under {TARGET_S} s on {report['cpus']} CPUs{load}: {verdict}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0 if median < TARGET_S else 1


if __name__ == "__main__":
    raise SystemExit(main())
