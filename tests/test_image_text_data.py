"""The image-to-text data (training/data/digit_strips.py, rendered_words.py, make_image_text.py): digit strips are
their source images' 16x16 blocks at the recorded offsets, from disjoint source images per split; words are split by
word, the long test's words are longer than every training word, a rendering is its ink mask at the recorded place
plus noise of the recorded size; the imagefolder layout reads back through datasets exactly as written."""

import dataclasses
import json
import math

import numpy as np
import pytest
from sklearn.datasets import load_digits

from training.data.digit_strips import (
    BLOCK, HEIGHT, MAX_GAP, MAX_TOP, digit_strips, render_strip, source_indices, strip_layouts,
)
from training.data.make_babi import split_seed
from training.data.make_image_text import DATA_FILES, GENERATORS, SPLITS, main, write_imagefolder
from training.data.rendered_words import (
    FONTS, MARGINS, WORD_LENGTHS, WordLayout, ink_mask, render_word, rendered_words, split_words, word_layouts,
)

datasets = pytest.importorskip("datasets")


def test_the_source_images_split_70_10_20_disjointly_and_strips_use_only_their_split():
    splits = {split: source_indices(split) for split in ("train", "validation", "test")}
    assert {split: len(indices) for split, indices in splits.items()} == {"train": 1258, "validation": 180,
                                                                          "test": 359}
    everything = np.concatenate(list(splits.values()))
    assert len(set(everything.tolist())) == 1797 and set(everything.tolist()) == set(range(1797))
    for split, indices in splits.items():
        used = {index for layout in strip_layouts(split, 300, (3, 6), seed=1) for index in layout.sources}
        assert used <= set(indices.tolist())
        assert len(used) > 0.5 * min(len(indices), 300 * 3)  # drawn from across the split, not a few images


def test_a_strip_is_its_digits_16x16_blocks_at_the_recorded_offsets_and_0_elsewhere():
    digits = load_digits()
    blocks = np.kron(np.floor(digits.images * 255 / 16 + 0.5), np.ones((2, 2)))  # [1797, 16, 16], 16 -> 255
    for layout in strip_layouts("test", 50, (3, 8), seed=2):
        image, n = render_strip(layout), len(layout.sources)
        assert image.dtype == np.uint8 and image.shape == (HEIGHT, layout.width) == (20, layout.width)
        assert layout.text == "".join(str(digits.target[index]) for index in layout.sources)
        gaps = np.diff([0, *layout.lefts, layout.width]) - np.array([0] + [BLOCK] * n)
        assert gaps.min() >= 0 and gaps.max() <= MAX_GAP and 0 <= min(layout.tops) <= max(layout.tops) <= MAX_TOP
        rebuilt = np.zeros_like(image, dtype=np.float64)
        for index, top, left in zip(layout.sources, layout.tops, layout.lefts):
            np.testing.assert_array_equal(image[top:top + 16, left:left + 16], blocks[index])
            rebuilt[top:top + 16, left:left + 16] = blocks[index]
        np.testing.assert_array_equal(image, rebuilt)  # nothing else is painted


def test_strip_lengths_and_widths_keep_their_bounds_and_the_same_seed_gives_the_same_strips():
    strips = digit_strips("train", 400, (3, 6), seed=3)
    assert {len(text) for _, text in strips} == {3, 4, 5, 6}
    assert {len(text) for _, text in digit_strips("test", 100, (7, 8), seed=3)} == {7, 8}
    for image, text in strips:
        assert text.isdigit() and 16 * len(text) <= image.shape[1] <= 16 * len(text) + MAX_GAP * (len(text) + 1)
    again, other = digit_strips("train", 400, (3, 6), seed=3), digit_strips("train", 400, (3, 6), seed=4)
    assert all(np.array_equal(a, b) and s == t for (a, s), (b, t) in zip(strips, again))
    assert [text for _, text in strips] != [text for _, text in other]


