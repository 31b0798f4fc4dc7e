"""The test tiers (tests/conftest.py): a test that starts a process, runs a training script or exports an ONNX graph is
slow, itself, through a helper or through a fixture; the others run in the fast tier (``pytest -m "not slow"``)."""

import pytest

from child_process import run_child
from conftest import _heavy


@pytest.fixture
def child_answer(tmp_path):
    return run_child("print('{\"answer\": 42}')", tmp_path)


def spawns(tmp_path):
    return run_child("print(1)", tmp_path)


def test_a_test_that_starts_a_process_trains_or_exports_is_read_as_slow():
    def trains():
        from training import run_ner
        run_ner.main(["--help"])

    def exports(model, tmp_path):
        from hf_bahdanau.onnx import export_onnx
        export_onnx(model, tmp_path)

    def calls_a_helper_that_spawns(tmp_path):
        return spawns(tmp_path)

    def computes():
        return sum(range(3))

    assert [_heavy(function) for function in (spawns, trains, exports, calls_a_helper_that_spawns, computes)] == [
        True, True, True, True, False]


def test_through_a_fixture_too(child_answer, request):
    assert child_answer == {"answer": 42}
    assert request.node.get_closest_marker("slow") is not None


def test_the_others_stay_in_the_fast_tier(request):
    assert request.node.get_closest_marker("slow") is None
