"""Image data sets as uint8 tensors: CIFAR-10/100 from their pickle batches, and the built-in
digits.  ``load_dataset`` is the one entry point; ``write_cifar_fixture`` writes tiny
directories in the real CIFAR format for tests."""

from fullscale.data.cifar import read_cifar, write_cifar_fixture
from fullscale.data.digits import load_digits32
from fullscale.data.imageset import DATASETS, ImageSet, load_dataset

__all__ = ["DATASETS", "ImageSet", "load_dataset", "load_digits32", "read_cifar", "write_cifar_fixture"]
