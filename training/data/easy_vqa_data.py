"""The easy-VQA data (Victor Zhou, MIT licence) for visual question answering, read offline from the ``easy-vqa``
package (``pip install easy-vqa``), and the masks that check where an image attention looks.

The package holds 4,000 training and 1,000 test RGB images of 64×64 pixels, each one shape (circle, rectangle,
triangle) in one of 8 colours on a plain background, with 38,575 / 9,673 generated questions over 13 answers.
``load_easy_vqa`` gives them as a ``datasets.DatasetDict`` (train / validation / test; validation = whole training
images set aside by a hash of their id, so its questions are about images no training question saw).

The images were drawn at twice their size and shrunk with a bilinear filter: every pixel is the background colour
b, the shape's colour f, or a blend p = b + α (f − b) on the shape's edge, α being the share of the shape in the
filter's window (a multiple of 1/64; measured: every pixel lies within 1.04 of that line in RGB units).
``shape_mask`` keeps the pixels more than half covered (α > 1/2), i.e. those whose centre lies inside the shape:
its rectangles are exact rectangles (1,467 of the 1,517 whose shape the questions name; the other 50 lose 1-2 corner
pixels where they meet the image's edge), and its area is 0.96 (0.79–1.02) times the shape's true area Σα on the
training images, while "any pixel that differs from the background" is 1.25 (1.04–1.84) times it (a one-pixel
halo).

``peak_on_shape``, ``shape_attention_mass`` and ``shape_overlap_rate`` read attention weights over a grid of
h'×w' regions (row-major: region (r, c) is index r·w' + c), region (r, c) covering the pixel rows
[r·k, min((r + 1)·k, H)) with k = ⌈H / h'⌉, and the columns likewise: a CNN's ceil-mode pooling layout.
"""

import hashlib

import datasets
import numpy as np
from PIL import Image

__all__ = [
    "QUESTION_TYPES", "load_easy_vqa", "peak_on_shape", "question_type", "shape_attention_mass", "shape_mask",
    "shape_overlap_rate", "shape_regions", "validation_image_ids",
]

QUESTION_TYPES: dict[str, tuple[str, ...]] = {  # question type -> the answers that make a question of that type
    "yes/no": ("yes", "no"),
    "color": ("black", "blue", "brown", "gray", "green", "red", "teal", "yellow"),
    "shape": ("circle", "rectangle", "triangle"),
}
_TYPE_OF_ANSWER = {answer: kind for kind, answers in QUESTION_TYPES.items() for answer in answers}
TRAIN_IMAGES = 4000  # the package's training images, of which load_easy_vqa's validation split takes some
FEATURES = datasets.Features({
    "image": datasets.Image(mode="RGB"), "question": datasets.Value("string"), "answer": datasets.Value("string"),
    "question_type": datasets.Value("string"), "image_id": datasets.Value("int64"),
})
# α of an exactly half-covered edge pixel reads 0.5 ± 0.005 after 8-bit rounding (≤ 0.5·√3 / |f − b| for the
# package's colours, |f − b| ≥ 177); the threshold sits halfway to the next coverage, 33/64
HALF_COVERAGE = 0.5 + 1 / 128


def question_type(answer: str) -> str:
    """The type of a question with this answer: "yes/no", "color" or "shape" (``QUESTION_TYPES``)."""
    if answer not in _TYPE_OF_ANSWER:
        raise ValueError(f"`answer` must be one of easy-VQA's answers {sorted(_TYPE_OF_ANSWER)}, got {answer!r}.")
    return _TYPE_OF_ANSWER[answer]


def validation_image_ids(image_ids: list[int], count: int) -> set[int]:
    """The `count` ids first in the order of SHA-256(str(id)): a split that depends on the ids alone."""
    return set(sorted(image_ids, key=lambda image_id: hashlib.sha256(str(image_id).encode()).hexdigest())[:count])


