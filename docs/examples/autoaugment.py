"""AutoAugment's CIFAR-10 policy (Cubuk et al., 2019, "AutoAugment: Learning Augmentation Strategies from
Data"), a method the project does not ship, as the batch function ``noisymix screen`` takes:

    PYTHONPATH=. noisymix screen docs.examples.autoaugment:autoaugment --out screens/autoaugment

Each image draws one of the policy's 25 sub-policies; each of its two operations is applied with its
probability, at its magnitude bin (0-9), with a random sign where the operation has one.  The policy,
the magnitudes of each bin and the draw are those of torchvision's ``AutoAugment(AutoAugmentPolicy.CIFAR10)``
(``POLICY``, ``magnitude``), carried out by the project's batched PIL-equal operations
(``fullscale.augment.ops``, the ones AugMix uses), which take AugMix's ``level`` parameter: ``levels`` turns
each bin into the level that gives torchvision's value.  Two differences, both from the ops' integer
parameters: a rotation is by whole degrees (torchvision rotates by 30 m / 9 degrees), and the images stay
uint8 between the two operations, as PIL keeps them.  Invert (255 - x) is the one operation AugMix lacks.

Every random number comes from ``generator``, on its device: a run is reproducible from its seed.
"""

import torch

from fullscale.augment.ops import OPS

#: torchvision's AutoAugmentPolicy.CIFAR10: 25 sub-policies of two (operation, probability, magnitude bin)
POLICY = (
    (("Invert", 0.1, None), ("Contrast", 0.2, 6)),
    (("Rotate", 0.7, 2), ("TranslateX", 0.3, 9)),
    (("Sharpness", 0.8, 1), ("Sharpness", 0.9, 3)),
    (("ShearY", 0.5, 8), ("TranslateY", 0.7, 9)),
    (("AutoContrast", 0.5, None), ("Equalize", 0.9, None)),
    (("ShearY", 0.2, 7), ("Posterize", 0.3, 7)),
    (("Color", 0.4, 3), ("Brightness", 0.6, 7)),
    (("Sharpness", 0.3, 9), ("Brightness", 0.7, 9)),
    (("Equalize", 0.6, None), ("Equalize", 0.5, None)),
    (("Contrast", 0.6, 7), ("Sharpness", 0.6, 5)),
    (("Color", 0.7, 7), ("TranslateX", 0.5, 8)),
    (("Equalize", 0.3, None), ("AutoContrast", 0.4, None)),
    (("TranslateY", 0.4, 3), ("Sharpness", 0.2, 6)),
    (("Brightness", 0.9, 6), ("Color", 0.2, 8)),
    (("Solarize", 0.5, 2), ("Invert", 0.0, None)),
    (("Equalize", 0.2, None), ("AutoContrast", 0.6, None)),
    (("Equalize", 0.2, None), ("Equalize", 0.6, None)),
    (("Color", 0.9, 9), ("Equalize", 0.6, None)),
    (("AutoContrast", 0.8, None), ("Solarize", 0.2, 8)),
    (("Brightness", 0.1, 3), ("Color", 0.7, 0)),
    (("Solarize", 0.4, 5), ("AutoContrast", 0.9, None)),
    (("TranslateY", 0.9, 9), ("TranslateY", 0.7, 9)),
    (("AutoContrast", 0.9, None), ("Solarize", 0.8, 3)),
    (("Equalize", 0.8, None), ("Invert", 0.1, None)),
    (("TranslateY", 0.7, 9), ("AutoContrast", 0.9, None)),
)
#: torchvision's names -> the project's ops (None: Invert, done here)
OP_NAMES = {"ShearX": "shear_x", "ShearY": "shear_y", "TranslateX": "translate_x", "TranslateY": "translate_y",
            "Rotate": "rotate", "Brightness": "brightness", "Color": "color", "Contrast": "contrast",
            "Sharpness": "sharpness", "Posterize": "posterize", "Solarize": "solarize",
            "AutoContrast": "autocontrast", "Equalize": "equalize", "Invert": None}
BINS = 10


def magnitude(name, m, side):
    """torchvision's value of bin ``m`` (its ``_get_magnitudes``, 10 bins): a shear, a translation in pixels of
    an image of ``side``, degrees, an enhancement's offset from 1, posterize's bits, solarize's threshold."""
    if name in ("ShearX", "ShearY"):
        return 0.3 * m / (BINS - 1)
    if name in ("TranslateX", "TranslateY"):
        return int(side * (150.0 / 331.0 * m / (BINS - 1)))
    if name == "Rotate":
        return 30.0 * m / (BINS - 1)
    if name in ("Brightness", "Color", "Contrast", "Sharpness"):
        return 0.9 * m / (BINS - 1)
    if name == "Posterize":
        return (8, 8, 7, 7, 6, 6, 5, 5, 4, 4)[m]
    if name == "Solarize":
        return 256.0 * (BINS - 1 - m) / (BINS - 1)
    return None


def level(name, value, sign, side):
    """The AugMix ``level`` at which the project's op does what torchvision's does at ``value`` (``magnitude``)
    and ``sign`` (+-1; the ops flip rotations, shears and translations by their own sign argument)."""
    if name in ("ShearX", "ShearY"):
        return value * 10 / 0.3  # float_parameter(level, 0.3) = value
    if name in ("TranslateX", "TranslateY"):
        return (value + 0.5) * 30 / side  # int_parameter(level, side / 3) = value
    if name == "Rotate":
        return (int(value) + 0.5) / 3  # int_parameter(level, 30) = whole degrees
    if name in ("Brightness", "Color", "Contrast", "Sharpness"):
        return (1 + sign * value - 0.1) * 10 / 1.8  # float_parameter(level, 1.8) + 0.1 = 1 +- value
    if name == "Posterize":
        return (4 - value + 0.5) / 0.4  # 4 - int_parameter(level, 4) = bits
    if name == "Solarize":
        threshold = -(-value // 1)  # levels >= value are inverted: those >= its ceiling
        return (256 - threshold + 0.5) / 25.6  # 256 - int_parameter(level, 256) = threshold
    return 0.0


def autoaugment(images, labels, generator):
    n, _, _, side = images.shape
    device = generator.device
    x = (images * 255).round().to(torch.uint8)
    choice = torch.randint(0, len(POLICY), (n,), generator=generator, device=device)
    apply = torch.rand(n, 2, generator=generator, device=device)
    signs = torch.randint(0, 2, (n, 2), generator=generator, device=device) * 2 - 1
    for slot in range(2):
        for sub, ops in enumerate(POLICY):
            name, p, m = ops[slot]
            chosen = (choice == sub) & (apply[:, slot] <= p)
            if not bool(chosen.any()):
                continue
            index = chosen.nonzero().squeeze(1).to(x.device)
            part = x.index_select(0, index)
            if OP_NAMES[name] is None:
                part = 255 - part
            else:
                sign = signs[:, slot].index_select(0, index.to(device)).to(x.device, torch.float64)
                value = magnitude(name, m, side) if m is not None else 0.0
                lv = torch.as_tensor(level(name, value, sign, side), dtype=torch.float64, device=x.device)
                part = OPS[OP_NAMES[name]](part, lv.expand(len(index)).clone(), sign)
            x = x.index_copy(0, index, part)
    return x.to(images.dtype) / 255, labels
