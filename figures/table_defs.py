"""The paper's tables as data: per table, one ``Comparison`` record (a paper table, the (dataset,
model) of our runs that reproduce it, per column the metric, and what REPORT.md says of it); the
tables themselves are written by ``noisymix_figures.render`` and registered by ``noisymix_figures.tables``.

Digits runs are shown as a *small-scale analogue* of the CIFAR-10 tables (tab:results_cifar10,
tab:results_cifar10_c, tab:results_cifar_p, tab:ablation), never as CIFAR numbers.  The four ImageNet
tables (tab:results_imagenet, tab:results_imagenet_c, tab:results_imagenet_p,
tab:results_imagenet_r_calibration) read ``resnet50`` runs of ``dataset=imagenet``: ImageNet-P flip
rates are normalised by AlexNet's flip probabilities (``noisymix_figures.alexnet``), mCE by its errors
(``ALEXNET_ERR``), and the calibration table reads the ``imagenet-r`` suite (ImageNet-R, as the paper),
not ``calibration`` (the clean test split).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fullscale.vocabulary import ABLATION_ROWS, CORRUPTIONS, METHOD_ROWS, P_COLUMNS
from noisymix_figures.paper import paper_mce, paper_mean
from noisymix_figures.registry import NEEDS_IMAGENET, needs_cifar, needs_cifar_p
from noisymix_figures.run_metrics import Metric, corruption, flip, flip_rate, mfr, summary, with_paren

__all__ = ["ABLATION_LEGEND", "COMPARISONS", "IMAGENET_MODEL", "Comparison"]


@dataclass(frozen=True)
class Comparison:
    """A paper table and where our matching numbers come from (one (dataset, model) per column).

    ``extra``: columns the paper does not print, after its own, each with how the paper's value is
    computed from its row (a mean of its columns, mCE) and ours in ``columns`` after the paper's."""

    label: str
    title: str
    columns: tuple[tuple[str, str, Metric], ...]  # (dataset, model, metric) per paper column, then per extra
    rows: dict[str, str | None]
    analogue: bool = False
    extra: tuple[tuple[str, Callable[[list], float | None]], ...] = ()
    unimplemented: str = "not implemented"  # what a row without a method is
    # the file name when it is not the label's (a second analogue of one table); such a table is
    # written only when runs of its own exist
    name: str | None = None
    # an analogue's own column names, each beside the paper's column it stands for (None: the digits
    # clean / -C pair after the paper's columns)
    ours_names: tuple[str, ...] | None = None
    # or each paper column's own name followed by this ("(ours, Digits-C)"): the tables' names, not ours
    ours_suffix: str = ""
    # tab:ablation's third column, the -C accuracy gain over the "----" row (Baseline): the paper's as
    # printed, ours as each row's -C mean minus the Baseline row's (issue 40: it was dropped)
    gain: bool = False
    # a legend printed under the table (the ablation's row codes)
    legend: str = ""
    # the table itself (not an analogue) registers its label (``noisymix_figures.registry``) with what
    # REPORT.md's label-by-label section says of it: where our numbers come from, what filling it
    # takes, and its line there
    ours: str = ""
    needs: str = ""
    position: int | None = None


def _c_columns(dataset: str, model: str) -> tuple:
    return tuple((dataset, model, corruption(f"{dataset}-c", c)) for c in CORRUPTIONS)


def _p_columns(dataset: str, model: str) -> tuple:
    return (*((dataset, model, flip(f"{dataset}-p", n)) for n in P_COLUMNS),
            (dataset, model, summary(f"{dataset}-p", "mean_flip_probability")))


def _clean_c(model: str) -> tuple:
    return (("cifar10", model, summary("clean", "accuracy")),
            ("cifar10", model, summary("cifar10-c", "mean_accuracy")),
            ("cifar100", model, summary("clean", "accuracy")),
            ("cifar100", model, summary("cifar100-c", "mean_accuracy")))


# The paper's "Wide-ResNet-28x2" rows were trained by the public code's ``wideresnet28``, which is
# WRN-28-4 with dropout 0.1 (RobustBench lists the NoisyMix CIFAR model as WRN-28-4): our runs
# for those rows are ``wrn28_4`` runs, and every such table says so in its title.
_WRN = "wrn28_4"
_WRN_NOTE = "paper's Wide-ResNet-28x2 rows; ours: wrn28_4 = WRN-28-4, dropout 0.1, the public code's model"

#: the paper's ImageNet rows are ResNet-50s; ours are ``resnet50`` runs of ``dataset=imagenet``
IMAGENET_MODEL = "resnet50"
_IMAGENET_ROWS = {**METHOD_ROWS, "Baseline ResNet-50": "baseline"}  # tab:results_imagenet_r_calibration's name
_PUBLIC = "a public checkpoint in the paper; not trained here"
_IM = ("imagenet", IMAGENET_MODEL)
_P_NOTE = ("flip rates FR = FP / FP(AlexNet), AlexNet's flip probabilities from Hendrycks & Dietterich (2019), "
           "App. E (figures/alexnet_flip.json); the Snow column reads the set the run was evaluated on")
