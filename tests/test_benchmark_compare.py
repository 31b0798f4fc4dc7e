"""How benchmarks/run_benchmarks.py compares our models with the peers: medians, directions, the naive yardstick."""

import pytest

from file_imports import from_benchmark

METRICS, better_by, compare_with_fastest_peer, compare_with_peers = from_benchmark(
    "run_benchmarks.py", "METRICS", "better_by", "compare_with_fastest_peer", "compare_with_peers")


def window(ours: float, naive: float, latency_ours: float, latency_naive: float) -> dict:
    """One of our model rows: every throughput metric at ``ours``/``naive``, the latency at its own pair."""
    row = {}
    for key in METRICS:
        mine, reference = (latency_ours, latency_naive) if key == "greedy_b1_ms_per_sentence" else (ours, naive)
        row[key] = dict(ours=dict(median=mine), naive=dict(median=reference), speedup=better_by(key, mine, reference))
    return row


def peer_run(throughput: list[float], latency: list[float]) -> dict:
    run = dict(version="1.0", options={}, train_mflops_per_token=20.0,
               gemm_flops_per_s=dict(values=[1e11] * len(throughput)),
               gemm_peak_share=dict(values=[0.3] * len(throughput)))
    for key in METRICS:
        run[key] = dict(values=latency if key == "greedy_b1_ms_per_sentence" else throughput)
    return run


def test_better_by_reads_latency_the_other_way():
    assert better_by("train_tokens_per_s", 300.0, 200.0) == 1.5
    assert better_by("greedy_b1_ms_per_sentence", 40.0, 60.0) == 1.5


def test_a_peer_is_compared_within_its_like_with_like_window():
    # The GRU window ran while the machine was fast (naive 2000 tokens/s); the LSTM window while it was slow (1000).
    ours = {"luong-feed-gru-additive": window(3000.0, 2000.0, 50.0, 60.0),
            "luong-feed-lstm-general": window(2000.0, 1000.0, 40.0, 80.0)}
    peer_runs = {"joeynmt": [peer_run([1900.0, 2100.0], [55.0])],
                 "fairseq": [peer_run([1100.0, 1300.0, 1200.0], [90.0, 100.0, 110.0])]}
    compared = compare_with_peers(peer_runs, ours)
    fairseq, joey = compared["fairseq"], compared["joeynmt"]
    assert fairseq["compared_with"] == "luong-feed-lstm-general"
    assert fairseq["train_tokens_per_s"]["median"] == 1200.0
    assert fairseq["train_tokens_per_s"]["ours_over_peer"] == pytest.approx(2000 / 1200)
    assert fairseq["train_tokens_per_s"]["over_naive"] == pytest.approx(1200 / 1000)
    assert fairseq["greedy_b1_ms_per_sentence"]["ours_over_peer"] == pytest.approx(100 / 40)
    assert fairseq["greedy_b1_ms_per_sentence"]["over_naive"] == pytest.approx(80 / 100)
    assert joey["train_tokens_per_s"]["ours_over_peer"] == pytest.approx(3000 / 2000)
    assert joey["train_tokens_per_s"]["over_naive"] == pytest.approx(2000 / 2000)

    fastest = compare_with_fastest_peer(compared, ours)
    train, latency = fastest["train_tokens_per_s"], fastest["greedy_b1_ms_per_sentence"]
    # Raw medians: Joey NMT's 2000 tokens/s, measured in the fast window, is the best figure.
    assert train["peer"] == "joeynmt" and train["peer_median"] == 2000.0
    assert train["ours_over_peer"]["luong-feed-lstm-general"] == pytest.approx(2000 / 2000)
    # Against naive in its own window fairseq is the faster (×1.2 against ×1.0): ours over it through naive.
    assert train["via_naive"]["peer"] == "fairseq"
    assert train["via_naive"]["peer_over_naive"] == pytest.approx(1.2)
    assert train["via_naive"]["ours_over_peer"]["luong-feed-lstm-general"] == pytest.approx(2.0 / 1.2)
    assert train["via_naive"]["ours_over_peer"]["luong-feed-gru-additive"] == pytest.approx(1.5 / 1.2)
    # Like with like both ways agree: the same naive median sits on both sides.
    assert (train["via_naive"]["ours_over_peer"]["luong-feed-lstm-general"]
            == pytest.approx(fairseq["train_tokens_per_s"]["ours_over_peer"]))
    # Latency: lower is better; Joey NMT's 55 ms is the lowest, and ×60/55 of naive beats fairseq's ×0.8.
    assert latency["peer"] == "joeynmt" and latency["peer_median"] == 55.0
    assert latency["ours_over_peer"]["luong-feed-lstm-general"] == pytest.approx(55 / 40)
    assert latency["via_naive"]["peer"] == "joeynmt"
    assert latency["via_naive"]["ours_over_peer"]["luong-feed-lstm-general"] == pytest.approx((80 / 40) / (60 / 55))
