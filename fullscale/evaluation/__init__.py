"""Evaluation (docs/results-schema.md): the suites, registered by name, and the evaluation of a run
folder.

Each suite takes a ``Context`` and returns ``(results, summary, files)``.  The model runs batched
under ``torch.inference_mode`` (bf16 autocast and channels_last on CUDA); -C/-P ``.npy`` sets are
read one memory-mapped severity block (or slice of sequences) at a time and image folders through
DataLoader workers, so no whole corrupted set is ever in memory.  After each corruption or
perturbation the suite calls ``ctx.on_result(name, entry, identity)`` so the caller can write a
partial, resumable JSON; entries already in ``ctx.done`` are not recomputed when the files they were
computed from are the same (``identity``: the content hash of a ``.npy`` file; the name, size and
modification time of every image or video of a folder), so a set replaced in place is evaluated
anew instead of merged with the old one's results (issues 23, 32).

One idea per module: ``context`` (``EvalOptions``, ``Context``, batch sizes), ``inference`` (the
model applied to uint8 images), ``records`` (what a suite checks and records of its data),
``own_split`` (clean, calibration, FGSM on the run's test split), ``corrupted`` (-C suites and
ImageNet-R), ``perturbed`` (-P suites), ``suites`` (the registry, ``run_suite``) and
``evaluate_run`` (``evaluate``: a run folder on one suite -> ``RUN/eval/SUITE.json``).  The names
below are handed on from there.
"""

from fullscale.evaluation.context import ACCELERATOR_BATCH, CPU_BATCH, FGSM_EPSILONS, Context, EvalOptions, Results
from fullscale.evaluation.corrupted import corrupted_npy, imagenet_c, imagenet_r
from fullscale.evaluation.evaluate_run import evaluate
from fullscale.evaluation.inference import cpu_inference_model, logits_of
from fullscale.evaluation.own_split import calibration, clean, fgsm
from fullscale.evaluation.perturbed import imagenet_p, perturbed_npy
from fullscale.evaluation.suites import RESUMABLE, SUITES, run_suite

__all__ = ["ACCELERATOR_BATCH", "CPU_BATCH", "FGSM_EPSILONS", "RESUMABLE", "SUITES", "Context", "EvalOptions",
           "Results", "calibration", "clean", "corrupted_npy", "cpu_inference_model", "evaluate",
           "fgsm", "imagenet_c", "imagenet_p", "imagenet_r", "logits_of", "perturbed_npy", "run_suite"]
