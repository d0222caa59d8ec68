"""Issue 46: the difficulty-matched Digits-C — its strength rules, its frozen fit, and its damage growing with
strength and severity on real digits."""

from __future__ import annotations

import itertools
import json

import pytest
import torch

from fullscale.corruptions.matched import MATCHED_FILE, matched_fit, matched_strength
from fullscale.corruptions.registry import CORRUPTIONS, SPECS, corrupt, strengthened
from fullscale.corruptions.writer import chunk_generator
from fullscale.data import load_dataset
from noisymix_app.analogue.fit_c import FIT_SEEDS, MIN_DROP, FitOptions, choose, targets
from noisymix_figures.paper import baseline_drops

#: the published CIFAR rows whose pixel change is not monotone in severity on the digits either: frost's
#: severity 3 row (image weight 0.9, frost 0.4) changes more than its severity 4 (0.85, 0.4) on a black
#: ground, and elastic's severity 1 is its strongest affine jitter (0.08 x 32 pixels, no elastic field)
NOT_MONOTONE_AS_PUBLISHED = ("frost", "elastic_transform")
#: matched rows whose pixel change dips: glass blur's jump rounds to the same 4 pixels at severities 1-3,
#: where the published rows differ only in the blur's sigma, and more blur smooths the swaps' changes
#: (severity 1: sigma 0.18; 2: 0.88); its severity 5 still changes most
DIPS_WHEN_MATCHED = ("glass_blur",)


@pytest.fixture(scope="module")
def digits():
    return load_dataset("digits", "test").images[:16]


def _damage(images, name, severity, *, strength=1.0, params="cifar"):
    g = chunk_generator(0, name, severity, 0, "cpu")
    out = corrupt(images, name, severity, generator=g, params=params, strength=strength)
    return float((out.float() - images.float()).abs().mean())


@pytest.mark.parametrize("name", list(SPECS))
def test_strength_one_is_the_published_row(name):
    for severity in range(1, 6):
        row = SPECS[name].row("cifar", severity)
        assert strengthened(name, row, 1.0) is row


@pytest.mark.parametrize("name", CORRUPTIONS)
def test_damage_grows_with_strength(name, digits):
    damages = [_damage(digits, name, 3, strength=k) for k in (0.25, 0.5, 1.0, 2.0, 4.0)]
    # glass blur's whole-pixel jumps (at least one) dominate below k = 1: flat there within 5 %
    for weaker, stronger in itertools.pairwise(damages):
        assert stronger >= 0.95 * weaker, damages
    assert damages[-1] > 1.5 * damages[0], damages


@pytest.mark.parametrize("name", CORRUPTIONS)
def test_damage_grows_with_severity_on_the_matched_set(name, digits):
    damages = [_damage(digits, name, s, params="digits-matched") for s in range(1, 6)]
    published = [_damage(digits, name, s) for s in range(1, 6)]
    rises = [b >= 0.97 * a for a, b in itertools.pairwise(damages)]
    if name in NOT_MONOTONE_AS_PUBLISHED:
        # the same dip as the published rows': a property of CIFAR-10-C's rows, kept by the matched set
        published_rises = [b >= 0.97 * a for a, b in itertools.pairwise(published)]
        assert not all(published_rises)
        assert damages[-1] > damages[0] or name == "elastic_transform"
    elif name in DIPS_WHEN_MATCHED:
        assert damages[-1] == max(damages) and all(b >= 0.97 * a for a, b in itertools.pairwise(damages[1:]))
    else:
        assert all(rises), damages


def test_strengths_are_the_fits_own_choice():
    fit = matched_fit()
    assert set(fit["strengths"]) == set(CORRUPTIONS)
    wanted = targets()
    for name in CORRUPTIONS:
        entry = fit["fit"][name]
        assert entry["target"] == pytest.approx(wanted[name])
        trace = [tuple(p) for p in entry["trace"]]
        # a strength refused for a severity at chance or at its clip (issue 57), keyed as printed (6 digits)
        refused = {k for k, _ in trace if f"{k:g}" in entry.get("refused", {})}
        strength, drop = choose(trace, entry["target"], refused)
        assert fit["strengths"][name] == strength == matched_strength(name)
        assert entry["drop"] == drop and entry["residual"] == pytest.approx(drop - entry["target"], abs=1e-3)


def test_targets_are_the_papers_baseline_drops():
    # tab:results_cifar10: Baseline clean 95.3; tab:results_cifar10_c: White 46.4, Bright 93.8
    clean, drops = baseline_drops()
    assert clean == 95.3
    assert drops["gaussian_noise"] == pytest.approx(95.3 - 46.4)
    assert targets()["brightness"] == MIN_DROP > drops["brightness"] == pytest.approx(95.3 - 93.8)


def test_the_fit_record_names_its_command_and_unused_seeds():
    fit = json.loads(MATCHED_FILE.read_text())
    commands = {entry.get("command") or fit["command"] for entry in fit["fit"].values()}
    assert commands and all(c.startswith("noisymix fit-analogue --out ") and " --freeze" in c for c in commands)
    options = FitOptions(**fit["options"])
    assert options.seed_list() == FIT_SEEDS
    assert not set(FIT_SEEDS) & set(range(9))  # the main job's seeds


def test_the_matched_rows_are_the_fitted_strengths(digits):
    g1, g2 = (chunk_generator(0, "gaussian_noise", 2, 0, "cpu") for _ in range(2))
    matched = corrupt(digits, "gaussian_noise", 2, generator=g1, params="digits-matched")
    by_hand = corrupt(digits, "gaussian_noise", 2, generator=g2, strength=matched_strength("gaussian_noise"))
    assert torch.equal(matched, by_hand)


def test_extras_have_no_matched_strength(digits):
    with pytest.raises(ValueError, match="15 corruptions only"):
        corrupt(digits, "speckle_noise", 1, generator=torch.Generator().manual_seed(0), params="digits-matched")


@pytest.mark.parametrize("strength", [0, -1, float("nan"), "2"])
def test_a_bad_strength_is_refused(strength, digits):
    with pytest.raises(ValueError, match="strength must be"):
        corrupt(digits, "contrast", 1, generator=torch.Generator().manual_seed(0), strength=strength)


def test_snow_without_a_row_rule_scales_its_difference(digits):
    g1, g2 = (chunk_generator(0, "snow", 3, 0, "cpu") for _ in range(2))
    full = corrupt(digits, "snow", 3, generator=g1).float()
    half = corrupt(digits, "snow", 3, generator=g2, strength=0.5).float()
    # x + 0.5 (c(x) - x), each stored after truncation to whole levels: within 1.5 levels of the blend where
    # the full-strength snow was not clipped at white (the blend is of the unclipped snow)
    expected = digits.float() + 0.5 * (full - digits.float())
    unclipped = full < 255
    assert unclipped.float().mean() > 0.5
    assert (half - expected)[unclipped].abs().max() <= 1.5
