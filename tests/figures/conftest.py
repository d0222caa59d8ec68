"""The figure tests build matplotlib Figures to inspect them; each is closed after its test, so that
the pyplot registry does not keep dozens open (matplotlib's "More than 20 figures" warning)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pytest


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")
