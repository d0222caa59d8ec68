"""The application around the method: the ``noisymix`` front door (``noisymix_app.cli``), the main job
with its README summary (the package ``noisymix_app.reproduce``), the digits analogue's fits and test
(``noisymix_app.analogue``), the sweeps (``noisymix_app.sweep``) and the benchmarks (``noisymix_app.bench``).
It sits on top: it imports ``theory``, ``toy``, ``fullscale``, ``figures`` and ``benchmarks``; nothing imports it."""
