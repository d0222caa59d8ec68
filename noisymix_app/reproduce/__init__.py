"""The main job, ``noisymix reproduce``: its plans, the steps it runs and the report it writes.

- ``command`` — the command (``add_arguments``/``run``, the one ``noisymix_app.cli`` names) and the job's order;
- ``plans`` — the named plans (laptop, full, ...); ``plan_check`` — what a plan is refused for, before any step;
- ``steps`` — each step of the job; ``log`` — the job's record (``reproduce.json``), its progress line and index;
- ``summary`` — ``SUMMARY.md`` / ``summary.json`` and the README's block
  (``python -m noisymix_app.reproduce.summary``);
- ``claims`` — the paper's claims and their statistics; ``margins`` — the cross-machine margins and the
  firm/fragile mark; ``headline`` — the opening and the claims table; ``readme`` — the README's block;
- ``report_ablation``, ``report_calibration``, ``report_published`` — the report's sections of their own.

The package's ``__init__`` imports nothing, so reading a plan does not load the job."""
