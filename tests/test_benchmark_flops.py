"""The useful-FLOP count and the GEMM peak share of the benchmarks (benchmarks/peers/peer_harness.py)."""

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from conftest import tiny_config
from file_imports import from_benchmark
from hf_bahdanau import BahdanauForConditionalGeneration

MISSING_FLOP_FORMULAS, gemm_peak_shares, useful_flops_per_token = from_benchmark(
    "peers/peer_harness.py", "MISSING_FLOP_FORMULAS", "gemm_peak_shares", "useful_flops_per_token")


def count(run) -> int:
    with FlopCounterMode(display=False, custom_mapping=MISSING_FLOP_FORMULAS) as counter:
        run()
    return counter.get_total_flops()


def test_a_fused_lstm_counts_its_gate_products_forward_and_backward():
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(6, 5, bidirectional=True, batch_first=True)
    inputs = torch.randn(3, 7, 6, requires_grad=True)
    # torch runs an unpacked LSTM as one oneDNN layer per direction, which FlopCounterMode alone counts as 0.
    with FlopCounterMode(display=False) as plain:
        lstm(inputs)[0].sum().backward()
    assert plain.get_total_flops() == 0
    forward = 2 * (3 * 7) * (4 * 5) * (6 + 5) * 2  # 2·TB·4H·(I + H), both directions
    assert count(lambda: lstm(inputs)[0].sum()) == forward
    assert count(lambda: lstm(inputs)[0].sum().backward()) == 3 * forward
    # A packed batch of unequal lengths runs step by step as addmm/mm, which torch counts: the same forward products.
    packed = torch.nn.utils.rnn.pack_padded_sequence(inputs, [7, 6, 7], batch_first=True, enforce_sorted=False)
    with FlopCounterMode(display=False) as stepwise:
        lstm(packed)
    assert stepwise.get_total_flops() == 2 * (7 + 6 + 7) * (4 * 5) * (6 + 5) * 2


def test_an_accumulated_weight_gradient_is_counted():
    grad_weight, grad_logits, rows = torch.zeros(9, 4), torch.randn(5, 9), torch.randn(5, 4)
    assert count(lambda: grad_weight.addmm_(grad_logits.t(), rows)) == 2 * 9 * 5 * 4


def test_our_training_count_adds_the_vocabulary_weight_gradient_and_the_fused_lstms():
    """luong-general without feeding, LSTM: torch's counter alone misses ∂W_o (accumulated chunk by chunk with
    addmm_) and the encoder's and decoder's fused LSTM runs; the benchmarks' count holds them, exactly."""
    config = tiny_config("luong-general", input_feeding=False, rnn_type="lstm", encoder_layers=1, decoder_layers=1)
    torch.manual_seed(0)
    model = BahdanauForConditionalGeneration(config)
    source_length, target_length = 6, 5
    batch = dict(input_ids=torch.randint(3, 40, (2, source_length)),
                 attention_mask=torch.ones(2, source_length, dtype=torch.long),
                 decoder_input_ids=torch.randint(3, 40, (2, target_length)),
                 labels=torch.randint(3, 40, (2, target_length)))
    counted = useful_flops_per_token(lambda example: model(**example).loss, model, batch)
    with FlopCounterMode(display=False) as plain:
        model(**batch).loss.backward()
    torch_alone = plain.get_total_flops() / (2 * target_length)

    vocabulary_weight_gradient = 2 * config.vocab_size * config.output_size
    lstm_per_token = 3 * 2 * 4 * config.hidden_size * (config.embedding_size + config.hidden_size)  # fwd + bwd
    missing = vocabulary_weight_gradient + lstm_per_token * (1 + source_length / target_length)
    assert counted == pytest.approx(torch_alone + missing, rel=1e-12)


def test_the_gemm_peak_share_pairs_each_training_repeat_with_its_own_gemm_measurement():
    shares = gemm_peak_shares(2e6, tokens_per_s=[100.0, 300.0, 200.0], gemm_flops_per_s=[1e9, 2e9, 8e8])
    assert shares["values"] == pytest.approx([0.2, 0.3, 0.5])
    assert (shares["median"], shares["min"], shares["max"]) == pytest.approx((0.3, 0.2, 0.5))
    with pytest.raises(ValueError, match="one GEMM measurement per training repeat"):
        gemm_peak_shares(2e6, tokens_per_s=[100.0, 300.0], gemm_flops_per_s=[1e9])
