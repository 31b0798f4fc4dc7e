"""Pointer-network tasks: exact convex hulls in Vinyals et al.'s order, sorting targets, datasets, and the metrics."""

import json
from fractions import Fraction

import numpy as np
import pytest

from training.data.pointer_tasks import (
    END, PAPER_RESULTS, PROBLEMS, area_coverage, convex_hull, hull_accuracy, hull_example, hull_metrics,
    is_simple_polygon, make_dataset, pointer_ids, sequence_accuracy, shoelace_area, sorting_example,
)

SQUARE = [(0, 0), (1, 0), (1, 1), (0, 1)]
TINY = 2.0 ** -53  # the spacing of floats just above 0.5


def test_square_with_an_interior_point():
    assert convex_hull(np.array([*SQUARE, (0.5, 0.5)])) == [0, 1, 2, 3]


def test_the_hull_starts_at_the_smallest_index_and_turns_counter_clockwise():
    points = np.array([(1, 1), (0.5, 0.5), (0, 0), (1, 0), (0, 1)])
    hull = convex_hull(points)
    assert hull == [0, 4, 2, 3]  # (1, 1) → (0, 1) → (0, 0) → (1, 0)
    assert shoelace_area(points[hull]) == 1.0  # positive: counter-clockwise


def test_points_on_an_edge_are_not_vertices():
    assert convex_hull(np.array([(0, 0), (2, 0), (1, 0), (1, 1)])) == [0, 1, 3]
    assert convex_hull(np.array([(0, 0), (1, 1), (0, 2), (0, 1), (0.5, 0.5), (0.25, 1.75)])) == [0, 1, 2]


def test_orientation_is_exact_one_float_off_an_edge():
    triangle = [(0, 0), (1, 0), (1, 1)]  # its edge (1, 1) → (0, 0) is the diagonal
    assert convex_hull(np.array([*triangle, (0.5, 0.5)])) == [0, 1, 2]  # on the edge
    assert convex_hull(np.array([*triangle, (0.5, 0.5 - TINY / 2)])) == [0, 1, 2]  # inside
    assert convex_hull(np.array([*triangle, (0.5, 0.5 + TINY)])) == [0, 1, 2, 3]  # just outside


def test_orientation_is_exact_where_float_arithmetic_rounds_to_collinear():
    # Kettner et al., "Classroom examples of robustness problems in geometric computations": in doubles, every
    # orientation test of these three points computes 0.
    line = [(12.0, 12.0), (24.0, 24.0)]
    assert convex_hull(np.array([*line, (0.5, 0.5 + TINY)])) == [0, 1, 2]  # left of (12, 12) → (24, 24)
    assert convex_hull(np.array([*line, (0.5 + TINY, 0.5)])) == [0, 2, 1]  # right of it
    assert convex_hull(np.array([*line, (0.5, 0.5)])) == [1, 2]


def test_collinear_points_give_the_two_endpoints_smaller_index_first():
    assert convex_hull(np.array([(2, 2), (0, 0), (3, 3), (1, 1)])) == [1, 2]
    assert convex_hull(np.array([(3, 0), (1, 0), (0, 0)])) == [0, 2]


def test_duplicated_points_use_their_smallest_index():
    assert convex_hull(np.array([*SQUARE, (1, 0), (0, 0)])) == [0, 1, 2, 3]
    assert convex_hull(np.array([(1, 1), (0, 0), (1, 0), (0, 1), (0, 0), (1, 1)])) == [0, 3, 1, 2]


def test_fewer_than_three_points():
    assert convex_hull(np.zeros((0, 2))) == []
    assert convex_hull(np.array([(0.3, 0.7)])) == [0]
    assert convex_hull(np.array([(0.3, 0.7), (0.3, 0.7)])) == [0]
    assert convex_hull(np.array([(0.9, 0.1), (0.3, 0.7)])) == [0, 1]
    assert convex_hull(np.array([(0.3, 0.7), (0.9, 0.1)])) == [0, 1]


def brute_force_edges(points: np.ndarray) -> set[tuple[int, int]]:
    """O(n³) with exact rationals: directed edges (i, j) between distinct points (the smallest index of equal ones)
    with every point strictly left of i → j or on the closed segment [i, j]."""
    exact = [(Fraction(float(x)), Fraction(float(y))) for x, y in points]
    first = {}
    for index, point in enumerate(exact):
        first.setdefault(point, index)

    def cross(o, a, b):
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    def on_segment(a, b, p):
        return min(a[0], b[0]) <= p[0] <= max(a[0], b[0]) and min(a[1], b[1]) <= p[1] <= max(a[1], b[1])

    return {(first[a], first[b]) for a in first for b in first if a != b
            and all(cross(a, b, p) > 0 or (cross(a, b, p) == 0 and on_segment(a, b, p)) for p in first)}


