"""The CUDA path end to end on tiny data (``pytest -m gpu``; skipped without a GPU, as in CI).

Each test compares the GPU against the CPU or against an uninterrupted run: training on digits
with ``device=cuda``; resume equal to the straight run (bitwise, deterministic algorithms on);
AugMix ops and the deterministic corruptions within one grey level of the CPU; evaluation
accuracy within 0.1 point of the CPU; SyncBatchNorm under a one-process group equal to
BatchNorm."""

from __future__ import annotations

import json
import math
import socket

import pytest
import torch

pytestmark = pytest.mark.gpu

QUICK = ["dataset=digits", "width=4", "epochs=2", "batch_size=32", "train_subset=64", "device=cuda"]


@pytest.fixture(autouse=True)
def _needs_cuda():
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")


def test_digits_training_on_cuda_runs_and_lowers_the_loss(tmp_path):
    from fullscale.run_model import load_run_model
    from fullscale.training.loop import train
    from fullscale.training.presets import resolve_config

    # 6 epochs of 512 images: on the CPU (seeds 0-2) the loss fell by 0.74-0.86; 4 epochs of 256
    # (0.24 on the CPU) fell by only 0.125 on the H100, too close to noise for a test
    cfg = resolve_config("noisymix", ["dataset=digits", "width=8", "epochs=6", "batch_size=32",
                                      "train_subset=512", "device=cuda"])
    train(cfg, tmp_path / "r")
    records = [json.loads(line) for line in (tmp_path / "r" / "metrics.jsonl").read_text().splitlines()]
    ce = [r["cross_entropy"] for r in records]
    assert len(ce) == 6 and all(map(math.isfinite, ce)) and ce[-1] < ce[0] - 0.3, ce
    model, _ = load_run_model(tmp_path / "r", device="cuda")
    assert next(model.parameters()).is_cuda


def test_resume_on_cuda_equals_the_straight_run_bitwise(tmp_path, monkeypatch, crash_then_resume):
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    from fullscale.training.presets import resolve_config

    before = torch.are_deterministic_algorithms_enabled(), torch.backends.cudnn.benchmark
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cudnn.benchmark = False
    try:
        cfg = resolve_config("noisymix", QUICK)
        straight, resumed = crash_then_resume(cfg, tmp_path / "straight", tmp_path / "resumed")
    finally:
        torch.use_deterministic_algorithms(before[0])
        torch.backends.cudnn.benchmark = before[1]
    for key in straight:
        assert torch.equal(straight[key], resumed[key]), key


