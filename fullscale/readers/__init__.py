"""Readers of the standard corrupted-set layouts, memory-mapped and checked."""

from fullscale.readers.npy_sets import CorruptedSet, PerturbedSet, read_c_set, read_p_set

__all__ = ["CorruptedSet", "PerturbedSet", "read_c_set", "read_p_set"]
