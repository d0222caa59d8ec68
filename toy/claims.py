"""The paper's claims about fig:toy_example, each checked over many seeds.

Every claim is a list of paired comparisons "A is greater (less) than B on metric m"; each
comparison gets a verdict from its paired bootstrap CI (``toy.stats.verdict``) and the claim
combines them (``toy.stats.combine``).  No correction for multiple comparisons is applied:
each CI is a 95% interval on its own, which the report says.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, Literal

from toy.stats import combine, paired, verdict

__all__ = ["CLAIMS", "Claim", "evaluate_claims"]

Part = tuple[str, Literal["greater", "less"], str, str]
"""(metric, claimed direction, scheme A, scheme B): "metric of A is <direction> than of B"."""

_SMOOTHNESS = ("grad_norm", "hessian_norm", "contour_length")
_OTHERS = ("baseline", "noise", "manifold_mixup", "nfm", "manifold_mixup_jsd")


def _ascending(metric: str, *schemes: str) -> tuple[Part, ...]:
    """The strict steps of an ascending order: each scheme's ``metric`` greater than the one before's."""
    return tuple((metric, "greater", higher, lower) for lower, higher in pairwise(schemes))


@dataclass(frozen=True)
class Claim:
    id: str
    statement: str
    parts: tuple[Part, ...]


CLAIMS: tuple[Claim, ...] = (
    # the statement names no number: the paper's captions are the paper's, beside ours in each report
    # (toy.md's table, the reproduce summary's toy line; issue 40)
    Claim("accuracy_ordering",
          "Test accuracy orders the schemes as the paper's captions: Baseline = Noise injection "
          "< Manifold Mixup < NFM < Manifold Mixup + JSD < NoisyMix; checked as the four strict steps",
          _ascending("accuracy", "baseline", "manifold_mixup", "nfm", "manifold_mixup_jsd", "noisymix")),
    Claim("noisymix_best_accuracy",
          "NoisyMix yields the best test accuracy among all schemes",
          tuple(("accuracy", "greater", "noisymix", other) for other in _OTHERS)),
    Claim("noisymix_smoothest",
          "NoisyMix is most effective at smoothing the decision boundary (smallest input "
          "gradient, input Hessian and boundary length of every scheme)",
          tuple((m, "less", "noisymix", other) for m in _SMOOTHNESS for other in _OTHERS)),
    *(Claim(f"noisymix_smoothest_{m}",
            f"NoisyMix has the smallest {text} of every scheme (one measure of the claim above)",
            tuple((m, "less", "noisymix", other) for other in _OTHERS))
      for m, text in (("grad_norm", "mean input-gradient norm"),
                      ("hessian_norm", "mean input-Hessian norm"),
                      ("contour_length", "decision-boundary length"))),
    Claim("jsd_helps_manifold_mixup",
          "Stability training (JSD) boosts Manifold Mixup: Manifold Mixup + JSD is more "
          "accurate than Manifold Mixup",
          (("accuracy", "greater", "manifold_mixup_jsd", "manifold_mixup"),)),
    Claim("nfm_between",
          "NFM performs better than the Baseline and Manifold Mixup, but not as well as NoisyMix "
          "and Manifold Mixup + JSD",
          (("accuracy", "greater", "nfm", "baseline"),
           ("accuracy", "greater", "nfm", "manifold_mixup"),
           ("accuracy", "less", "nfm", "noisymix"),
           ("accuracy", "less", "nfm", "manifold_mixup_jsd"))),
)


def evaluate_claims(metrics: Mapping[str, Mapping[str, Sequence[float]]],
                    claims: Sequence[Claim] = CLAIMS) -> list[dict[str, Any]]:
    """Verdicts for every claim whose schemes were all run.

    Args:
        metrics: ``metrics[scheme][metric]`` is the per-seed list (same seed order for all).
    """
    out = []
    for claim in claims:
        if not all(a in metrics and b in metrics for _, _, a, b in claim.parts):
            continue
        parts = []
        for metric, direction, a, b in claim.parts:
            comparison = paired(metrics[a][metric], metrics[b][metric])
            parts.append({"metric": metric, "claimed": direction, "a": a, "b": b, **comparison,
                          "verdict": verdict(comparison, direction)})
        out.append({"id": claim.id, "statement": claim.statement, "parts": parts,
                    "verdict": combine([p["verdict"] for p in parts])})
    return out
