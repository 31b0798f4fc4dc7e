"""The test tiers (tests/conftest.py): a test that starts a process or runs a training script is slow, itself or
through a fixture; the others run in the fast tier (``pytest -m "not slow"``)."""

import pytest

from child_process import run_child
from conftest import _spawns_or_trains


@pytest.fixture
def child_answer(tmp_path):
    return run_child("print('{\"answer\": 42}')", tmp_path)


def test_a_test_that_starts_a_process_or_runs_a_training_script_is_read_as_slow():
    def spawns(tmp_path):
        return run_child("print(1)", tmp_path)

    def trains():
        from training import run_ner
        run_ner.main(["--help"])

    def computes():
        return sum(range(3))

    assert [_spawns_or_trains(function) for function in (spawns, trains, computes)] == [True, True, False]


def test_through_a_fixture_too(child_answer, request):
    assert child_answer == {"answer": 42}
    assert request.node.get_closest_marker("slow") is not None


def test_the_others_stay_in_the_fast_tier(request):
    assert request.node.get_closest_marker("slow") is None
