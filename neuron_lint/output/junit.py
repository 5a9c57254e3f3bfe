"""``--output-format junit``: JUnit XML, one test suite per file and one failing test case per finding.

CI systems that read test reports (GitLab, Jenkins, Azure) then list findings next to test failures.
A run without findings or errors has one passing test case, so the report is never empty.
"""

from __future__ import annotations

import re
from itertools import groupby
from typing import TextIO
from xml.etree import ElementTree as ET

from ..model import CheckResult, position_text
from . import RenderOptions

_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _x(text: str) -> str:
    """Drop characters XML 1.0 cannot hold (control characters from odd source text)."""
    return _NOT_XML.sub("\ufffd", text)


def render(result: CheckResult, out: TextIO, options: RenderOptions) -> None:
    root = ET.Element("testsuites", name="neuron-lint")
    failures = errors = tests = 0
    for path, group in groupby(result.findings, key=lambda f: f.path):
        findings = list(group)
        suite = ET.SubElement(root, "testsuite", name=_x(path), tests=str(len(findings)), failures=str(len(findings)), errors="0")
        for f in findings:
            at = position_text(f.line, f.col, f.cell)
            case = ET.SubElement(suite, "testcase", name=f"{f.code} {f.name} at {at}", classname=_x(path), file=_x(path),
                                 **({} if f.cell else {"line": str(f.line)}))
            failure = ET.SubElement(case, "failure", message=_x(f.message), type=f.code)
            failure.text = _x(f"{path}:{at}: {f.code} {f.message}\nhelp: {f.suggestion}")
        tests += len(findings)
        failures += len(findings)
    if result.errors:
        suite = ET.SubElement(root, "testsuite", name="files that could not be checked", tests=str(len(result.errors)), failures="0", errors=str(len(result.errors)))
        for e in result.errors:
            case = ET.SubElement(suite, "testcase", name=_x(e.path), classname=_x(e.path), file=_x(e.path))
            ET.SubElement(case, "error", message=_x(e.reason), type="FileError").text = _x(e.reason)
        tests += len(result.errors)
        errors += len(result.errors)
    if tests == 0:
        suite = ET.SubElement(root, "testsuite", name="neuron-lint", tests="1", failures="0", errors="0")
        ET.SubElement(suite, "testcase", name="no findings", classname="neuron-lint")
        tests = 1
    root.set("tests", str(tests))
    root.set("failures", str(failures))
    root.set("errors", str(errors))
    ET.indent(root)
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    out.write(ET.tostring(root, encoding="unicode"))
    out.write("\n")
