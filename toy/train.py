"""Train many toy MLPs at once: every (scheme, seed) pair is one slice of batched parameters.

App. "Illustration ...": one hidden layer of 32 ReLU units, Adam, learning rate 0.1, batch 50,
100 epochs.  A *member* is one model (a scheme's strengths and a seed).  Members are stacked
along a leading dimension G: the weights are (G, 2, 32), (G, 32), (G, 32, 2), (G, 2), the
forward pass is two batched matmuls, and the loss is the sum of the members' own losses.
Each member's gradient is then its own loss's gradient, and Adam is element-wise, so every
member follows exactly the trajectory it would follow alone (``tests/toy`` checks this).

Randomness is per seed, never shared between members: a seed names independent generator
streams (data, init, order, mix, layer, noise, views; see ``stream_seed``), and a member's
draws are made from its own streams with the ``noisymix`` samplers (``draw_mix``,
``sample_noise``).  So a member's result does not depend on which other members it is trained
with (``--seeds 5`` gives the first five seeds of ``--seeds 20``), and two schemes with the
same seed share data, initialization, batch order and — where their strengths agree — the
mixing partners, lambdas, layers and noise (common random numbers sharpen paired comparisons).

One training step of a member (Eq. for L^NoisyMix, with the views of ``toy.schemes``):

1. views: the batch x and, when the JSD is on, two copies x + s * eps (clean first);
2. a layer k in {input, hidden} drawn uniformly per step (Manifold Mixup); at layer k every
   view is replaced by M_{lambda,xi}(h, h[perm]) (``noisymix.noisy_mix``), with one
   permutation and lambda for all views and fresh noise xi per view;
3. loss = CE(clean view's logits, M_lambda(y, y[perm])) + gamma * JS_{1/3}(three views), the core
   ``noisymix.noisymix_loss`` vmapped over the members (one gamma each).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from noisymix import (
    MixDraw,
    draw_mix,
    generator_for,
    mix_targets,
    noisy_mix,
    noisymix_loss,
    sample_noise,
)
from toy.data import ToyData
from toy.schemes import SchemeConfig

__all__ = [
    "CHUNK_EPOCHS",
    "Member",
    "Params",
    "TrainConfig",
    "accuracy",
    "forward",
    "init_params",
    "stream_seed",
    "train_members",
]

Params = dict[str, Tensor]
"""Batched MLP weights: ``w1`` (G, 2, H), ``b1`` (G, H), ``w2`` (G, H, K), ``b2`` (G, K)."""

CHUNK_EPOCHS = 10
"""Noise is drawn this many epochs at a time per member.  Part of the random protocol (a
different value gives different draws), so a constant, not a setting."""


@dataclass(frozen=True)
class TrainConfig:
    """The paper's training recipe for the toy MLP.

    Attributes:
        hidden: width of the one hidden ReLU layer (32).
        lr: Adam learning rate (0.1); other Adam settings are torch's defaults.
        batch_size: mini-batch size (50); an incomplete last batch is dropped.
        epochs: passes over the training points (100).
        num_classes: softmax outputs (2, so that the JSD between views is defined).
    """

    hidden: int = 32
    lr: float = 0.1
    batch_size: int = 50
    epochs: int = 100
    num_classes: int = 2

    def __post_init__(self) -> None:
        for name in ("hidden", "batch_size", "epochs"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.num_classes < 2:
            raise ValueError(f"num_classes must be >= 2, got {self.num_classes}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")


@dataclass(frozen=True)
class Member:
    """One model to train: a scheme's strengths and a seed in a seed namespace.

    ``namespace`` keeps the tuning seeds ("tune") apart from the reported ones ("report"):
    the streams of seed 3 in one share nothing with seed 3 in the other.
    """

    scheme: SchemeConfig
    seed: int
    namespace: str = "report"


def stream_seed(namespace: str, seed: int, role: str) -> int:
    """A 63-bit generator seed for one random role of one seed (SHA-256 of the three names)."""
    digest = hashlib.sha256(f"noisymix.toy/{namespace}/{seed}/{role}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & (2**63 - 1)


def _generator(member: Member, role: str, device: torch.device) -> torch.Generator:
    return generator_for(stream_seed(member.namespace, member.seed, role), device)


# ----------------------------------------------------------------------------- the model
def init_params(members: Sequence[Member], config: TrainConfig, device: torch.device | str = "cpu",
                in_features: int = 2) -> Params:
    """torch.nn.Linear's default initialization, U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weights
    and biases, drawn per member from its seed's "init" stream (same init for every scheme)."""
    device = torch.device(device)
    shapes = {"w1": (in_features, config.hidden), "b1": (config.hidden,),
              "w2": (config.hidden, config.num_classes), "b2": (config.num_classes,)}
    fan_in = {"w1": in_features, "b1": in_features, "w2": config.hidden, "b2": config.hidden}
    drawn: dict[str, list[Tensor]] = {name: [] for name in shapes}
    for member in members:
        g = _generator(member, "init", device)
        for name, shape in shapes.items():
            bound = fan_in[name] ** -0.5
            drawn[name].append((2 * torch.rand(shape, generator=g, device=device) - 1) * bound)
    return {name: torch.stack(values) for name, values in drawn.items()}


