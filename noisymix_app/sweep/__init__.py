"""``noisymix sweep TABLE --seeds N --out DIR``: every run of a paper table, trained, evaluated, tabulated.

``plan`` expands the table into runs (preset x seed; rows equal in config share one run).  Each run
is one call of ``execute.execute_run``: ``fullscale.training.loop.train(cfg, RUN, resume=True)`` unless
``RUN/final.pt`` exists, then ``fullscale.evaluation.evaluate`` per suite unless its JSON is
complete for that ``final.pt``.  So the same command, run again, skips finished runs, resumes killed
ones from ``checkpoint.pt`` (the trainer's exact resume) and evaluates what is missing.  Before any
run starts, the plan's inputs are checked (``plan_files.check_inputs``: the training data, a transfer
run's source weights, the evaluations' -C/-P folders), and ``DIR`` is claimed as a sweep folder
(``noisymix_infra.folder_kind``).  A finished transfer run whose source weights changed since (by the sha256
its ``config.json`` recorded) is *stale*: reported, neither retrained nor counted done.

One idea per module:

* ``plan``: a paper table as a list of runs (``build_plan``, ``plan_from_reproduce``);
* ``state``: one run's bookkeeping (state file, lock, stored config, done evaluations, staleness);
* ``execute``: one run, the job every launcher runs (``execute_run``, ``RunFailed``);
* ``local``: the local launcher (a process queue over GPUs or CPU workers, or in this process);
* ``pool``: its long-lived CPU worker processes, following the free cores (``run_pool``);
* ``schedule``: which waiting run goes next (the longest first; ``Schedule``);
* ``slurm``: the SLURM launcher through submitit (``RunJob``, ``submit_slurm``);
* ``plan_files``: ``DIR/sweep/plan.json`` and the input checks; ``estimates``: device-hours;
* ``table``: the table rewritten under its lock as runs finish (what it holds:
  ``noisymix_figures.sweep_table``);
* ``command``: the command line (``add_arguments``, ``run``, the status and dry-run text).

Bookkeeping lives in ``DIR/sweep/``: ``plan.json``, ``state/<run>.json`` (state, attempts,
error), ``logs/<run>.log`` and ``logs/worker-<n>.log`` (local launcher), ``slurm/`` (submitit's files) and
``locks/<run>/.lock``.  A run is worked on by one process at a time (``state``'s docstring says
why the lock holds across the nodes of a cluster, and where it does not).

The table (``DIR/table/``) is regenerated whenever a run finishes: mean (min / max) over seeds as
the paper prints it, beside the paper's values (``noisymix_figures.tables``); the JSON adds the std and
the per-seed values.
"""
