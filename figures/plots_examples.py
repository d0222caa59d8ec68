"""The figures that need no training runs of a table: the corruption examples (fig:cimages), the toy
experiment's bars and copies (fig:toy_example, fig:toy_data), with their registrations (split from
``noisymix_figures.plots``, issue 63, goal 9: no file over 500 lines)."""

from __future__ import annotations

import shutil
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from fullscale.vocabulary import CORRUPTIONS
from noisymix_figures.methods import method_color
from noisymix_figures.paper import paper_values
from noisymix_figures.plots import _fill, _paper_beside_ours, _paper_ours_handles, _shared_range, save_figure
from noisymix_figures.registry import NEEDS_TOY, register

__all__ = ["copy_figure", "corruption_examples", "corruption_examples_figure", "examples_set", "toy_bars",
           "toy_bars_figure"]


def examples_set(results=None) -> dict:
    """Which Digits-C ``corruption_examples`` draws (issue 54: it always drew the package's current matched
    strengths, also for plans that evaluate the published rows, and called them "CIFAR-10-C parameters").

    The set the runs in ``results`` evaluated (``digits-c``: the ``manifest.json`` of each evaluation's
    ``data_root``): the published rows (``--params cifar``) or the matched strengths that set was made
    with; without such a set, the package's frozen fit, said so.  Runs evaluated on sets of other
    strengths: a ``ValueError`` (the figure is then not drawn, and the report says why).  Returns
    ``{"params", "strengths" (None: the published rows), "what" (words for the figure and the report)}``."""
    from noisymix_infra.io import read_json

    found: dict[str, dict] = {}
    for run in getattr(results, "runs", ()):
        record = run.evals.get("digits-c")
        root = record.get("data_root") if isinstance(record, dict) else None
        try:
            manifest = read_json(Path(root) / "manifest.json") if isinstance(root, str) else None
        except (OSError, ValueError):
            manifest = None
        if isinstance(manifest, dict) and manifest.get("params") in ("cifar", "digits-matched"):
            strengths = manifest.get("strengths") if manifest["params"] == "digits-matched" else None
            found.setdefault(repr((manifest["params"], sorted((strengths or {}).items()))),
                             {"params": manifest["params"], "strengths": strengths})
    if len(found) > 1:
        raise ValueError(f"the runs evaluated {len(found)} Digits-C sets of other parameters or strengths: "
                         "no one set to draw")
    if found:
        shown = next(iter(found.values()))
        if shown["params"] == "cifar":
            return {**shown, "what": "the published CIFAR-10-C rows (`--params cifar`), the set the runs evaluated"}
        if not isinstance(shown["strengths"], dict) or set(shown["strengths"]) != set(CORRUPTIONS):
            raise ValueError("the Digits-C set the runs evaluated does not record its 15 matched strengths")
        return {**shown, "what": "the CIFAR-10-C rows at the difficulty-matched strengths of the set the runs "
                                 "evaluated (`--params digits-matched`)"}
    from fullscale.corruptions.matched import matched_fit

    return {"params": "digits-matched", "strengths": dict(matched_fit()["strengths"]),
            "what": "the CIFAR-10-C rows at the package's frozen difficulty-matched strengths (no Digits-C set "
                    "evaluated in these results)"}


def corruption_examples(out: Path, severities: tuple[int, ...] = (1, 2, 3, 4, 5), *,
                        shown: dict | None = None) -> Path:
    """``corruption_examples_figure`` written to ``out``."""
    return save_figure(corruption_examples_figure(severities, shown=shown), out)


def corruption_examples_figure(severities: tuple[int, ...] = (1, 2, 3, 4, 5), *, shown: dict | None = None):
    """fig:cimages for the data set our tables report: the 15 corruptions of Digits-C on one test digit
    (scikit-learn's digits upscaled to 32 x 32, as the main job makes them: our own ``fullscale.corruptions``)
    at the strengths of the set the runs evaluated (``shown``, from ``examples_set``: the published rows or
    the difficulty-matched strengths; default: the package's matched fit; issues 46, 54), at
    ``severities``, each column named as the tables name it (tab:results_cifar10_c's headers), not by our
    code's names (issue 40).  All five severities, one row each, every panel 1.3 inches a side (issue 52:
    severities 3 and 5 only, tiny); the caption breaks between words, never in a code span (``_fill``)."""
    import torch

    from fullscale.corruptions import corrupt
    from fullscale.data import load_dataset

    shown = shown or examples_set()
    test = load_dataset("digits", "test")
    x = test.images[:1]
    names = dict(zip(CORRUPTIONS, paper_values()["tab:results_cifar10_c"]["columns"], strict=True))
    fig, axes = plt.subplots(len(severities), 16, figsize=(16 * 1.3, 1.45 * len(severities) + 0.8), squeeze=False)
    for row, severity in enumerate(severities):
        panels = [("clean", x), *((names[c], c) for c in CORRUPTIONS)]
        for ax, (title, what) in zip(axes[row], panels, strict=True):
            try:  # the matched rows are the CIFAR rows at the set's own strength (``params="digits-matched"``)
                image = what if isinstance(what, torch.Tensor) else corrupt(
                    x, what, severity, generator=torch.Generator().manual_seed(0), params="cifar",
                    strength=1.0 if shown["strengths"] is None else float(shown["strengths"][what]))
                ax.imshow(image[0].permute(1, 2, 0).numpy(), interpolation="nearest")
            except Exception as error:  # a panel that cannot be drawn is labelled, not fatal
                ax.text(0.5, 0.5, type(error).__name__, ha="center", va="center", fontsize=7)
            if row == 0:
                ax.set_title(_fill(title, 10), fontsize=10)
            ax.set_xticks([])
            ax.set_yticks([])
        axes[row][0].set_ylabel(f"severity {severity}", fontsize=10)
    fig.suptitle(_fill(f"Digits-C: the 15 corruptions on a test digit, {shown['what']} (ours: "
                       "fullscale.corruptions, 32 x 32; columns named as in the tables)", 150), fontsize=10)
    fig.tight_layout()
    return fig


