"""The Transformer baseline of run_seq2seq.py (training/transformer_baseline.py): sizing to a parameter count, a short
run whose folder loads with transformers alone, the refusals, and translation_speed's measuring function."""

import json
from pathlib import Path

import numpy as np
import pytest
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, GenerationConfig, MarianMTModel

from conftest import exits_as_argparse_does
from file_imports import from_benchmark
from hf_bahdanau import BahdanauConfig, BahdanauForConditionalGeneration
from training.run_seq2seq import main
from training.common.tokenization import train_tokenizer
from training.tasks.seq2seq import ModelArguments, load_model
from training.transformer_baseline import check_generation_options, learned_parameters, transformer_config

Backend, generated_tokens, measure, pytorch_generate, with_ratios = from_benchmark(
    "translation_speed.py", "Backend", "generated_tokens", "measure", "pytorch_generate", "with_ratios")

V = 8000
IDS = dict(pad_token_id=0, bos_token_id=1, eos_token_id=2)
SENTENCES = ["3 March 2015", "le 14 mars 2015"]


def closed_form(vocab: int, d: int, f: int, encoder_layers: int, decoder_layers: int) -> int:
    """P(d) = V·d + L_e·(4d² + 2df + f + 9d) + L_d·(8d² + 2df + f + 15d), the module docstring's count by hand."""
    return (vocab * d + encoder_layers * (4 * d * d + 2 * d * f + f + 9 * d)
            + decoder_layers * (8 * d * d + 2 * d * f + f + 15 * d))


def test_the_count_is_the_closed_form_with_shared_embeddings_and_no_position_table():
    config = transformer_config(V, **IDS, overrides={"d_model": 64, "encoder_layers": 2, "decoder_layers": 1})
    assert (config.encoder_ffn_dim, config.decoder_ffn_dim) == (256, 256)  # 4·d_model
    assert learned_parameters(config) == closed_form(V, 64, 256, 2, 1) == 678_720


@pytest.mark.parametrize("target, overrides, d_model", [
    (2_500_000, {}, 132),  # 3+3 layers, 4 heads: an RNN of 2.5 M parameters over 8k tokens
    (2_500_000, {"encoder_layers": 2, "decoder_layers": 2}, 152),
    (10_000_000, {"encoder_attention_heads": 6, "decoder_attention_heads": 4}, 300),  # d a multiple of lcm = 12
    (1_000_000, {"encoder_ffn_dim": 512, "decoder_ffn_dim": 512}, None),  # the feed-forward size stays as given
])
def test_sizing_meets_the_target_within_three_percent(target, overrides, d_model):
    config = transformer_config(V, **IDS, overrides=overrides, parameters=target)
    f = overrides.get("encoder_ffn_dim", 4 * config.d_model)
    count = closed_form(V, config.d_model, f, config.encoder_layers, config.decoder_layers)
    assert learned_parameters(config) == count and abs(count - target) <= 0.03 * target
    assert config.d_model % 12 == 0 if "encoder_attention_heads" in overrides else config.d_model % 4 == 0
    if d_model is not None:
        assert config.d_model == d_model


def test_impossible_targets_and_bad_overrides_are_refused_by_name():
    with pytest.raises(ValueError, match=r"`--transformer_parameters`=10,000 cannot be met within 3%.*d_model=4: "
                                         "33,728"):  # closed_form(8000, 4, 16, 3, 3): the embeddings alone are 32,000
        transformer_config(V, **IDS, parameters=10_000)
    with pytest.raises(ValueError, match="`--transformer_parameters` must be a positive"):
        transformer_config(V, **IDS, parameters=0)
    with pytest.raises(ValueError, match="leave d_model=64 out"):
        transformer_config(V, **IDS, overrides={"d_model": 64}, parameters=10**6)
    with pytest.raises(ValueError, match="d_model=66 must be a multiple of encoder_attention_heads=4"):
        transformer_config(V, **IDS, overrides={"d_model": 66})
    with pytest.raises(ValueError, match=r"cannot set \['vocab_size'\]"):
        transformer_config(V, **IDS, overrides={"vocab_size": 10})


