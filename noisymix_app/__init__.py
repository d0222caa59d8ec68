"""The application around the method: the ``noisymix`` front door (``noisymix_app.cli``), the main job
(``noisymix_app.reproduce``) and its README summary (``noisymix_app.reproduce_summary``).  It sits on top: it
imports ``theory``, ``toy``, ``fullscale``, ``figures`` and ``benchmarks``; nothing imports it."""