def toy_bars(toy: dict, out: Path) -> Path:
    """``toy_bars_figure`` written to ``out``."""
    return save_figure(toy_bars_figure(toy), out)


def toy_bars_figure(toy: dict):
    """fig:toy_example accuracies: ours (mean and 95% CI over seeds) beside the paper's single run, each
    scheme in its method's colour as in every other figure (``noisymix_figures.methods``): the paper's
    bar hatched and pale, ours solid; the legend says which is which, in no method's colour (issue 48)."""
    from toy.schemes import PAPER_SCHEMES

    schemes = toy["schemes"]
    # the paper's order (its panels, by rising accuracy), not toy.json's alphabetical one (issue 40)
    names = sorted(schemes, key=lambda n: (PAPER_SCHEMES.index(n) if n in PAPER_SCHEMES else len(PAPER_SCHEMES), n))
    ours = [100 * schemes[n]["accuracy"]["mean"] for n in names]
    ci = np.array([[100 * schemes[n]["accuracy"]["mean"] - 100 * schemes[n]["accuracy"]["ci95"][0],
                    100 * schemes[n]["accuracy"]["ci95"][1] - 100 * schemes[n]["accuracy"]["mean"]] for n in names]).T
    paper = [100 * schemes[n].get("paper_accuracy", np.nan) for n in names]
    colors = [method_color(schemes[n]["label"], "tab:blue") for n in names]
    fig, ax = plt.subplots(figsize=(8, 4.2))
    x = _paper_beside_ours(ax, paper, ours, ci, colors)
    # level labels, long ones on two lines, so that no two touch
    ax.set_xticks(x, [_fill(schemes[n]["label"], 15) for n in names], fontsize=8)
    lows = [o - c for o, c in zip(ours, ci[0], strict=True)]
    highs = [o + c for o, c in zip(ours, ci[1], strict=True)]
    ax.set_title("Toy test accuracy in the paper's order (its panels); colour: scheme, as its method elsewhere",
                 fontsize=9)
    ax.set_ylabel("test accuracy (%)")
    _shared_range([ax], [*paper, *lows, *highs])
    handles = _paper_ours_handles("paper (one run)", f"ours (mean, 95% CI, {toy['experiment']['seeds']} seeds)")
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.16), frameon=False, fontsize=8, ncol=2)
    return fig


def copy_figure(source: Path, out: Path) -> Path | None:
    if not source.exists():
        return None
    out.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, out)
    return out



register("fig:toy_data", position=7, files=("toy_data.png",), ours="`noisymix toy` (toy.json)", needs=NEEDS_TOY,
         found=lambda results, drawn: ["toy.json"] if results.toy else [])(
    lambda results, out: copy_figure(results.toy[0].parent / "toy_data.png", out / "toy_data.png")
    if results.toy else None)


@register("fig:toy_example", position=8, files=("toy_accuracy.png", "toy_decision_boundaries.png"),
          ours="`noisymix toy` (toy.json, seeds)", needs=NEEDS_TOY,
          found=lambda results, drawn: ["toy.json"] if results.toy else [])
def _toy_example(results, out: Path) -> Path | None:
    """fig:toy_example: our accuracies beside the paper's, and the decision boundaries `noisymix toy` drew."""
    if not results.toy:
        return None
    toy_bars(results.toy[1], out / "toy_accuracy.png")
    return copy_figure(results.toy[0].parent / "decision_boundaries.png", out / "toy_decision_boundaries.png")


def _examples_found(results, drawn: bool) -> list[str]:
    """fig:cimages' status: which strengths the examples were drawn at (issue 54)."""
    if not drawn:
        return []
    try:
        return [f"our corruption code at {examples_set(results)['what']}"]
    except ValueError:
        return ["our corruption code"]


register("fig:cimages", position=9, files=("corruption_examples.png",),
         ours="Digits-C: our own corruptions (fullscale.corruptions) on a test digit, at the strengths of the Digits-C "
              "set the runs evaluated (the published rows, or the difficulty-matched ones); no runs needed",
         needs="`noisymix figures` without --no-examples", found=_examples_found)(
    lambda results, out: corruption_examples(out / "corruption_examples.png", shown=examples_set(results)))