def test_the_arguments_refuse_a_preset_and_rnn_options_for_the_transformer():
    with pytest.raises(ValueError, match="`--preset rnnsearch` names an RNN, and `--architecture transformer`"):
        ModelArguments(architecture="transformer", preset="rnnsearch")
    with pytest.raises(ValueError, match="`--architecture` must be one of \\['rnn', 'transformer'\\], got 'bart'"):
        ModelArguments(architecture="bart")
    with pytest.raises(ValueError, match="`--transformer_parameters` sizes a new `--architecture transformer`"):
        ModelArguments(preset="rnnsearch", transformer_parameters=10**6)
    with pytest.raises(ValueError, match="at most one of"):
        ModelArguments(architecture="transformer", transformer_parameters=10**6, match_rnn_parameters="x")
    with pytest.raises(ValueError, match="`--pretrained_vectors` fills an RNN's meta-embedding"):
        ModelArguments(architecture="transformer", pretrained_vectors="vectors.txt")


def test_gnmt_penalties_are_refused_for_the_transformer(tmp_path, capsys):
    check_generation_options(GenerationConfig(num_beams=5, length_penalty=0.6))
    with pytest.raises(ValueError, match="no GNMT penalties: remove coverage_penalty=0.2, "
                                         "length_penalty_style='gnmt'"):
        check_generation_options(GenerationConfig(num_beams=5, coverage_penalty=0.2, length_penalty_style="gnmt"))
    # the script reads them from --generation_config and refuses them before training
    GenerationConfig(num_beams=5, length_penalty_style="gnmt").save_pretrained(tmp_path / "gnmt")
    (tmp_path / "train.jsonl").write_text(json.dumps({"source": "3/14/15", "target": "2015-03-14"}) + "\n")
    exits_as_argparse_does(lambda: main([
        "--architecture", "transformer", "--config_overrides", "d_model=8,encoder_layers=1,decoder_layers=1",
        "--generation_config", str(tmp_path / "gnmt"), "--train_file", str(tmp_path / "train.jsonl"), "--do_train",
        "--report_to", "none", "--output_dir", str(tmp_path / "out")]),
        "remove length_penalty_style='gnmt' from the generation config", capsys)
    assert not (tmp_path / "out" / "model.safetensors").exists()