_IMAGENET_COMPARISONS: tuple[Comparison, ...] = (
    Comparison("tab:results_imagenet", f"ResNet-50 on ImageNet, ImageNet-C, ImageNet-R and ImageNet-P (mFR, %); "
                                       f"in parentheses without the noise corruptions; ours: {IMAGENET_MODEL}",
               ((*_IM, summary("clean", "accuracy")),
                (*_IM, with_paren(summary("imagenet-c", "mean_accuracy"),
                                  summary("imagenet-c", "mean_accuracy_no_noise"))),
                (*_IM, summary("imagenet-r", "accuracy")),
                (*_IM, with_paren(mfr(), mfr(no_noise=True)))), _IMAGENET_ROWS, unimplemented=_PUBLIC,
               ours="imagenet / resnet50 runs: clean, imagenet-c, imagenet-r, imagenet-p (mFR with AlexNet's flip "
                    "probabilities, figures/alexnet_flip.json)", needs=NEEDS_IMAGENET, position=1),
    Comparison("tab:results_imagenet_c", f"ResNet-50, ImageNet-C accuracy per corruption (%), then the mean and "
                                         f"mCE (AlexNet-normalised, %); ours: {IMAGENET_MODEL}",
               (*_c_columns("imagenet", IMAGENET_MODEL), (*_IM, summary("imagenet-c", "mean_accuracy")),
                (*_IM, summary("imagenet-c", "mce"))), _IMAGENET_ROWS,
               extra=(("mean", paper_mean(tuple(range(len(CORRUPTIONS))))), ("mCE", paper_mce)),
               unimplemented=_PUBLIC, ours="imagenet / resnet50 runs: imagenet-c per corruption, mean and mCE "
               "(AlexNet's errors)", needs=NEEDS_IMAGENET, position=10),
    Comparison("tab:results_imagenet_p", f"ResNet-50, ImageNet-P {_P_NOTE}; ours: {IMAGENET_MODEL}",
               (*((*_IM, flip_rate(c)) for c in P_COLUMNS), (*_IM, mfr())), _IMAGENET_ROWS, unimplemented=_PUBLIC,
               ours="imagenet / resnet50 runs: imagenet-p flip probabilities over AlexNet's", needs=NEEDS_IMAGENET,
               position=16),
    Comparison("tab:results_imagenet_r_calibration",
               f"Calibration on ImageNet-R (the renditions, logits of its 200 classes), not on the clean validation "
               f"set: RMS calibration error (%, bins of 100) and AURRA (%); ours: {IMAGENET_MODEL}, suite imagenet-r",
               ((*_IM, summary("imagenet-r", "rms_calibration_error")), (*_IM, summary("imagenet-r", "aurra"))),
               _IMAGENET_ROWS, unimplemented=_PUBLIC, ours="imagenet / resnet50 runs: the imagenet-r suite's RMS "
               "calibration error and AURRA (on ImageNet-R)", needs=NEEDS_IMAGENET, position=15),
)

#: tab:ablation's row codes (the paper's table names its switches in its caption only)
ABLATION_LEGEND = ("Row codes: A = AugMix views, F = feature (manifold) mixing, N = noise injection, J = the "
                   "Jensen-Shannon stability loss; a dash: that component off (`----`: the Baseline, `AFNJ`: "
                   "NoisyMix).  Robustness gain: -C accuracy minus the Baseline row's.")


