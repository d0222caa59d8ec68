"""The training methods of the paper's CIFAR tables, as four switches (tab:ablation) plus the
kind of mixing.  A method says WHAT a step does; ``fullscale.training.step`` does it with the core
(``noisymix.draw_mix``, ``noisy_feature_mixup``, ``mix_targets``, ``cutmix``, ``noisymix_loss``).

* augmentations: the network sees AugMix views instead of the clean image;
* jsd: three views (clean, AugMix, AugMix) and the Jensen-Shannon stability loss, CE on the clean
  view only (as the public AugMix/NoisyMix code);
* mixing: ``none``, ``input`` (Mixup), ``manifold`` (mix at a stage drawn uniformly from the
  model's ``stages``, Manifold Mixup / NFM), ``cutmix``, or ``puzzlemix`` (``fullscale.puzzlemix``:
  saliency from an extra clean forward/backward, an optimal mask per pair, transport);
* noise: multiplicative and additive noise of M_{lambda,xi} at the mixing point.

Noise without feature mixing (the "noise injections" rows of tab:ablation) is M_{1,xi}: lambda
= 1 at a stage drawn from ``model.stages`` as for NFM, so that switching feature mixing off
changes only lambda.  (The public code cannot run these rows: with alpha = 0 its ``forward``
skips ``do_noisy_mixup`` and with it the noise.)

A method carries its default strengths (``Method.defaults``, config ``key=value`` pairs), so a
bare ``--set method=X`` trains X with its ingredients, as its preset does (the presets read them
from here): Mixup / CutMix alpha = 1 (their papers' CIFAR settings); Manifold Mixup alpha = 2
(its paper's CIFAR setting); NFM alpha = 1, sigma_add = 0.4, sigma_mult = 0.2 (NFM paper);
NoisyMix alpha = 1, sigma_add = 0.5, sigma_mult = 0.5, sparse level 0.65 (the public NoisyMix
README's CIFAR recipe), the ablation rows taking the ingredients they keep from it; every JSD
method the public code's clamped JSD estimate (``jsd_variant=augmix``); Puzzle Mix alpha = 1, 3
labels, beta 1.2, gamma 0.5, eta 0.2, neighbourhood 4, transport at 4 pixels with eps 0.8 (the
public PuzzleMix README's CIFAR commands; its adversarial variant: ``puzzlemix.adv_p=0.1``).

Methods are a registry, as timm's models: a method is a ``Method`` (its record, in
``fullscale.training.method_record``, which a user's own method builds too) filed by ``register_method``,
naming its kind of mixing, a ``Mixing`` record of the kinds' own registry (``fullscale.mixings``:
where in the network M_{lambda,xi} applies, the batch op run after the draw, the loss it needs, its
config group; each kind registers itself in its own module).  The step dispatches on these records
alone.

A method's record also says how the results show it, so that its names are kept here alone: its
place in our own tables and figures (``order``) and its colour in every figure (``color``), read by
``noisymix_figures.methods``.  Its row in the paper's method tables (``paper_row``) is the paper's
name, kept with the paper's other names in ``fullscale.vocabulary.METHOD_ROWS`` and read from there;
every method named there must be registered here.
"""

from __future__ import annotations

from fullscale.training.method_record import Method
from fullscale.vocabulary import METHOD_ROWS
from noisymix_infra.registry import file_once

__all__ = ["METHODS", "NOT_IMPLEMENTED", "Method", "get_method", "paper_rows", "register_method", "table_order"]

_NFM_NOISE = (("mix.noise.add", 0.4), ("mix.noise.mult", 0.2))
# the public NoisyMix README's CIFAR recipe
_NOISYMIX_NOISE = (("mix.noise.add", 0.5), ("mix.noise.mult", 0.5), ("mix.noise.sparse", 0.65))

# the public PuzzleMix README's CIFAR recipe (PreActResNet-18 commands)
_PUZZLEMIX = (("mix.alpha", 1.0), ("puzzlemix.n_labels", 3), ("puzzlemix.beta", 1.2), ("puzzlemix.gamma", 0.5),
              ("puzzlemix.eta", 0.2), ("puzzlemix.neigh_size", 4), ("puzzlemix.transport", True),
              ("puzzlemix.t_eps", 0.8), ("puzzlemix.t_size", 4))


