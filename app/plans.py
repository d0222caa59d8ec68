"""The plans of ``noisymix reproduce``: what the main job runs, as data (``ReproducePlan``) —
read by ``noisymix_app.reproduce`` (which runs a plan) and ``noisymix_app.sweep_plan`` (which turns one into runs)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PLANS", "ReproducePlan"]


@dataclass(frozen=True)
class ReproducePlan:
    """What the main job runs; the presets below are data, the steps are built from them."""

    description: str
    dataset: str = "digits"
    methods: tuple[str, ...] = ("baseline", "augmix_jsd", "nfm", "noisymix")
    model: str = "preactresnet18"
    width: int = 16
    epochs: int = 6
    seeds: tuple[int, ...] = (0, 1, 2)
    corruptions: tuple[str, ...] | None = None  # None: the 15 of the benchmark
    eval_suites: tuple[str, ...] = ("clean", "digits-c", "calibration")
    corrupted_suite: str = "digits-c"
    theory_points: int = 13
    theory_sympy: bool = True
    toy_seeds: int = 20
    toy_epochs: int = 100
    train_overrides: tuple[str, ...] = ()
    needs_data_root: bool = False
    # training/evaluation processes of one torch thread each (0: one after another in this process
    # with torch's threads); two beat one two-thread process on these small convolutions
    # (benchmarks/RESULTS.md, "Choosing the laptop protocol (issue 22)")
    workers: int = 2


PLANS: dict[str, ReproducePlan] = {
    # The laptop protocol, chosen by measurement (benchmarks/RESULTS.md, "Choosing the laptop
    # protocol"; 2-core VM, 1 torch thread, shared with other jobs at load 2.5-5.6):
    # seconds per epoch (batch 64, 1347 images) baseline 2.2 / 3.0 / 4.2 and NoisyMix 5.0 / ~11 / 11
    # at width 8 / 12 / 16 (AugMix+JSD costs as NoisyMix, NFM as the baseline); a Digits-C
    # evaluation (33,750 images) costs 14-27 s at width 8 on an idle machine and grows with the
    # width; the 6-epoch job took 497 s idle, 270 s of it training.  Seed spread is dominated by
    # under-training: at 6 epochs NoisyMix's Digits-C ranged 70-82 % over 3 seeds (sd ~6), at 15
    # epochs (width 16, issue 10) 91.6 / 93.3 and the Baseline's 84.3 / 83.7 / 83.7 (sd 0.4-1.2),
    # so epochs buy more power than seeds: one more seed at width 8 costs ~60 s of training per
    # 4 epochs plus ~4 x 20 s of evaluation.  Width 16 x 15 epochs costs ~460 s per seed (4
    # methods): 3 seeds do not fit.  Width 8 x 12 epochs x 3 seeds x 4 methods: ~540 s of training
    # + ~230 s of evaluation and the other steps = ~13 min idle.  The full Digits-C is kept (15
    # corruptions x 5 severities).  The power reached is printed per claim (MDD) in SUMMARY.md.
    "laptop": ReproducePlan(
        description="small-scale run of the full pipeline on scikit-learn's digits (CPU, < 15 min)",
        width=8, epochs=12, train_overrides=("batch_size=64",),
    ),
    "quick": ReproducePlan(
        description="smoke run of every step in seconds (tests; numbers are meaningless)",
        methods=("baseline", "noisymix"), width=4, epochs=1, seeds=(0,),
        corruptions=("gaussian_noise", "contrast"), eval_suites=("clean", "digits-c"),
        theory_points=5, theory_sympy=False, toy_seeds=2, toy_epochs=5,
        train_overrides=("train_subset=128", "batch_size=64"), workers=0,
    ),
    "full": ReproducePlan(
        description="the paper's CIFAR-10 PreActResNet-18 rows (200 epochs; GPU and the CIFAR "
                    "batches under --data-root)",
        dataset="cifar10", width=64, epochs=200, seeds=(0, 1, 2),
        eval_suites=("clean", "cifar10-c", "calibration"), corrupted_suite="cifar10-c",
        needs_data_root=True, workers=1,
    ),
}
