"""On a CUDA GPU, the calls a fix writes do what the CUDA calls they replace did.

A safe fix must change nothing on CUDA (README "Guarantees"). tests/test_fix_signatures.py binds
every call a fix can write to torch's signatures on any host; this file runs the replacements
beside the CUDA originals on a real GPU and compares what they return and what they leave behind
(current device and stream, the allocator's statistics, random numbers, autocast dtypes, the
attention kernel chosen). The pairs are every `[fix.map]` entry of rules/*.toml (read with tomllib,
so nothing but torch and pytest is needed: the GPU machine has neither libcst nor neuron-lint's
other dependencies) and the calls the AMP, SDPA, flag and device fixers build themselves.

Skipped where torch sees no CUDA device, as in CI; run on a GPU machine with
`python -m pytest -p no:cacheprovider tests/test_cuda_equivalence.py` (README "Checked on a GPU").
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the [test] extra installs tomli there
    import tomli as tomllib

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs a CUDA GPU (none on this host)"
)

RULES = Path(__file__).resolve().parent.parent / "rules"
#: the ways code names a device, as the fixers pass them on (positionally: the targets take them so)
DEVICE_FORMS = [(), (0,), ("cuda",), ("cuda:0",), ("device", 0)]
STATS = (
    "allocated_bytes.all.current",
    "allocated_bytes.all.peak",
    "allocated_bytes.all.allocated",
    "allocated_bytes.all.freed",
    "reserved_bytes.all.current",
)


def version() -> tuple[int, int]:
    return tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])


def resolve(dotted: str):
    if dotted.startswith("torch.get_device_module()."):
        return getattr(torch.get_device_module(), dotted.rsplit(".", 1)[1])
    obj = torch
    for part in dotted.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


def map_entries():
    """(source, target, args kind) for every `[fix.map]` entry, `older` targets included."""
    for path in sorted(RULES.glob("NRN2*.toml")):
        table = tomllib.loads(path.read_text(encoding="utf-8")).get("fix", {}).get("map", {})
        for source, spec in table.items():
            since = tuple(int(p) for p in spec["since"].split("."))
            for target in filter(None, (spec["target"], spec.get("older"))):
                newer = target == spec["target"] and version() < since
                yield pytest.param(
                    source,
                    target,
                    spec.get("args", "any"),
                    id=f"{source}->{target}",
                    marks=pytest.mark.skip(f"{target} is newer than this torch")
                    if newer
                    else (),
                )


def concrete(form: tuple) -> tuple:
    return (torch.device("cuda", 0),) if form == ("device", 0) else form


def prepare() -> list:
    """The same allocator state before each call: the peak above what is held, counters at zero."""
    torch.cuda.synchronize()
    torch.cuda.set_device(0)
    torch.cuda.set_stream(torch.cuda.default_stream())
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    torch.cuda.reset_accumulated_memory_stats()
    held = [torch.ones(1 << 18, device="cuda")]
    spike = torch.ones(1 << 20, device="cuda")
    del spike
    return held


def observe(result) -> object:
    """What a caller can tell apart: streams by id, statistics by their stable counters."""
    if isinstance(result, torch.Stream):
        return ("stream", result.device_type, result.device_index, result.stream_id)
    if isinstance(result, dict):
        return {k: result[k] for k in STATS if k in result}
    if hasattr(result, "total_memory"):  # device properties
        return (result.name, result.total_memory, result.major, result.minor)
    return result


def state() -> tuple:
    stream = torch.cuda.current_stream()
    stats = torch.cuda.memory_stats()
    return (torch.cuda.current_device(), stream.stream_id, tuple(stats.get(k) for k in STATS))


def outcome(fn, args: tuple):
    held = prepare()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecated aliases warn
        try:
            result = fn(*args)
        except Exception as e:  # noqa: BLE001 - the error's type is the behaviour
            return ("raises", type(e).__name__)
    torch.cuda.synchronize()
    seen = (observe(result), state())
    del held
    return seen


@pytest.mark.parametrize(("source", "target", "kind"), list(map_entries()))
def test_mapped_call_behaves_as_the_cuda_call(source, target, kind):
    src, tgt = resolve(source), resolve(target)
    forms = DEVICE_FORMS if kind in ("device", "any") else [()]  # "none", "stream": no argument
    if kind == "index":  # torch.cuda.device(i) as a context: the device inside it
        for fn in (src, tgt):
            with fn(0):
                assert torch.cuda.current_device() == 0
        return
    if kind == "event":
        made = [fn(enable_timing=True) for fn in (src, tgt)]
        for start in made:
            end = type(start)(enable_timing=True)
            start.record()
            torch.ones(1 << 20, device="cuda").sum()
            end.record()
            end.synchronize()
            assert start.query() and end.query() and start.elapsed_time(end) >= 0
        return
    if source.endswith("set_stream"):
        made = torch.cuda.Stream()
        forms = [(made,)]
    if source.endswith((".stream",)):  # a context manager over a stream
        for fn in (src, tgt):
            side = torch.cuda.Stream()
            with fn(side):
                assert torch.cuda.current_stream().stream_id == side.stream_id
        return
    if source.endswith(("manual_seed", "manual_seed_all")):
        drawn = []
        for fn in (src, tgt):
            fn(1234)
            drawn.append(torch.rand(8, device="cuda").tolist())
        assert drawn[0] == drawn[1]
        return
    compared = 0
    for form in forms:
        args = concrete(form)
        want = outcome(src, args)
        if want[0] == "raises":
            continue  # the original already fails so: nothing to keep
        got = outcome(tgt, args)
        if source.endswith("mem_get_info"):  # free memory moves with everything else on the GPU
            want, got = (want[0][1], want[1]), (got[0][1], got[1])
        if source.endswith("Stream"):  # a new stream each time: compare what it is, not its id
            want, got = (want[0][:3], want[1]), (got[0][:3], got[1])
        assert got == want, f"{target}{args!r} vs {source}{args!r}"
        compared += 1
    assert compared, f"{source} raised for every form tried"


def test_device_definition_is_the_cuda_device():
    device = (
        torch.accelerator.current_accelerator()
        if torch.accelerator.is_available()
        else torch.device("cpu")
    )
    assert device == torch.device("cuda")
    assert device.type == "cuda"
    assert torch.ones(2, device=device).device == torch.ones(2, device="cuda").device
    assert torch.ones(2).to(device).device == torch.ones(2).cuda().device
    assert torch.distributed.get_default_backend_for_device(device) == "nccl"
    assert torch.distributed.get_default_backend_for_device(device.type) == "nccl"


@pytest.mark.parametrize("dtype", [None, torch.float16, torch.bfloat16])
def test_autocast_spellings_agree(dtype):
    kw = {} if dtype is None else {"dtype": dtype}
    a = torch.randn(16, 16, device="cuda")
    results = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.cuda.amp.autocast is deprecated
        for ctx in (
            torch.cuda.amp.autocast(**kw),
            torch.amp.autocast("cuda", **kw),
            torch.autocast(device_type="cuda", **kw),
        ):
            with ctx:
                results.append(a @ a)
    assert {r.dtype for r in results} == {results[0].dtype}
    assert all(torch.equal(results[0], r) for r in results)


def test_grad_scaler_spellings_agree():
    def run(scaler) -> list:
        w = torch.nn.Parameter(torch.ones(4, device="cuda"))
        opt = torch.optim.SGD([w], lr=0.1)
        seen = []
        for bad in (False, True, False):
            opt.zero_grad()
            loss = (w * (float("inf") if bad else 2.0)).sum()
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            seen.append((scaler.get_scale(), w.detach().tolist(), scaler.is_enabled()))
        return seen

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = run(torch.cuda.amp.GradScaler())
    for scaler in (
        torch.amp.GradScaler("cuda"),
        torch.amp.GradScaler(device="cuda"),
        torch.amp.GradScaler(torch.accelerator.current_accelerator().type),
    ):
        assert run(scaler) == want
    # the default device of torch.amp.GradScaler is "cuda": the NRN205 rewrite only names it
    assert run(torch.amp.GradScaler()) == want


def test_custom_fwd_spellings_agree():
    def make(fwd, bwd):
        class Square(torch.autograd.Function):
            @staticmethod
            @fwd
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            @bwd
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return 2 * x * g

        return Square

    def run(fn) -> tuple:
        x = torch.randn(8, device="cuda", requires_grad=True)
        with torch.autocast("cuda", dtype=torch.float16):
            y = fn.apply(x.half())
        y.float().sum().backward()
        return y.dtype, y.tolist(), x.grad.tolist()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        old = make(torch.cuda.amp.custom_fwd(cast_inputs=torch.float32), torch.cuda.amp.custom_bwd)
    new = make(
        torch.amp.custom_fwd(device_type="cuda", cast_inputs=torch.float32),
        torch.amp.custom_bwd(device_type="cuda"),
    )
    torch.manual_seed(0)
    want = run(old)
    torch.manual_seed(0)
    assert run(new) == want


@pytest.mark.parametrize(
    "flags",
    [
        {"enable_flash": False, "enable_mem_efficient": False},
        {"enable_flash": False, "enable_cudnn": False},
        {"enable_math": False},
        {"enable_flash": True, "enable_math": False, "enable_mem_efficient": False},
    ],
)
def test_sdp_kernel_and_sdpa_kernel_pick_the_same_kernel(flags):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    sdp_kernel = getattr(torch.backends.cuda, "sdp_kernel", None)
    if sdp_kernel is None:
        pytest.skip("torch.backends.cuda.sdp_kernel is gone from this torch")
    order = [  # sdp_kernel's keywords and the backend each enables, listed as the fixer lists them
        ("enable_flash", SDPBackend.FLASH_ATTENTION),
        ("enable_mem_efficient", SDPBackend.EFFICIENT_ATTENTION),
        ("enable_math", SDPBackend.MATH),
        ("enable_cudnn", SDPBackend.CUDNN_ATTENTION),
    ]
    enabled = [b for key, b in order if flags.get(key, True)]
    q, k, v = (torch.randn(2, 4, 64, 32, device="cuda", dtype=torch.float16) for _ in range(3))
    import torch.nn.functional as F

    outputs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for ctx in (sdp_kernel(**flags), sdpa_kernel(enabled)):
            with ctx:
                outputs.append(F.scaled_dot_product_attention(q, k, v))
    assert torch.equal(outputs[0], outputs[1])


def test_matmul_precision_sets_the_cuda_tf32_switch():
    before = torch.get_float32_matmul_precision()
    try:
        for value, precision in ((True, "high"), (False, "highest")):
            torch.backends.cuda.matmul.allow_tf32 = value
            via_flag = torch.backends.cuda.matmul.allow_tf32
            torch.backends.cuda.matmul.allow_tf32 = not value
            torch.set_float32_matmul_precision(precision)
            assert torch.backends.cuda.matmul.allow_tf32 == via_flag == value
    finally:
        torch.set_float32_matmul_precision(before)