def _hidden(params: Params, x: Tensor) -> Tensor:
    return torch.relu(torch.baddbmm(params["b1"].unsqueeze(1), x, params["w1"]))


def _output(params: Params, h: Tensor) -> Tensor:
    return torch.baddbmm(params["b2"].unsqueeze(1), h, params["w2"])


def forward(params: Params, x: Tensor) -> Tensor:
    """Logits (G, N, K) of inputs (G, N, 2), or of one input set (N, 2) shared by all members."""
    if x.ndim == 2:
        x = x.expand(params["w1"].shape[0], *x.shape)
    return _output(params, _hidden(params, x))


def accuracy(params: Params, x: Tensor, y: Tensor) -> Tensor:
    """Fraction (G,) of points classified correctly by each member; x (G, N, 2), y (G, N)."""
    return (forward(params, x).argmax(-1) == y).to(torch.float64).mean(-1)


# ------------------------------------------------------------------------- the randomness
@dataclass
class _Draws:
    """A group's pre-drawn randomness (members stacked on dim 0)."""

    order: Tensor            # (G, epochs, n_train) batch order per epoch
    perm: Tensor             # (G, T, B) mixing partners
    lam: Tensor              # (G, T) one lambda per batch
    at_input: Tensor         # (G, T) bool: mix at the input (else at the hidden layer)


def _draw_fixed(members: Sequence[Member], n_train: int, steps: int, config: TrainConfig,
                device: torch.device) -> _Draws:
    orders, perms, lams, layers = [], [], [], []
    for member in members:
        g = _generator(member, "order", device)
        orders.append(torch.rand((config.epochs, n_train), generator=g, device=device).argsort(-1))
        draw = draw_mix(config.batch_size, member.scheme.mix_config(),
                        generator=_generator(member, "mix", device), groups=(steps,))
        perms.append(draw.perm)
        lams.append(draw.lam)
        g = _generator(member, "layer", device)
        layers.append(torch.rand(steps, generator=g, device=device) < 0.5)
    return _Draws(torch.stack(orders), torch.stack(perms), torch.stack(lams), torch.stack(layers))


