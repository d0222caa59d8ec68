"""AlexNet's normalisers against the paper that publishes them, and the mFR / mCE they give against
numbers printed elsewhere.

Hendrycks & Dietterich, "Benchmarking Neural Network Robustness to Common Corruptions and
Perturbations", ICLR 2019 (arXiv:1903.12261), print AlexNet's ImageNet-P flip probabilities in
Appendix E and its ImageNet-C errors in Appendix D (the copy read: new_draft.pdf of
github.com/hendrycks/robustness, commit de7653a, page 13).  The sentences below are transcribed
from there as printed; the shipped figures/alexnet_flip.json and fullscale.vocabulary.ALEXNET_ERR
must say the same.  Then two witnesses that do not come from the shipped file: their Table 3
(flip rates of a ResNet-50, mFR 58.0) and the leaderboard of the same repository's README
(mCE of the ResNet-50 baseline 76.7 %, Stylized ImageNet 69.3 %, AugMix 65.3 %).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fullscale.metrics import flip_summary
from fullscale.vocabulary import ALEXNET_ERR, CORRUPTIONS, P_COLUMNS
from noisymix_figures.alexnet import alexnet_flip_probabilities, alexnet_flip_source, flip_rates, mean_flip_rate
from noisymix_figures.tables import paper_mce, paper_values

# Appendix E, "Full perturbation robustness results", as printed
APPENDIX_E = ("Gaussian Noise: 23.65%, Shot Noise: 30.06%, Motion Blur: 9.30%, Zoom Blur: 5.94%, Snow: 11.93%, "
              "Brightness: 4.89%, Translate: 11.01%, Rotate: 13.10%, Tilt: 7.05%, Scale: 23.53%, Speckle Noise: "
              "18.65%, Gaussian Blur: 2.78%, Spatter: 5.05%, Shear: 10.66%.")
# Appendix D, "Full corruption robustness results": (1/5) sum_s E^AlexNet_{s,c}, as printed
APPENDIX_D = ("Gaussian Noise: 88.6%, Shot Noise: 89.4%, Impulse Noise: 92.3%, Defocus Blur: 82.0%, Glass Blur: "
              "82.6%, Motion Blur: 78.6%, Zoom Blur: 79.8%, Snow: 86.7%, Frost: 82.7%, Fog: 81.9%, Brightness: "
              "56.5%, Contrast: 85.3%, Elastic Transformation: 64.6%, Pixelate: 71.8%, JPEG: 60.7%")
# Table 3 (flip rates, %): the ResNet-50 row, in the columns of P_COLUMNS, and its printed mFR
RESNET50_FR, RESNET50_MFR = (59, 58, 64, 72, 63, 62, 44, 52, 57, 48), 58.0
_NAMES = {"elastic_transformation": "elastic_transform", "jpeg": "jpeg_compression", "pixelate": "pixelate"}


def _parse(text: str) -> dict[str, float]:
    pairs = re.findall(r"([A-Za-z ]+): (\d+\.\d+)%", text)
    names = [name.strip().lower().replace(" ", "_") for name, _ in pairs]
    return {_NAMES.get(n, n): float(v) for n, (_, v) in zip(names, pairs, strict=True)}


def test_alexnet_flip_probabilities_are_the_printed_ones():
    printed = _parse(APPENDIX_E)
    assert len(printed) == 14
    assert alexnet_flip_probabilities() == {name: pytest.approx(value / 100, abs=1e-12)
                                            for name, value in printed.items()}
    assert set(P_COLUMNS) <= set(printed)  # every column of the paper's -P tables, and spatter (the public script's)
    source = alexnet_flip_source()
    assert "1903.12261" in source["paper"] and "Appendix E" in source["where"]


def test_the_existing_alexnet_errors_are_appendix_d_rounded():
    printed = _parse(APPENDIX_D)
    assert list(printed) == list(CORRUPTIONS)
    assert {c: round(100 * ALEXNET_ERR[c], 1) for c in CORRUPTIONS} == printed


def test_alexnet_normalised_by_itself_is_100_and_table_3_recomputes():
    alexnet = alexnet_flip_probabilities()
    results = {name: {"flip_probability": fp} for name, fp in alexnet.items()}
    assert mean_flip_rate(flip_rates(results)) == pytest.approx(1.0)  # Table 3's AlexNet row: 100 everywhere
    assert flip_summary({p: alexnet[p] for p in P_COLUMNS}, alexnet)["mfr"] == pytest.approx(1.0)
    # ResNet-50's printed mFR is the mean of its printed (integer) flip rates, within their rounding
    assert abs(np.mean(RESNET50_FR) - RESNET50_MFR) <= 0.5 + 0.05


def test_the_papers_baseline_flip_rates_are_hendrycks_resnet50_normalised_by_the_same_alexnet():
    """tab:results_imagenet_p's Baseline (torchvision's ResNet-50) printed to 0.1 rounds to Table 3's
    ResNet-50 row printed to 1: both divide the same flip probabilities by the same AlexNet's."""
    baseline = dict(paper_values()["tab:results_imagenet_p"]["rows"])["Baseline"]
    assert all(abs(a - b) <= 0.5 + 0.05 for a, b in zip(baseline[:10], RESNET50_FR, strict=True))
    alexnet = alexnet_flip_probabilities()
    fps = {name: fr / 100 * alexnet[name] for name, fr in zip(P_COLUMNS, baseline[:10], strict=True)}
    rates = flip_rates({name: {"flip_probability": fp} for name, fp in fps.items()})
    assert 100 * mean_flip_rate(rates) == pytest.approx(baseline[10], abs=0.05)  # 58.0


@pytest.mark.parametrize(("row", "published"), [("Baseline", 76.7), ("Stylized ImageNet", 69.3), ("AugMix", 65.3)])
def test_mce_of_the_papers_imagenet_c_rows_is_the_published_one(row, published):
    """hendrycks/robustness README, ImageNet-C leaderboard (ResNet-50): the paper's per-corruption
    accuracies of these rows give the published mCE through ALEXNET_ERR."""
    cells = dict(paper_values()["tab:results_imagenet_c"]["rows"])[row]
    assert paper_mce(cells) == pytest.approx(published, abs=0.05)


@given(st.dictionaries(st.sampled_from(P_COLUMNS), st.floats(0, 1), min_size=0, max_size=len(P_COLUMNS)),
       st.sampled_from(["snow", "spatter"]))
def test_flip_rates_divide_by_alexnet_on_the_set_evaluated(fps, weather):
    """The weather column is read on the set the run was evaluated on (snow or spatter) and divided
    by AlexNet's flip probability on that set; mFR exists only with all ten columns."""
    alexnet = alexnet_flip_probabilities()
    results = {(weather if n == "snow" else n): {"flip_probability": v} for n, v in fps.items()}
    rates = flip_rates(results, weather)
    assert set(rates) == set(fps)
    for name, value in fps.items():
        assert rates[name] == pytest.approx(value / alexnet[weather if name == "snow" else name])
    mfr = mean_flip_rate(rates)
    assert (mfr is None) == (len(fps) < len(P_COLUMNS))
    if mfr is not None:
        assert mfr == pytest.approx(np.mean(list(rates.values())))
        assert mean_flip_rate(rates, no_noise=True) == pytest.approx(np.mean([rates[c] for c in P_COLUMNS[2:]]))
