"""easy-VQA from the installed package (training/data/easy_vqa_data.py, make_easy_vqa.py): the package's counts,
splits disjoint by whole images, the answer -> question type rule against the wording, shape masks exact on drawn
images and right on real ones, the attention-on-shape measures on hand-built weights and grids, and the written
imagefolder read back by datasets as written."""

import hashlib
import json
import re
import sys

import numpy as np
import pytest
from PIL import Image, ImageDraw

easy_vqa = pytest.importorskip("easy_vqa")
datasets = pytest.importorskip("datasets")

from training.data.easy_vqa_data import (  # noqa: E402
    QUESTION_TYPES, load_easy_vqa, peak_on_shape, question_type, shape_attention_mass, shape_mask,
    shape_overlap_rate, shape_regions,
)
from training.data.make_easy_vqa import write_vqa_folder  # noqa: E402

COLOURS = {"black": (0, 0, 0), "gray": (128, 128, 128), "red": (255, 0, 0), "green": (0, 255, 0),
           "blue": (0, 0, 255), "yellow": (255, 255, 0), "teal": (0, 128, 128), "brown": (165, 42, 42)}
# question wording of each type, from the package's generator (gen_data/questions.py)
WORDING = {"yes/no": r"(is|does) .*\?", "color": r"what (color is|is the color of) the \w+\?",
           "shape": r"what (shape .*|is the \w+ shape)\?"}


@pytest.fixture(scope="module")
def splits():
    return load_easy_vqa()


@pytest.fixture(scope="module")
def columns(splits):
    """{split: {column: list}} of every column but the image."""
    return {split: splits[split].remove_columns("image").to_dict() for split in splits}


def test_splits_are_disjoint_by_whole_images_and_hold_the_packages_questions_in_order(splits, columns):
    images = {split: set(columns[split]["image_id"]) for split in columns}
    assert {split: len(ids) for split, ids in images.items()} == {"train": 3600, "validation": 400, "test": 1000}
    assert not images["train"] & images["validation"]
    by_hash = sorted(range(4000), key=lambda image_id: hashlib.sha256(str(image_id).encode()).hexdigest())
    assert images["validation"] == set(by_hash[:400])
    assert {split: splits[split].num_rows for split in splits} == {"train": 34727, "validation": 3848, "test": 9673}
    for split, package, count in (("train", easy_vqa.get_train_questions(), 38575),
                                  ("test", easy_vqa.get_test_questions(), 9673)):
        triples = list(zip(*package))
        assert len(triples) == count
        for name in ("test",) if split == "test" else ("train", "validation"):
            got = list(zip(*(columns[name][column] for column in ("question", "answer", "image_id"))))
            assert got == [triple for triple in triples if triple[2] in images[name]]  # in order, as written


@pytest.mark.parametrize("bad", [-1, 4000, True, 1.5])
def test_bad_validation_counts_are_refused(bad):
    with pytest.raises(ValueError, match=rf"`validation_images` must be an int in \[0, 4000\).*got {bad!r}"):
        load_easy_vqa(bad)


def test_a_missing_package_is_named_with_its_pip_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "easy_vqa", None)  # import easy_vqa now raises ImportError
    with pytest.raises(ImportError, match="pip install easy-vqa"):
        load_easy_vqa()


def test_question_types_partition_the_13_answers_and_match_each_questions_wording(columns):
    answers = [answer for kind in QUESTION_TYPES.values() for answer in kind]
    assert len(answers) == 13 and set(answers) == set(easy_vqa.get_answers())
    assert set(QUESTION_TYPES["color"]) == set(COLOURS)
    counts = {split: {kind: columns[split]["question_type"].count(kind) for kind in QUESTION_TYPES}
              for split in columns}
    assert counts == {"train": {"yes/no": 25575, "color": 4638, "shape": 4514},
                      "validation": {"yes/no": 2832, "color": 528, "shape": 488},
                      "test": {"yes/no": 7136, "color": 1280, "shape": 1257}}
    # the package's data/README.md: 28,407 training and 7,136 test questions are yes/no
    assert counts["train"]["yes/no"] + counts["validation"]["yes/no"] == 28407
    for split in columns:
        for question, answer, kind in zip(*(columns[split][c] for c in ("question", "answer", "question_type"))):
            assert kind == question_type(answer)
            assert re.fullmatch(WORDING[kind], question), (question, answer)
    with pytest.raises(ValueError, match=r"`answer` must be one of easy-VQA's answers .*got 'maybe'"):
        question_type("maybe")