COMPARISONS: tuple[Comparison, ...] = (
    Comparison("tab:results_cifar10", "PreActResNet-18 on CIFAR-10/100 (-C); ours: preactresnet18",
               _clean_c("preactresnet18"), METHOD_ROWS, ours="cifar10 / cifar100 preactresnet18 runs (clean, -C); "
               "the digits runs fill an analogue table", needs=needs_cifar("results_cifar10"), position=3),
    Comparison("tab:results_cifar100", f"Wide-ResNet-28 on CIFAR-10/100 (-C) ({_WRN_NOTE})", _clean_c(_WRN),
               METHOD_ROWS, ours="cifar10 / cifar100 wrn28_4 runs (clean, -C)", needs=needs_cifar("results_cifar100"),
               position=4),
    Comparison("tab:ablation", f"Ablation, Wide-ResNet-28 on CIFAR-100 ({_WRN_NOTE})",
               (("cifar100", _WRN, summary("clean", "accuracy")),
                ("cifar100", _WRN, summary("cifar100-c", "mean_accuracy"))), ABLATION_ROWS,
               gain=True, legend=ABLATION_LEGEND, ours="cifar100 / wrn28_4 runs of the ten switch rows; the digits "
               "runs fill an analogue table, one row per method run (the main job's four; `reproduce --plan "
               "ablation`: all ten)", needs=needs_cifar("ablation"), position=5),
    Comparison("tab:results_cifar10_c", "PreActResNet-18, CIFAR-10-C per corruption; ours: preactresnet18",
               _c_columns("cifar10", "preactresnet18"), METHOD_ROWS, ours="cifar10 / preactresnet18 runs: cifar10-c "
               "per corruption; the digits runs fill an analogue table (Digits-C)",
               needs=needs_cifar("results_cifar10"), position=11),
    Comparison("tab:results_cifar100_c", "PreActResNet-18, CIFAR-100-C per corruption; ours: preactresnet18",
               _c_columns("cifar100", "preactresnet18"), METHOD_ROWS,
               ours="cifar100 / preactresnet18 runs: cifar100-c per corruption", needs=needs_cifar("results_cifar10"),
               position=12),
    Comparison("tab:results_wrs_cifar10_c", f"Wide-ResNet-28, CIFAR-10-C per corruption ({_WRN_NOTE})",
               _c_columns("cifar10", _WRN), METHOD_ROWS, ours="cifar10 / wrn28_4 runs: cifar10-c per corruption",
               needs=needs_cifar("results_cifar100"), position=13),
    Comparison("tab:results_wrs_cifar100_c", f"Wide-ResNet-28, CIFAR-100-C per corruption ({_WRN_NOTE})",
               _c_columns("cifar100", _WRN), METHOD_ROWS, ours="cifar100 / wrn28_4 runs: cifar100-c per corruption",
               needs=needs_cifar("results_cifar100"), position=14),
    Comparison("tab:results_cifar_p", "PreActResNet-18, CIFAR-10-P flip probabilities; ours: preactresnet18",
               _p_columns("cifar10", "preactresnet18"), METHOD_ROWS, ours="cifar10 / preactresnet18 runs: cifar10-p "
               "flip probabilities; the digits runs fill an analogue table (Digits-P)",
               needs=needs_cifar_p("results_cifar10"), position=17),
    Comparison("tab:results_cifar_p_wrs", f"Wide-ResNet-28, CIFAR-10-P flip probabilities ({_WRN_NOTE})",
               _p_columns("cifar10", _WRN), METHOD_ROWS, ours="cifar10 / wrn28_4 runs: cifar10-p flip probabilities",
               needs=needs_cifar_p("results_cifar100"), position=18),
    Comparison("tab:results_cifar10", "Small-scale analogue: Digits / Digits-C (ours: preactresnet18, reduced) vs the "
               "paper's CIFAR-10 / CIFAR-10-C", (("digits", "preactresnet18", summary("clean", "accuracy")),
                                                 ("digits", "preactresnet18", summary("digits-c", "mean_accuracy"))),
               METHOD_ROWS, analogue=True),
    # the digits at 16x16 and their Digits-C (`noisymix reproduce --plan digits16`, issue 34)
    Comparison("tab:results_cifar10", "Small-scale analogue: Digits 16x16 / Digits-C 16x16 (ours: preactresnet18, "
               "reduced) vs the paper's CIFAR-10 / CIFAR-10-C",
               (("digits16", "preactresnet18", summary("clean", "accuracy")),
                ("digits16", "preactresnet18", summary("digits16-c", "mean_accuracy"))),
               METHOD_ROWS, analogue=True, name="results_cifar10_digits16_analogue"),
    # the digits analogues of the per-corruption, -P and ablation tables (issue 40): our Digits-C
    # per corruption, Digits-P flip probabilities (the laptop plan evaluates every method on it) and
    # the ablation plan's rows (`noisymix reproduce --plan ablation`), each column beside the paper's
    Comparison("tab:results_cifar10_c", "Small-scale analogue: Digits-C per corruption (ours: preactresnet18, "
               "reduced) vs the paper's CIFAR-10-C", _c_columns("digits", "preactresnet18"), METHOD_ROWS,
               analogue=True, ours_suffix="(ours, Digits-C)"),
    Comparison("tab:results_cifar_p", "Small-scale analogue: Digits-P flip probabilities (ours: preactresnet18, "
               "reduced) vs the paper's CIFAR-10-P", _p_columns("digits", "preactresnet18"), METHOD_ROWS,
               analogue=True, ours_suffix="(ours, Digits-P)"),
    Comparison("tab:ablation", "Small-scale analogue: ablation on Digits / Digits-C (ours: preactresnet18, reduced) "
               "vs the paper's Wide-ResNet-28 on CIFAR-100",
               (("digits", "preactresnet18", summary("clean", "accuracy")),
                ("digits", "preactresnet18", summary("digits-c", "mean_accuracy"))), ABLATION_ROWS,
               analogue=True, ours_names=("Digits (ours)", "Digits-C (ours)"), gain=True, legend=ABLATION_LEGEND),
    *_IMAGENET_COMPARISONS,
)
