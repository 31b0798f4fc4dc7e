"""Strips of real handwritten digits for image-to-text models: the images of scikit-learn's ``load_digits``, placed
left to right; the target is the digit string ("40719").

Source: ``sklearn.datasets.load_digits``, bundled with scikit-learn (``sklearn/datasets/data/digits.csv.gz``):
1,797 8x8 images of 16 grey levels (0..16), the test set of the UCI "Optical Recognition of Handwritten Digits" data
(E. Alpaydin, C. Kaynak, 1998; 13 writers). Licence: scikit-learn's description of the data (``load_digits().DESCR``)
names none; the UCI repository (https://archive.ics.uci.edu/dataset/80) publishes the data set under CC BY 4.0, which
asks for attribution: cite Alpaydin and Kaynak, "Optical Recognition of Handwritten Digits", UCI, 1998.

The 1,797 SOURCE images are split once, independently of any seed: ranked by SHA-256("digits <index>"), the first 70%
(1,258) are train, the next 10% (180) validation, the last 20% (359) test (``source_indices``). A strip of a split
uses only that split's images, so test strips show handwriting no training strip shows.

A strip (``StripLayout`` draws it, ``render_strip`` paints it): bright ink on a dark background (0 = background, as
the padding of a batch), each digit's 0..16 levels scaled to 0..255 (round(v * 255 / 16)) and upscaled 2x by
nearest neighbour to a 16x16 block; a gap of 0-4 px before each digit and after the last, a vertical offset of 0-3 px
per digit, on a canvas of height 20: image uint8 [20, 16 n + gaps]. Blocks never overlap, so every digit's 16x16
block appears unchanged in the strip. The same seed gives the same strips.
"""

import hashlib
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

HEIGHT = 20  # the canvas' rows
SCALE = 2  # 8x8 -> 16x16
BLOCK = 8 * SCALE
MAX_GAP = 4  # px between digits, before the first and after the last: 0..MAX_GAP
MAX_TOP = 3  # vertical offset of a digit: 0..MAX_TOP
SPLIT_FRACTIONS = {"train": 0.7, "validation": 0.1, "test": 0.2}  # of the 1,797 source images, in this order


@lru_cache(maxsize=1)
def digit_blocks() -> tuple[np.ndarray, np.ndarray]:
    """Every ``load_digits`` image as its 16x16 block, uint8 [1797, 16, 16] (0..255, 0 = background), and its digit
    [1797]."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    levels = digits.images.astype(np.int64)  # 0..16
    scaled = ((levels * 255 + 8) // 16).astype(np.uint8)  # round(v * 255 / 16)
    blocks = scaled.repeat(SCALE, axis=1).repeat(SCALE, axis=2)
    blocks.setflags(write=False)
    targets = digits.target.copy()
    targets.setflags(write=False)
    return blocks, targets


@lru_cache(maxsize=None)
def source_indices(split: str) -> np.ndarray:
    """The ``load_digits`` indices of a split's source images, ascending (independent of any seed)."""
    if split not in SPLIT_FRACTIONS:
        raise ValueError(f"`split` must be one of {list(SPLIT_FRACTIONS)}, got {split!r}.")
    count = len(digit_blocks()[1])
    ranked = sorted(range(count), key=lambda index: hashlib.sha256(f"digits {index}".encode()).digest())
    names, sizes = list(SPLIT_FRACTIONS), [round(fraction * count) for fraction in SPLIT_FRACTIONS.values()]
    start = sum(sizes[:names.index(split)])
    stop = count if split == names[-1] else start + sizes[names.index(split)]  # the last split takes what is left
    indices = np.array(sorted(ranked[start:stop]))
    indices.setflags(write=False)
    return indices


@dataclass(frozen=True)
class StripLayout:
    """One strip: its digits' ``load_digits`` indices and where each 16x16 block's top-left corner lies."""

    sources: tuple[int, ...]
    tops: tuple[int, ...]
    lefts: tuple[int, ...]
    width: int

    @property
    def text(self) -> str:
        return "".join(str(digit_blocks()[1][index]) for index in self.sources)


def strip_layouts(split: str, count: int, lengths: tuple[int, int], seed: int) -> list[StripLayout]:
    """`count` strips of `lengths[0]` to `lengths[1]` digits (uniform), each digit drawn uniformly from the split's
    source images, with random gaps and offsets."""
    indices = source_indices(split)
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise ValueError(f"`count` must be an integer >= 0, got {count!r}.")
    if (len(lengths) != 2 or not all(isinstance(n, int) and not isinstance(n, bool) for n in lengths)
            or not 1 <= lengths[0] <= lengths[1]):
        raise ValueError(f"`lengths` must be (shortest, longest) digits with 1 <= shortest <= longest, "
                         f"got {lengths!r}.")
    rng, layouts = np.random.default_rng(seed), []
    for _ in range(count):
        n = int(rng.integers(lengths[0], lengths[1] + 1))
        sources = tuple(int(index) for index in rng.choice(indices, size=n))
        gaps = rng.integers(0, MAX_GAP + 1, size=n + 1)
        lefts = tuple(int(left) for left in np.cumsum(gaps[:-1]) + BLOCK * np.arange(n))
        tops = tuple(int(top) for top in rng.integers(0, MAX_TOP + 1, size=n))
        layouts.append(StripLayout(sources, tops, lefts, int(gaps.sum()) + BLOCK * n))
    return layouts


def render_strip(layout: StripLayout) -> np.ndarray:
    """The strip's image, uint8 [HEIGHT, width]: each digit's block at its (top, left), 0 elsewhere."""
    blocks = digit_blocks()[0]
    image = np.zeros((HEIGHT, layout.width), dtype=np.uint8)
    for index, top, left in zip(layout.sources, layout.tops, layout.lefts):
        image[top:top + BLOCK, left:left + BLOCK] = blocks[index]
    return image


def digit_strips(split: str, count: int, lengths: tuple[int, int], seed: int) -> list[tuple[np.ndarray, str]]:
    """`count` (image uint8 [20, W], digit string) pairs of the split ("train", "validation" or "test" source
    images), `lengths` = (shortest, longest) digits per strip; the same seed gives the same strips."""
    return [(render_strip(layout), layout.text) for layout in strip_layouts(split, count, lengths, seed)]
