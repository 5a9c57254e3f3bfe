"""Running the engine on an editor's text: findings, one fix's edits, and every fix at once.

Diagnostics need the findings, not their fixes, and planning the fixes is most of the time a
check takes (0.18 s of 0.30 s on a 2,000-line training script). So a check for diagnostics runs
with a copy of the catalog whose rules have no fix (the findings are the same: the fixes only
ever change a finding's ``fix`` and ``fix_note``), and the fixes are planned when the editor asks
for code actions (:meth:`Engine.analyze` with ``with_fixes``), once per text.

Everything here runs on the engine's worker thread (see :mod:`.scheduler`), never on the event
loop, and never raises: a module that does not parse is a result (``error``), and a bug of ours
is a result too (``failure``, logged by the server), so one bad document cannot stop the server.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field

from ..catalog.loading import Catalog, load_catalog
from ..errors import ParseError
from ..model import Finding
from .document_settings import DocumentSettings, SettingsCache, engine_path, is_excluded
from .documents import Unit
from .views import DocumentView, NotebookView, apply_engine_edits, view_of

logger = logging.getLogger(__name__)

#: At most this many quick fixes in one code action answer: each needs the fix's edits on their own
#: (one LibCST transformation each; see neuron_lint.fixes.rewrite.ALONE_LIMIT).
MAX_QUICK_FIXES = 16


@dataclass
class Analysis:
    unit: Unit
    view: DocumentView | NotebookView
    settings: DocumentSettings
    path: str  # as the engine was given it
    with_fixes: bool = False  # were fixes planned (else every finding's fix is None)
    findings: list[Finding] = field(default_factory=list)
    error: ParseError | None = None  # the module does not parse
    skipped: str = ""  # why it was not checked (excluded, too large)
    failure: str = ""  # an internal error, for the log

    @property
    def fixable(self) -> list[Finding]:
        """Findings with a fix the settings allow (safe ones; unsafe ones with unsafe fixes on)."""
        unsafe = self.settings.settings.unsafe_fixes
        return [f for f in self.findings if f.fix is not None and (f.fix.applicability == "safe" or unsafe)]


#: Texts whose LibCST module is kept for quick fixes (the documents being edited, roughly).
MODULES_KEPT = 2


class Engine:
    def __init__(self, settings: SettingsCache, encoding: str = "utf-16", root: str | None = None) -> None:
        self.settings = settings
        self.encoding = encoding
        self.root = root  # the workspace folder, for documents without a file
        self._catalog: Catalog | None = None
        self._detection_catalog: Catalog | None = None
        # LibCST's module of the texts quick fixes were last asked for: parsing it and resolving its
        # metadata is most of a fix's cost, and each further quick fix on the same text reuses it
        self._modules: dict[str, object] = {}

    @property
    def catalog(self) -> Catalog:
        if self._catalog is None:
            self._catalog = load_catalog()
        return self._catalog

    @property
    def detection_catalog(self) -> Catalog:
        """The catalog with no fix in any rule: findings without the cost of planning fixes."""
        if self._detection_catalog is None:
            self._detection_catalog = Catalog(tuple(dataclasses.replace(r, fix=None) for r in self.catalog.rules))
        return self._detection_catalog

    def analyze(self, unit: Unit, with_fixes: bool = False) -> Analysis:
        """Check a unit's text as it is in the editor (planning the fixes too, if asked)."""
        from ..engine.pipeline import check_source

        doc_settings = self.settings.for_path(unit.path, self.root)
        view = view_of(unit, self.encoding)
        result = Analysis(unit, view, doc_settings, engine_path(unit.path, unit.key), with_fixes)
        if is_excluded(unit.path, doc_settings):
            result.skipped = "excluded by the configuration's exclude patterns"
            return result
        limit = doc_settings.settings.max_file_bytes
        if len(view.text) > limit // 4 and len(view.text.encode("utf-8", "surrogatepass")) > limit:
            result.skipped = f"larger than the {limit // (1024 * 1024)} MB limit for one file"
            return result
        try:
            catalog = self.catalog if with_fixes else self.detection_catalog
            result.findings = check_source(view.text, result.path, doc_settings.settings, catalog)
        except ParseError as exc:
            result.error = exc
        except Exception as exc:
            logger.exception("checking %s failed", unit.key)
            result.failure = f"{type(exc).__name__}: {exc}"
        return result

    def with_fix_edits(self, analysis: Analysis, findings: list[Finding]) -> list[Finding]:
        """``findings`` (at most MAX_QUICK_FIXES) each with the edits of its own fix, less those whose
        fix the concrete tree refuses or whose result would not parse.

        Only the findings asked about are given edits, each computed alone: ``check_source`` with
        ``fix_edits`` does the whole file, and past 16 fixes it splits one joint rewrite among them
        (a shared import or device definition goes to the first fix only), which is right for
        applying them all but not for applying one.
        """
        from ..engine.pipeline import parse
        from ..fixes.first_party import current_file
        from ..fixes.line_length import current_line_length
        from ..fixes.rewrite import with_edits

        wanted = findings[:MAX_QUICK_FIXES]
        try:
            with current_line_length(analysis.settings.line_length), current_file(analysis.path):
                done = with_edits(analysis.view.text, wanted, analysis.settings.settings,
                                  self._module(analysis.view.text))
        except Exception:
            logger.exception("computing fix edits for %s failed", analysis.unit.key)
            return []
        out = []
        for finding in done:
            if finding.fix is None or not finding.fix.edits:
                continue
            try:
                parse(apply_engine_edits(analysis.view.text, finding.fix.edits), analysis.path)
            except ParseError:
                continue
            out.append(finding)
        return out

    def _module(self, text: str):
        """The LibCST module of ``text`` (None if LibCST cannot read it), kept for the last few texts."""
        from ..fixes.rewrite import parse as parse_cst

        if text not in self._modules:
            while len(self._modules) >= MODULES_KEPT:
                self._modules.pop(next(iter(self._modules)))
            self._modules[text] = parse_cst(text)
        return self._modules[text]

    def fix_all(self, analysis: Analysis) -> str | None:
        """The module text with every allowed fix applied, as ``neuron-lint fix`` would write it;
        None when nothing changes or the fix pipeline fails."""
        from ..fixes.apply import fix_text

        if analysis.error is not None or analysis.skipped or not analysis.fixable:
            return None
        try:
            fixed = fix_text(analysis.view.text, analysis.path, analysis.settings.settings, self.catalog,
                             newline=analysis.view.newline, line_length=analysis.settings.line_length)
        except ParseError:
            return None
        except Exception:
            logger.exception("fixing %s failed", analysis.unit.key)
            return None
        return fixed.text if fixed.text != analysis.view.text else None

