"""Hostile files and environments for what writes and what runs in parallel (issue: reliability).

- `fix` keeps setuid/setgid bits, leaves a file this user may not write (even in a writable
  folder), writes files with the longest legal names, and refuses codecs that do not give back
  the bytes they read (``unicode_escape``), leaving every byte as it was;
- the cache probe never opens a pipe or device named on the command line, and a file rewritten
  during the scan with the same size and mtime cannot store its result under the old bytes' key;
- ``--jobs`` far above the open-file limit finishes, and killing a parallel run (SIGKILL, as a CI
  timeout does) takes its workers with it.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from conftest import as_other_user

from neuron_lint.config.settings import Settings
from neuron_lint.engine import cache as cache_module
from neuron_lint.fixes.files import fix_file

ROOT = Path(__file__).resolve().parent.parent
CUDA = "import torch\n\nx = torch.ones(2).cuda()\n"
posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes, signals and pipes")


# ---------------------------------------------------------------------- what fix writes
@posix_only
def test_fix_keeps_setuid_and_setgid_bits(tmp_path):
    path = tmp_path / "tool.py"
    path.write_text(CUDA)
    path.chmod(0o6755)
    if stat.S_IMODE(path.stat().st_mode) != 0o6755:
        pytest.skip("this file system does not keep setuid/setgid bits")
    done = fix_file(path, Settings())
    assert done.written and ".cuda()" not in path.read_text()
    assert stat.S_IMODE(path.stat().st_mode) == 0o6755


@posix_only
def test_fix_writes_a_file_with_the_longest_legal_name(tmp_path):
    path = tmp_path / ("m" * 246 + ".py")  # 249 characters; the limit is 255 bytes
    path.write_text(CUDA)
    done = fix_file(path, Settings())
    assert done.error is None and done.written
    assert ".cuda()" not in path.read_text()
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary file left


def test_a_codec_that_does_not_round_trip_is_never_written(tmp_path):
    # CPython runs this file; re-encoding it with unicode_escape would turn every line break into `\n`
    original = b"# coding: unicode_escape\nimport torch\n\nx = torch.ones(2).cuda()\n"
    path = tmp_path / "escaped.py"
    path.write_bytes(original)
    done = fix_file(path, Settings())
    assert not done.written and path.read_bytes() == original
    assert done.error is not None and done.error.path.endswith("escaped.py")
    assert "unicode-escape" in done.error.reason and "left alone" in done.error.reason


@posix_only
@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to act as a second user")
def test_fix_leaves_a_file_this_user_cannot_write_in_a_folder_it_can():
    # The folder is writable by everyone, so a rename would succeed; the file is root's, mode 0644.
    folder = Path(tempfile.mkdtemp(prefix="nl-perm-", dir="/tmp"))
    try:
        folder.chmod(0o777)
        path = folder / "train.py"
        path.write_text(CUDA)
        path.chmod(0o644)
        warm = folder / "warm.py"  # import, as root, every module the fix needs (the other user cannot read them)
        warm.write_text(CUDA)
        fix_file(str(warm), Settings(), write=False)
        warm.unlink()

        def fix_it() -> bytes:
            done = fix_file(str(path), Settings())
            return (done.error.reason if done.error else "written").encode()

        said = as_other_user(fix_it).decode()
        assert "not writable by this user" in said
        assert path.read_text() == CUDA and path.stat().st_uid == 0
        assert sorted(p.name for p in folder.iterdir()) == ["train.py"]
    finally:
        for p in folder.iterdir():
            p.unlink()
        folder.rmdir()


# ---------------------------------------------------------------------- the cache probe
def test_a_file_rewritten_with_the_same_size_and_mtime_during_the_scan_cannot_poison_the_cache(tmp_path, monkeypatch, catalog):
    from neuron_lint.engine.runner import run

    path = tmp_path / "train.py"
    path.write_text(CUDA)
    quiet = CUDA.replace(".cuda()", ".cpu() ")  # same length, no finding
    assert len(quiet) == len(CUDA)
    st = path.stat()
    real_get = cache_module.Cache.get
    swapped = []

    def get_and_swap(self, key):  # between the cache's look at the file and the check of it
        if not swapped:
            path.write_text(quiet)
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # as rsync -t, cp -p and tar leave it
            swapped.append(True)
        return real_get(self, key)

    settings = Settings()
    directory = tmp_path / "cache"
    monkeypatch.setattr(cache_module.Cache, "get", get_and_swap)
    run([str(path)], settings, catalog, jobs=1, cache=cache_module.Cache(directory, settings))
    monkeypatch.setattr(cache_module.Cache, "get", real_get)
    # The file gets its first content back, size and mtime as before: a warm run must report it.
    path.write_text(CUDA)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    warm = run([str(path)], settings, catalog, jobs=1, cache=cache_module.Cache(directory, settings))
    assert [f.code for f in warm.findings] == ["NRN201"]


@pytest.mark.slow
@posix_only
@pytest.mark.parametrize("what", ["fifo", "/dev/zero", "/dev/stdin"])
def test_a_pipe_or_device_named_on_the_command_line_does_not_hang_the_cached_check(tmp_path, what):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    if what == "fifo":
        os.mkfifo(tmp_path / "pipe.py")
        target = "pipe.py"
    else:
        if not os.path.exists(what):
            pytest.skip(f"no {what} here")
        target = what
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT)}
    # the cache is on by default; stdin is a pipe kept open and silent, as in a CI step
    proc = subprocess.Popen([sys.executable, "-m", "neuron_lint", "check", target], cwd=tmp_path, env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        if what == "/dev/stdin":  # communicate() would close the pipe it is asked to read
            proc.wait(timeout=60)
            err = proc.stderr.read()
        else:
            _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdin.close()
    assert proc.returncode == 2, err
    assert "not a regular file" in err and "Traceback" not in err


# ---------------------------------------------------------------------- workers
def _big_project(root: Path, files: int = 24, copies: int = 400) -> None:
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    body = "".join(f"def f{i}(x):\n    return x.cuda() + torch.zeros(3, device='cuda')\n\n" for i in range(copies))
    for n in range(files):
        (root / f"m{n}.py").write_text("import torch\n\n" + body)


@pytest.mark.slow
@posix_only
def test_jobs_far_above_the_open_file_limit_finish(tmp_path):
    resource = pytest.importorskip("resource")
    _big_project(tmp_path, files=1000, copies=10)  # enough work for a pool of a thousand

    def low_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))

    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "neuron_lint", "check", "--no-cache", "-j", "1000", "--statistics", "."],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, preexec_fn=low_limit)
    assert done.returncode == 1, done.stderr
    assert "Too many open files" not in done.stderr and "internal error" not in done.stderr
    assert "NRN201" in done.stdout


def _group_members(pgid: int) -> list[int]:
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(entry))
    return members


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_killing_a_parallel_check_takes_its_workers_with_it(tmp_path):
    _big_project(tmp_path, files=60, copies=600)
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "neuron_lint", "check", "--no-cache", "-j", "2", "."],
                            cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while len(_group_members(proc.pid)) < 2 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if proc.poll() is not None:
            pytest.skip("the check ended before its workers could be seen")
        assert len(_group_members(proc.pid)) >= 2, "no worker processes started"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        deadline = time.monotonic() + 10
        while _group_members(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _group_members(proc.pid) == []
    finally:
        for pid in _group_members(proc.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
