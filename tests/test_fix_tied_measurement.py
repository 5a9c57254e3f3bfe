"""A memory measurement moves to the accelerator whole or not at all: where one of its statistics
stays on CUDA (its rewrite would pass the project's line length), so do the other statistics and
the synchronisations and cache releases around them (FastVideo's VAE memory benchmark, read set
112: `synchronize` and `empty_cache` moved while `memory_allocated` and `reset_peak_memory_stats`
stayed, which raised on Trainium for the device they were given)."""

from neuron_lint.config.settings import Settings
from neuron_lint.fixes.files import fix_file

BENCH = '''import torch


def measure(run, device):
    torch.cuda.synchronize(device)
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(device)
    run()
    return {"peak_allocated_bytes_of_the_whole_run": torch.cuda.max_memory_allocated(device)}
'''


def test_the_measurement_stays_whole_when_one_statistic_cannot_move(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.ruff]\nline-length = 95\n')
    bench = tmp_path / "bench.py"
    bench.write_text(BENCH)
    fix_file(bench, Settings(select=("NRN203",), unsafe_fixes=True))
    assert bench.read_text() == BENCH


def test_the_measurement_moves_whole_where_it_fits(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.ruff]\nline-length = 200\n')
    bench = tmp_path / "bench.py"
    bench.write_text(BENCH)
    fix_file(bench, Settings(select=("NRN203",), unsafe_fixes=True))
    assert "torch.cuda" not in bench.read_text()


def _training_main() -> str:
    steps = "".join(f"    step_{n} = run({n})\n" for n in range(60))
    return ("import torch\n\n\ndef main(run, device):\n    torch.cuda.synchronize()\n" + steps
            + '    print("peak of the whole training run in bytes:", torch.cuda.max_memory_allocated(device))\n')


def test_a_synchronisation_far_from_the_statistic_in_a_long_function_moves_alone(tmp_path):
    # diffusers' colossalai DreamBooth: its `main()` synchronises before training and logs a peak at the end
    (tmp_path / "pyproject.toml").write_text('[tool.ruff]\nline-length = 95\n')
    script = tmp_path / "train.py"
    script.write_text(_training_main())
    fix_file(script, Settings(select=("NRN203",), unsafe_fixes=True))
    text = script.read_text()
    assert "torch.accelerator.synchronize()" in text
    assert "torch.cuda.max_memory_allocated(device)" in text