def test_images_decode_to_the_packages_rgb_pixels(splits):
    paths = easy_vqa.get_test_image_paths()
    for row in splits["test"].select([0, 500, 9672]):
        assert row["image"].mode == "RGB" and row["image"].size == (64, 64)
        assert np.array_equal(np.asarray(row["image"]), np.asarray(Image.open(paths[row["image_id"]])))


def disc(height: int, width: int, centre: tuple[float, float], radius: float) -> np.ndarray:
    rows, columns = np.mgrid[:height, :width]
    return (rows - centre[0]) ** 2 + (columns - centre[1]) ** 2 <= radius ** 2


def test_shape_mask_is_exact_on_drawn_images():
    image = Image.new("RGB", (40, 30), (240, 235, 250))
    ImageDraw.Draw(image).rectangle([(5, 7), (20, 12)], fill=(165, 42, 42))  # columns 5-20, rows 7-12 inclusive
    expected = np.zeros((30, 40), dtype=bool)
    expected[7:13, 5:21] = True
    assert np.array_equal(shape_mask(image), expected)

    circle = disc(48, 48, (30.0, 17.5), 9.3)
    pixels = np.where(circle[..., None], np.uint8([0, 128, 128]), np.uint8([231, 255, 240]))
    assert np.array_equal(shape_mask(pixels), circle)

    corner = np.full((20, 20, 3), 250, dtype=np.uint8)  # a shape on a corner: the corner pixel is not background,
    corner[:9, :9] = (0, 0, 0)  # the border's most common colour still is
    assert np.array_equal(shape_mask(corner), np.pad(np.ones((9, 9), bool), ((0, 11), (0, 11))))

    assert not shape_mask(Image.new("RGB", (8, 8), (230, 230, 230))).any()


def test_an_edge_pixel_is_on_the_shape_when_more_than_half_covered():
    background, colour = np.array([240.0, 232.0, 250.0]), np.array([255.0, 0.0, 0.0])
    coverage = np.array([0, 1 / 8, 31 / 64, 1 / 2, 33 / 64, 7 / 8, 1])  # easy-VQA's edge values are k/64
    row = np.rint(background + coverage[:, None] * (colour - background)).astype(np.uint8)  # 8-bit as in a PNG
    pixels = np.broadcast_to(row, (7, 7, 3)).copy()
    pixels[[0, -1]] = background.astype(np.uint8)  # a plain border: background is the most common border colour
    pixels[:, 0] = background.astype(np.uint8)
    assert shape_mask(pixels)[3].tolist() == [False, False, False, False, True, True, True]
    # "differs from the background" would also take 1/8, 31/64 and 1/2
    assert (pixels[3] != background.astype(np.uint8)).any(-1).tolist() == [False] + [True] * 6


@pytest.mark.parametrize("bad", [np.zeros((4, 4), np.uint8), np.zeros((4, 4, 3), np.float32),
                                 np.zeros((4, 4, 4), np.uint8)])
def test_shape_mask_refuses_what_is_not_an_rgb_image(bad):
    with pytest.raises(ValueError, match=r"`image` must be a PIL image or a uint8 array \[H, W, 3\]"):
        shape_mask(bad)


# train image id -> (shape, colour) from its questions, and for rectangles the box (rows, columns) seen by eye
REAL = {0: ("rectangle", "blue", (38, 61, 27, 56)), 3: ("rectangle", "brown", (32, 49, 15, 42)),
        156: ("rectangle", "black", (36, 63, 38, 63)), 1: ("triangle", "blue", None), 2: ("triangle", "red", None),
        3822: ("circle", "red", None), 3896: ("circle", "green", None)}


