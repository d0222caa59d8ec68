"""NoisyMix (Erichson, Lim et al.): the method, in one place.

Everything that trains or checks NoisyMix — the theorem verifier (``theory``), the toy
experiment (``toy``) and the CIFAR/ImageNet trainer (``fullscale``) — calls these functions:

* the generalized Jensen–Shannon divergence and the stability loss (``noisymix.jsd``),
* M_lambda, the noisy mixing operator M_{lambda,xi} and label mixing (``noisymix.mixing``),
* the NoisyMix loss L = L_NFM + gamma L_JSD (``noisymix.loss``),
* (Lemma 1's vicinal law tilde-D_lambda lives in ``theory.laws.vicinal_law``),
* generator-driven Beta/Dirichlet draws (``noisymix.random``).
"""

from noisymix.jsd import (
    entropy,
    js_divergence,
    js_divergence_from_logits,
    jsd_consistency,
    kl_divergence,
    max_js_divergence,
)
from noisymix.loss import PUBLIC_CODE_JSD_WEIGHT, LossParts, noisymix_loss, soft_cross_entropy
from noisymix.mixing import (
    MixConfig,
    MixDraw,
    NoiseConfig,
    cutmix,
    draw_mix,
    mix,
    mix_targets,
    noisy_feature_mixup,
    noisy_mix,
    perturb,
    sample_noise,
    vicinal_components,
)
from noisymix.random import generator_for, sample_beta, sample_dirichlet

__version__ = "0.1.0"

__all__ = [
    "PUBLIC_CODE_JSD_WEIGHT",
    "LossParts",
    "MixConfig",
    "MixDraw",
    "NoiseConfig",
    "cutmix",
    "draw_mix",
    "entropy",
    "generator_for",
    "js_divergence",
    "js_divergence_from_logits",
    "jsd_consistency",
    "kl_divergence",
    "max_js_divergence",
    "mix",
    "mix_targets",
    "noisy_feature_mixup",
    "noisy_mix",
    "noisymix_loss",
    "perturb",
    "sample_beta",
    "sample_dirichlet",
    "sample_noise",
    "soft_cross_entropy",
    "vicinal_components",
]
