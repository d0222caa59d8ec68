"""NoisyMix and the benchmarks from a user's own code.

* ``NoisyMix(model, num_classes, generator=g).loss(x_u8, y)``: one training step of the method
  on any model (``fullscale.api.noisymix``: the trainer's own step functions);
* the pieces, for a loop of one's own: ``augmix`` (device AugMix views of a uint8 batch),
  ``default_stages`` / ``transform_stage`` (mixing points by module path), ``draw_mix`` (partners
  and lambda), ``noisy_feature_mixup`` (M_{lambda,xi}), ``mix_targets``, ``noisymix_loss``;
* ``load_model`` (``torchvision:NAME``, ``timm:NAME``, ``package.module:factory`` or one of ours,
  with a state dict, RobustBench's layout included) and ``benchmark(model, suite, data_root,
  out=...)``: a suite's JSON, the same as a run's evaluation.
"""

from fullscale.api.bench import benchmark, load_model, state_sha256
from fullscale.api.noisymix import NoisyMix
from fullscale.augment import AugMixConfig, augmix
from fullscale.training.hooks import default_stages, transform_stage
from noisymix.loss import noisymix_loss
from noisymix.mixing import MixConfig, NoiseConfig, draw_mix, mix_targets, noisy_feature_mixup

__all__ = ["AugMixConfig", "MixConfig", "NoiseConfig", "NoisyMix", "augmix", "benchmark", "default_stages",
           "draw_mix", "load_model", "mix_targets", "noisy_feature_mixup", "noisymix_loss", "state_sha256",
           "transform_stage"]
