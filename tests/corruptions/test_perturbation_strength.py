"""The difficulty-matched Digits-P's strength rules and its frozen fit's file (issue 51)."""

from __future__ import annotations

import json

import pytest
import torch

from fullscale.corruptions.matched_p import MATCHED_P_FILE, check_matched_p, read_matched_p
from fullscale.corruptions.perturbations import STRENGTHENED, check_strength, perturbation_sequence
from fullscale.metrics import is_noise_sequence
from fullscale.vocabulary import P_COLUMNS


def _images(n: int = 6) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    # digit-like: a bright blob on black, as the upscaled digits are
    x = torch.zeros(n, 3, 32, 32)
    x[:, :, 8:24, 12:20] = torch.rand((n, 1, 16, 8), generator=g) * 0.6 + 0.4
    return (x * 255).round().to(torch.uint8)


def _change(frames: torch.Tensor, noise: bool) -> float:
    """Mean absolute change between the frames the flip probability compares (uint8 levels)."""
    f = frames.float()
    reference = f[:, :1] if noise else f[:, :-1]
    return float((f[:, 1:] - reference).abs().mean())


def test_the_ten_rules_are_the_papers_ten():
    assert set(STRENGTHENED) == set(P_COLUMNS)


@pytest.mark.parametrize("name", P_COLUMNS)
def test_strength_one_is_the_published_sequence(name):
    x = _images()
    published = perturbation_sequence(x, name, generator=torch.Generator().manual_seed(5))
    ruled = STRENGTHENED[name](1.0)
    frames = ruled(x.float() / 255, torch.Generator().manual_seed(5))
    from fullscale.corruptions._draws import to_u8

    assert torch.equal(to_u8(torch.stack(frames, 1)), published)


@pytest.mark.parametrize("name", P_COLUMNS)
def test_the_change_between_compared_frames_grows_with_strength(name):
    x = _images()
    changes = [_change(perturbation_sequence(x, name, generator=torch.Generator().manual_seed(5), strength=k),
                       is_noise_sequence(name)) for k in (0.25, 1.0, 4.0)]
    assert changes[0] < changes[1] < changes[2], changes


@pytest.mark.parametrize("bad", [0, -1.0, 1e9, float("nan"), float("inf"), True, "2"])
def test_bad_strengths_are_refused(bad):
    with pytest.raises(ValueError, match="strength must be a number"):
        check_strength("rotate", bad)


def test_a_perturbation_without_a_rule_takes_only_strength_one():
    with pytest.raises(ValueError, match="no strength rule"):
        perturbation_sequence(_images(), "shear", generator=torch.Generator(), strength=2.0)
    with pytest.raises(ValueError, match="pixel_scale must be 1"):
        perturbation_sequence(_images(), "rotate", generator=torch.Generator(), params="digits-matched",
                              pixel_scale=2.0)


@pytest.mark.skipif(not MATCHED_P_FILE.is_file(), reason="no frozen Digits-P fit")
def test_the_matched_set_applies_the_frozen_strength():
    frozen = read_matched_p(MATCHED_P_FILE)
    for name in ("rotate", "gaussian_noise"):
        k = frozen["strengths"][name]
        a = perturbation_sequence(_images(), name, generator=torch.Generator().manual_seed(2), params="digits-matched")
        b = perturbation_sequence(_images(), name, generator=torch.Generator().manual_seed(2), strength=k)
        assert torch.equal(a, b)


def _record() -> dict:
    fit = {n: {"target": 1.0, "strength": 2.0, "flip": 1.1, "residual": 0.1, "trace": [[1.0, 0.5], [2.0, 1.1]]}
           for n in P_COLUMNS}
    return {"strengths": {n: 2.0 for n in P_COLUMNS}, "fit": fit}


@pytest.mark.parametrize("spoil, words", [
    (lambda r: [r], "JSON object"),
    (lambda r: {**r, "strengths": {**r["strengths"], "rotate": -1}}, "strengths.rotate"),
    (lambda r: {**r, "strengths": {k: v for k, v in r["strengths"].items() if k != "tilt"}}, "ten perturbations"),
    (lambda r: {**r, "fit": None}, "'fit' must hold"),
    (lambda r: {**r, "fit": {**r["fit"], "scale": "x"}}, "fit.scale must be an object"),
    (lambda r: {**r, "fit": {**r["fit"], "scale": {k: v for k, v in r["fit"]["scale"].items() if k != "residual"}}},
     "fit.scale.residual"),
    (lambda r: {**r, "fit": {**r["fit"], "snow": {**r["fit"]["snow"], "strength": 3.0}}}, "is not strengths.snow"),
    (lambda r: {**r, "fit": {**r["fit"], "snow": {**r["fit"]["snow"], "trace": []}}}, "trace"),
])
def test_a_hand_edited_fit_is_refused_in_one_line_naming_the_key(spoil, words):
    assert check_matched_p(_record(), "f.json") == _record()
    with pytest.raises(ValueError, match=words) as error:
        check_matched_p(spoil(_record()), "f.json")
    assert "\n" not in str(error.value) and str(error.value).startswith("f.json")


def test_json_infinity_is_refused_naming_the_file(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(_record()).replace('"rotate": 2.0', '"rotate": Infinity', 1))
    with pytest.raises(ValueError, match="Infinity") as error:
        read_matched_p(path)
    assert str(path) in str(error.value)