class _NoiseStreams:
    """Per-member noise and view perturbations, drawn ``CHUNK_EPOCHS`` epochs at a time.

    Noise xi is drawn at width max(2, H) and the input layer uses its first two coordinates
    (the entries are i.i.d., so each layer sees exactly the noise law of ``sample_noise``).
    Only members with noise store any; ``step`` places their draws among zeros for the rest.
    """

    def __init__(self, members: Sequence[Member], views: int, config: TrainConfig,
                 device: torch.device) -> None:
        self.members, self.views, self.config, self.device = members, views, config, device
        self.width = max(2, config.hidden)
        self.noise_g = [_generator(m, "noise", device) for m in members]
        self.view_g = [_generator(m, "views", device) for m in members]
        noisy = [i for i, m in enumerate(members) if m.scheme.mix_config().noise.active]
        self.noisy = torch.tensor(noisy, dtype=torch.long, device=device) if noisy else None
        self.mult: Tensor | None = None
        self.add: Tensor | None = None
        self.offsets: Tensor | None = None

    def draw_chunk(self, steps: int) -> None:
        """Draw the next ``steps`` steps: noise (G_noisy, steps, V, B, width), view offsets
        (G, steps, V-1, B, 2)."""
        b, v = self.config.batch_size, self.views
        mults, adds, offsets = [], [], []
        for member, noise_g, view_g in zip(self.members, self.noise_g, self.view_g):
            noise = member.scheme.mix_config().noise
            shape = (steps, v, b, self.width)
            mult = add = None
            if noise.active:
                # As noisy_feature_mixup: a Beta(2, 5) magnitude per (step, view); the public
                # code multiplies view s's additive level by s.
                add_scale: Tensor | float = 1.0
                if noise.split_add_scaling == "index":
                    add_scale = torch.arange(1, v + 1, dtype=torch.float32, device=self.device)
                    add_scale = add_scale.reshape(v, 1, 1)
                mult, add = sample_noise(shape, noise, generator=noise_g, view_dims=2, add_scale=add_scale)
            if noise.active:
                mults.append(torch.zeros(shape, device=self.device) if mult is None else mult)
                adds.append(torch.zeros(shape, device=self.device) if add is None else add)
            if v > 1:
                view_noise = member.scheme.view_noise_config()
                offset = torch.zeros((steps, v - 1, b, 2), device=self.device)
                if view_noise.active:
                    _, drawn = sample_noise((steps, v - 1, b, 2), view_noise, generator=view_g)
                    offset = drawn if drawn is not None else offset
                offsets.append(offset)
        self.mult, self.add = _stack_or_none(mults), _stack_or_none(adds)
        self.offsets = _stack_or_none(offsets)

    def step(self, c: int) -> tuple[Tensor | None, Tensor | None, Tensor | None]:
        """(mult, add) of shape (G, V, B, width) and offsets (G, V-1, B, 2) for step c of the chunk."""
        offsets = None if self.offsets is None else self.offsets[:, c]
        if self.noisy is None or self.mult is None or self.add is None:
            return None, None, offsets
        shape = (len(self.members), *self.mult.shape[2:])
        mult = torch.zeros(shape, device=self.device).index_copy_(0, self.noisy, self.mult[:, c])
        add = torch.zeros(shape, device=self.device).index_copy_(0, self.noisy, self.add[:, c])
        return mult, add, offsets


def _stack_or_none(tensors: list[Tensor]) -> Tensor | None:
    return torch.stack(tensors) if tensors else None


# --------------------------------------------------------------------------- one step
def _noisy_mix_views(h: Tensor, perm: Tensor, lam: Tensor, mult: Tensor | None,
                     add: Tensor | None) -> Tensor:
    """M_{lambda,xi}(h, h[perm]) for views (G, V, B, d): partners from the same view."""
    d = h.shape[-1]
    partners = torch.gather(h, 2, perm[:, None, :, None].expand_as(h))
    return noisy_mix(h, partners, lam,
                     xi_mult=None if mult is None else mult[..., :d],
                     xi_add=None if add is None else add[..., :d],
                     sigma_mult=1.0, sigma_add=1.0)  # the draws already carry the levels


def _member_losses(params: Params, xb: Tensor, yb: Tensor, perm: Tensor, lam: Tensor, at_input: Tensor,
                   mult: Tensor | None, add: Tensor | None, offsets: Tensor | None,
                   gamma: Tensor, num_classes: int) -> tuple[Tensor, Tensor, Tensor]:
    """Per-member (total, CE, JSD), each (G,), for batches xb (G, B, 2), yb (G, B)."""
    g, b, _ = xb.shape
    views = xb.unsqueeze(1)
    if offsets is not None:
        views = torch.cat([views, views + offsets], dim=1)                 # (G, V, B, 2)
    v = views.shape[1]
    at_in = at_input.reshape(g, 1, 1, 1)
    views = torch.where(at_in, _noisy_mix_views(views, perm, lam, mult, add), views)
    h = _hidden(params, views.reshape(g, v * b, -1)).reshape(g, v, b, -1)
    h = torch.where(at_in, h, _noisy_mix_views(h, perm, lam, mult, add))
    logits = _output(params, h.reshape(g, v * b, -1)).reshape(g, v, b, num_classes)
    targets = mix_targets(yb, MixDraw(perm=perm, lam=lam), num_classes)  # (G, B, K)
    return torch.func.vmap(_core_loss(v))(logits.reshape(g, v * b, num_classes), targets, gamma)


