"""AugMix views and crop/flip: range, reproducibility, per-image independence, and the mixing law."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from fullscale.augment import OPS, AugMixConfig, augmix, random_crop_flip, to_float
from fullscale.augment.augmix import apply_chains, draw_chains


def _u8(seed: int, n: int = 8, size: int = 16) -> torch.Tensor:
    return torch.randint(0, 256, (n, 3, size, size), generator=torch.Generator().manual_seed(seed),
                         dtype=torch.uint8)


@settings(max_examples=15)
@given(seed=st.integers(0, 1000), width=st.integers(1, 4), depth=st.sampled_from([-1, 1, 2]),
       severity=st.integers(1, 10), all_ops=st.booleans(), size=st.sampled_from([5, 16]))
def test_augmix_view_shape_range_and_reproducibility(seed, width, depth, severity, all_ops, size):
    cfg = AugMixConfig(width=width, depth=depth, severity=severity, all_ops=all_ops)
    x = _u8(seed, size=size)  # 3 * 5 * 5 bytes per image: the row copies cannot go 8 bytes at a time
    a = augmix(x, cfg, generator=torch.Generator().manual_seed(seed))
    b = augmix(x, cfg, generator=torch.Generator().manual_seed(seed))
    assert a.shape == x.shape and a.dtype == torch.float32
    assert a.min() >= 0 and a.max() <= 1
    assert torch.equal(a, b)


def test_view_is_the_convex_mix_of_the_clean_image_and_the_chains():
    cfg = AugMixConfig(width=3, depth=2)
    x = _u8(3, n=5)
    chains = draw_chains(5, cfg, generator=torch.Generator().manual_seed(0))
    view = apply_chains(x, cfg, chains)
    # independent recomputation: apply each chain image by image with the op registry
    for i in range(5):
        mix = torch.zeros(3, 16, 16)
        for j in range(3):
            row = i * 3 + j
            img = x[i:i + 1]
            for step in range(chains.op_index.shape[1]):
                if chains.active[row, step]:
                    name = cfg.ops[int(chains.op_index[row, step])]
                    img = OPS[name](img, chains.level[row, step:step + 1], chains.sign[row, step:step + 1])
            mix += chains.chain_weights[i, j] * img[0].float()
        expected = (chains.clean_weight[i] * x[i].float() + (1 - chains.clean_weight[i]) * mix) / 255
        torch.testing.assert_close(view[i], expected, atol=1e-5, rtol=0)


@pytest.mark.parametrize("all_ops", [False, True])
def test_view_does_not_depend_on_chunking(all_ops):
    cfg = AugMixConfig(all_ops=all_ops)
    x = _u8(5, n=11)
    chains = draw_chains(11, cfg, generator=torch.Generator().manual_seed(2))
    whole = apply_chains(x, cfg, chains, chunk=11)
    for chunk in (1, 4):
        # float32 images in [0, 1] from <= ~10 elementwise ops per pixel: a chunk size can move a pixel
        # between a vectorised body and a scalar tail, where the compiler may fuse a multiply-add the
        # other path rounds twice (<= 1 ulp per op): 8 ulp of 1.0 bounds it
        torch.testing.assert_close(apply_chains(x, cfg, chains, chunk=chunk), whole, rtol=0, atol=8 * 2**-23)


def test_threads_over_chunks_give_the_serial_result():
    cfg = AugMixConfig()
    x = _u8(6, n=40)
    chains = draw_chains(40, cfg, generator=torch.Generator().manual_seed(3))
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        serial = apply_chains(x, cfg, chains, chunk=40)
        torch.set_num_threads(3)
        threaded = apply_chains(x, cfg, chains, chunk=7)
        assert torch.get_num_threads() == 3  # restored after the threaded call
    finally:
        torch.set_num_threads(threads)
    # per-pixel arithmetic does not depend on the thread count, but chunking moves pixels between
    # vectorised body and scalar tail (see above): the same 8-ulp bound
    torch.testing.assert_close(threaded, serial, rtol=0, atol=8 * 2**-23)


def test_each_image_gets_its_own_random_chains():
    x = _u8(0, n=1).expand(64, -1, -1, -1).contiguous()
    views = augmix(x, AugMixConfig(), generator=torch.Generator().manual_seed(1))
    distinct = {tuple(v.flatten()[:64].tolist()) for v in views}
    assert len(distinct) > 50


def test_mixing_weights_follow_their_laws():
    cfg = AugMixConfig(width=3, alpha=1.0)
    chains = draw_chains(20_000, cfg, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(chains.chain_weights.sum(1), torch.ones(20_000))
    # Dirichlet(1,1,1) marginals are Beta(1, 2): mean 1/3, variance 1/18; Beta(1,1) mean 1/2, var 1/12
    assert abs(chains.chain_weights[:, 0].mean() - 1 / 3) < 0.01
    assert abs(chains.chain_weights[:, 0].var() - 1 / 18) < 0.003
    assert abs(chains.clean_weight.mean() - 0.5) < 0.01 and abs(chains.clean_weight.var() - 1 / 12) < 0.003
    depths = chains.active.sum(1)
    for d in (1, 2, 3):
        assert abs((depths == d).float().mean() - 1 / 3) < 0.02
    counts = torch.bincount(chains.op_index[chains.active], minlength=len(cfg.ops)).float()
    assert (counts / counts.sum() - 1 / len(cfg.ops)).abs().max() < 0.01


@pytest.mark.parametrize("bad", [dict(width=0), dict(depth=0), dict(severity=0), dict(alpha=0.0)])
def test_bad_config_is_refused(bad):
    with pytest.raises(ValueError):
        AugMixConfig(**bad)


def test_empty_batch_gives_an_empty_view():
    x = torch.zeros(0, 3, 8, 8, dtype=torch.uint8)
    assert augmix(x, AugMixConfig(), generator=torch.Generator()).shape == (0, 3, 8, 8)
    assert random_crop_flip(x, generator=torch.Generator()).shape == (0, 3, 8, 8)


def test_augmix_refuses_float_images():
    with pytest.raises(ValueError, match="uint8"):
        augmix(torch.rand(2, 3, 8, 8), AugMixConfig(), generator=torch.Generator())


@settings(max_examples=20)
@given(seed=st.integers(0, 1000), padding=st.integers(0, 5), n=st.integers(1, 6))
def test_crop_flip_output_is_a_shifted_maybe_mirrored_window(seed, padding, n):
    x = _u8(seed, n=n, size=10)
    out = random_crop_flip(x, generator=torch.Generator().manual_seed(seed), padding=padding)
    assert out.shape == x.shape and out.dtype == torch.uint8
    padded = torch.nn.functional.pad(x, (padding,) * 4)
    for i in range(n):
        windows = [padded[i, :, dy:dy + 10, dx:dx + 10] for dy in range(2 * padding + 1)
                   for dx in range(2 * padding + 1)]
        assert any(torch.equal(out[i], w) or torch.equal(out[i], w.flip(-1)) for w in windows)


def test_crop_flip_draws_all_shifts_and_flips():
    x = torch.arange(64, dtype=torch.uint8).view(1, 1, 8, 8).expand(4000, 3, 8, 8).contiguous()
    out = random_crop_flip(x, generator=torch.Generator().manual_seed(0), padding=2)
    flipped = (out[:, 0, 4, 5].int() - out[:, 0, 4, 4].int()) < 0
    assert 0.45 < flipped.float().mean() < 0.55
    assert len({tuple(o[0, :, 3].tolist()) for o in out}) >= 20


def test_to_float_scales_to_unit_interval():
    x = torch.tensor([0, 51, 255], dtype=torch.uint8).view(1, 1, 1, 3)
    torch.testing.assert_close(to_float(x), torch.tensor([0.0, 0.2, 1.0]).view(1, 1, 1, 3))


@pytest.mark.gpu
def test_cuda_views_match_cpu_views():
    cfg = AugMixConfig(all_ops=True)
    x = _u8(7, n=64, size=32)
    chains = draw_chains(64, cfg, generator=torch.Generator().manual_seed(0))
    cpu = apply_chains(x, cfg, chains)
    cuda = apply_chains(x.cuda(), cfg, chains).cpu()
    # point ops are exact on both; bilinear maps may truncate one grey level apart, which the
    # following ops of a chain can carry a little further
    diff = (cuda - cpu).abs() * 255
    assert diff.mean() < 0.05 and diff.max() <= 8
    g = torch.Generator(device="cuda").manual_seed(0)
    view = augmix(x.cuda(), cfg, generator=g)
    assert view.is_cuda and view.dtype == torch.float32 and 0 <= view.min() and view.max() <= 1
    crop = random_crop_flip(x.cuda(), generator=g)
    assert crop.is_cuda and crop.dtype == torch.uint8


def test_bench_augmix_runs_and_reports_the_ratio():
    import argparse

    from noisymix_app.bench import bench_augmix

    parser = argparse.ArgumentParser()
    bench_augmix.add_arguments(parser)
    args = parser.parse_args(["--images", "16", "--reference-images", "4", "--repeats", "1", "--size", "16"])
    args.device = "cpu"
    threads = torch.get_num_threads()
    try:
        result = bench_augmix.run(args)
    finally:
        torch.set_num_threads(threads)
    assert result["speedup"] == pytest.approx(result["batched_images_per_s"] / result["reference_pil_images_per_s"],
                                              rel=0.01)
    assert result["cores"] == 1 and result["batched_images"] == 16
