"""The verifier of the paper's appendix (``noisymix verify``): every lemma, proposition and theorem
held against the exact loss, computed with finite-support laws, autograd and sympy.

Modules: ``laws`` (finite laws), ``models`` (small models), ``problems`` (data, eps-families),
``calculus`` (torch.func derivatives, Taylor coefficients, slopes), ``nfm`` (Lemma 1, Theorem 1),
``stability`` (Proposition 1, Lemma 2, Theorem 2), ``robust`` (Theorem 3), ``symbolic`` (sympy),
``checks*`` (the checks by id), ``verify`` (the registry and runner), ``report`` (the files).
"""