@pytest.mark.parametrize("image_id", sorted(REAL))
def test_shape_masks_of_real_images_hold_the_shape_and_not_the_background(image_id):
    shape, colour, box = REAL[image_id]
    questions = [(q, a) for q, a, i in zip(*easy_vqa.get_train_questions()) if i == image_id]
    assert all(answer in (shape, colour, "yes", "no") for _, answer in questions)
    pixels = np.asarray(Image.open(easy_vqa.get_train_image_paths()[image_id]))
    mask = shape_mask(pixels)
    assert mask[(pixels == COLOURS[colour]).all(-1)].all()  # every pixel of the shape's own colour
    assert not mask[(pixels == pixels[0, 0]).all(-1)].any()  # no pixel of the background colour (a corner's)
    rows, columns = np.nonzero(mask)
    top, bottom, left, right = rows.min(), rows.max(), columns.min(), columns.max()
    inside = mask[top:bottom + 1, left:right + 1]
    runs = [np.flatnonzero(row) for row in inside]
    assert all(len(run) and run[-1] - run[0] + 1 == len(run) for run in runs)  # convex: one run per row
    widths = np.array([len(run) for run in runs])
    if shape == "rectangle":
        assert (top, bottom, left, right) == box and inside.all()
    elif shape == "triangle":  # apex up, flat base at the bottom (the generator's 0 and -60 degree sides)
        assert (np.diff(widths) >= 0).all() and widths[0] <= 3 and widths[-1] == right - left + 1
    else:  # a disc of diameter 2R = the box's width holds between π(R - 1/2)² and π(R + 1/2)² pixel centres
        radius = (right - left + 1) / 2
        assert bottom - top == right - left
        assert np.pi * (radius - 0.5) ** 2 <= mask.sum() <= np.pi * (radius + 0.5) ** 2
        assert widths[len(widths) // 2] == widths.max() == right - left + 1  # widest in the middle


def shape_at(*pixels: tuple[int, int], size: tuple[int, int] = (64, 64)) -> np.ndarray:
    mask = np.zeros(size, dtype=bool)
    for row, column in pixels:
        mask[row, column] = True
    return mask


def one_hot(index: int, length: int = 64) -> np.ndarray:
    weights = np.full(length, 0.1 / (length - 1))
    weights[index] = 0.9
    return weights


def test_the_peak_is_on_the_shape_when_its_8x8_pixel_cell_holds_a_shape_pixel():
    rectangle = np.zeros((64, 64), dtype=bool)
    rectangle[38:62, 27:57] = True  # cells: rows 38-61 -> r 4-7, columns 27-56 -> c 3-7
    cells = np.zeros((8, 8), dtype=bool)
    cells[4:, 3:] = True
    assert np.array_equal(shape_regions((8, 8), rectangle), cells.reshape(-1))
    assert peak_on_shape(one_hot(5 * 8 + 5), (8, 8), rectangle)  # inside
    assert not peak_on_shape(one_hot(0), (8, 8), rectangle)  # outside
    assert peak_on_shape(one_hot(4 * 8 + 3), (8, 8), rectangle)  # the cell of rows 32-39, columns 24-31: 2x5 pixels
    assert not peak_on_shape(one_hot(4 * 8 + 2), (8, 8), rectangle)  # its left neighbour ends at column 23
    assert peak_on_shape(one_hot(0), (8, 8), shape_at((7, 7)))  # a cell's last pixel
    assert not peak_on_shape(one_hot(0), (8, 8), shape_at((8, 8)))  # the next cell's first
    assert peak_on_shape(one_hot(9), (8, 8), shape_at((8, 8)))
    ties = np.zeros(64)
    ties[[3, 40]] = 0.5  # the first maximum in row-major order is the peak
    assert peak_on_shape(ties, (8, 8), shape_at((2, 30))) and not peak_on_shape(ties, (8, 8), shape_at((40, 2)))


def test_the_attention_mass_on_the_shape_sums_the_weights_of_the_regions_it_touches():
    weights = np.zeros(64)
    weights[[0, 4 * 8 + 3, 5 * 8 + 5, 7 * 8 + 7]] = [0.25, 0.125, 0.5, 0.125]
    rectangle = np.zeros((64, 64), dtype=bool)
    rectangle[38:62, 27:57] = True
    assert shape_attention_mass(weights, (8, 8), rectangle) == 0.75
    # the background touches every cell but (5, 5), rows and columns 40-47, wholly inside the rectangle
    assert shape_attention_mass(weights, (8, 8), ~rectangle) == 0.5
    assert shape_attention_mass(weights, (8, 8), np.zeros((64, 64), bool)) == 0.0


def test_an_uneven_grid_has_cells_of_the_ceiling_and_a_smaller_last_one():
    # 10 rows in 4 regions: ⌈10/4⌉ = 3 -> rows 0-2, 3-5, 6-8, 9; 10 columns in 3: ⌈10/3⌉ = 4 -> 0-3, 4-7, 8-9
    for pixel, region in (((9, 9), 3 * 3 + 2), ((2, 4), 0 * 3 + 1), ((3, 3), 1 * 3 + 0), ((8, 8), 2 * 3 + 2)):
        assert shape_regions((4, 3), shape_at(pixel, size=(10, 10))).nonzero()[0].tolist() == [region]
        assert peak_on_shape(one_hot(region, 12), (4, 3), shape_at(pixel, size=(10, 10)))
    assert shape_attention_mass(np.arange(12) / 128, (4, 3), shape_at((9, 0), (9, 9), size=(10, 10))) == 20 / 128
    with pytest.raises(ValueError, match=r"`grid_size` \(6, 1\) leaves regions without pixels.*axis 0"):
        shape_regions((6, 1), np.zeros((10, 10), bool))  # ⌈10/6⌉ = 2: five regions already cover the 10 rows


def test_the_overlap_rate_is_the_share_of_peaks_on_the_shape():
    masks = [shape_at((8, 8)), shape_at((8, 8)), shape_at((60, 60)), shape_at((9, 9), size=(10, 10))]
    weights = [one_hot(9), one_hot(0), one_hot(63), one_hot(0, 12)]  # on, off, on, off the shape
    assert shape_overlap_rate(weights, [(8, 8)] * 3 + [(4, 3)], masks) == 0.5
    with pytest.raises(ValueError, match=r"one entry per example, at least one, got 2, 1 and 1"):
        shape_overlap_rate(weights[:2], [(8, 8)], masks[:1])


@pytest.mark.parametrize("call, message", [
    (lambda: peak_on_shape(np.ones(63) / 63, (8, 8), shape_at((0, 0))), r"`region_weights` must be 64 finite"),
    (lambda: peak_on_shape(np.full(64, np.nan), (8, 8), shape_at((0, 0))), r"`region_weights` must be 64 finite"),
    (lambda: shape_attention_mass(np.ones(64), (8, 0), shape_at((0, 0))), r"`grid_size` must be two ints >= 1"),
    (lambda: shape_regions((8, 8), np.zeros((64, 64), np.uint8)), r"`mask` must be a bool array \[H, W\]"),
])
def test_bad_attention_inputs_are_refused_naming_the_argument(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_the_written_folder_reads_back_with_load_dataset_as_the_rows_in_memory(splits, tmp_path):
    part = datasets.DatasetDict({split: splits[split].select(range(0, splits[split].num_rows, 97))
                                 for split in splits})  # rows of several questions per image, in every split
    report = write_vqa_folder(part, tmp_path / "vqa")
    assert report["test"] == {"questions": 100, "images": len(set(part["test"]["image_id"])),
                              **{kind: part["test"]["question_type"].count(kind) for kind in QUESTION_TYPES}}
    loaded = datasets.load_dataset(str(tmp_path / "vqa"), cache_dir=str(tmp_path / "cache"))
    assert set(loaded) == {"train", "validation", "test"}
    for split in splits:
        assert loaded[split].column_names == ["image", "question", "answer", "question_type", "image_id"]
        assert loaded[split].remove_columns("image").to_list() == part[split].remove_columns("image").to_list()
        lines = (tmp_path / "vqa" / split / "metadata.jsonl").read_text(encoding="utf-8").splitlines()
        assert [json.loads(line)["question"] for line in lines] == part[split]["question"]
        for written, original in zip(loaded[split].select(range(3)), part[split].select(range(3))):
            assert np.array_equal(np.asarray(written["image"]), np.asarray(original["image"]))
    paths = easy_vqa.get_train_image_paths()
    image_id = part["train"][0]["image_id"]
    assert (tmp_path / "vqa" / "train" / f"{image_id}.png").read_bytes() == open(paths[image_id], "rb").read()