def _split(questions: tuple[list, list, list], paths: dict[int, str], image_ids: set[int]) -> datasets.Dataset:
    """The questions about `image_ids`, in the package's order, as a Dataset of FEATURES (images read lazily)."""
    rows = [(question, answer, image_id) for question, answer, image_id in zip(*questions) if image_id in image_ids]
    return datasets.Dataset.from_dict({
        "image": [paths[image_id] for _, _, image_id in rows],
        "question": [question for question, _, _ in rows],
        "answer": [answer for _, answer, _ in rows],
        "question_type": [question_type(answer) for _, answer, _ in rows],
        "image_id": [image_id for _, _, image_id in rows],
    }, features=FEATURES)


def load_easy_vqa(validation_images: int = 400) -> datasets.DatasetDict:
    """easy-VQA as splits train / validation / test with columns image (RGB), question, answer, question_type,
    image_id. Validation holds the questions about `validation_images` training images (``validation_image_ids``),
    train those about the others; test is the package's test set."""
    try:
        import easy_vqa
    except ImportError as error:
        raise ImportError("load_easy_vqa reads the easy-VQA data from the easy-vqa package (MIT licence), which is "
                          "not installed: pip install easy-vqa") from error
    if isinstance(validation_images, bool) or not isinstance(validation_images, int) \
            or not 0 <= validation_images < TRAIN_IMAGES:
        raise ValueError(f"`validation_images` must be an int in [0, {TRAIN_IMAGES}) (training images set aside), "
                         f"got {validation_images!r}.")
    sources = {"train": (easy_vqa.get_train_questions(), easy_vqa.get_train_image_paths()),
               "test": (easy_vqa.get_test_questions(), easy_vqa.get_test_image_paths())}
    for name, (questions, paths) in sources.items():
        if missing := sorted(set(questions[2]) - set(paths)):
            raise ValueError(f"The easy-vqa package's {name} questions ask about images it lacks: ids {missing[:5]}; "
                             f"reinstall it: pip install --force-reinstall easy-vqa")
    (train_questions, train_paths), (test_questions, test_paths) = sources["train"], sources["test"]
    validation = validation_image_ids(list(train_paths), validation_images)
    return datasets.DatasetDict({
        "train": _split(train_questions, train_paths, set(train_paths) - validation),
        "validation": _split(train_questions, train_paths, validation),
        "test": _split(test_questions, test_paths, set(test_paths)),
    })


def shape_mask(image: Image.Image | np.ndarray) -> np.ndarray:
    """The pixels of the one shape on a plain background: α > 1/2 (``HALF_COVERAGE``), where
    α = (p − b)·(f − b) / |f − b|² projects a pixel p onto the line from the background colour b (the most common
    colour of the image's border) to the shape's colour f (the pixel farthest from b).

    image: PIL image or uint8 array [H, W, 3] -> bool [H, W] (all False when every pixel is b).
    """
    pixels = np.asarray(image.convert("RGB") if isinstance(image, Image.Image) else image)
    if pixels.dtype != np.uint8 or pixels.ndim != 3 or pixels.shape[2] != 3 or min(pixels.shape[:2]) < 1:
        raise ValueError(f"`image` must be a PIL image or a uint8 array [H, W, 3], got {pixels.dtype} "
                         f"array {list(pixels.shape)}.")
    pixels = pixels.astype(np.float64)
    border = np.concatenate([pixels[0], pixels[-1], pixels[:, 0], pixels[:, -1]])
    colours, counts = np.unique(border, axis=0, return_counts=True)
    background = colours[counts.argmax()]
    offsets = pixels - background  # [H, W, 3]
    distances = (offsets ** 2).sum(-1)
    shape_colour = offsets[np.unravel_index(distances.argmax(), distances.shape)]  # f − b
    if not shape_colour.any():
        return np.zeros(pixels.shape[:2], dtype=bool)
    return offsets @ shape_colour / (shape_colour @ shape_colour) > HALF_COVERAGE


