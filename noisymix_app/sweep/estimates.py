"""Device-hours of a run's training, for ``noisymix sweep --dry-run``: measured CPU figures for the
digits analogue, assumed GPU figures for the rest (each constant says which it is).
"""

from __future__ import annotations

from fullscale.data.registry import BUILT_IN
from noisymix_app.sweep.plan import RunSpec

__all__ = ["ESTIMATE_CPU", "ESTIMATE_GPU", "ESTIMATE_NOTE", "estimate_hours", "estimate_source"]

#: training images per epoch of each data set (the standard splits)
_IMAGES = {"cifar10": 50_000, "cifar100": 50_000, "digits": 1_347, "digits16": 1_347, "imagenet": 1_281_167}
#: the CPU cost of a digits16 step against a digits (32x32) step, stride-2 stem, width 16, batch 32:
#: MEASURED, `noisymix bench train-step -- --width 16 --batch 32 --stem-stride 2 --size S` (0.033 s
#: against 0.064 s a NoisyMix step, twice each, idle 2-core VM; benchmarks/RESULTS.md, issue 34)
_CPU_SIDE_FACTOR = {"digits": 1.0, "digits16": 0.52}
#: seconds per epoch per training view-image, by (model, device kind).  digits/CPU: MEASURED,
#: benchmarks/RESULTS.md "Choosing the laptop protocol" (PreActResNet-18 width 16, batch 32, 2 threads:
#: NoisyMix 4.9 s/epoch for 1,347 images x 3 views; 1.92 s/epoch with stem_stride=2); other widths
#: scale linearly (measured ~linear from width 8 to 16 on this CPU).  GPU figures: ASSUMED, not measured
#: (no GPU figure of the trainer is in benchmarks/RESULTS.md yet): 12,000 view-images/s for
#: PreActResNet-18, 5,000 for WRN-28-4, 2,500 for ResNet-50 at 224x224 per GPU (bf16, one recent
#: data-centre GPU).
_SECONDS_PER_VIEW_IMAGE = {"cpu": 4.9 / (3 * 1347), "preactresnet18": 1 / 12_000, "wrn28_4": 1 / 5_000,
                           "wrn28_2": 1 / 12_000, "resnet50": 1 / 2_500}
_CPU_WIDTH = 16  # the width of the measured CPU figure
_CPU_STEM_STRIDE_2_SPEEDUP = 4.9 / 1.92  # the same, measured with stem_stride=2
ESTIMATE_CPU = ("CPU digits rows from the measured laptop-protocol figures (benchmarks/RESULTS.md, NoisyMix 4.9 "
                "s/epoch at width 16, 1.92 with stem_stride=2)")
ESTIMATE_GPU = ("GPU rows ASSUMED at 12k / 5k / 2.5k view-images/s per GPU for PreActResNet-18 / WRN-28-4 / "
                "ResNet-50 (no measured GPU training figure yet)")
ESTIMATE_NOTE = "JSD methods count 3 views per image; evaluation not included"


def estimate_source(plan) -> str:
    """Where the hours of ``plan``'s dry run come from: only the sources its rows use."""
    digits = [spec.config().data.dataset in BUILT_IN for spec in plan.runs]
    parts = ([ESTIMATE_CPU] if any(digits) else []) + ([ESTIMATE_GPU] if not all(digits) else [])
    return f"device-hours: {'; '.join(parts)}; {ESTIMATE_NOTE}"


def estimate_hours(spec: RunSpec) -> float:
    """Estimated device-hours (GPU-hours, or CPU-hours for the digits analogue) of training: the
    view-images it processes over the throughput of ONE device, so it does not grow with the number
    of devices the run spreads over (they share the work; issue 23: it was multiplied by them again)."""
    from fullscale.training.methods import get_method

    cfg = spec.config()
    images = cfg.data.train_subset or _IMAGES.get(cfg.data.dataset, 50_000)
    views = get_method(cfg.method).views
    key = "cpu" if cfg.data.dataset in BUILT_IN else cfg.model.name
    per = _SECONDS_PER_VIEW_IMAGE.get(key, 1 / 5_000)
    if cfg.data.dataset in BUILT_IN:
        stem = _CPU_STEM_STRIDE_2_SPEEDUP if cfg.model.stem_stride == 2 else 1.0
        per *= (cfg.model.width or 64) / _CPU_WIDTH / stem
        per *= _CPU_SIDE_FACTOR.get(cfg.data.dataset, 1.0)
    return images * views * cfg.optim.epochs * per / 3600
