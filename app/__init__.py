"""The application around the method: the ``noisymix`` front door (``app.cli``), the main job
(``app.reproduce``) and its README summary (``app.reproduce_summary``).  It sits on top: it
imports ``theory``, ``toy``, ``fullscale``, ``figures`` and ``benchmarks``; nothing imports it."""