def random_point_sets(count: int):
    rng = np.random.default_rng(0)
    for _ in range(count):
        n = int(rng.integers(3, 16))
        kind = rng.integers(3)
        if kind == 0:
            yield rng.random((n, 2), dtype=np.float32)
        else:  # a small grid: many collinear and equal points; scaled by 0.1 they are only nearly collinear
            yield rng.integers(0, 4, size=(n, 2)) * (1.0 if kind == 1 else 0.1)


def test_the_hull_agrees_with_a_brute_force_check():
    for points in random_point_sets(300):
        hull = convex_hull(points)
        edges = brute_force_edges(points)
        if len(hull) >= 3:
            assert set(zip(hull, hull[1:] + hull[:1])) == edges, points.tolist()
            assert hull[0] == min(hull)
            assert shoelace_area(points[hull]) > 0
        else:  # all points on a line: the brute force finds the segment both ways
            assert edges == ({(hull[0], hull[1]), (hull[1], hull[0])} if len(hull) == 2 else set()), points.tolist()


def test_sorting_targets_sort():
    rng = np.random.default_rng(0)
    for n in (1, 2, 7, 30):
        features, labels = sorting_example(rng, n)
        assert features.shape == (n, 1) and features.dtype == np.float32
        assert labels[-1] == END and sorted(labels[:-1]) == list(range(1, n + 1))
        values = features[np.array(labels[:-1]) - 1, 0]
        assert (np.diff(values) >= 0).all() and ((0 <= values) & (values < 1)).all()


def test_hull_examples_point_at_the_hull_of_their_float32_points():
    rng = np.random.default_rng(0)
    for n in (3, 5, 50):
        features, labels = hull_example(rng, n)
        assert features.shape == (n, 2) and features.dtype == np.float32
        assert labels == pointer_ids(convex_hull(features)) and labels[-1] == END and labels[0] == min(labels[:-1])


def test_datasets_are_deterministic_per_seed_and_draw_n_from_the_range():
    rows = make_dataset("convex_hull", (5, 8), size=60, seed=3)
    assert rows == make_dataset("convex_hull", (5, 8), size=60, seed=3)
    assert rows != make_dataset("convex_hull", (5, 8), size=60, seed=4)
    assert {len(row["input_features"]) for row in rows} == {5, 6, 7, 8}
    for row in json.loads(json.dumps(rows)):  # what a JSON lines file gives back
        assert row["labels"] == pointer_ids(convex_hull(np.array(row["input_features"])))
    assert make_dataset("sorting", 4, size=3, seed=0) == make_dataset("sorting", (4, 4), size=3, seed=0)
    assert all(len(row["input_features"]) == 4 and len(row["input_features"][0]) == 1
               for row in make_dataset("sorting", 4, size=3, seed=0))


def test_sequence_accuracy_reads_up_to_the_first_end():
    references = [[2, 1, 3, 0]] * 4
    predictions = [[2, 1, 3, 0, 5, 5], [2, 1, 3], [1, 3, 2, 0], [2, 1, 0, 3]]
    assert sequence_accuracy(predictions, references) == 0.5  # the first two match


def test_hull_accuracy_counts_rotations_but_not_reversals():
    reference = [[1, 2, 3, 4, 0]]
    assert hull_accuracy([[3, 4, 1, 2, 0]], reference) == 1.0
    assert sequence_accuracy([[3, 4, 1, 2, 0]], reference) == 0.0
    assert hull_accuracy([[1, 4, 3, 2, 0]], reference) == 0.0  # clockwise
    assert hull_accuracy([[1, 2, 3, 0]], reference) == 0.0
    assert hull_accuracy([[1, 2, 3, 4, 1, 0]], reference) == 0.0


def test_area_coverage():
    points = np.array([*SQUARE, (0.5, 0.5)])
    assert area_coverage([1, 2, 3, 4, 0], points) == 1.0
    assert area_coverage([3, 4, 1, 2, 0], points) == 1.0
    assert area_coverage([1, 4, 3, 2, 0], points) == 1.0  # clockwise covers the same area
    assert area_coverage([1, 2, 3, 0], points) == 0.5  # 3 of the 4 corners
    assert area_coverage([1, 2, 5, 4, 0, 3], points) == 0.5  # a concave quadrilateral through the centre


@pytest.mark.parametrize("ids", [
    [1, 3, 2, 4, 0],  # a bow-tie
    [1, 2, 0], [], [0, 1, 2, 3],  # fewer than 3 vertices
    [1, 2, 3, 1, 0],  # a repeated vertex
    [1, 2, 6, 0], [1, 2, 3, -1, 0],  # an id that is no input position
    [1, 5, 3, 0],  # collinear: no area
    [1, 3, 2, 5, 0],  # its last edge runs back over its first
])
def test_predictions_that_are_not_simple_polygons_have_no_area_coverage(ids):
    assert area_coverage(ids, np.array([*SQUARE, (0.5, 0.5)])) is None