def _images(n: int, size: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x = torch.nn.functional.interpolate(torch.rand(n, 3, size // 4, size // 4, generator=g), size=(size, size),
                                        mode="bilinear")
    return (x * 255).round().to(torch.uint8)


def test_each_augmix_op_on_cuda_is_within_one_grey_level_of_the_cpu():
    from fullscale.augment import AugMixConfig
    from fullscale.augment.augmix import Chains, apply_chains

    x = _images(32, 32, 0)
    g = torch.Generator().manual_seed(1)
    config = AugMixConfig(width=1, depth=1, all_ops=True)
    for k, name in enumerate(config.ops):
        chains = Chains(op_index=torch.full((32, 1), k), active=torch.ones(32, 1, dtype=torch.bool),
                        level=0.1 + 2.9 * torch.rand(32, 1, generator=g),
                        sign=torch.where(torch.rand(32, 1, generator=g) > 0.5, -1.0, 1.0),
                        chain_weights=torch.ones(32, 1), clean_weight=torch.zeros(32))
        cpu = apply_chains(x, config, chains)
        on_cuda = Chains(*(t.cuda() for t in (chains.op_index, chains.active, chains.level, chains.sign,
                                                chains.chain_weights, chains.clean_weight)))
        cuda = apply_chains(x.cuda(), config, on_cuda).cpu()
        assert ((cuda - cpu).abs() * 255).max() <= 1 + 1e-3, name


DETERMINISTIC = ("brightness", "saturate", "contrast", "gaussian_blur", "defocus_blur", "zoom_blur", "pixelate")


@pytest.mark.parametrize("params,size", [("cifar", 32), ("imagenet", 64)])
def test_deterministic_corruptions_on_cuda_are_within_one_grey_level_of_the_cpu(params, size):
    from fullscale.corruptions import corrupt

    x = _images(8, size, 2)
    for name in DETERMINISTIC:
        for severity in (1, 3, 5):
            cpu = corrupt(x, name, severity, generator=torch.Generator(), params=params)
            cuda = corrupt(x.cuda(), name, severity, generator=torch.Generator(device="cuda"), params=params).cpu()
            assert (cpu.int() - cuda.int()).abs().max() <= 1, (name, severity)
    # JPEG on CUDA is the batched DCT (not libjpeg): within a level on average
    for severity in (1, 3, 5):
        cpu = corrupt(x, "jpeg_compression", severity, generator=torch.Generator(), params=params)
        cuda = corrupt(x.cuda(), "jpeg_compression", severity, generator=torch.Generator(device="cuda"),
                       params=params).cpu()
        assert (cpu.float() - cuda.float()).abs().mean() < 1.0, severity


def test_stochastic_corruptions_run_on_cuda_with_the_cpus_strength():
    from fullscale.corruptions import SPECS, corrupt

    x = _images(16, 32, 3)
    for name in SPECS:
        cpu = corrupt(x, name, 3, generator=torch.Generator().manual_seed(0))
        cuda = corrupt(x.cuda(), name, 3, generator=torch.Generator(device="cuda").manual_seed(0))
        assert cuda.is_cuda and cuda.dtype == torch.uint8 and cuda.shape == x.shape
        change_cpu = (cpu.float() - x.float()).abs().mean()
        change_cuda = (cuda.cpu().float() - x.float()).abs().mean()
        assert abs(change_cpu - change_cuda) <= 0.25 * change_cpu + 1.0, (name, change_cpu, change_cuda)


def test_evaluation_accuracy_on_cuda_is_within_a_tenth_of_a_point_of_the_cpu(tmp_path):
    """The evaluator's path (bf16 autocast and channels_last on CUDA, fp32 on the CPU) on the
    digits test set and its 15 corruptions at severity 3 (7,200 images: a tenth of a point is
    7 changed predictions)."""
    from fullscale.corruptions import CORRUPTIONS, corrupt
    from fullscale.data import load_dataset
    from fullscale.evaluation import logits_of
    from fullscale.run_model import load_run_model
    from fullscale.training.loop import train
    from fullscale.training.presets import resolve_config

    train(resolve_config("baseline", ["dataset=digits", "width=8", "epochs=4", "batch_size=32", "device=cpu"]),
          tmp_path / "r")
    test = load_dataset("digits", "test")
    images = torch.cat([test.images, *(corrupt(test.images, name, 3, generator=torch.Generator().manual_seed(k))
                                       for k, name in enumerate(CORRUPTIONS))])
    labels = test.labels.repeat(1 + len(CORRUPTIONS))
    accuracy = {}
    for device in ("cpu", "cuda"):
        model, _ = load_run_model(tmp_path / "r", device=device)
        logits = logits_of(model, images, torch.device(device))
        accuracy[device] = 100 * (logits.argmax(1) == labels).float().mean().item()
    assert accuracy["cpu"] > 30  # trained, so that the comparison means something
    assert abs(accuracy["cpu"] - accuracy["cuda"]) <= 0.1, accuracy


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_sync_batchnorm_under_a_one_process_group_equals_batchnorm():
    import torch.distributed as dist

    from fullscale.models import create_model
    from fullscale.training.config import RuntimeConfig, TrainConfig
    from fullscale.training.process import sync_batchnorm

    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{_free_port()}", rank=0, world_size=1)
    try:
        torch.manual_seed(0)
        plain = create_model("preactresnet18", 10, width=4).cuda()
        synced = torch.nn.SyncBatchNorm.convert_sync_batchnorm(
            create_model("preactresnet18", 10, width=4).cuda())
        synced.load_state_dict(plain.state_dict())
        assert any(isinstance(m, torch.nn.SyncBatchNorm) for m in synced.modules())
        # the trainer's own conversion is a no-op for one process (nothing to synchronise)
        assert sync_batchnorm(plain, TrainConfig(runtime=RuntimeConfig(sync_bn=True)), 1, torch.device("cuda")) is plain
        x = torch.rand(8, 3, 32, 32, device="cuda")
        out_plain, out_synced = plain(x), synced(x)  # training mode: batch statistics
        torch.testing.assert_close(out_synced, out_plain, rtol=1e-4, atol=1e-4)
        out_synced.sum().backward()
        out_plain.sum().backward()
        for (name, a), (_, b) in zip(plain.named_parameters(), synced.named_parameters(), strict=True):
            torch.testing.assert_close(b.grad, a.grad, rtol=1e-3, atol=1e-4, msg=name)
    finally:
        dist.destroy_process_group()


def test_the_noisymix_step_captured_in_a_cuda_graph_replays_the_eager_step():
    """Issue 38: nothing in a step reads a value back from the device, so the whole step (mixing
    hooks, noise from the run's generator, CE + JSD, backward) can be captured in a CUDA graph (one
    graph per transform point, chosen on the host) and replayed; the replay equals the eager step
    drawn from the same generator state."""
    from fullscale.models import create_model
    from fullscale.training.draws import chunk_generators, draw_chunk
    from fullscale.training.methods import METHODS
    from fullscale.training.presets import resolve_config
    from fullscale.training.step import StepDraws, drawn_step_loss
    from noisymix.mixing import MixDraw

    cfg = resolve_config("noisymix", ["width=8"])
    method = METHODS["noisymix"]
    torch.manual_seed(0)
    model = create_model("preactresnet18", 10, width=8).cuda()
    params = [p for p in model.parameters() if p.requires_grad]
    data_g = torch.Generator().manual_seed(1)
    x = torch.randint(0, 256, (16, 3, 32, 32), dtype=torch.uint8, generator=data_g).cuda()
    y = torch.randint(0, 10, (16,), generator=data_g).cuda()
    (drawn,) = draw_chunk([(x, y)], method, cfg, model.stages, chunk_generators(0, 0, 0))
    stage = "layer2"  # a graph per stage: this one
    static = StepDraws(drawn.x.clone(), MixDraw(drawn.draw.perm.clone(), drawn.draw.lam.clone()), drawn.mix_cfg,
                       stage)
    g = torch.Generator(device="cuda")

    def step() -> tuple[torch.Tensor, ...]:
        parts = drawn_step_loss(model, model, static, y, method, cfg, 10, g)
        return (parts.total, *torch.autograd.grad(parts.total, params))

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up off the capture stream, as torch.cuda.graphs asks
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    graph.register_generator_state(g)
    with torch.cuda.graph(graph):
        captured = step()
    g.manual_seed(5)
    eager = [t.clone() for t in step()]
    g.manual_seed(5)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.isfinite(captured[0]).item()
    # cuDNN may pick other convolution algorithms (TF32 on an H100) in the graph than eagerly: equal
    # to TF32's rounding (10-bit mantissa), not bitwise (26 of 216 entries differed by up to 2.9e-5)
    for a, b in zip(eager, captured, strict=True):
        torch.testing.assert_close(b, a, rtol=5e-3, atol=2e-4)
