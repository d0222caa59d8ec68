"""``noisymix fit-analogue --kind severities --out DIR [--freeze]``: the difficulty-matched Digits-C per
severity, beside the published rows' profile on the digits (issue 51, goal 3).

One strength per corruption matches only the mean drop over the five severities (``fit_c``),
so a severity can land at chance or at a clip of its rule while the mean is right.  This measures, on
the fit's own Baseline models (seeds 100+, trained by ``fit-analogue``) and corruption draws of the
fit's seed, the Baseline's accuracy at each severity of each corruption, at the matched strength and
at the published rows (strength 1), and flags:

* ``chance``: accuracy at most ``CHANCE_FLOOR`` (15 %; ten classes: chance is 10 %);
* ``clip``: the strength rule's value clipped at that severity (the row no longer moves with the
  strength: ``strengthened`` gives the same row at 1.05 times the strength);
* ``backwards``: the accuracy rises from severity 1 to 5 by more than ``BACKWARDS_MARGIN`` (a row that
  runs backwards);

each said for the published rows too, so the report can say whether a flag is the analogue's or the
published rows' own (``severity_flags``).  ``--freeze`` writes the record to
``fullscale/corruptions/digits_matched_severities.json`` (the report reads it).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import torch

from fullscale.corruptions.matched import matched_strength
from fullscale.corruptions.registry import CORRUPTIONS, SPECS, corrupt, strengthened
from fullscale.corruptions.writer import chunk_generator
from fullscale.data import load_dataset
from fullscale.evaluation.inference import cpu_inference_model, logits_of
from fullscale.run_model import load_run_model
from noisymix_app.analogue.fit_c import DRAW_SEED, FIT_SEEDS

__all__ = ["BACKWARDS_MARGIN", "CHANCE_FLOOR", "SEVERITIES_FILE", "clipped", "severity_flags", "severity_profile"]

CHANCE_FLOOR = 15.0
#: how far severity 5 must lie above severity 1 to call a row backwards: two standard errors of a
#: difference of two accuracies near 94 % on 150 digits, averaged over 3 models (about 1 point each)
BACKWARDS_MARGIN = 2.0
SEVERITIES_FILE = Path(__file__).resolve().parents[2] / "fullscale" / "corruptions" / "digits_matched_severities.json"


def clipped(name: str, severity: int, strength: float) -> bool:
    """Whether ``name``'s rule is clipped at ``severity`` and ``strength``: a 5 % stronger strength gives
    the same row (the rule's bound holds the field; a corruption without a rule scales its difference
    from the image and never clips)."""
    row = SPECS[name].row("cifar", severity)
    return strengthened(name, row, strength) == strengthened(name, row, strength * 1.05) and strength != 1.0


def severity_flags(accuracies: list[float], clips: list[bool]) -> list[str]:
    """The flags of one corruption's five severities: ``chance`` or ``clip`` per severity (``"s5 chance"``),
    ``backwards`` when severity 5 is more accurate than severity 1 by more than ``BACKWARDS_MARGIN``."""
    flags = [f"s{s} chance" for s, a in enumerate(accuracies, 1) if a <= CHANCE_FLOOR]
    flags += [f"s{s} clip" for s, c in enumerate(clips, 1) if c]
    if accuracies[-1] > accuracies[0] + BACKWARDS_MARGIN:
        flags.append("backwards")
    return flags


def _accuracy(model: torch.nn.Module, images: torch.Tensor, labels: torch.Tensor) -> float:
    return 100.0 * float((logits_of(model, images, torch.device("cpu"), batch=64).argmax(1) == labels).float().mean())


def severity_profile(out: Path, *, images: int = 150, seeds: tuple[int, ...] = FIT_SEEDS,
                     draw_seed: int = DRAW_SEED) -> dict:
    """The per-severity record of the fit's models in ``out/models`` (each must have been trained by
    ``fit-analogue``): per corruption, the matched strength, per table its five accuracies, clips and
    flags."""
    started = time.time()
    from noisymix_infra.progress import progress

    test = load_dataset("digits", "test")
    x, y = test.images[:images], test.labels[:images]
    models = []
    for seed in seeds:
        run = Path(out) / "models" / f"baseline-seed{seed}"
        if not (run / "final.pt").is_file():
            raise ValueError(f"{run} has no final.pt: run `noisymix fit-analogue --out {out}` first (its models)")
        model, _ = load_run_model(run)
        models.append(cpu_inference_model(model, x[:64]))
    clean = float(np.mean([_accuracy(m, x, y) for m in models]))
    record = {}
    for name in progress(CORRUPTIONS, desc="severities", unit="corruption"):
        k = matched_strength(name)
        entry: dict = {"strength": k}
        for table, strength in (("matched", k), ("published", 1.0)):
            accuracies, clips = [], []
            for severity in range(1, 6):
                g = chunk_generator(draw_seed, name, severity, 0, "cpu")
                corrupted = corrupt(x, name, severity, generator=g, params="cifar", strength=strength)
                accuracies.append(round(float(np.mean([_accuracy(m, corrupted, y) for m in models])), 2))
                clips.append(clipped(name, severity, strength))
            entry[table] = {"accuracy": accuracies, "clip": clips, "flags": severity_flags(accuracies, clips)}
        record[name] = entry
    return {"what": "the Baseline's accuracy per severity on the difficulty-matched Digits-C and at the published "
                    "rows (noisymix_app.analogue.severities): the fit's models, mean over models, %",
            "command": "noisymix fit-analogue --kind severities --out fit --freeze",
            "seeds": list(seeds), "draw_seed": draw_seed, "images": images, "clean_accuracy": round(clean, 2),
            "chance_floor": CHANCE_FLOOR, "corruptions": record, "seconds": round(time.time() - started, 1)}


def markdown(record: dict) -> str:
    """The per-severity table: matched and published accuracies and each one's flags, and one sentence per
    flag of the matched set saying whether the published rows share it."""
    lines = [f"The Baseline's accuracy per severity (the fit's {len(record['seeds'])} models, {record['images']} test "
             f"digits, clean {record['clean_accuracy']:.1f} %): the difficulty-matched rows, then the published "
             f"rows (strength 1). Flags: *chance*, at most {record['chance_floor']:.0f} %; *clip*, the strength "
             f"rule held at its bound; *backwards*, severity 5 above severity 1 by more than {BACKWARDS_MARGIN:.0f} "
             "points.", "",
             "| corruption | strength | matched s1–s5 | flags | published s1–s5 | flags |",
             "|---|---:|---|---|---|---|"]
    notes = []
    for name, e in record["corruptions"].items():
        m, p = e["matched"], e["published"]
        lines.append(f"| {name} | {e['strength']:.3g} | {' / '.join(f'{a:.0f}' for a in m['accuracy'])} | "
                     f"{', '.join(m['flags']) or '—'} | {' / '.join(f'{a:.0f}' for a in p['accuracy'])} | "
                     f"{', '.join(p['flags']) or '—'} |")
        for flag in m["flags"]:
            kind = flag.split()[-1]
            shared = any(f.split()[-1] == kind for f in p["flags"])
            notes.append(f"{name} {flag}: " + ("the published rows do so too" if shared else
                                               "the analogue's own (the published rows do not)"))
    if notes:
        lines += ["", "Flags of the matched set: " + "; ".join(notes) + "."]
    return "\n".join(lines) + "\n"
