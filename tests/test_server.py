"""``neuron-lint server``: a real LSP session over stdio, as an editor holds one.

A small JSON-RPC client (below) starts ``python -m neuron_lint server``; one server serves the whole
module (each test opens documents of its own, under URIs no other test uses). Every wait has a
timeout, so a hang fails the test instead of blocking the run.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

TIMEOUT = 60  # seconds for any one answer (the first check imports the engine)
CUDA = "import torch\nx = torch.ones(1).cuda()\n"
UNSAFE = "import torch\ntorch.backends.cudnn.allow_tf32 = True\nx = torch.ones(1).cuda()\n"


# ---------------------------------------------------------------------- a minimal LSP client
class Client:
    """JSON-RPC over the server's stdin/stdout; a thread reads and sorts what the server sends."""

    def __init__(self, cwd: Path, init_options: dict | None = None, resolve: bool = True) -> None:
        env = {**os.environ, "NO_COLOR": "1"}
        self.proc = subprocess.Popen([sys.executable, "-m", "neuron_lint", "server"], cwd=cwd, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.settings: dict = {}  # what workspace/configuration answers
        self.notifications: list[dict] = []
        self.responses: dict[int, dict] = {}
        self.stderr: list[bytes] = []
        self._next_id = 0
        self.eof = False
        self._cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr), daemon=True).start()
        self.root = cwd
        self.capabilities = self.request("initialize", {
            "processId": os.getpid(), "rootUri": cwd.as_uri(), "initializationOptions": init_options or {},
            "capabilities": {
                "general": {"positionEncodings": ["utf-16"]},
                "workspace": {"configuration": True, "workspaceEdit": {"documentChanges": True},
                              "didChangeWatchedFiles": {"dynamicRegistration": True}},
                "textDocument": {"codeAction": {"resolveSupport": {"properties": ["edit"] if resolve else []},
                                                "codeActionLiteralSupport": {"codeActionKind": {"valueSet": ["quickfix", "source.fixAll"]}}},
                                 "publishDiagnostics": {"versionSupport": True}},
                "notebookDocument": {"synchronization": {}},
            },
        })["capabilities"]
        self.notify("initialized", {})

    def _send(self, message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:  # the server is gone: stop every wait now
                    with self._cond:
                        self.eof = True
                        self._cond.notify_all()
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode().partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            message = json.loads(out.read(length))
            if "method" in message and "id" in message:  # a request from the server
                self._answer(message)
                continue
            with self._cond:
                if "id" in message:
                    self.responses[message["id"]] = message
                else:
                    self.notifications.append(message)
                self._cond.notify_all()

    def _answer(self, message: dict) -> None:
        result = None
        if message["method"] == "workspace/configuration":
            result = [self.settings for _ in message["params"]["items"]]
        try:
            self._send({"id": message["id"], "result": result})
        except (ValueError, OSError):  # the test has closed the connection already
            pass

    def request(self, method: str, params) -> dict:
        with self._cond:
            self._next_id += 1
            msg_id = self._next_id
        self._send({"id": msg_id, "method": method, "params": params})
        with self._cond:
            self._cond.wait_for(lambda: msg_id in self.responses or self.eof, TIMEOUT)
            if msg_id not in self.responses:
                raise AssertionError(f"no answer to {method}; server said: {self.log()}")
            answer = self.responses.pop(msg_id)
        assert "error" not in answer, answer
        return answer["result"]

    def notify(self, method: str, params) -> None:
        self._send({"method": method, "params": params})

    def mark(self) -> int:
        with self._cond:
            return len(self.notifications)

    def diagnostics(self, uri: str, since: int, version: int | None = None) -> list[dict]:
        """The first diagnostics for ``uri`` (of ``version``, if given) published after ``since``."""
        def find():
            for message in self.notifications[since:]:
                p = message.get("params", {})
                if message["method"] == "textDocument/publishDiagnostics" and p["uri"] == uri and (
                        version is None or p.get("version") == version):
                    return p
            return None

        with self._cond:
            self._cond.wait_for(lambda: find() is not None or self.eof, TIMEOUT)
            if find() is None:
                raise AssertionError(f"no diagnostics for {uri} v{version}; server said: {self.log()}")
            return find()["diagnostics"]

    def published(self, uri: str, since: int = 0) -> list[dict]:
        with self._cond:
            return [m["params"] for m in self.notifications[since:]
                    if m["method"] == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri]

    def open(self, path: Path, text: str, language: str = "python", version: int = 1) -> tuple[str, list[dict]]:
        uri = path.as_uri()
        since = self.mark()
        self.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": language, "version": version, "text": text}})
        return uri, (self.diagnostics(uri, since, version) if language == "python" else [])

    def actions(self, uri: str, rng: dict, only: list[str] | None = None) -> list[dict]:
        context: dict = {"diagnostics": []}
        if only:
            context["only"] = only
        return self.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": rng, "context": context}) or []

    def edit_of(self, action: dict) -> dict:
        """The action's edit, resolving the action first if it came without one."""
        if "edit" not in action:
            action = self.request("codeAction/resolve", action)
        return action["edit"]

    def log(self) -> str:
        return b"".join(self.stderr).decode(errors="replace")[-3000:]

    def stop(self) -> int:
        self.request("shutdown", None)
        self.notify("exit", None)
        self.proc.stdin.close()
        return self.proc.wait(TIMEOUT)


def utf16_offset(text: str, position: dict) -> int:
    """The character offset of an LSP position (UTF-16 columns; lines end at \\n, \\r\\n or \\r)."""
    lines = re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", text)
    start = sum(len(line) for line in lines[:position["line"]])
    line = lines[position["line"]] if position["line"] < len(lines) else ""
    units = 0
    for i, ch in enumerate(line):
        if units >= position["character"] or ch in "\r\n":
            return start + i
        units += 2 if ord(ch) > 0xFFFF else 1
    return start + len(line)


def apply_edit(texts: dict[str, str], edit: dict) -> dict[str, str]:
    """Carry out a WorkspaceEdit (documentChanges or changes) on ``texts`` (URI -> text)."""
    out = dict(texts)
    changes = [(dc["textDocument"]["uri"], dc["edits"]) for dc in edit.get("documentChanges") or []]
    changes += list((edit.get("changes") or {}).items())
    for uri, edits in changes:
        text = out[uri]
        spans = [(utf16_offset(text, e["range"]["start"]), utf16_offset(text, e["range"]["end"]), e["newText"]) for e in edits]
        for start, end, new in sorted(spans, reverse=True):
            text = text[:start] + new + text[end:]
        out[uri] = text
    return out


def written_by_fix(beside: Path, text: str) -> str:
    """What ``neuron-lint fix`` writes for ``text`` in the folder of ``beside`` (same settings), by
    the fix command's own code, run on a copy."""
    from neuron_lint.cli.fix import run_fix
    from neuron_lint.config.files import from_command_line

    copy = beside.with_name(f"{beside.stem}_fixed_copy.py")
    copy.write_text(text)
    run_fix([str(copy)], from_command_line([str(copy)]).settings, quiet=True, jobs=1)
    return copy.read_text()


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("workspace")
    (root / ".git").mkdir()  # the settings search stops here
    (root / "pyproject.toml").write_text('[project]\nname = "demo"\ndependencies = ["torch>=2.6"]\n')
    (root / "unsafe").mkdir()
    (root / "unsafe" / "pyproject.toml").write_text("[tool.neuron-lint]\nunsafe-fixes = true\n")
    return root


@pytest.fixture(scope="module")
def server(workspace):
    client = Client(workspace)
    yield client
    if client.proc.poll() is None:
        try:
            client.stop()
        finally:
            if client.proc.poll() is None:
                client.proc.kill()


PARITY = "import torch\n\n\ndef test_parity():\n    torch.backends.cudnn.allow_tf32 = True\n    assert torch.ones(2).sum() == 2\n"


def one(diagnostics: list[dict], code: str) -> dict:
    found = [d for d in diagnostics if d.get("code") == code]
    assert len(found) == 1, diagnostics
    return found[0]


# ---------------------------------------------------------------------- tests
def test_capabilities(server):
    caps = server.capabilities
    assert caps["textDocumentSync"]["change"] == 2  # incremental
    assert set(caps["codeActionProvider"]["codeActionKinds"]) == {"quickfix", "source.fixAll.neuron-lint"}
    assert caps["notebookDocumentSync"]["notebookSelector"][0]["notebook"] == "jupyter-notebook"
    assert caps["positionEncoding"] == "utf-16"


def test_diagnostics_on_open(server, workspace):
    _, diagnostics = server.open(workspace / "open.py", CUDA)
    d = one(diagnostics, "NRN201")
    assert d["range"] == {"start": {"line": 1, "character": 18}, "end": {"line": 1, "character": 24}}  # `cuda()`
    assert d["source"] == "neuron-lint"
    assert d["severity"] == 2  # Warning: a confirmed rule outside the categories that break a run
    assert d["codeDescription"]["href"].endswith("NRN201-cuda-call.toml")
    assert "`.cuda()`" in d["message"]


def test_severity_follows_category_and_confidence(server, workspace):
    text = ("import torch\nimport triton\ntorch.backends.cudnn.benchmark = True\n"
            "m = torch.sparse_coo_tensor(torch.tensor([[0], [0]]), torch.ones(1), (1, 1))\n")
    _, diagnostics = server.open(workspace / "severity.py", text)
    assert one(diagnostics, "NRN101")["severity"] == 1  # unsupported, confirmed: Error
    assert one(diagnostics, "NRN601")["severity"] == 2  # a CUDA-only package, likely: Warning
    assert one(diagnostics, "NRN209")["severity"] == 3  # CUDA-specific, likely: Information


def test_quick_fix_writes_what_fix_writes(server, workspace):
    uri, diagnostics = server.open(workspace / "quick.py", CUDA)
    d = one(diagnostics, "NRN201")
    actions = server.actions(uri, d["range"], only=["quickfix"])
    fixes = [a for a in actions if a["title"].startswith("Fix NRN201:")]
    assert len(fixes) == 1 and fixes[0]["title"].endswith("(safe)") and fixes[0]["kind"] == "quickfix"
    assert "edit" not in fixes[0]  # this client resolves edits: computed only for the action picked
    edit = server.edit_of(fixes[0])
    assert edit["documentChanges"][0]["textDocument"]["version"] == 1
    fixed = apply_edit({uri: CUDA}, edit)[uri]
    assert fixed == written_by_fix(workspace / "quick.py", CUDA)
    assert ".to(DEVICE)" in fixed


def test_fix_all_is_resolved_and_matches_fix(server, workspace):
    text = CUDA + "y = torch.zeros(2).cuda()\nwith torch.autocast('cuda'):\n    pass\n"
    uri, diagnostics = server.open(workspace / "fix_all.py", text)
    assert {d["code"] for d in diagnostics} == {"NRN201", "NRN205"}
    whole = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}
    actions = server.actions(uri, whole, only=["source.fixAll"])
    assert [a["kind"] for a in actions] == ["source.fixAll.neuron-lint"]
    assert actions[0]["title"] == "Fix all safe neuron-lint findings" and "edit" not in actions[0]
    resolved = server.request("codeAction/resolve", actions[0])
    assert apply_edit({uri: text}, resolved["edit"])[uri] == written_by_fix(workspace / "fix_all.py", text)
    # Also offered among the quick fixes where a fixable finding is.
    here = server.actions(uri, one(diagnostics, "NRN205")["range"])
    assert "Fix all safe neuron-lint findings" in [a["title"] for a in here if a["kind"] == "quickfix"]