METHODS: dict[str, Method] = {}


def register_method(method: Method) -> Method:
    if method.order is not None and method.name not in METHODS and method.order in {m.order for m in METHODS.values()}:
        raise ValueError(f"method {method.name!r}: order {method.order} is taken")
    return file_once(METHODS, method.name, method, "method")


for _method in (
    Method("baseline", "Baseline", order=0, color="tab:gray"),
    Method("mixup", "Mixup", mixing="input", strengths=(("mix.alpha", 1.0),), order=1, color="tab:purple"),
    Method("manifold_mixup", "Manifold Mixup", mixing="manifold", strengths=(("mix.alpha", 2.0),),
           order=2, color="tab:pink"),
    Method("cutmix", "CutMix", mixing="cutmix", strengths=(("mix.alpha", 1.0),), order=3, color="tab:olive"),
    # no order: Puzzle Mix came after our tables were first written, and sorts last (by name) there
    Method("puzzlemix", "Puzzle Mix", mixing="puzzlemix", strengths=_PUZZLEMIX, color="tab:brown"),
    Method("noise", "Noise injections", noise=True, strengths=(("mix.alpha", 0.0), *_NFM_NOISE), order=4,
           color="tab:cyan"),
    Method("nfm", "NFM", mixing="manifold", noise=True, strengths=(("mix.alpha", 1.0), *_NFM_NOISE),
           order=5, color="tab:green"),
    Method("augmix", "AugMix (no JSD)", augmentations=True, order=6, color="gold"),
    Method("augmix_jsd", "AugMix", augmentations=True, jsd=True, order=7, color="tab:orange"),
    Method("augmix_noise_jsd", "AugMix + noise + JSD", augmentations=True, noise=True, jsd=True,
           strengths=(("mix.alpha", 0.0), *_NOISYMIX_NOISE)),
    Method("augmix_nfm", "AugMix + NFM (no JSD)", augmentations=True, mixing="manifold", noise=True,
           strengths=(("mix.alpha", 1.0), *_NOISYMIX_NOISE)),
    Method("augmix_manifold_jsd", "AugMix + Manifold Mixup + JSD", augmentations=True, mixing="manifold",
           jsd=True, strengths=(("mix.alpha", 1.0),)),
    Method("noisymix", "NoisyMix", augmentations=True, mixing="manifold", noise=True, jsd=True,
           strengths=(("mix.alpha", 1.0), *_NOISYMIX_NOISE), order=8, color="tab:red"),
):
    register_method(_method)
del _method

#: Methods of the paper we do not implement, said rather than silently missing (its rows in
#: ``METHOD_ROWS`` name no method).
NOT_IMPLEMENTED = {"augmax": "AugMax (adversarial AugMix compositions; out of scope)"}

_UNREGISTERED = sorted({m for m in METHOD_ROWS.values() if m is not None} - set(METHODS))
if _UNREGISTERED:
    raise ImportError(f"fullscale.vocabulary.METHOD_ROWS names methods not registered here: {', '.join(_UNREGISTERED)}")


def paper_rows() -> dict[str, str | None]:
    """The paper's method rows (tab:results_cifar10 and after) -> our method (None: not implemented),
    in the paper's order (``fullscale.vocabulary.METHOD_ROWS``)."""
    return dict(METHOD_ROWS)


def table_order() -> list[str]:
    """The registered methods that have a place (``order``) in our tables and figures, in that order."""
    return [m.name for m in sorted((m for m in METHODS.values() if m.order is not None), key=lambda m: m.order)]


def get_method(name: str) -> Method:
    """The registered method ``name``, or a user's own named ``package.module:name`` (a batch function or
    a ``Method``: ``fullscale.training.user_method``, issue 59)."""
    if name not in METHODS:
        from fullscale.training.user_method import is_user_spec, load_method

        if is_user_spec(name):
            return load_method(name)
        raise ValueError(f"unknown method {name!r}; available: {', '.join(METHODS)}"
                         + (f" ({NOT_IMPLEMENTED[name]})" if name in NOT_IMPLEMENTED else ""))
    return METHODS[name]
