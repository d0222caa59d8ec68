"""`noisymix figures` fills tab:results_transfer from transfer runs (rows: their source model)."""

from __future__ import annotations

from pathlib import Path

from fullscale.vocabulary import CATEGORIES, CORRUPTIONS
from noisymix_app.cli import main
from noisymix_infra.io import write_json


def _transfer_run(root: Path, name: str, dataset: str, row: str, clean: float, noise: float, other: float,
                  freeze_level: int = -1) -> None:
    run = root / name
    write_json(run / "config.json", {"method": "baseline", "preset": f"transfer-{dataset}-{row}",
                                     "model": "resnet50_transfer", "dataset": dataset, "seed": 0, "epochs": 150,
                                     "source_row": row, "freeze_level": freeze_level,
                                     "model_kwargs": {"image_size": 224, "normalization": dataset}})
    (run / "final.pt").write_bytes(b"")
    write_json(run / "eval" / "clean.json", {"suite": "clean", "complete": True, "summary": {"accuracy": clean},
                                             "results": {}})
    per = {c: (noise if c in CATEGORIES["noise"] else other) for c in CORRUPTIONS}
    mean_15 = (3 * noise + 12 * other) / 15
    summary = {"per_corruption": per, "mean_accuracy": mean_15,
               "transfer": {"all": (noise + 3 * other) / 4, "noise": noise, "other": other, "mean_15": mean_15}}
    write_json(run / "eval" / f"{dataset}-c.json", {"suite": f"{dataset}-c", "complete": True, "summary": summary,
                                                    "results": {}})


def test_transfer_table_beside_the_paper(tmp_path):
    root = tmp_path / "results"
    _transfer_run(root, "t10", "cifar10", "baseline", 0.970, 0.488, 0.865)
    _transfer_run(root, "t100", "cifar100", "noisymix", 0.850, 0.345, 0.688)
    _transfer_run(root, "frozen", "cifar10", "noisymix", 0.900, 0.5, 0.8, freeze_level=4)  # not the paper's rows
    out = tmp_path / "out"
    assert main(["figures", "--results", str(root), "--out", str(out), "--no-examples"]) == 0
    table = (out / "tables" / "results_transfer.md").read_text()
    lines = {line.split("|")[1].strip(): [c.strip() for c in line.strip().strip("|").split("|")]
             for line in table.splitlines() if line.startswith("| ") and "paper" not in line}
    base = lines["Baseline"]
    # CIFAR-10: paper 97.0, ours 97.0, Δ +0.0; -C paper 77.1 / 48.8 / 86.5, ours (48.8 + 3 x 86.5) / 4 = 77.075
    assert base[1:4] == ["97.0", "97.0", "+0.0"]
    assert base[4] == "77.1 / 48.8 / 86.5" and base[5] == "77.1 / 48.8 / 86.5" and base[6] == "-0.0"
    assert base[7] == "79.0"  # the 15-corruption mean beside it
    assert base[8:] == ["84.3", "—", "—", "57.1 / 28.0 / 66.8", "—", "—", "—"]
    noisy = lines["NoisyMix (ours)"]
    assert noisy[1:4] == ["97.7", "—", "—"]  # the frozen CIFAR-10 run is not a row of this table
    assert noisy[8:10] == ["85.9", "85.0"] and noisy[12] == "60.2 / 34.5 / 68.8"  # (34.5 + 3 x 68.8) / 4 = 60.225
    frozen = (out / "tables" / "results_transfer_frozen.md").read_text()
    row = next(line for line in frozen.splitlines() if line.startswith("| NoisyMix"))
    assert [c.strip() for c in row.strip("|").split("|")][2] == "90.0"  # the freeze_level 4 run, in its own table
