"""Hostile names and hostile streams: what neuron-lint writes survives both (output/safe_output.py).

File names that are not UTF-8 or hold terminal control sequences; an ASCII-only stdout; a reader
that goes away (``| head -1``); a full disk; ``COLUMNS=0``. No traceback, no "internal error",
no raw escape sequence on the terminal, and output that is valid UTF-8 where a format promises it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow

CUDA = b"import torch\nx = torch.ones(2).cuda()\n"
ESC_NAME = "esc\x1b[31mred\x07.py"  # ESC starts a colour sequence, BEL rings (or ends an OSC title)


def env(**extra: str) -> dict:
    out = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    for key in ("FORCE_COLOR", "PYTHONIOENCODING", "PYTHONUTF8", "LC_ALL"):
        out.pop(key, None)
    out.update(extra)
    return out


def run(args, cwd, stdout=subprocess.PIPE, **extra) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "neuron_lint", *args], cwd=cwd, env=env(**extra),
                          stdout=stdout, stderr=subprocess.PIPE, timeout=300, check=False)


def no_crash(r: subprocess.CompletedProcess) -> None:
    err = r.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err and "internal error" not in err and "Exception ignored" not in err, err


def make(tmp_path, name: bytes | str, content: bytes = CUDA):
    path = os.path.join(os.fsencode(tmp_path), name if isinstance(name, bytes) else os.fsencode(name))
    try:
        with open(path, "wb") as fh:
            fh.write(content)
    except (OSError, ValueError) as exc:  # a file system that refuses such names (APFS, NTFS)
        pytest.skip(f"cannot create {name!r} here: {exc}")
    return path


# ---------------------------------------------------------------- file names that are not UTF-8
def test_sarif_gives_a_name_that_is_not_utf8_as_a_percent_encoded_uri(tmp_path):
    make(tmp_path, b"bad\xff.py")
    r = run(["check", "--no-cache", "--output-format", "sarif", "."], tmp_path)
    no_crash(r)
    assert r.returncode == 1
    log = json.loads(r.stdout.decode("utf-8"))  # strict UTF-8
    uris = [res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for res in log["runs"][0]["results"]]
    assert uris and set(uris) == {"bad%FF.py"}  # the exact bytes, as RFC 3986 spells them


def test_json_output_is_valid_utf8_for_a_name_that_is_not(tmp_path):
    make(tmp_path, b"bad\xff.py")
    for args in (["check", "--no-cache", "--output-format", "json", "."], ["report", "--no-cache", "--format", "json", "."]):
        r = run(args, tmp_path)
        no_crash(r)
        text = r.stdout.decode("utf-8")  # raises on the raw byte 0xff
        json.loads(text)
        assert "bad\ufffd.py" in text  # the undecodable byte is U+FFFD


# ---------------------------------------------------------------- terminal injection
@pytest.mark.parametrize("fmt", ["concise", "full", "github"])
def test_terminal_formats_show_control_characters_escaped(tmp_path, fmt):
    make(tmp_path, ESC_NAME)
    make(tmp_path, b"bad\xff.py")
    r = run(["check", "--no-cache", "--output-format", fmt, "."], tmp_path)
    no_crash(r)
    assert r.returncode == 1
    assert b"\x1b" not in r.stdout and b"\x07" not in r.stdout and b"\xff" not in r.stdout
    out = r.stdout.decode("utf-8")
    assert "esc\\x1b[31mred\\x07.py" in out and "bad\\xff.py" in out


def test_errors_on_stderr_show_control_characters_escaped(tmp_path):
    make(tmp_path, "syntax\x1b]0;owned\x07.py", b"def (\n")
    for args in (["check", "--no-cache", "."], ["fix", "."], ["report", "--no-cache", "."]):
        r = run(args, tmp_path)
        assert r.returncode == 2
        assert b"\x1b" not in r.stderr and b"\x07" not in r.stderr, r.stderr
        assert "syntax\\x1b]0;owned\\x07.py" in r.stderr.decode("utf-8"), r.stderr


def test_fix_messages_show_control_characters_escaped(tmp_path):
    make(tmp_path, ESC_NAME)
    r = run(["fix", "."], tmp_path)
    no_crash(r)
    assert b"\x1b" not in r.stdout and b"\x07" not in r.stdout
    assert "Fixed 1 finding in esc\\x1b[31mred\\x07.py" in r.stdout.decode("utf-8")


# ---------------------------------------------------------------- COLUMNS
@pytest.mark.parametrize("columns, args, expected", [
    ("0", ["check", "--no-cache", "--output-format", "full", "."], "NRN201"),
    ("0", ["report", "--no-cache", "."], "Migration readiness"),
    ("0", ["rules"], "NRN201"),
    ("0", ["rule", "NRN201"], "cuda-call"),
    ("-5", ["report", "--no-cache", "."], "Migration readiness"),
    ("abc", ["report", "--no-cache", "."], "Migration readiness"),
])
def test_an_unusable_columns_means_an_unknown_width(tmp_path, columns, args, expected):
    make(tmp_path, "a.py")
    r = run(args, tmp_path, COLUMNS=columns)
    no_crash(r)
    assert expected in r.stdout.decode("utf-8")


# ---------------------------------------------------------------- an ASCII-only stdout
ASCII_ENVS = [{"LC_ALL": "C", "PYTHONUTF8": "0"}, {"PYTHONIOENCODING": "ascii"}]


@pytest.mark.parametrize("ascii_env", ASCII_ENVS, ids=["LC_ALL=C", "PYTHONIOENCODING=ascii"])
@pytest.mark.parametrize("args, code", [
    (["rules"], 0),
    (["rule", "NRN201"], 0),
    (["rule", "NRN101"], 0),
    (["report", "--no-cache", "."], 0),
    (["check", "--no-cache", "--output-format", "full", "."], 1),
])
def test_an_ascii_stdout_gets_backslash_escapes_not_a_crash(tmp_path, ascii_env, args, code):
    make(tmp_path, "a.py", CUDA + b"y = torch.ones(2).cuda()\n")
    make(tmp_path, "caf\xe9.py")
    r = run(args, tmp_path, COLUMNS="80", **ascii_env)  # 80: the rules table truncates with "…"
    no_crash(r)
    assert r.returncode == code
    r.stdout.decode("ascii")  # what the stream could not hold was escaped, not written raw


@pytest.mark.parametrize("ascii_env", ASCII_ENVS, ids=["LC_ALL=C", "PYTHONIOENCODING=ascii"])
def test_fix_on_an_ascii_stdout_says_what_it_fixed(tmp_path, ascii_env):
    path = make(tmp_path, "a.py", CUDA + b"y = torch.ones(2).cuda()\n")
    r = run(["fix", "."], tmp_path, **ascii_env)
    no_crash(r)
    assert r.returncode == 0
    assert "Fixed 2 findings in a.py (NRN201 \\xd72)" in r.stdout.decode("ascii")
    with open(path, "rb") as fh:
        assert b".cuda()" not in fh.read()


# ---------------------------------------------------------------- a reader that goes away
@pytest.mark.parametrize("args, code, read_first", [
    (["check", "--no-cache", "--output-format", "concise", "."], 1, True),
    (["check", "--no-cache", "--output-format", "github", "."], 1, True),
    (["check", "--no-cache", "--exit-zero", "."], 0, True),  # full: rich's own handler exits 1
    (["report", "--no-cache", "."], 0, False),
    (["rules"], 0, False),
    (["rule", "NRN201"], 0, False),
    (["--version"], 0, False),
])
def test_a_closed_pipe_is_a_normal_end(tmp_path, args, code, read_first):
    make(tmp_path, "big.py", b"import torch\n" + b"x = torch.ones(2).cuda()\n" * 3000)  # far over a pipe's buffer
    p = subprocess.Popen([sys.executable, "-m", "neuron_lint", *args], cwd=tmp_path, env=env(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if read_first:
        assert p.stdout.readline()  # `| head -1`
    p.stdout.close()  # before a small output is even written: the first write meets EPIPE
    err = p.stderr.read().decode("utf-8", "replace")
    assert p.wait(timeout=300) == code, err
    assert err == ""


# ---------------------------------------------------------------- a full disk
@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("args", [
    ["check", "--no-cache", "."],
    ["check", "--no-cache", "--output-format", "sarif", "."],
    ["report", "--no-cache", "."],
    ["rules"],
    ["rule", "NRN201"],
    ["fix", "--diff", "."],
    ["--version"],
])
def test_a_full_disk_on_stdout_is_one_clear_error(tmp_path, args):
    make(tmp_path, "a.py")
    with open("/dev/full", "w") as full:
        r = run(args, tmp_path, stdout=full)
    no_crash(r)
    assert r.returncode == 2
    errors = [line for line in r.stderr.decode("utf-8").splitlines() if "error" in line]
    assert errors == ["neuron-lint: error: cannot write the output: No space left on device"]