def test_change_gives_fresh_diagnostics_and_the_newest_text_wins(server, workspace):
    uri, diagnostics = server.open(workspace / "change.py", CUDA)
    assert [d["code"] for d in diagnostics] == ["NRN201"]
    since = server.mark()
    for version in range(2, 7):  # a burst of typing: each adds a line
        line = 2 + version - 2
        server.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"range": {"start": {"line": line, "character": 0}, "end": {"line": line, "character": 0}},
                                "text": f"y{version} = torch.zeros(1).cuda()\n"}]})
    latest = server.diagnostics(uri, since, version=6)
    assert [d["range"]["start"]["line"] for d in latest] == [1, 2, 3, 4, 5, 6]
    time.sleep(0.5)  # nothing older may come after it
    versions = [p["version"] for p in server.published(uri, since)]
    assert versions[-1] == 6 and versions == sorted(versions), versions
    # A full-text change is taken as well.
    since = server.mark()
    server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 7}, "contentChanges": [{"text": "import torch\n"}]})
    assert server.diagnostics(uri, since, version=7) == []


def test_unsafe_fixes_only_when_the_settings_allow_them(server, workspace):
    rng = {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 5}}
    uri, _ = server.open(workspace / "safe_only.py", UNSAFE)
    titles = [a["title"] for a in server.actions(uri, rng)]
    assert not [t for t in titles if "(unsafe)" in t], titles
    uri, _ = server.open(workspace / "unsafe" / "allowed.py", UNSAFE)  # its pyproject says unsafe-fixes = true
    titles = [a["title"] for a in server.actions(uri, rng)]
    assert [t for t in titles if t.startswith("Fix NRN209:") and t.endswith("(unsafe)")], titles
    assert "Fix all neuron-lint findings (safe and unsafe fixes)" in titles


