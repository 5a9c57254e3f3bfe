"""A `"nccl"` backend stays where the project decides where tensors go by asking whether its
process group is NCCL's (allennlp, set 51): rewritten to the device's backend, that question says
"not NCCL" on Trainium and the collectives get CPU tensors. In a repository of several projects
(InternImage's classification/ and segmentation/, set 41) only the file's own project counts: the
first folder on its way with Python files of its own (InternVideo's
InternVideo1/Downstream/Video-Text-Retrieval/, read set 109)."""

from neuron_lint.config.settings import Settings
from neuron_lint.fixes.files import fix_file

TRAIN = '''import torch.distributed as dist


def setup(rank, world_size):
    dist.init_process_group(backend="nccl", rank=rank, world_size=world_size)
'''

ASKS = '''import torch
import torch.distributed as dist


def place(tensor):
    return tensor.cpu() if dist.get_backend() != "nccl" else tensor
'''


def _project(tmp_path, asks_in: str):
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\ndependencies = ["torch>=2.8"]\n')
    for folder in ("train", "other"):
        (tmp_path / folder).mkdir()
    (tmp_path / "train" / "main.py").write_text(TRAIN)
    (tmp_path / asks_in / "util.py").write_text(ASKS)
    return tmp_path / "train" / "main.py"


def test_nccl_stays_where_the_project_asks_the_backend_name(tmp_path):
    main = _project(tmp_path, "train")
    result = fix_file(main, Settings(select=("NRN206",), unsafe_fixes=True))
    assert not result.written
    assert main.read_text() == TRAIN


def test_another_top_folder_of_the_repository_does_not_count(tmp_path):
    main = _project(tmp_path, "other")
    assert fix_file(main, Settings(select=("NRN206",), unsafe_fixes=True)).written
    assert 'backend="nccl"' not in main.read_text()
    assert "get_default_backend_for_device" in main.read_text()


def _grouped(tmp_path, asks_in: str):
    (tmp_path / ".git").mkdir()
    for project in ("retrieval", "localization"):
        (tmp_path / "v1" / "downstream" / project).mkdir(parents=True)
    (tmp_path / "v1" / "README.md").write_text("projects\n")
    main = tmp_path / "v1" / "downstream" / "retrieval" / "main.py"
    main.write_text(TRAIN)
    (tmp_path / "v1" / "downstream" / asks_in / "comm.py").write_text(ASKS)
    return main


def test_a_project_beside_it_below_the_same_grouping_folders_does_not_count(tmp_path):
    main = _grouped(tmp_path, "localization")
    assert fix_file(main, Settings(select=("NRN206",), unsafe_fixes=True)).written
    assert "get_default_backend_for_device" in main.read_text()


def test_its_own_project_below_grouping_folders_counts(tmp_path):
    main = _grouped(tmp_path, "retrieval")
    assert not fix_file(main, Settings(select=("NRN206",), unsafe_fixes=True)).written
    assert main.read_text() == TRAIN


SENDER = '''import torch


def send(weights, group):
    for w in weights:
        group.broadcast(w.to("cuda:0"))
'''


def test_a_module_named_for_nccl_keeps_its_cuda_devices_and_another_does_not(tmp_path):
    # torchrl's `weight_update/llm/sglang_nccl.py` (read set 63): its devices are what NCCL broadcasts
    named, plain = tmp_path / "sglang_nccl.py", tmp_path / "sglang_http.py"
    for path in (named, plain):
        path.write_text(SENDER + "# weights go over NCCL\n")
    settings = Settings(select=("NRN2",))
    assert not fix_file(named, settings).written
    assert named.read_text() == SENDER + "# weights go over NCCL\n"
    assert fix_file(plain, settings).written
    assert '"cuda:0"' not in plain.read_text()