def test_simple_polygons_and_the_shoelace_area():
    assert is_simple_polygon(SQUARE) and shoelace_area(SQUARE) == 1.0 and shoelace_area(SQUARE[::-1]) == -1.0
    assert is_simple_polygon([(0, 0), (2, 0), (1, 1), (2, 2), (0, 2)]) and shoelace_area(
        [(0, 0), (2, 0), (1, 1), (2, 2), (0, 2)]) == 3.0
    assert is_simple_polygon([(0, 0), (1, 0), (2, 0), (1, 1)])  # a straight angle is allowed
    assert not is_simple_polygon([(0, 0), (1, 1), (1, 0), (0, 1)])  # a bow-tie
    assert not is_simple_polygon([(0, 0), (2, 0), (1, 0), (1, 1)])  # folds back along its first edge
    assert not is_simple_polygon([(0, 0), (2, 0), (2, 2), (1, 0), (0, 2)])  # a vertex on another edge


def test_hull_metrics():
    points = [[list(p) for p in [*SQUARE, (0.5, 0.5)]]] * 4  # as a dataset row holds them
    predictions = [[1, 2, 3, 4, 0], [2, 3, 4, 1, 0], [1, 2, 3, 0], [1, 3, 2, 4, 0]]
    assert hull_metrics(predictions, points) == {
        "accuracy": 0.5, "area_coverage": pytest.approx(2.5 / 3), "invalid_fraction": 0.25, "fail": True}
    assert hull_metrics(predictions[:1], points[:1])["fail"] is False
    assert hull_metrics([[1, 2, 0]], points[:1])["area_coverage"] is None


def test_paper_results_hold_fractions_or_fail():
    for figures in PAPER_RESULTS["convex_hull"].values():
        assert set(figures) == {"accuracy", "area_coverage"}
        assert all(value == "FAIL" or 0 <= value <= 1 for value in figures.values())
    assert PAPER_RESULTS["convex_hull"][("Ptr-Net", 50, 50)] == {"accuracy": 0.726, "area_coverage": 0.999}
    assert PAPER_RESULTS["sorting"] == {}


@pytest.mark.parametrize("call, words", [
    (lambda: make_dataset("tsp", 5, size=1, seed=0), ["task", "'tsp'", "convex_hull", "sorting"]),
    (lambda: make_dataset("convex_hull", 2, size=1, seed=0), ["n", "got 2", ">= 3"]),
    (lambda: make_dataset("sorting", 0, size=1, seed=0), ["n", "got 0", ">= 1"]),
    (lambda: make_dataset("convex_hull", (10, 5), size=1, seed=0), ["n", "(10, 5)", "low <= high"]),
    (lambda: make_dataset("convex_hull", (5,), size=1, seed=0), ["n", "(5,)"]),
    (lambda: make_dataset("convex_hull", 5.0, size=1, seed=0), ["n", "5.0"]),
    (lambda: make_dataset("convex_hull", True, size=1, seed=0), ["n", "True"]),
    (lambda: make_dataset("convex_hull", 5, size=-1, seed=0), ["size", "-1"]),
    (lambda: sorting_example(np.random.default_rng(0), (2, 3)), ["n", "(2, 3)"]),
    (lambda: hull_example(np.random.default_rng(0), 2), ["n", "got 2"]),
    (lambda: convex_hull(np.zeros((4, 3))), ["points", "(4, 3)"]),
    (lambda: convex_hull(np.array([(0, 0), (np.nan, 1)])), ["points", "finite"]),
    (lambda: shoelace_area([1, 2, 3]), ["vertices"]),
    (lambda: sequence_accuracy([[1, 0]], []), ["predictions", "references", "1 and 0"]),
    (lambda: hull_accuracy([], []), ["predictions", "empty"]),
    (lambda: hull_metrics([[1, 0]], []), ["point_sets"]),
])
def test_bad_arguments_raise_value_errors_that_name_them(call, words):
    with pytest.raises(ValueError) as error:
        call()
    assert all(word in str(error.value) for word in words), str(error.value)


# What the reference itself scores, per problem: a test for every problem of PROBLEMS (a new one must add its line).
PERFECT_SCORES = {"sorting": {"exact_match": 1.0},
                  "convex_hull": {"accuracy": 1.0, "area_coverage": 1.0, "invalid_fraction": 0.0}}


def test_every_problem_has_its_perfect_scores_here():
    assert set(PERFECT_SCORES) == set(PROBLEMS)


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_a_problem_draws_its_inputs_and_scores_its_own_labels_perfectly(name):
    problem = PROBLEMS[name]
    rows = make_dataset(name, (problem.min_n, problem.min_n + 4), 40, seed=3)
    assert {len(point) for row in rows for point in row["input_features"]} == {problem.feature_size}
    assert min(len(row["input_features"]) for row in rows) == problem.min_n
    labels, points = [row["labels"] for row in rows], [row["input_features"] for row in rows]
    assert problem.scores(labels, labels, points) == PERFECT_SCORES[name]
    wrong = [[*reversed(ids[:-1]), END] for ids in labels]  # the reference's inputs in the other direction
    assert problem.scores(wrong, labels, points)[next(iter(PERFECT_SCORES[name]))] < 1.0