def test_editor_setting_allows_unsafe_fixes(server, workspace):
    rng = {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 5}}
    uri, _ = server.open(workspace / "editor_setting.py", UNSAFE)
    try:
        server.notify("workspace/didChangeConfiguration", {"settings": {"neuron-lint": {"unsafeFixes": True}}})
        titles = [a["title"] for a in server.actions(uri, rng)]
        assert [t for t in titles if t.endswith("(unsafe)")], titles
    finally:
        server.notify("workspace/didChangeConfiguration", {"settings": {"neuron-lint": {"unsafeFixes": None}}})
    titles = [a["title"] for a in server.actions(uri, rng)]
    assert not [t for t in titles if t.endswith("(unsafe)")], titles


def test_config_change_drops_the_cached_settings(server, workspace):
    folder = workspace / "later"
    folder.mkdir()
    uri, diagnostics = server.open(folder / "a.py", CUDA)
    assert diagnostics
    config = folder / "neuron-lint.toml"
    config.write_text('ignore = ["NRN201"]\n')
    since = server.mark()
    server.notify("workspace/didChangeWatchedFiles", {"changes": [{"uri": config.as_uri(), "type": 1}]})
    assert server.diagnostics(uri, since) == []


def test_saving_a_module_refreshes_what_other_fixes_read_of_the_project(server, workspace):
    # `allow_tf32 = True` in one test module is removed (unsafe) unless another module of the project
    # turns TF32 off: saving such a module changes the fixes offered in the first
    folder = workspace / "unsafe" / "tf32"
    folder.mkdir()
    parity = folder / "test_parity.py"
    parity.write_text(PARITY)
    uri, diagnostics = server.open(parity, PARITY)
    rng = one(diagnostics, "NRN209")["range"]

    def offered():
        return [a["title"] for a in server.actions(uri, rng) if a["title"].startswith("Fix NRN209:")]

    assert offered()
    exact = folder / "test_exact.py"
    exact.write_text(PARITY.replace("True", "False"))
    since = server.mark()
    server.notify("textDocument/didSave", {"textDocument": {"uri": exact.as_uri()}})
    assert server.diagnostics(uri, since)  # the open module is checked again
    assert not offered()


