"""Every on-disk format the toolkit reads, in one place.

In memory (whole sets as uint8 tensors, ``ImageSet``): CIFAR-10/100 pickle batches
(``cifar``, read through a restricted unpickler), the built-in digits (``digits``), and the
registry ``load_dataset`` (``registry``).  Streamed and bounded in memory: memory-mapped -C/-P
``.npy`` sets (``npy_sets``), ImageNet-style class folders (``folders``), ImageNet-P videos
(``videos``), the ImageNet class identities (``wnids``), and ImageNet training streamed from its
JPEG folders with per-sample random crops (``imagenet``; test trees: ``imagenet_fixture``).
``write_cifar_fixture`` writes tiny directories in the real CIFAR format for tests.
"""

from fullscale.data.cifar import read_cifar, write_cifar_fixture
from fullscale.data.digits import load_digits32
from fullscale.data.folders import FolderSet, Preprocess, read_class_folders
from fullscale.data.imageset import ImageSet, Split
from fullscale.data.npy_sets import CorruptedSet, PerturbedSet, read_c_set, read_p_set
from fullscale.data.registry import DATASETS, load_dataset
from fullscale.data.videos import VideoSet, read_video_folders
from fullscale.data.wnids import imagenet_r_indices, imagenet_r_mask, imagenet_r_wnids, imagenet_wnids

__all__ = ["DATASETS", "CorruptedSet", "FolderSet", "ImageSet", "PerturbedSet", "Preprocess", "Split", "VideoSet",
           "imagenet_r_indices", "imagenet_r_mask", "imagenet_r_wnids", "imagenet_wnids", "load_dataset",
           "load_digits32", "read_c_set", "read_cifar", "read_class_folders", "read_p_set", "read_video_folders",
           "write_cifar_fixture"]
