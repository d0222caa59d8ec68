"""Training: one home for the trainer, its step, its runs and the methods it trains.

- ``config``: ``TrainConfig``, the typed, frozen configuration saved with every run, in groups
  (``model``, ``data``, ``optim``, ``runtime``, ``transfer``); the run record's schema (the flat names
  of runs made before the groups, keys added since, changes a resume accepts) is ``fullscale.run_record``;
- ``methods``: the methods of the paper's tables and the kinds of mixing (registries); a method's
  record is ``method_record.Method``, a user's own method ``user_method`` (issue 59);
- ``presets``: named configurations (every table row) and ``resolve_config``;
- ``draws``: a run's views and draws, a chunk of steps at a time; ``step``: one training step
  (M_{lambda,xi}, loss), shared by everything below;
- ``loop``: ``train(cfg, out)``, the epoch loop; ``members``: several seeds as one stacked model;
- ``data``, ``process``, ``schedule``, ``generators``, ``checkpoint``, ``checks``: what a run
  trains on, where, at which learning rate, with which random streams, how it resumes, and how it
  is told to have diverged;
- ``hooks``: the transform at a named stage of a model; ``transfer``: fine-tuning (tab:results_transfer).

Nothing is imported here: ``from fullscale.training.loop import train``.
"""