def test_excluded_files_get_nothing_and_a_broken_config_is_said_once(server, workspace):
    (workspace / "legacy").mkdir()
    (workspace / "legacy" / "neuron-lint.toml").write_text('extend-exclude = ["old_*.py"]\n')
    _, diagnostics = server.open(workspace / "legacy" / "old_train.py", CUDA)
    assert diagnostics == []
    (workspace / "broken_config").mkdir()
    (workspace / "broken_config" / "neuron-lint.toml").write_text("selct = []\n")
    since = server.mark()
    _, first = server.open(workspace / "broken_config" / "a.py", CUDA)
    _, second = server.open(workspace / "broken_config" / "b.py", CUDA)
    assert [d["code"] for d in first + second] == ["NRN201", "NRN201"]  # checked with the defaults
    shown = [m["params"]["message"] for m in server.notifications[since:] if m["method"] == "window/showMessage"]
    assert len(shown) == 1 and "unknown key" in shown[0] and "selct" in shown[0], shown


def test_syntax_error_is_one_diagnostic_and_the_server_lives_on(server, workspace):
    uri, diagnostics = server.open(workspace / "broken.py", "import torch\ndef f(:\n")
    assert len(diagnostics) == 1 and diagnostics[0]["severity"] == 1
    assert diagnostics[0]["range"]["start"] == {"line": 1, "character": 6}
    assert server.actions(uri, diagnostics[0]["range"]) == []
    since = server.mark()
    server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": CUDA}]})
    assert [d["code"] for d in server.diagnostics(uri, since, version=2)] == ["NRN201"]


