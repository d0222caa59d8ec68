"""ImageNet-P videos: ``<root>/<perturbation>/<wnid>/*.mp4`` (Hendrycks & Dietterich's layout).

Decoding needs OpenCV (the optional extra ``opencv-python-headless``; the public loader,
``ImageNet-P/utils/video_loader.py``, uses it too), imported only when a video is read.  Frames
are returned as stored (ImageNet-P frames are 224 x 224; the public evaluation applies no resize
or crop), RGB uint8 (frames, 3, H, W); videos may differ in length, so a batch is a list.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from noisymix_infra.io import printable

__all__ = ["VideoSet", "decode_video", "read_video_folders"]


def _cv2():
    try:
        import cv2
    except ImportError:
        raise ValueError("reading ImageNet-P videos needs OpenCV: pip install opencv-python-headless "
                         "(the optional video extra)") from None
    return cv2


def decode_video(path: Path) -> torch.Tensor:
    """uint8 (frames, 3, H, W), RGB, every frame of an mp4."""
    cv2 = _cv2()
    capture = cv2.VideoCapture(str(path))
    frames = []
    try:
        while True:
            ok, frame = capture.read()
            if not ok:
                break
            frames.append(cv2.cvtColor(frame, cv2.COLOR_BGR2RGB))
    finally:
        capture.release()
    if len(frames) < 2:
        raise ValueError(f"{printable(path)}: expected a video of >= 2 frames, decoded {len(frames)}")
    if len({f.shape for f in frames}) != 1:
        raise ValueError(f"{printable(path)}: frames of different sizes")
    return torch.from_numpy(np.stack(frames)).permute(0, 3, 1, 2)


class VideoSet(Dataset):
    """(path, label) videos of one perturbation; items are (uint8 (frames, 3, H, W), label)."""

    def __init__(self, root: Path, samples: list[tuple[Path, int]]) -> None:
        self.root, self.samples = root, samples

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        path, label = self.samples[index]
        return decode_video(path), label

    def listing_sha256(self) -> str:
        digest = hashlib.sha256()
        for path, label in self.samples:
            digest.update(f"{path.relative_to(self.root)}\t{path.stat().st_size}\t{label}\n".encode())
        return digest.hexdigest()

    def videos(self, batch_size: int, workers: int) -> Iterator[list[torch.Tensor]]:
        """Lists of up to ``batch_size`` videos in order, decoded by ``workers`` processes."""
        _cv2()  # fail before starting workers
        loader = DataLoader(self, batch_size=batch_size, shuffle=False, num_workers=workers,
                            collate_fn=_videos_only)
        yield from loader


def _videos_only(items: list[tuple[torch.Tensor, int]]) -> list[torch.Tensor]:
    return [video for video, _ in items]


def read_video_folders(root: str | Path, classes: tuple[str, ...]) -> VideoSet:
    """``root/<wnid>/*.mp4`` for one perturbation; label = position of the wnid in ``classes``."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"{printable(root)} is not a directory of class folders (<wnid>/*.mp4)")
    index = {wnid: i for i, wnid in enumerate(classes)}
    folders = sorted(p for p in root.iterdir() if p.is_dir())
    unknown = [p.name for p in folders if p.name not in index]
    if unknown:
        raise ValueError(f"{printable(root)}: folders {unknown[:5]} are not among the {len(classes)} expected wnids")
    samples = [(f, index[folder.name]) for folder in folders for f in sorted(folder.glob("*.mp4"))]
    if not samples:
        raise FileNotFoundError(f"{printable(root)} has no videos (<wnid>/*.mp4)")
    return VideoSet(root, samples)