def test_a_short_transformer_run_saves_a_folder_transformers_loads(tmp_path):
    rows = [{"source": f"{day} March 2015", "target": f"2015-03-{day:02d}"} for day in range(1, 17)]
    for split in ("train", "test"):
        (tmp_path / f"{split}.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    output_dir = tmp_path / "model"
    main(["--architecture", "transformer", "--config_overrides", "encoder_layers=1,decoder_layers=1,"
          "encoder_attention_heads=2,decoder_attention_heads=2", "--transformer_parameters", "20000",
          "--train_file", str(tmp_path / "train.jsonl"), "--test_file", str(tmp_path / "test.jsonl"),
          "--do_train", "--do_predict", "--predict_with_generate", "--num_beams", "2", "--max_new_tokens", "6",
          "--max_steps", "2", "--per_device_train_batch_size", "8", "--per_device_eval_batch_size", "16",
          "--torch_num_threads", "1", "--save_strategy", "no", "--report_to", "none", "--output_dir", str(output_dir)])
    model = AutoModelForSeq2SeqLM.from_pretrained(output_dir)
    tokenizer = AutoTokenizer.from_pretrained(output_dir)
    assert model.config.model_type == "marian" and model.config.vocab_size == len(tokenizer)
    assert model.generation_config.num_beams == 2 and model.generation_config.max_new_tokens == 6
    generated = model.generate(**tokenizer(["3 March 2015"], return_tensors="pt"), max_new_tokens=5)
    assert generated[0, 0] == tokenizer.bos_token_id and generated.shape[1] <= 6
    results = json.loads((output_dir / "all_results.json").read_text())
    assert results["num_parameters"] == learned_parameters(model) == closed_form(len(tokenizer), model.config.d_model,
                                                                                 4 * model.config.d_model, 1, 1)
    assert abs(results["num_parameters"] - 20_000) <= 600 and {"predict_bleu", "predict_chrf"} <= set(results)
    assert not list(output_dir.glob("*.png"))[1:]  # the training curve at most: no alignment pictures
    # transformers' from_pretrained leaves the (recomputed) sinusoidal tables trainable; the script freezes them again
    assert model.model.encoder.embed_positions.weight.requires_grad
    continued = load_model(ModelArguments(model_name_or_path=str(output_dir)), tokenizer)
    trainable = sum(parameter.numel() for parameter in continued.parameters() if parameter.requires_grad)
    assert trainable == results["num_parameters"]
    card = (output_dir / "README.md").read_text()
    assert "**Architecture**: a Marian-architecture Transformer encoder–decoder trained from scratch" in card
    assert f"**Encoder**: 1 layer, d_model {model.config.d_model}, 2 attention heads" in card
    # the stored parameters: the learned ones and the output bias Marian keeps at 0 (one per token)
    assert f"**Parameters**: {results['num_parameters'] + len(tokenizer):,}" in card
    assert "trust_remote_code" not in card and "num_parameters" not in card


@pytest.fixture
def tiny_folders(tmp_path) -> dict[str, Path]:
    """An untrained RNN's and an untrained Transformer's saved folders, with one char tokenizer."""
    tokenizer = train_tokenizer(SENTENCES + ["2015-03-14"], kind="char")
    ids = dict(pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
               eos_token_id=tokenizer.eos_token_id)
    models = {"rnn_pytorch": BahdanauForConditionalGeneration(BahdanauConfig.from_preset(
                  "rnnsearch", vocab_size=len(tokenizer), embedding_size=8, hidden_size=8, attention_size=8,
                  decoder_start_token_id=tokenizer.bos_token_id, **ids)),
              "transformer_pytorch": MarianMTModel(transformer_config(
                  len(tokenizer), **ids, overrides={"d_model": 8, "encoder_layers": 1, "decoder_layers": 1}))}
    for name, model in models.items():
        model.save_pretrained(tmp_path / name)
        tokenizer.save_pretrained(tmp_path / name)
    return {name: tmp_path / name for name in models}


def test_a_saved_rnn_is_not_continued_as_a_transformer(tiny_folders):
    folder = tiny_folders["rnn_pytorch"]
    with pytest.raises(ValueError, match="`--architecture transformer` with `--model_name_or_path .*rnn_pytorch`, "
                                         "which holds an hf_bahdanau RNN"):
        load_model(ModelArguments(architecture="transformer", model_name_or_path=str(folder)),
                   AutoTokenizer.from_pretrained(folder))


def test_translation_speed_measures_every_backend_and_setting(tiny_folders):
    # rows ended at their first EOS (2) count up to it; a row without one counts all T = 3; pad 0 after EOS or EOS
    assert generated_tokens(np.array([[1, 5, 2, 0], [1, 2, 2, 2], [1, 5, 6, 7]]), eos_token_id=2) == 2 + 1 + 3
    backends = {}
    for name, folder in tiny_folders.items():
        loaded = AutoModelForSeq2SeqLM.from_pretrained(folder)
        backends[name] = Backend(AutoTokenizer.from_pretrained(folder), pytorch_generate(loaded),
                                 learned_parameters(loaded))
    rows = with_ratios(measure(backends, SENTENCES, repeats=1, max_new_tokens=3))
    assert [(row["backend"], row["batch_size"], row["num_beams"]) for row in rows] == [
        (name, batch, beams) for batch in (1, 64) for beams in (1, 5) for name in backends]
    for row in rows:
        assert 2 <= row["tokens"] <= 2 * 3 and row["sentences_per_s"] == pytest.approx(2 / row["seconds"])
        assert row["tokens_per_s"] == pytest.approx(row["tokens"] / row["seconds"]) and row["tokens_per_s"] > 0
        if row["backend"] == "transformer_pytorch":
            assert row["over_transformer"] == 1.0