def test_non_ascii_columns_are_utf16(server, workspace):
    text = 'import torch\ny = "é😀"; z = torch.zeros(2).cuda()  # ü\n'
    uri, diagnostics = server.open(workspace / "wide.py", text)
    d = one(diagnostics, "NRN201")
    # 29 characters before `cuda`, one of them outside the BMP: 30 UTF-16 code units.
    assert d["range"] == {"start": {"line": 1, "character": 30}, "end": {"line": 1, "character": 36}}
    fix = next(a for a in server.actions(uri, d["range"]) if a["title"].startswith("Fix NRN201:"))
    assert apply_edit({uri: text}, server.edit_of(fix))[uri] == written_by_fix(workspace / "wide.py", text)


def test_other_languages_are_ignored_and_close_clears(server, workspace):
    other, _ = server.open(workspace / "notes.md", CUDA, language="markdown")
    uri, diagnostics = server.open(workspace / "closing.py", CUDA)  # handled after the markdown one
    assert diagnostics and server.published(other) == []
    since = server.mark()
    server.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    assert server.diagnostics(uri, since) == []


def test_notebook_cells(server, workspace):
    nb = (workspace / "demo.ipynb").as_uri()
    cells = {f"{nb}#cell{i}": text for i, text in enumerate(["import torch", "# notes", "%matplotlib inline\nx = torch.ones(1).cuda()"])}
    uris = list(cells)
    since = server.mark()
    server.notify("notebookDocument/didOpen", {
        "notebookDocument": {"uri": nb, "notebookType": "jupyter-notebook", "version": 1,
                             "cells": [{"kind": 2, "document": uris[0]}, {"kind": 1, "document": uris[1]},
                                       {"kind": 2, "document": uris[2]}]},
        "cellTextDocuments": [{"uri": u, "languageId": "python" if i != 1 else "markdown", "version": 1, "text": t}
                              for i, (u, t) in enumerate(cells.items())]})
    d = one(server.diagnostics(uris[2], since), "NRN201")
    assert d["range"]["start"] == {"line": 1, "character": 18}  # the magic is masked, lines are the cell's
    assert server.diagnostics(uris[0], since) == []
    fix_all = server.actions(uris[2], d["range"], only=["source.fixAll"])
    fixed = apply_edit(cells, server.request("codeAction/resolve", fix_all[0])["edit"])
    assert fixed[uris[2]] == "%matplotlib inline\nx = torch.ones(1).to(DEVICE)"
    assert "DEVICE = (" in fixed[uris[0]] and fixed[uris[1]] == "# notes"
    quick = next(a for a in server.actions(uris[2], d["range"], only=["quickfix"]) if a["title"].startswith("Fix NRN201:"))
    assert apply_edit(cells, server.edit_of(quick)) == fixed  # the only fix: the same edit, cell by cell
    since = server.mark()
    server.notify("notebookDocument/didChange", {
        "notebookDocument": {"uri": nb, "version": 2},
        "change": {"cells": {"textContent": [{"document": {"uri": uris[2], "version": 2},
                                              "changes": [{"text": "x = 1"}]}]}}})
    assert server.diagnostics(uris[2], since, version=2) == []
    added = f"{nb}#cell3"
    since = server.mark()
    server.notify("notebookDocument/didChange", {
        "notebookDocument": {"uri": nb, "version": 3},
        "change": {"cells": {"structure": {
            "array": {"start": 3, "deleteCount": 0, "cells": [{"kind": 2, "document": added}]},
            "didOpen": [{"uri": added, "languageId": "python", "version": 1, "text": "y = torch.zeros(1).cuda()"}]}}}})
    assert [d["code"] for d in server.diagnostics(added, since)] == ["NRN201"]  # `import torch` is in cell 1
    # A client that does not sync notebooks sends a cell as a document of its own: magics still masked.
    lone = (workspace / "lone.ipynb").as_uri().replace("file:", "vscode-notebook-cell:", 1) + "#W1"
    since = server.mark()
    server.notify("textDocument/didOpen", {"textDocument": {"uri": lone, "languageId": "python", "version": 1,
                                                            "text": "import torch\n%matplotlib inline\nx = torch.ones(1).cuda()\n"}})
    assert [d["code"] for d in server.diagnostics(lone, since)] == ["NRN201"]
    since = server.mark()
    server.notify("notebookDocument/didClose", {"notebookDocument": {"uri": nb}, "cellTextDocuments": [{"uri": u} for u in uris + [added]]})
    server.diagnostics(uris[0], since)