@pytest.mark.parametrize("call, argument", [
    (lambda: digit_strips("train", -1, (3, 6), 0), "`count`"),
    (lambda: digit_strips("train", 2.0, (3, 6), 0), "`count`"),
    (lambda: digit_strips("train", 2, (6, 3), 0), "`lengths`"),
    (lambda: digit_strips("train", 2, (0, 3), 0), "`lengths`"),
    (lambda: digit_strips("train", 2, (3,), 0), "`lengths`"),
    (lambda: digit_strips("test_long", 2, (3, 6), 0), "`split`"),
    (lambda: rendered_words("train", -1, 0), "`count`"),
    (lambda: rendered_words("dev", 2, 0), "`split`"),
])
def test_bad_arguments_are_refused_naming_the_argument(call, argument):
    with pytest.raises(ValueError, match=argument):
        call()


def test_word_splits_are_disjoint_lowercase_and_the_long_test_is_longer_than_every_training_word():
    words = {split: split_words(split) for split in WORD_LENGTHS}
    for split, (shortest, longest) in WORD_LENGTHS.items():
        assert all(word.isascii() and word.isalpha() and word.islower() for word in words[split])
        assert {len(word) for word in words[split]} == set(range(shortest, longest + 1))
        assert list(words[split]) == sorted(set(words[split]))
    for i, first in enumerate(SPLITS):
        for second in SPLITS[i + 1:]:
            assert not set(words[first]) & set(words[second]), (first, second)
    assert max(map(len, words["train"])) < min(map(len, words["test_long"]))
    short = sum(len(words[split]) for split in ("train", "validation", "test"))
    for split in ("validation", "test"):  # SHA-256 mod 10: a tenth each, within 4 standard deviations
        assert abs(len(words[split]) / short - 0.1) < 4 * math.sqrt(0.1 * 0.9 / short)


def test_a_rendering_is_its_ink_mask_at_the_recorded_place_inside_the_canvas():
    for layout in word_layouts("train", 40, seed=5) + word_layouts("test_long", 10, seed=5):
        mask = ink_mask(layout.word, layout.font, layout.size)
        assert mask.any(0)[[0, -1]].all() and mask.any(1)[[0, -1]].all()  # cropped to the ink
        assert mask.max() == 255  # some pixels fully covered
        height, width = mask.shape
        assert 0 <= layout.top <= 32 - height and MARGINS[0] <= layout.left <= MARGINS[1]
        assert MARGINS[0] <= layout.width - layout.left - width <= MARGINS[1]
        clean = render_word(dataclasses.replace(layout, noise=0.0)).astype(np.float64)
        assert clean.shape == (32, layout.width)
        expected = np.zeros_like(clean)  # ink / 255 * coverage, in float64 (uint8 * ink would wrap around)
        expected[layout.top:layout.top + height, layout.left:layout.left + width] = mask / 255 * layout.ink
        np.testing.assert_allclose(clean, expected, atol=0.5)  # rounded to integers
        noisy = render_word(layout)
        assert (noisy > 100).any() and np.array_equal(noisy, render_word(layout))  # the noise has a seed


def test_ink_grows_with_the_word_by_the_fonts_advance():
    """DejaVu Sans Mono advances 1233/2048 em per letter: 12.04 px at 20 px. The ink box of "m" * n is n - 1
    advances plus one "m", each end rounded out to whole pixels: within 2 px of that."""
    advance = 1233 / 2048 * 20
    widths = {n: ink_mask("m" * n, "DejaVu Sans Mono", 20).shape[1] for n in (1, 2, 5, 12)}
    for n, width in widths.items():
        assert abs(width - widths[1] - (n - 1) * advance) < 2, (n, width)
    for font in FONTS:  # proportional fonts too: every added letter widens the ink
        growing = [ink_mask(word, font, 16).shape[1] for word in ("ab", "abcd", "abcdefgh", "abcdefghijkl")]
        assert all(shorter < longer for shorter, longer in zip(growing, growing[1:])), (font, growing)


def test_the_noise_has_the_recorded_standard_deviation():
    """On the background (0 before the noise), clip(round(n), 0, 255) with n ~ N(0, s^2) has mean s / sqrt(2 pi)
    and standard deviation s sqrt(1/2 - 1/(2 pi)) (half of a normal's mass at 0)."""
    layout = WordLayout("ab", "DejaVu Sans", 16, top=0, left=2, width=400, ink=200, noise=10.0, noise_seed=7)
    background = render_word(layout)[:, 40:].astype(np.float64)  # the word lies in the first 40 columns
    spread = 10.0 * math.sqrt(0.5 - 1 / (2 * math.pi)) / math.sqrt(background.size)
    assert abs(background.mean() - 10.0 / math.sqrt(2 * math.pi)) < 4 * spread + 0.01  # rounding moves it < 0.01