def _core_loss(views: int) -> Callable[[Tensor, Tensor, Tensor], tuple[Tensor, Tensor, Tensor]]:
    """One member's (total, CE, JSD) of L = CE + gamma * JS_{1/V}(views): the core
    ``noisymix_loss``, ready to vmap over members (logits (V * B, K), views concatenated, clean
    first); a tuple because vmap returns tensors only."""
    def loss(logits: Tensor, targets: Tensor, gamma: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        parts = noisymix_loss(logits, targets, views=views, gamma=gamma)
        return parts.total, parts.cross_entropy, parts.jsd
    return loss


# ------------------------------------------------------------------------------ training
def train_members(
    members: Sequence[Member],
    data: Sequence[ToyData],
    config: TrainConfig,
    *,
    device: torch.device | str = "cpu",
    on_epoch: Callable[[int], None] | None = None,
) -> Params:
    """Train every member on its own data set (``data[i]`` for ``members[i]``).

    Members with the same number of views train together as one batched model; all must
    have the same number of training points.  Returns the final weights stacked in member
    order.  ``on_epoch(n)`` is called after each epoch of a group with its member count n.
    """
    if len(members) != len(data) or not members:
        raise ValueError(f"need one data set per member, got {len(members)} members and "
                         f"{len(data)} data sets")
    sizes = {int(d.train.numel()) for d in data}
    if len(sizes) != 1:
        raise ValueError(f"all members need the same number of training points, got {sorted(sizes)}")
    n_train = sizes.pop()
    if n_train < config.batch_size:
        raise ValueError(f"batch_size {config.batch_size} exceeds the {n_train} training points")
    device = torch.device(device)
    out: Params = {}
    by_views: dict[int, list[int]] = {}
    for i, member in enumerate(members):
        by_views.setdefault(member.scheme.views, []).append(i)
    pieces: dict[int, Params] = {}
    for views, index in sorted(by_views.items()):
        trained = _train_group([members[i] for i in index], [data[i] for i in index], views,
                               n_train, config, device, on_epoch)
        for j, i in enumerate(index):
            pieces[i] = {name: value[j] for name, value in trained.items()}
    for name in ("w1", "b1", "w2", "b2"):
        out[name] = torch.stack([pieces[i][name] for i in range(len(members))])
    return out


def _train_group(members: list[Member], data: list[ToyData], views: int, n_train: int,
                 config: TrainConfig, device: torch.device,
                 on_epoch: Callable[[int], None] | None) -> Params:
    b = config.batch_size
    per_epoch = n_train // b
    steps = per_epoch * config.epochs
    x = torch.stack([d.x_train for d in data]).to(device)                   # (G, n, 2)
    y = torch.stack([d.y_train for d in data]).to(device)                   # (G, n)
    gamma = torch.tensor([m.scheme.jsd_weight for m in members], device=device)
    params = init_params(members, config, device)
    for value in params.values():
        value.requires_grad_(True)
    optimizer = torch.optim.Adam(list(params.values()), lr=config.lr)
    fixed = _draw_fixed(members, n_train, steps, config, device)
    streams = _NoiseStreams(members, views, config, device)
    rows = torch.arange(len(members), device=device)[:, None]
    for epoch in range(config.epochs):
        if epoch % CHUNK_EPOCHS == 0:
            chunk_steps = per_epoch * min(CHUNK_EPOCHS, config.epochs - epoch)
            streams.draw_chunk(chunk_steps)
        for i in range(per_epoch):
            t = epoch * per_epoch + i
            c = t - (epoch - epoch % CHUNK_EPOCHS) * per_epoch                # step within chunk
            batch = fixed.order[:, epoch, i * b:(i + 1) * b]
            mult, add, offsets = streams.step(c)
            total, _, _ = _member_losses(
                params, x[rows, batch], y[rows, batch], fixed.perm[:, t], fixed.lam[:, t],
                fixed.at_input[:, t],
                mult, add, offsets, gamma, config.num_classes)
            optimizer.zero_grad(set_to_none=True)
            total.sum().backward()
            optimizer.step()
        if on_epoch is not None:
            on_epoch(len(members))
    return {name: value.detach() for name, value in params.items()}
