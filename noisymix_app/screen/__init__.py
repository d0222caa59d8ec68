"""``noisymix screen``: a new augmentation scored on the digits proxy, with its predicted CIFAR-10-C and -P
standing and an error bar calibrated by leaving each reference method out (issue 59).

``reference``: the eight-method summary, read in one place; ``spec``: SPEC imported, pinned and tried;
``predict``: the map to CIFAR-10 and its leave-one-out validity; ``report``: the page; ``command``: the
command, which trains through the sweep machinery of ``noisymix reproduce``; ``families`` (issue 65): the
page's per-family and per-corruption part and the analogue's strength scale beside it; ``published`` (issue
65): the second view at the published CIFAR rows (``--also-published``) and its committed reference.
"""
