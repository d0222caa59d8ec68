"""Readers of the standard benchmark layouts (DESIGN.md), bounded in memory and checked:
memory-mapped -C/-P ``.npy`` sets, ImageNet-style class folders, ImageNet-P videos."""

from fullscale.readers.folders import FolderSet, Preprocess, read_class_folders
from fullscale.readers.npy_sets import CorruptedSet, PerturbedSet, read_c_set, read_p_set
from fullscale.readers.videos import VideoSet, read_video_folders
from fullscale.readers.wnids import imagenet_r_indices, imagenet_r_mask, imagenet_r_wnids, imagenet_wnids

__all__ = ["CorruptedSet", "FolderSet", "PerturbedSet", "Preprocess", "VideoSet", "imagenet_r_indices",
           "imagenet_r_mask", "imagenet_r_wnids", "imagenet_wnids", "read_c_set", "read_class_folders",
           "read_p_set", "read_video_folders"]