def shape_regions(grid_size: tuple[int, int], mask: np.ndarray) -> np.ndarray:
    """Which regions of a h'×w' grid over the mask's image hold a shape pixel: region (r, c) covers rows
    [r·k, min((r + 1)·k, H)) with k = ⌈H / h'⌉, columns likewise.

    grid_size (h', w'), mask bool [H, W] -> bool [h'·w'] (row-major: region (r, c) is index r·w' + c).
    """
    mask = np.asarray(mask)
    if mask.dtype != np.bool_ or mask.ndim != 2:
        raise ValueError(f"`mask` must be a bool array [H, W], got {mask.dtype} array {list(mask.shape)}.")
    if len(grid_size) != 2 or not all(isinstance(size, (int, np.integer)) and size >= 1 for size in grid_size):
        raise ValueError(f"`grid_size` must be two ints >= 1 (rows h', columns w'), got {grid_size!r}.")
    cells = []
    for axis, (pixels, regions) in enumerate(zip(mask.shape, grid_size)):
        cell = -(-pixels // regions)  # ⌈pixels / regions⌉
        if (regions - 1) * cell >= pixels:
            raise ValueError(f"`grid_size` {tuple(grid_size)} leaves regions without pixels on a mask of "
                             f"{list(mask.shape)}: {regions} regions of ⌈{pixels}/{regions}⌉ = {cell} pixels along "
                             f"axis {axis} need more than {(regions - 1) * cell} pixels.")
        cells.append(cell)
    (rows, columns), (cell_rows, cell_columns) = grid_size, cells
    padded = np.zeros((rows * cell_rows, columns * cell_columns), dtype=bool)
    padded[:mask.shape[0], :mask.shape[1]] = mask
    return padded.reshape(rows, cell_rows, columns, cell_columns).any(axis=(1, 3)).reshape(-1)


def _weights(region_weights, grid_size: tuple[int, int]) -> np.ndarray:
    """region_weights as a float64 vector [h'·w'], checked against the grid."""
    weights = np.asarray(region_weights, dtype=np.float64)
    if weights.ndim != 1 or weights.shape[0] != int(np.prod(grid_size)) or not np.isfinite(weights).all():
        raise ValueError(f"`region_weights` must be {int(np.prod(grid_size))} finite weights (one per region of the "
                         f"{tuple(grid_size)} grid), got shape {list(weights.shape)}.")
    return weights


def peak_on_shape(region_weights, grid_size: tuple[int, int], mask: np.ndarray) -> bool:
    """Whether the region of highest attention weight (the first in row-major order on ties) holds a shape pixel.

    region_weights [h'·w'], grid_size (h', w'), mask bool [H, W] (``shape_mask``).
    """
    overlaps = shape_regions(grid_size, mask)
    return bool(overlaps[_weights(region_weights, grid_size).argmax()])


def shape_attention_mass(region_weights, grid_size: tuple[int, int], mask: np.ndarray) -> float:
    """Σ of the weights of the regions that hold a shape pixel (of 1 for an attention distribution).

    region_weights [h'·w'], grid_size (h', w'), mask bool [H, W] (``shape_mask``).
    """
    overlaps = shape_regions(grid_size, mask)
    return float(_weights(region_weights, grid_size)[overlaps].sum())


def shape_overlap_rate(weights_list, grid_sizes, masks) -> float:
    """The fraction of examples whose attention peak is on the shape: mean of ``peak_on_shape`` over the triples
    (weights_list[i] [h'_i·w'_i], grid_sizes[i] (h'_i, w'_i), masks[i] bool [H_i, W_i])."""
    weights_list, grid_sizes, masks = list(weights_list), list(grid_sizes), list(masks)
    if not len(weights_list) == len(grid_sizes) == len(masks) or not weights_list:
        raise ValueError(f"`weights_list`, `grid_sizes` and `masks` must hold one entry per example, at least one, "
                         f"got {len(weights_list)}, {len(grid_sizes)} and {len(masks)}.")
    return sum(map(peak_on_shape, weights_list, grid_sizes, masks)) / len(weights_list)