def test_client_without_resolve_gets_edits_at_once_and_exit_is_0(tmp_path):
    client = Client(tmp_path, resolve=False)
    uri, diagnostics = client.open(tmp_path / "x.py", CUDA)
    actions = client.actions(uri, one(diagnostics, "NRN201")["range"])
    assert {a["title"] for a in actions} == {"Fix NRN201: Move to the current accelerator with `.to(...)` (safe)",
                                             "Fix all safe neuron-lint findings"}
    assert all("edit" in a for a in actions)
    assert client.stop() == 0  # shutdown, then exit


def test_version_and_startup_do_not_need_pygls():
    probe = "import sys, neuron_lint.api, neuron_lint.cli; print('pygls' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=TIMEOUT, check=True)
    assert out.stdout.strip() == "False"


def test_exit_without_shutdown_is_1(tmp_path):
    client = Client(tmp_path)
    client.notify("exit", None)
    client.proc.stdin.close()
    assert client.proc.wait(TIMEOUT) == 1


# ---------------------------------------------------------------------- positions, in this process
@pytest.mark.parametrize("encoding, start", [("utf-16", 30), ("utf-8", 33), ("utf-32", 29)])
def test_engine_columns_in_each_position_encoding(encoding, start):
    from neuron_lint.server.text import TextLines

    lines = TextLines('import torch\ny = "é😀"; z = torch.zeros(2).cuda()\n', encoding)
    rng = lines.engine_range(2, 30, 2, 36)  # the engine: 1-based line, 1-based character column
    assert (rng.start.line, rng.start.character, rng.end.character) == (1, start, start + 6)
    assert lines.offset_at(rng.start) == len('import torch\ny = "é😀"; z = torch.zeros(2).')


def test_positions_at_line_ends_and_the_end_of_the_text():
    from lsprotocol.types import Position, Range, TextDocumentContentChangePartial

    from neuron_lint.server.text import TextLines, apply_change

    text = "a = 1\r\nb = '\x0c'\nc = 2\n"  # a form feed does not end a line in LSP (nor in Python)
    lines = TextLines(text)
    end = lines.position_at(len(text))
    assert (end.line, end.character) == (3, 0)  # after the final newline: the empty last line
    assert (lines.engine_position(1, 99).line, lines.engine_position(1, 99).character) == (1, 0)  # past a line: next line
    assert lines.offset_at(Position(line=0, character=99)) == 5  # past the end of a line: its end
    change = TextDocumentContentChangePartial(range=Range(start=Position(line=2, character=0), end=Position(line=2, character=1)), text="d")
    assert apply_change(text, change, "utf-16") == "a = 1\r\nb = '\x0c'\nd = 2\n"
