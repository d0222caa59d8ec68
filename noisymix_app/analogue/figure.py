"""The analogue's figure (``noisymix analogue``): ours against the paper's, one point per method."""

from __future__ import annotations

from noisymix_app.reproduce.words import signed

__all__ = ["figure", "png"]


def _order_cell(entry: dict) -> str:
    value, p = entry["value"], entry["p"]
    return "undefined" if p is None else f"{signed(value, 2)} (p = {p:.3f})"


def figure(summary: dict):
    """Ours against the paper's, one point per method, with the line y = x (ours equal to the paper's): Digits-C
    mean accuracy against CIFAR-10-C (left) and Digits-P mean flip probability against CIFAR-10-P mFR (right),
    95 % t-intervals over seeds; the Baseline, the one row the sets were fitted to, drawn hollow."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from noisymix_figures.methods import method_color, method_label

    fig, axes = plt.subplots(1, 2, figsize=(10, 4.9))
    panels = (("corrupted", "paper_corrupted", "CIFAR-10-C accuracy, the paper's (%)", "Digits-C accuracy, ours (%)",
               "c"),
              ("mean_flip", "paper_mfr", "CIFAR-10-P mFR, the paper's (%)", "Digits-P mean flip probability, ours (%)",
               "p"))
    for ax, (ours, paper, xlabel, ylabel, key) in zip(axes, panels, strict=True):
        points = []
        for row in summary["table"]:
            colour = method_color(row["row"], "tab:blue")
            ax.errorbar(row[paper], row[ours]["mean"], yerr=row[ours]["half_width"] or 0.0, fmt="o", color=colour,
                        ms=7, mfc="white" if row["fitted"] else colour, capsize=3,
                        label=method_label(row["row"]) + (" (fitted)" if row["fitted"] else ""))
            points += [row[paper], row[ours]["mean"]]
        low, high = min(points), max(points)
        pad = 0.05 * (high - low or 1.0)
        ax.plot([low - pad, high + pad], [low - pad, high + pad], ls="--", color="grey", lw=1, label="y = x")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        entry = summary["order"][key]["spearman"]
        adjusted = entry.get("p_adjusted")  # the verdict's p: Holm over the two benchmarks (issue 63, goal 5)
        ax.set_title(f"the {len(summary['unfitted'])} unfitted: Spearman {_order_cell(entry)}"
                     + ("" if adjusted is None else f", {adjusted:.3f} after Holm"), fontsize=9)
        ax.grid(alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=5, frameon=False, fontsize=8)
    fig.suptitle("The analogue on the paper's eight methods (one point per method; hollow: the fitted Baseline)",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    return fig


def png(fig) -> bytes:
    import io

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    return buffer.getvalue()
