"""benchmarks/gpu_check.sh and benchmarks/gpu_speed.py: without CUDA the check says so and makes the speed table's
CPU dry run, whose table has a row per implementation and dtype and a column per metric."""

import json
import re
import subprocess
import sys

import torch
import transformers
from transformers import MarianMTModel

from child_process import child_env
from file_imports import BENCHMARKS, from_benchmark

# run_benchmarks.py puts benchmarks/ on sys.path, where gpu_speed.py finds the peers package
SIZES, synthetic_batch = from_benchmark("run_benchmarks.py", "SIZES", "synthetic_batch")
COLUMNS, HEADERS, build_ours, marian_config, parameter_count = from_benchmark(
    "gpu_speed.py", "COLUMNS", "HEADERS", "build_ours", "marian_config", "parameter_count")


def test_marian_is_sized_like_rnnsearch_at_the_peers_size():
    with torch.device("meta"):
        ours = parameter_count(build_ours("rnnsearch", SIZES))
        config = marian_config(SIZES["hidden_size"], SIZES["vocab_size"], ours)
        marian = parameter_count(MarianMTModel(config))
    # 8000 × 256 shared embeddings (2.05 M) + 3 encoder layers of 0.79 M + 3 decoder layers of 1.05 M; 2 or 4
    # layers would be 1.73 M under or 1.95 M over ours
    assert (ours, config.encoder_layers, config.decoder_layers, marian) == (7_597_888, 3, 3, 7_708_672)
    assert (config.d_model, config.encoder_ffn_dim, config.forced_eos_token_id) == (256, 1024, None)


def test_without_cuda_the_check_says_so_and_writes_the_dry_run_table(tmp_path):
    table = tmp_path / "table.md"
    no_peers = tmp_path / "peers"  # no peer installed: each gets a line saying it was skipped
    no_peers.mkdir()
    env = child_env(tmp_path, CUDA_VISIBLE_DEVICES="", HF_BAHDANAU_PEERS=str(no_peers), PYTHON=sys.executable)
    result = subprocess.run(["bash", str(BENCHMARKS / "gpu_check.sh"), str(table)], env=env, capture_output=True,
                            text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-4000:]
    assert "No CUDA device" in result.stdout and "--device cpu --quick" in result.stdout

    lines = table.read_text().splitlines()
    header = lines.index("| " + " | ".join(COLUMNS) + " |")
    rows = [line.strip("| ").split(" | ") for line in lines[header + 2:header + 8]]
    assert [(row[0], row[1]) for row in rows] == [
        (name, dtype) for dtype in ("fp32", "bf16")
        for name in ("rnnsearch (hf_bahdanau)", "luong-general (hf_bahdanau)", f"marian ({transformers.__version__})")]
    assert lines[header + 8] == ""  # no other row
    for row in rows:
        for cell in row[3:]:  # median [min–max]; one repeat: all three the same positive number
            median, low, high = map(float, re.fullmatch(r"(\S+) \[(\S+)–(\S+)\]", cell).groups())
            assert median > 0 and low == median == high, cell
    text = "\n".join(lines)
    for peer in ("fairseq", "joeynmt", "opennmt"):
        assert f"Peer {peer}: not installed under {no_peers}" in text
    assert "Failed" not in text

    results = json.loads(table.with_suffix(".json").read_text())
    assert (results["device"], results["quick"], results["repeats"], results["failed"]) == ("cpu", True, 1, [])
    for row, cells in zip(results["rows"], rows):
        assert f"{row['parameters'] / 1e6:.2f} M" == cells[2]
        for key in HEADERS:
            assert len(row[key]["values"]) == 1
        # every search ran to its 30 steps: random weights almost never pick the end token (1 in 8000 a step)
        assert 25 <= row["mean_hypothesis_length"]["greedy"] <= 30
        assert 25 <= row["mean_hypothesis_length"]["beam5"] <= 30

