"""The 2-D toy experiment of the paper's appendix (fig:toy_data, fig:toy_example), over many seeds.

``data`` (the concave-polygon data set), ``schemes`` (the six training schemes as data),
``train`` (all schemes x seeds trained as one batched model), ``tuning`` (the strengths the
paper does not give), ``smoothness``, ``stats`` and ``claims`` (the numbers and verdicts),
``experiment``, ``report`` and ``plots`` (the outputs), ``cli`` (``noisymix toy``).
"""
