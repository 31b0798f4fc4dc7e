"""Data and metrics for two pointer-network demonstrations of Vinyals, Fortunato & Jaitly, "Pointer Networks"
(NeurIPS 2015): sorting n numbers, and the planar convex hull. Each problem is described once, in ``PROBLEMS``: its
inputs, how its examples are drawn and how predictions are scored; the training task reads no problem's name.

    from training.data.pointer_tasks import PROBLEMS, make_dataset, hull_metrics
    PROBLEMS["convex_hull"].feature_size                                   # 2: each input is a point (x, y)
    train = make_dataset("convex_hull", n=(5, 50), size=100_000, seed=0)   # the paper trains on n = 5…50
    test = make_dataset("convex_hull", n=50, size=1000, seed=1)
    scores = hull_metrics(predictions, [row["input_features"] for row in test])

Each row is ``{"input_features": [[x, y], ...], "labels": [1, 4, 3, 0]}``: ``input_features`` is [n, F] (F = 1 for
sorting, 2 for the hull), float32 values uniform in [0, 1), and ``labels`` is a sequence of *pointer ids*: id j + 1
points at input position j (0-based), and id 0 (``END``) ends the output, as in the paper's figures. For sorting the
target is the positions in ascending order of value (ties, rare in float32, in order of position); for the hull it is
the hull's vertices counter-clockwise from the vertex with the smallest index, the order Vinyals et al. train on
(they start from the point with the lowest index and go counter-clockwise).

The hull and the polygon tests are exact: finite floats are dyadic rationals, so the points are put on one integer
grid (``x · 2^k`` for a single k), where orientation tests, segment intersections and shoelace areas are integer
arithmetic. Collinear points on the hull's boundary are not vertices. Hull metrics follow the paper's Table 1:
accuracy (the predicted polygon is the true hull), and the area of the predicted polygon over the area of the true
hull, taken over the predictions that are simple polygons; the paper writes "FAIL" when more than 1% are not.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

END = 0  # the pointer id that ends an output
FAIL_FRACTION = 0.01  # Vinyals et al. report "FAIL" when more than this fraction of outputs are not simple polygons

Point = tuple[int, int]  # a point on the exact integer grid

# The figures the demonstrations are compared with, as fractions: Vinyals et al. 2015, table 1 (convex hull), keyed by
# (method, trained n, tested n); a trained n of (5, 50) means n drawn from 5…50, as ``make_dataset``'s ``n``. "FAIL" is
# the paper's mark for more than 1% of outputs that are not simple polygons. Quoted from the paper's table; the paper
# trains on 1M examples per setting, with LSTMs of 256 or 512 units.
PAPER_RESULTS: dict[str, dict[tuple[str, int | tuple[int, int], int], dict[str, float | str]]] = {
    "convex_hull": {
        ("LSTM", 50, 50): {"accuracy": 0.019, "area_coverage": "FAIL"},
        ("LSTM+attention", 50, 50): {"accuracy": 0.389, "area_coverage": 0.997},
        ("Ptr-Net", 50, 50): {"accuracy": 0.726, "area_coverage": 0.999},
        ("LSTM", 5, 5): {"accuracy": 0.877, "area_coverage": 0.996},
        ("Ptr-Net", (5, 50), 5): {"accuracy": 0.920, "area_coverage": 0.996},
        ("LSTM", 10, 10): {"accuracy": 0.299, "area_coverage": "FAIL"},
        ("Ptr-Net", (5, 50), 10): {"accuracy": 0.870, "area_coverage": 0.998},
        ("Ptr-Net", (5, 50), 50): {"accuracy": 0.696, "area_coverage": 0.999},
        ("Ptr-Net", (5, 50), 100): {"accuracy": 0.503, "area_coverage": 0.999},
        ("Ptr-Net", (5, 50), 200): {"accuracy": 0.221, "area_coverage": 0.999},
        ("Ptr-Net", (5, 50), 500): {"accuracy": 0.013, "area_coverage": 0.992},
    },
    # The paper reports no sorting results: its abstract names sorting as a problem of this class, but its
    # experiments are the convex hull, Delaunay triangulation and the TSP.
    "sorting": {},
}


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _n_range(task: str, n, ranges: bool = True) -> tuple[int, int]:
    """(low, high) of an ``n`` that is an int, or (with ``ranges``) a (low, high) tuple, inclusive."""
    if task not in PROBLEMS:
        raise ValueError(f"task must be one of {sorted(PROBLEMS)}, got {task!r}")
    low = high = n
    if ranges and isinstance(n, tuple) and len(n) == 2:
        low, high = n
    least = PROBLEMS[task].min_n
    if not (_is_int(low) and _is_int(high) and least <= low <= high):
        allowed = f"an int >= {least}" + (f" or a (low, high) tuple of ints with {least} <= low <= high" if ranges
                                          else "")
        raise ValueError(f"n for task {task!r} must be {allowed}, got {n!r}")
    return int(low), int(high)


def pointer_ids(positions: Sequence[int]) -> list[int]:
    """0-based input positions → their pointer ids (position + 1), followed by ``END``."""
    return [int(position) + 1 for position in positions] + [END]


def sorting_example(rng: np.random.Generator, n: int) -> tuple[np.ndarray, list[int]]:
    """n numbers uniform in [0, 1): features [n, 1] float32, and the positions in ascending order of value as pointer
    ids (n + 1, the last ``END``); equal values keep their order of position."""
    _n_range("sorting", n, ranges=False)
    values = rng.random(n, dtype=np.float32)
    return values[:, None], pointer_ids(np.argsort(values, kind="stable"))


def _as_points(points, name: str = "points") -> np.ndarray:
    """``points`` as an [n, 2] array of finite numbers (lists of lists included)."""
    array = np.asarray(points)
    if array.size == 0:
        return array.reshape(0, 2)
    if array.ndim != 2 or array.shape[1] != 2 or not np.issubdtype(array.dtype, np.number):
        raise ValueError(f"{name} must be an [n, 2] array of numbers, got shape {array.shape} ({array.dtype})")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} must be finite, got {array[~np.isfinite(array).all(axis=1)].tolist()}")
    return array


def _grid(points: np.ndarray) -> tuple[list[Point], int]:
    """[n, 2] finite points → the same points as integers ``x · scale`` (scale a power of 2, one for all points),
    and the scale: exact, and orientation-, order- and area-preserving up to the factor."""
    ratios = [float(value).as_integer_ratio() for value in points.ravel()]  # denominators are powers of 2
    scale = max((denominator for _, denominator in ratios), default=1)
    values = [numerator * (scale // denominator) for numerator, denominator in ratios]
    return list(zip(values[0::2], values[1::2])), scale


def _cross(origin: Point, a: Point, b: Point) -> int:
    """Twice the signed area of the triangle (origin, a, b): > 0 when b is left of origin → a, 0 when collinear."""
    return (a[0] - origin[0]) * (b[1] - origin[1]) - (a[1] - origin[1]) * (b[0] - origin[0])


def convex_hull(points) -> list[int]:
    """0-based indices of the convex hull's vertices of [n, 2] points, counter-clockwise, starting from the vertex
    with the smallest index (Vinyals et al.'s order). Andrew's monotone chain with exact orientation tests; points
    on the boundary between two vertices are not vertices, and of equal points only the smallest index is used.

    Degenerate sets: no points → []; one distinct point → [its index]; distinct points all on one line (two
    included) → the segment's two endpoints, the smaller index first."""
    grid, _ = _grid(_as_points(points))
    first: dict[Point, int] = {}
    for index, point in enumerate(grid):
        first.setdefault(point, index)
    order = sorted(first)  # by x, then y
    if len(order) < 3:
        chain = order
    else:
        lower: list[Point] = []
        upper: list[Point] = []
        for half, sweep in ((lower, order), (upper, order[::-1])):
            for point in sweep:
                while len(half) >= 2 and _cross(half[-2], half[-1], point) <= 0:
                    half.pop()
                half.append(point)
        chain = lower[:-1] + upper[:-1]
    indices = [first[point] for point in chain]
    start = indices.index(min(indices)) if indices else 0
    return indices[start:] + indices[:start]


def hull_example(rng: np.random.Generator, n: int) -> tuple[np.ndarray, list[int]]:
    """n points uniform in [0, 1)²: features [n, 2] float32, and their convex hull (computed on these float32
    values) as pointer ids, the last ``END``."""
    _n_range("convex_hull", n, ranges=False)
    points = rng.random((n, 2), dtype=np.float32)
    return points, pointer_ids(convex_hull(points))


def make_dataset(task: str, n: int | tuple[int, int], size: int, seed: int) -> list[dict]:
    """``size`` rows {"input_features": [n][F] floats, "labels": pointer ids} of ``task`` (a name of
    ``PROBLEMS``); ``n`` an int, or (low, high) to draw each example's n uniformly from low…high. The same
    arguments always give the same rows."""
    low, high = _n_range(task, n)
    if not _is_int(size) or size < 0:
        raise ValueError(f"size must be an int >= 0, got {size!r}")
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(size):
        features, labels = PROBLEMS[task].example(rng, int(rng.integers(low, high + 1)))
        rows.append({"input_features": features.tolist(), "labels": labels})
    return rows


def _until_end(ids: Sequence[int]) -> list[int]:
    """The pointer ids before the first ``END`` (all of them when there is none)."""
    ids = [int(i) for i in ids]
    return ids[:ids.index(END)] if END in ids else ids


def _check_pairs(predictions: Sequence, references: Sequence, references_name: str = "references") -> None:
    if len(predictions) != len(references):
        raise ValueError(f"predictions and {references_name} must have the same length, got {len(predictions)} and "
                         f"{len(references)}")
    if not predictions:
        raise ValueError("predictions must not be empty")


def sequence_accuracy(predictions: Sequence[Sequence[int]], references: Sequence[Sequence[int]]) -> float:
    """The fraction of predictions whose pointer ids equal the reference's, both read up to their first ``END`` (a
    prediction without one runs to its end)."""
    _check_pairs(predictions, references)
    return sum(_until_end(p) == _until_end(r) for p, r in zip(predictions, references)) / len(predictions)


def _same_cycle(prediction: list[int], reference: list[int]) -> bool:
    """Whether two vertex sequences are the same cycle: equal up to where they start (not reversed)."""
    return len(prediction) == len(reference) and any(
        prediction == reference[start:] + reference[:start] for start in range(max(len(reference), 1)))


def hull_accuracy(predictions: Sequence[Sequence[int]], references: Sequence[Sequence[int]]) -> float:
    """The fraction of predicted hulls that are the reference polygon: the same vertices in the same cyclic
    (counter-clockwise) order, whatever vertex they start from (ids read up to the first ``END``): at least
    ``sequence_accuracy``, the strict exact match, and above it only for predictions that start elsewhere than the
    reference (the smallest index)."""
    _check_pairs(predictions, references)
    return sum(_same_cycle(_until_end(p), _until_end(r)) for p, r in zip(predictions, references)) / len(predictions)


def _twice_area(vertices: Sequence[Point]) -> int:
    """Twice the signed shoelace area of a polygon on the grid: > 0 counter-clockwise."""
    return sum(a[0] * b[1] - b[0] * a[1] for a, b in zip(vertices, [*vertices[1:], *vertices[:1]]))


def shoelace_area(vertices) -> float:
    """The signed area of the polygon with vertices [k, 2] in order (closed from the last back to the first):
    positive when counter-clockwise, negative when clockwise, exact up to the final rounding."""
    grid, scale = _grid(_as_points(vertices, "vertices"))
    return float(Fraction(_twice_area(grid), 2 * scale * scale))


def _on_segment(a: Point, b: Point, point: Point) -> bool:
    """Whether a point collinear with a and b lies on the closed segment [a, b]."""
    return min(a[0], b[0]) <= point[0] <= max(a[0], b[0]) and min(a[1], b[1]) <= point[1] <= max(a[1], b[1])


def _segments_meet(p: Point, q: Point, r: Point, s: Point) -> bool:
    """Whether the closed segments [p, q] and [r, s] have a point in common (touching included)."""
    d1, d2, d3, d4 = _cross(r, s, p), _cross(r, s, q), _cross(p, q, r), _cross(p, q, s)
    if d1 * d2 < 0 and d3 * d4 < 0:
        return True
    return ((d1 == 0 and _on_segment(r, s, p)) or (d2 == 0 and _on_segment(r, s, q))
            or (d3 == 0 and _on_segment(p, q, r)) or (d4 == 0 and _on_segment(p, q, s)))


def _is_simple(vertices: list[Point]) -> bool:
    """Whether a closed polygon on the grid is simple: 3 or more distinct vertices, consecutive edges that meet only
    at their shared vertex (no fold back along a line), and other edges that do not meet at all."""
    k = len(vertices)
    if k < 3 or len(set(vertices)) < k:
        return False
    for i in range(k):
        before, vertex, after = vertices[i - 1], vertices[i], vertices[(i + 1) % k]
        back = (before[0] - vertex[0]) * (after[0] - vertex[0]) + (before[1] - vertex[1]) * (after[1] - vertex[1])
        if _cross(before, vertex, after) == 0 and back > 0:
            return False  # the edge out of the vertex runs back along the edge into it
    edges = [(vertices[i], vertices[(i + 1) % k]) for i in range(k)]
    return not any(_segments_meet(*edges[i], *edges[j])
                   for i in range(k) for j in range(i + 2, k) if not (i == 0 and j == k - 1))


def is_simple_polygon(vertices) -> bool:
    """Whether the polygon with vertices [k, 2] in order is simple (see ``area_coverage``), by exact tests."""
    return _is_simple(_grid(_as_points(vertices, "vertices"))[0])


def area_coverage(predicted_ids: Sequence[int], points) -> float | None:
    """The area of the polygon the predicted pointer ids trace on [n, 2] points (ids read up to the first ``END``)
    over the area of the points' true hull; its vertices are input points, so it lies inside the hull and 1.0 means
    it covers it. Either orientation counts. None when the prediction is not a simple polygon: fewer than 3 vertices,
    a repeated vertex, an id that is no input position (1…n), edges that cross or touch, or a polygon of no area."""
    array = _as_points(points)
    grid, _ = _grid(array)
    ids = _until_end(predicted_ids)
    if not all(1 <= i <= len(grid) for i in ids):
        return None
    polygon = [grid[i - 1] for i in ids]
    if not _is_simple(polygon):
        return None  # a simple polygon has 3 non-collinear points, so the true hull below has an area
    return abs(_twice_area(polygon)) / abs(_twice_area([grid[i] for i in convex_hull(array)]))


def hull_metrics(predictions: Sequence[Sequence[int]], point_sets: Sequence) -> dict:
    """Table 1's metrics of predicted pointer ids against the true hulls of their [n, 2] point sets:
    {"accuracy": ``hull_accuracy``, "area_coverage": the mean ``area_coverage`` over the predictions that are simple
    polygons (None if none is), "invalid_fraction": the fraction that are not, "fail": whether that is more than
    ``FAIL_FRACTION``, when the paper reports "FAIL" for the area}."""
    _check_pairs(predictions, point_sets, "point_sets")
    references = [pointer_ids(convex_hull(points)) for points in point_sets]
    coverages = [area_coverage(p, points) for p, points in zip(predictions, point_sets)]
    valid = [coverage for coverage in coverages if coverage is not None]
    invalid_fraction = 1 - len(valid) / len(coverages)
    return {"accuracy": hull_accuracy(predictions, references),
            "area_coverage": sum(valid) / len(valid) if valid else None,
            "invalid_fraction": invalid_fraction,
            "fail": invalid_fraction > FAIL_FRACTION}


def sorting_scores(predictions: Sequence[Sequence[int]], labels: Sequence[Sequence[int]],
                   point_sets: Sequence) -> dict[str, float]:
    """Sorting's score: ``exact_match``, the fraction of outputs in exactly the reference order."""
    return {"exact_match": sequence_accuracy(predictions, labels)}


def hull_scores(predictions: Sequence[Sequence[int]], labels: Sequence[Sequence[int]],
                point_sets: Sequence) -> dict[str, float]:
    """The convex hull's scores (``hull_metrics``, against the point sets' own hulls): ``accuracy``,
    ``area_coverage`` (0 when no output is a simple polygon) and ``invalid_fraction``."""
    scores = hull_metrics(predictions, point_sets)
    return {"accuracy": scores["accuracy"], "area_coverage": scores["area_coverage"] or 0.0,
            "invalid_fraction": scores["invalid_fraction"]}


@dataclass(frozen=True)
class PointerProblem:
    """A problem for a pointer network. ``feature_size``: numbers per input (a value, a point); ``min_n``: the fewest
    inputs of an example; ``example(rng, n)``: one example of n inputs, (features [n, feature_size] float32, pointer
    ids); ``scores(predictions, labels, point_sets)``: metric name -> fraction, for the predicted pointer ids of rows
    with these labels and inputs."""

    name: str
    feature_size: int
    min_n: int
    example: Callable[[np.random.Generator, int], tuple[np.ndarray, list[int]]]
    scores: Callable[[Sequence[Sequence[int]], Sequence[Sequence[int]], Sequence], dict[str, float]]


PROBLEMS = {problem.name: problem for problem in (
    PointerProblem("sorting", feature_size=1, min_n=1, example=sorting_example, scores=sorting_scores),
    PointerProblem("convex_hull", feature_size=2, min_n=3, example=hull_example, scores=hull_scores),
)}
