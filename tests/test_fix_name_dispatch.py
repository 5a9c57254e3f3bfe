"""A project that maps device names to devices itself keeps the CUDA device strings that reach it.

mace's ``init_device(device_str)`` knows ``cuda``, ``mps`` and ``xpu`` and takes any other name
for the CPU; its ``mace_mp(device="")`` chose ``"cuda" if torch.cuda.is_available() else "cpu"``
and handed it to ``MACECalculator``, which moves the model with ``.to(device)`` and the batches to
``init_device(device)``. Rewritten to the current device's name, Trainium put the model on
``neuron`` and the batches on the CPU (read set 87).
"""

from __future__ import annotations

from neuron_lint.config.settings import Settings
from neuron_lint.fixes.apply import fix_text

DISPATCHER = '''import torch


def init_device(device_str):
    if "cuda" in device_str:
        return torch.device(device_str)
    if device_str == "mps":
        return torch.device("mps")
    return torch.device("cpu")
'''
CALCULATOR = '''from tools import init_device


class Calculator:
    def __init__(self, model, device):
        self.model = model.to(device)
        self.device = init_device(device)
'''
FOUNDATION = '''import torch

from calculator import Calculator


def foundation_model(model, device=""):
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    return Calculator(model, device=device)
'''
SETTINGS = Settings(select=("NRN2",), unsafe_fixes=True)


def _project(tmp_path, dispatcher: str = DISPATCHER):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "tools.py").write_text(dispatcher)
    (tmp_path / "calculator.py").write_text(CALCULATOR)
    path = tmp_path / "foundations.py"
    path.write_text(FOUNDATION)
    return str(path)


def test_a_device_string_reaching_the_projects_name_dispatcher_stays(tmp_path):
    path = _project(tmp_path)
    result = fix_text(FOUNDATION, path, SETTINGS)
    assert result.text == FOUNDATION
    notes = [f.fix_note for f in result.remaining if f.code in ("NRN202", "NRN213")]
    assert notes and "`init_device` (tools.py:4)" in notes[0], notes


def test_a_dispatcher_that_knows_neuron_or_a_module_that_never_reaches_one_is_rewritten(tmp_path):
    knows = DISPATCHER.replace('    if device_str == "mps":', '    if device_str == "neuron":\n'
                               '        return torch.device("neuron")\n    if device_str == "mps":')
    path = _project(tmp_path, knows)
    assert "torch.cuda" not in fix_text(FOUNDATION, path, SETTINGS).text
    path = _project(tmp_path)
    alone = FOUNDATION.replace("from calculator import Calculator\n", "from other import Calculator\n")
    assert "torch.cuda" not in fix_text(alone, path, SETTINGS).text


def test_a_device_string_reaching_a_table_looked_up_by_device_type_without_neuron_stays(tmp_path):
    # LightGlue (read set 87): `pruning_keypoint_thresholds = {"cpu": -1, "mps": -1, "cuda": 1024}`
    # read as `[device.type]` in the model its package exports; the benchmark's device moved to
    # `neuron` would raise KeyError there
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    package = tmp_path / "matcher"
    package.mkdir()
    (package / "__init__.py").write_text("from .model import Matcher\n")
    (package / "model.py").write_text(
        "class Matcher:\n    thresholds = {'cpu': -1, 'mps': -1, 'cuda': 1024}\n\n"
        "    def min_points(self, device):\n        return self.thresholds[device.type]\n")
    script = ("import torch\n\nfrom matcher import Matcher\n\n"
              "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
              "print(Matcher().min_points(device))\n")
    path = tmp_path / "benchmark.py"
    path.write_text(script)
    result = fix_text(script, str(path), SETTINGS)
    assert result.text == script
    assert any("`thresholds` (matcher/model.py:2)" in (f.fix_note or "") for f in result.remaining)
    # with a `neuron` entry the table is no obstacle
    (package / "model.py").write_text((package / "model.py").read_text().replace("'cuda': 1024", "'cuda': 1024, 'neuron': 1024"))
    from neuron_lint.fixes.project_scan import forget_project_reads

    forget_project_reads()
    assert "torch.cuda" not in fix_text(script, str(path), SETTINGS).text


ALLOW_LIST = '''import torch


class default_tensor_type:
    def __init__(self, dtype=None, device=None):
        # Only limited combinations are supported.
        assert device is None or device in ["cpu", "cuda"]
        self.dtype, self.device = dtype, device
'''
LOADER = '''import torch

from tensor_type import default_tensor_type


def load(path, device="cuda"):
    with default_tensor_type(dtype=torch.bfloat16, device=device):
        return torch.load(path)
'''


def test_a_device_string_reaching_a_project_check_that_lists_the_names_it_accepts_stays(tmp_path):
    # LLaMA2-Accessory (read set 102): `default_tensor_type` asserts its device is "cpu" or "cuda";
    # the loader's default and the demos' "cuda", rewritten to the current device's name, failed
    # that assertion on Trainium for every model load
    from neuron_lint.fixes.project_scan import forget_project_reads

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "tensor_type.py").write_text(ALLOW_LIST)
    path = tmp_path / "loader.py"
    path.write_text(LOADER)
    forget_project_reads()
    result = fix_text(LOADER, str(path), SETTINGS)
    assert result.text == LOADER
    assert any("`default_tensor_type` (tensor_type.py:5)" in (f.fix_note or "") for f in result.remaining)
    # a check written as `if ... not in (...): raise` is the same check
    raising = ALLOW_LIST.replace('        assert device is None or device in ["cpu", "cuda"]\n',
                                 '        if device not in ("cpu", "cuda"):\n'
                                 '            raise ValueError(device)\n')
    (tmp_path / "tensor_type.py").write_text(raising)
    forget_project_reads()
    assert fix_text(LOADER, str(path), SETTINGS).text == LOADER
    # once the list holds `neuron`, the device default is rewritten
    (tmp_path / "tensor_type.py").write_text(ALLOW_LIST.replace('"cuda"]', '"cuda", "neuron"]'))
    forget_project_reads()
    assert '"cuda"' not in fix_text(LOADER, str(path), SETTINGS).text


REFUSING = '''import torch


def load_model(path, device):
    if device == "cpu":
        kwargs = {"map_location": "cpu"}
    elif device == "cuda":
        kwargs = {}
    else:
        raise ValueError(f"Invalid device: {device}")
    return torch.load(path, **kwargs)
'''
CLI = '''import argparse

from {module} import load_model

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    model = load_model("model.pt", parser.parse_args().device)
'''


def test_a_function_refusing_other_device_names_holds_only_the_modules_that_import_it(tmp_path):
    # gorilla's CLI (read set 103): `load_model` raises for any device but "cpu" and "cuda", so the
    # option's default stays CUDA's there; another module of the project calling a `load_model` of
    # its own (LLaMA-Adapter's finetuning script) is rewritten as before
    from neuron_lint.fixes.project_scan import forget_project_reads

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "serve.py").write_text(REFUSING)
    (tmp_path / "other.py").write_text("def load_model(path, device):\n    return path, device\n")
    forget_project_reads()
    held, freed = CLI.format(module="serve"), CLI.format(module="other")
    (tmp_path / "cli.py").write_text(held)
    result = fix_text(held, str(tmp_path / "cli.py"), SETTINGS)
    assert result.text == held
    assert any("`load_model` (serve.py:4)" in (f.fix_note or "") for f in result.remaining)
    (tmp_path / "finetune.py").write_text(freed)
    assert 'default="cuda"' not in fix_text(freed, str(tmp_path / "finetune.py"), SETTINGS).text
