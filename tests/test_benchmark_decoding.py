"""How benchmarks/run_benchmarks.py --decode_only compares our decoders with the fastest peer."""

import pytest

from file_imports import from_benchmark

DECODE_METRICS, compare_decoding = from_benchmark("run_benchmarks.py", "DECODE_METRICS", "compare_decoding")


def rounds(throughput: list[float], latency: list[float]) -> dict[str, list[float]]:
    """One implementation's figures over the rounds: every throughput metric ``throughput``, every latency
    ``latency``."""
    return {metric: latency if metric.endswith("_ms_per_sentence") else throughput for metric in DECODE_METRICS}


def test_the_fastest_peer_is_chosen_per_metric_and_paired_round_by_round():
    # Round 2 ran while the machine was slow: everyone's throughput halved, latency doubled.
    measured = {"ours onnxruntime": rounds([400.0, 200.0, 420.0], [10.0, 20.0, 9.0]),
                "fairseq": rounds([200.0, 100.0, 200.0], [100.0, 200.0, 110.0]),
                "opennmt": rounds([150.0, 80.0, 160.0], [50.0, 100.0, 45.0])}
    compared = compare_decoding(measured, ["fairseq", "opennmt"])
    greedy, latency = compared["greedy_b64_sentences_per_s"], compared["greedy_b1_ms_per_sentence"]
    assert greedy["peer"] == "fairseq" and greedy["peer_median"] == 200.0
    assert latency["peer"] == "opennmt" and latency["peer_median"] == 50.0  # the lowest latency is the best
    assert set(greedy["ours"]) == {"ours onnxruntime"}  # peers are not compared with themselves
    ours = greedy["ours"]["ours onnxruntime"]
    assert ours["of_medians"] == pytest.approx(400 / 200)
    assert ours["per_round"]["values"] == pytest.approx([2.0, 2.0, 2.1])
    assert ours["per_round"]["median"] == pytest.approx(2.0)
    # Latency ratios read "ours is better" too: the peer's ms over ours.
    ours = latency["ours"]["ours onnxruntime"]
    assert ours["of_medians"] == pytest.approx(50 / 10)
    assert ours["per_round"]["values"] == pytest.approx([5.0, 5.0, 5.0])
