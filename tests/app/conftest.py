"""Fixtures of the application tests."""

from __future__ import annotations

import json

import pytest

from noisymix_app.sweep.plan import Plan, RunSpec
from noisymix_app.sweep.plan_files import write_plan
from noisymix_infra.io import sha256_file


@pytest.fixture()
def finished_transfer_run():
    """``make(out, source) -> Plan``: a sweep in ``out`` with one finished transfer run ``t`` whose
    ``config.json`` records ``source``'s checksum, as training it from ``source`` would."""

    def make(out, source) -> Plan:
        run = out / "runs" / "t"
        run.mkdir(parents=True)
        (run / "final.pt").write_bytes(b"weights")
        (run / "config.json").write_text(json.dumps({"config": {"source_weights": str(source)},
                                                     "run": {"source_weights_sha256": sha256_file(source)}}))
        plan = Plan("results_transfer", (RunSpec("t", "transfer-cifar10-noisymix", 0),))
        write_plan(out, plan)
        return plan

    return make