def test_the_same_seed_gives_the_same_renderings():
    first, again, other = (rendered_words("validation", 20, seed) for seed in (6, 6, 7))
    assert all(np.array_equal(a, b) and s == t for (a, s), (b, t) in zip(first, again))
    assert [word for _, word in first] != [word for _, word in other]


def test_missing_fonts_are_named_with_the_folder_and_the_debian_packages(tmp_path):
    with pytest.raises(FileNotFoundError, match=rf"under '{tmp_path}'.*fonts-dejavu-core and fonts-liberation"):
        rendered_words("train", 1, seed=0, font_dir=tmp_path)


def test_the_cli_writes_the_imagefolder_layout_that_datasets_reads_back_as_written(tmp_path):
    counts = ["--train_count", "5", "--validation_count", "2", "--test_count", "2", "--test_long_count", "3"]
    report = main(["--output_dir", str(tmp_path / "a"), "--seed", "4", *counts])
    main(["--output_dir", str(tmp_path / "b"), "--seed", "4", *counts])
    expected_counts = {"train": 5, "validation": 2, "test": 2, "test_long": 3}
    assert {name: numbers["examples"] for name, numbers in report.items()} == {
        f"{task}/{split}": expected_counts[split] for task in ("digits", "words") for split in SPLITS}
    written = sorted(str(path.relative_to(tmp_path / "a")) for path in (tmp_path / "a").rglob("*") if path.is_file())
    assert written == sorted([f"{task}/README.md" for task in ("digits", "words")] + [
        f"{task}/{split}/{name}" for task in ("digits", "words") for split in SPLITS
        for name in ["metadata.jsonl"] + [f"{i:06d}.png" for i in range(expected_counts[split])]])
    for path in (tmp_path / "a").rglob("*"):
        if path.is_file():
            assert path.read_bytes() == (tmp_path / "b" / path.relative_to(tmp_path / "a")).read_bytes()
    for task in ("digits", "words"):
        loaded = datasets.load_dataset(str(tmp_path / "a" / task), cache_dir=str(tmp_path / "cache"))
        explicit = datasets.load_dataset("imagefolder", data_dir=str(tmp_path / "a" / task), data_files=DATA_FILES,
                                         cache_dir=str(tmp_path / "cache"))
        for split in SPLITS:
            examples = GENERATORS[task](split, expected_counts[split], split_seed(4, task, split))
            for table in (loaded[split], explicit[split]):
                assert table.column_names == ["image", "text"]
                assert [row["text"] for row in table] == [text for _, text in examples]
                for row, (image, _) in zip(table, examples):
                    assert row["image"].mode == "L"
                    np.testing.assert_array_equal(np.asarray(row["image"]), image)
    with pytest.raises(ValueError, match=r"`--train_count` must be >= 0, got -1"):
        main(["--output_dir", str(tmp_path / "c"), "--train_count", "-1"])


def test_odd_texts_read_back_exactly_as_written(tmp_path):
    texts = ["007", "", "  spaced  ", 'a "quote" and a \\ backslash', "line\nbreak\ttab", "ünïcødé ✓ 😀",
             "\u2028separator", "null", '{"text": 1}']
    images = [np.full((3, 2 + i), 17 * i, dtype=np.uint8) for i in range(len(texts))]
    write_imagefolder(tmp_path / "train", zip(images, texts))
    lines = (tmp_path / "train" / "metadata.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["text"] for line in lines] == texts and all(line.isascii() for line in lines)
    table = datasets.load_dataset("imagefolder", data_dir=str(tmp_path), cache_dir=str(tmp_path / "cache"))["train"]
    assert [row["text"] for row in table] == texts
    for row, image in zip(table, images):
        np.testing.assert_array_equal(np.asarray(row["image"]), image)
    with pytest.raises(ValueError, match=r"`examples`: image 0 must be a uint8 array \[H, W\], got float64"):
        write_imagefolder(tmp_path / "bad", [(np.zeros((3, 3)), "x")])
