"""The HTML report as a person sees it: opened in a real headless browser (Debian's chromium).

The page must draw its charts from the embedded data, show the same numbers as `--format json`,
and keep markup from the scanned code inert: a file containing `</script><img ...>` renders as text.
"""

import json
import shutil
import subprocess
from html.parser import HTMLParser

import pytest

from neuron_lint.report.html import script_json

from test_report import PAYLOAD, make_project

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
EVIL_NAME = "<img src=x onerror=alert(1)>.py"


class Dom(HTMLParser):
    """Elements (tag, attrs, parent svg id) and the visible text of a serialized DOM."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.elements, self.text, self.stack, self.svg = [], [], [], None
        self.scripts: dict[str, str] = {}
        self._script_id = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "svg":
            self.svg = attrs.get("id")
        self.elements.append((tag, attrs, self.svg))
        if tag == "script":
            self._script_id = attrs.get("id", "")
            self.scripts[self._script_id] = ""

    def handle_endtag(self, tag):
        if tag == "svg":
            self.svg = None
        if tag == "script":
            self._script_id = None

    def handle_data(self, data):
        if self._script_id is not None:
            self.scripts[self._script_id] += data
        else:
            self.text.append(data)

    def find(self, tag, svg=None, cls=None):
        return [a for t, a, s in self.elements if t == tag and (svg is None or s == svg) and (cls is None or cls in a.get("class", "").split())]


def render_in_browser(html_path, tmp_path) -> Dom:
    profile = tmp_path / "chromium-profile"
    proc = subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--virtual-time-budget=5000", "--dump-dom", html_path.as_uri()],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = Dom()
    dom.feed(proc.stdout)
    return dom


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (.ci/run installs Debian's chromium package)")
    from conftest import run_cli

    tmp_path = tmp_path_factory.mktemp("html")
    proj = make_project(tmp_path)
    (proj / "kernels" / EVIL_NAME).write_text(f"import torch\nz = torch.sparse.mm(a, b)  # {PAYLOAD}\n")
    page = tmp_path / "report.html"
    proc = run_cli("report", "--format", "html", "-o", str(page), str(proj))
    assert proc.returncode == 0, proc.stderr
    data = json.loads(run_cli("report", "--format", "json", str(proj)).stdout)
    return page, data, render_in_browser(page, tmp_path)


def _values(rects):
    return [(r["data-label"], int(r["data-value"])) for r in rects]


def test_charts_are_drawn(rendered):
    _, data, dom = rendered
    body = dom.find("body")[0]
    assert body["data-charts-drawn"] == "4"
    for chart in ("chart-families", "chart-directories", "chart-fixable", "chart-effort"):
        svg = next(a for t, a, _ in dom.elements if t == "svg" and a.get("id") == chart)
        assert "data-drawn" in svg, f"{chart} was not drawn"
    bars = dom.find("rect", "chart-families", "bar")
    assert any(float(b["width"]) > 0 for b in bars)


def test_chart_numbers_match_the_json(rendered):
    _, data, dom = rendered
    s = data["summary"]
    assert _values(dom.find("rect", "chart-families", "bar")) == list(s["families"].items())
    assert _values(dom.find("rect", "chart-directories", "bar")) == [
        (d["path"], d["findings"]) for d in data["directories"][:15]]
    assert _values(dom.find("circle", "chart-fixable", "slice")) == [
        ("safe_fixable", s["safe_fixable"]), ("unsafe_fixable", s["unsafe_fixable"]), ("manual", s["manual"])]
    assert _values(dom.find("rect", "chart-effort", "bar")) == [
        (level, v["points"]) for level, v in s["effort"]["by_level"].items()]
    text = " ".join(dom.text)
    assert f"{round(100 * s['safe_fixable'] / s['findings'])}%" in text
    assert f"Blockers ({len(data['blockers'])})" in text
    embedded = json.loads(dom.scripts["report-data"])
    assert embedded == data


def test_injected_markup_stays_text(rendered):
    page, data, dom = rendered
    assert dom.find("img") == [], "markup from a scanned file became an element"
    assert [t for t, _, _ in dom.elements].count("script") == 2
    text = "".join(dom.text)
    assert PAYLOAD in text  # the code excerpt shows the line as written
    assert EVIL_NAME in text  # and the file name
    raw = page.read_text()
    assert raw.count("</script>") == 2 and "<img" not in raw


def test_page_needs_no_network(rendered):
    page, _, dom = rendered
    for tag, attrs, _ in dom.elements:
        for key in ("src", "href"):
            assert key not in attrs, f"<{tag} {key}=...> would load something"
    assert dom.find("link") == []


def test_script_json_cannot_close_the_script_element():
    text = script_json({"x": "</script><!-- & \u2028"})
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == {"x": "</script><!-- & \u2028"}
