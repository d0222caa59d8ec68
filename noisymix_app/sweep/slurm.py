"""The SLURM launcher: submitit (``pip install noisymix[slurm]``).

One array job for the single-GPU runs, one job per multi-GPU run with one task per GPU, whose
distributed environment comes from ``submitit.helpers.TorchDistributedEnvironment`` (no torchrun
inside SLURM).  On preemption or the time limit submitit calls ``RunJob.checkpoint``, which
requeues the same job; it resumes from ``checkpoint.pt``.  submitit's files go to
``DIR/sweep/slurm/``; each run's job id to its state file, so a rerun of the command never submits
a run twice while SLURM still holds its job.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
from pathlib import Path

from noisymix_app.sweep.execute import execute_run
from noisymix_app.sweep.plan import Plan, RunSpec
from noisymix_app.sweep.plan_files import plan_dict, plan_from_dict, write_plan
from noisymix_app.sweep.state import read_state, run_state, sweep_dir, write_state
from noisymix_app.sweep.table import refresh_table

__all__ = ["RunJob", "SlurmOptions", "slurm_parameters", "submit_slurm"]


@dataclasses.dataclass(frozen=True)
class SlurmOptions:
    partition: str | None = None
    account: str | None = None
    time_min: int = 24 * 60
    gpus_per_node: int = 8
    cpus_per_gpu: int = 8
    array_parallelism: int = 64
    cluster: str = "slurm"  # submitit's executor: "slurm", or "local" / "debug" to test without SLURM


class RunJob:
    """The callable submitit pickles and runs on the cluster: ``execute_run`` of one run.

    ``checkpoint`` is submitit's preemption/time-limit hook (it calls it on SIGUSR2 / SIGTERM):
    it returns the same job as a ``DelayedSubmission``, which submitit requeues; the requeued job
    resumes from ``checkpoint.pt``.  Multi-GPU runs get their distributed environment from
    ``submitit.helpers.TorchDistributedEnvironment`` (one task per GPU)."""

    def __init__(self, spec: dict, out: str, plan: dict | None = None, requeues: int = 0):
        self.spec, self.out, self.plan, self.requeues = spec, out, plan, requeues

    def __call__(self) -> str:
        spec = RunSpec.from_dict(self.spec)
        if spec.gpus > 1:
            import submitit

            # CUDA_VISIBLE_DEVICES stays as SLURM set it: the trainer picks cuda:LOCAL_RANK
            submitit.helpers.TorchDistributedEnvironment().export(set_cuda_visible_devices=False)
        state = execute_run(spec, self.out)
        if self.plan is not None and int(os.environ.get("RANK", "0")) == 0:
            refresh_table(Path(self.out), plan_from_dict(self.plan))
        return state

    def checkpoint(self, *args, **kwargs):
        import submitit

        return submitit.helpers.DelayedSubmission(RunJob(self.spec, self.out, self.plan, self.requeues + 1))


def slurm_parameters(spec: RunSpec, options: SlurmOptions) -> dict:
    """submitit parameters of a run: one node and GPU, or ceil(gpus / gpus_per_node) nodes with
    one task per GPU."""
    gpus_per_node = min(spec.gpus, options.gpus_per_node)
    nodes = math.ceil(spec.gpus / gpus_per_node)
    params = {"nodes": nodes, "tasks_per_node": gpus_per_node, "gpus_per_node": gpus_per_node,
              "cpus_per_task": options.cpus_per_gpu, "timeout_min": options.time_min,
              "slurm_array_parallelism": options.array_parallelism,
              "slurm_signal_delay_s": 120}  # time to write a checkpoint before the kill
    if options.partition:
        params["slurm_partition"] = options.partition
    if options.account:
        params["slurm_account"] = options.account
    return params


def _slurm_active(out: Path, job_id: str) -> bool:
    """Whether SLURM still holds the job (queued, running, requeued); unknown counts as held,
    so a rerun of the command never submits a run twice (``--resubmit`` overrides)."""
    import submitit

    try:
        state = submitit.SlurmJob(folder=sweep_dir(out) / "slurm" / "%j", job_id=job_id).state
    except Exception:  # no sacct, accounting down: we cannot tell
        return True
    return state.upper() not in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "PREEMPTED", "NODE_FAIL",
                                 "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE") and not state.upper().startswith("CANCELLED")


def submit_slurm(plan: Plan, out: str | Path, options: SlurmOptions, *, retry_failed: bool = False,
                 resubmit: bool = False) -> list:
    """Submit the unfinished runs; return submitit's jobs (their ids in ``DIR/sweep/state/``).

    A run whose earlier job SLURM still holds is not submitted again unless ``resubmit``."""
    try:
        import submitit
    except ImportError:
        raise ValueError("--launcher slurm needs submitit: pip install 'noisymix[slurm]'") from None
    out = Path(out).resolve()
    write_plan(out, plan)
    todo = []
    for spec in plan.runs:
        state, record = run_state(out, spec), read_state(out, spec.name)
        if not (state in ("pending", "interrupted")
                or (state == "failed" and (retry_failed or not record.get("deterministic")))):
            continue
        if record.get("job_id") and not resubmit and options.cluster == "slurm" \
                and _slurm_active(out, record["job_id"]):
            print(f"sweep: {spec.name}: job {record['job_id']} is still queued or running (not submitted again; "
                  "--resubmit to force)", file=sys.stderr)
            continue
        todo.append(spec)
    executor = submitit.AutoExecutor(folder=sweep_dir(out) / "slurm" / "%j", cluster=options.cluster)
    jobs = []
    plan_record = plan_dict(plan)
    single = [s for s in todo if s.gpus == 1]
    if single:
        executor.update_parameters(name=f"noisymix-{plan.table}", **slurm_parameters(single[0], options))
        with executor.batch():  # one array job
            batch = [executor.submit(RunJob(s.as_dict(), str(out), plan_record)) for s in single]
        jobs += batch
    for spec in (s for s in todo if s.gpus > 1):
        executor.update_parameters(name=f"noisymix-{spec.name}", **slurm_parameters(spec, options))
        jobs.append(executor.submit(RunJob(spec.as_dict(), str(out), plan_record)))
    for job, spec in zip(jobs, [*single, *(s for s in todo if s.gpus > 1)], strict=True):
        write_state(out, spec.name, state="submitted", job_id=str(job.job_id))
    return jobs
