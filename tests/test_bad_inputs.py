"""Every public entry point refuses bad input with a ``ValueError`` (or ``TypeError`` for a wrong type) that names the
argument, instead of a torch-internal error or a silently wrong result.

The battery is data: ``BAD_CONFIGS`` (config fields, at construction and changed afterwards) and ``BAD_INPUTS`` (model
forwards, ``generate()``, the decoding helpers, the training scripts). Each case names the argument that its error
message must mention.
"""

import json
import logging
from pathlib import Path

import pytest
import torch
from transformers import GenerationConfig

from conftest import VOCAB, exits_as_argparse_does, padded_batch, tiny_config, tiny_encoder_config, tiny_model
from hf_bahdanau import (
    BahdanauConfig,
    BahdanauForConditionalGeneration,
    BahdanauForSequenceClassification,
    BahdanauForTokenClassification,
)
from hf_bahdanau.modeling.translation import translate
from hf_bahdanau.modeling.pipeline_bahdanau import BahdanauTranslationPipeline
from training.common.tokenization import train_tokenizer

pytestmark = pytest.mark.usefixtures("one_thread")

NUM_LABELS = 3
SEP = 5


def refuses(action, argument: str) -> None:
    """``action()`` raises ValueError/TypeError whose message names ``argument``."""
    with pytest.raises((ValueError, TypeError)) as caught:
        action()
    assert argument in str(caught.value), f"the message does not name {argument!r}: {caught.value}"


# 1. configs --------------------------------------------------------------------------------------------------------

BAD_CONFIGS = {
    "vocab_size=0": ({"vocab_size": 0}, "vocab_size"),
    "embedding_size=0": ({"embedding_size": 0}, "embedding_size"),
    "hidden_size=-4": ({"hidden_size": -4}, "hidden_size"),
    "encoder_hidden_size=0": ({"encoder_hidden_size": 0}, "encoder_hidden_size"),
    "encoder_layers=0": ({"encoder_layers": 0}, "encoder_layers"),
    "decoder_layers=0": ({"decoder_layers": 0}, "decoder_layers"),
    "attention_size=0": ({"attention_size": 0}, "attention_size"),
    "num_attention_heads=0": ({"attention_type": "multihead", "num_attention_heads": 0}, "num_attention_heads"),
    "heads do not divide": ({"attention_type": "multihead", "attention_size": 10, "num_attention_heads": 3},
                            "num_attention_heads"),
    "max_source_positions=0": ({"max_source_positions": 0}, "max_source_positions"),
    "output_size=0": ({"output_size": 0}, "output_size"),
    "rnn_type": ({"rnn_type": "transformer"}, "rnn_type"),
    "attention_type": ({"attention_type": "cosine"}, "attention_type"),
    "decoder_style": ({"decoder_style": "vaswani"}, "decoder_style"),
    "context_mode": ({"attention_type": "none", "context_mode": "both"}, "context_mode"),
    "bridge": ({"bridge": "max"}, "bridge"),
    "deep_output": ({"deep_output": "relu"}, "deep_output"),
    "token_attention_type": ({"token_attention_type": "self"}, "token_attention_type"),
    "dropout=1": ({"dropout": 1.0}, "dropout"),
    "dropout<0": ({"dropout": -0.1}, "dropout"),
    "classifier_dropout=1.5": ({"classifier_dropout": 1.5}, "classifier_dropout"),
    "gaussian_kernel_width=0": ({"attention_type": "gaussian_kernel", "gaussian_kernel_width": 0}, "gaussian_kernel_width"),
    "dot sizes": ({"attention_type": "dot", "hidden_size": 12, "encoder_hidden_size": 8}, "hidden_size"),
    "input_feeding bahdanau": ({"input_feeding": True, "decoder_style": "bahdanau"}, "input_feeding"),
    "input_feeding none": ({"input_feeding": True, "decoder_style": "luong", "attention_type": "none"},
                           "input_feeding"),
    "bridge last depths": ({"bridge": "last", "encoder_layers": 1, "decoder_layers": 2}, "encoder_layers"),
    "bridge last sizes": ({"bridge": "last", "hidden_size": 12, "encoder_hidden_size": 8}, "hidden_size"),
    "tie sizes": ({"tie_word_embeddings": True, "output_size": 7}, "output_size"),
    "pad_token_id=vocab": ({"pad_token_id": VOCAB}, "pad_token_id"),
    "pad_token_id<0": ({"pad_token_id": -1}, "pad_token_id"),
    "bos_token_id=vocab": ({"bos_token_id": VOCAB}, "bos_token_id"),
    "eos_token_id=1000": ({"eos_token_id": 1000}, "eos_token_id"),
    "eos_token_id list": ({"eos_token_id": [2, 1000]}, "eos_token_id"),
    "decoder_start_token_id<0": ({"decoder_start_token_id": -3}, "decoder_start_token_id"),
    "init_std<0": ({"init_std": -0.1}, "init_std"),
    "sentence_separator_token_id": ({"sentence_separator_token_id": VOCAB}, "sentence_separator_token_id"),
    "num_labels=0": ({"num_labels": 0}, "num_labels"),
    "hidden_size str": ({"hidden_size": "256"}, "hidden_size"),
    "bidirectional str": ({"bidirectional": "yes"}, "bidirectional"),
    "encoder_layers float": ({"encoder_layers": 2.5}, "encoder_layers"),
}


@pytest.mark.parametrize("overrides, argument", BAD_CONFIGS.values(), ids=BAD_CONFIGS.keys())
def test_a_bad_config_is_refused_naming_the_field(overrides, argument):
    refuses(lambda: tiny_config(**overrides), argument)


CHANGED_AFTERWARDS = {
    "rnn_type": ("rnn_type", "foo"),
    "attention_type": ("attention_type", "cosine"),
    "vocab_size": ("vocab_size", 0),
    "pad_token_id": ("pad_token_id", VOCAB + 3),
    "dot sizes": ("attention_type", "dot"),
    "bridge": ("bridge", "max"),
    "dropout": ("dropout", 2.0),
}


@pytest.mark.parametrize("head", [BahdanauForConditionalGeneration, BahdanauForTokenClassification,
                                  BahdanauForSequenceClassification])
@pytest.mark.parametrize("field, value", CHANGED_AFTERWARDS.values(), ids=CHANGED_AFTERWARDS.keys())
def test_a_field_changed_after_construction_is_checked_when_a_model_is_built(head, field, value):
    config = tiny_config(hidden_size=20)  # annotations 2 x 10 = 20: 'dot' needs them equal to hidden_size ...
    config.encoder_hidden_size = 8  # ... and this makes them differ again
    setattr(config, field, value)
    refuses(lambda: head(config), field)


def test_unknown_preset_fields_are_refused():
    refuses(lambda: BahdanauConfig.from_preset("rnnsearch", hiden_size=256), "hiden_size")
    refuses(lambda: BahdanauConfig.from_preset("rnnsearhc"), "preset")


# 2. model inputs ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def models():
    seq2seq = tiny_model("rnnsearch")
    tagger_config = tiny_encoder_config(num_labels=NUM_LABELS)
    classifier_config = tiny_encoder_config(num_labels=NUM_LABELS)
    han_config = tiny_encoder_config(num_labels=NUM_LABELS, hierarchical=True, sentence_separator_token_id=SEP)
    torch.manual_seed(0)
    return dict(
        seq2seq=seq2seq,
        tagger=BahdanauForTokenClassification(tagger_config).eval(),
        classifier=BahdanauForSequenceClassification(classifier_config).eval(),
        han=BahdanauForSequenceClassification(han_config).eval(),
    )


def source():
    return padded_batch((5, 4, 2))


def decoder_ids(rows: int = 3, steps: int = 4) -> torch.Tensor:
    return torch.randint(3, VOCAB, (rows, steps), generator=torch.Generator().manual_seed(3))


def with_value(tensor: torch.Tensor, position: tuple, value) -> torch.Tensor:
    tensor = tensor.clone()
    tensor[position] = value
    return tensor


def seq2seq_call(**changes):
    """forward of the seq2seq head on a good batch, with ``changes`` to its arguments."""
    input_ids, mask = source()
    arguments = dict(input_ids=input_ids, attention_mask=mask, decoder_input_ids=decoder_ids())
    arguments.update(changes)
    return lambda models: models["seq2seq"](**arguments)


def seq2seq_training_call(**changes):
    def call(models):
        model = models["seq2seq"].train()
        try:
            input_ids, mask = source()
            return model(**{"input_ids": input_ids, "attention_mask": mask, "labels": decoder_ids(), **changes})
        finally:
            model.eval()
    return call


def encoder_outputs(width: int, length: int):
    from hf_bahdanau.modeling.encoder import BahdanauEncoderOutput

    return BahdanauEncoderOutput(last_hidden_state=torch.zeros(3, length, width),
                                 final_hidden_state=torch.zeros(3, 1, width))


def generate_call(**changes):
    input_ids, mask = source()
    arguments = dict(input_ids=input_ids, attention_mask=mask, max_new_tokens=3)
    arguments.update(changes)
    return lambda models: models["seq2seq"].generate(**arguments)


def head_call(name: str, **changes):
    input_ids, mask = source()
    arguments = dict(input_ids=input_ids, attention_mask=mask)
    arguments.update(changes)
    return lambda models: models[name](**arguments)


HOLE = torch.tensor([[1, 1, 0, 1, 1], [1, 1, 1, 1, 0], [1, 1, 0, 0, 0]])
SOURCE_IDS = source()[0]
TAG_LABELS = torch.zeros(3, 5, dtype=torch.long)

BAD_INPUTS = {
    # the seq2seq model's forward
    "input_ids >= vocab": (seq2seq_call(input_ids=with_value(SOURCE_IDS, (0, 1), VOCAB)), "input_ids"),
    "input_ids < 0": (seq2seq_call(input_ids=with_value(SOURCE_IDS, (1, 0), -2)), "input_ids"),
    "input_ids float": (seq2seq_call(input_ids=SOURCE_IDS.float()), "input_ids"),
    "input_ids 1-D": (seq2seq_call(input_ids=SOURCE_IDS[0], attention_mask=None), "input_ids"),
    "input_ids 3-D": (seq2seq_call(input_ids=SOURCE_IDS[None], attention_mask=None), "input_ids"),
    "input_ids empty": (seq2seq_call(input_ids=SOURCE_IDS[:, :0], attention_mask=None), "input_ids"),
    "input_ids list": (seq2seq_call(input_ids=SOURCE_IDS.tolist()), "input_ids"),
    "mask shape": (seq2seq_call(attention_mask=torch.ones(3, 4, dtype=torch.long)), "attention_mask"),
    "mask hole": (seq2seq_call(attention_mask=HOLE), "attention_mask"),
    "mask value 2": (seq2seq_call(attention_mask=with_value(source()[1], (0, 0), 2)), "attention_mask"),
    "mask value 0.5": (seq2seq_call(attention_mask=with_value(source()[1].float(), (0, 0), 0.5)), "attention_mask"),
    "decoder_input_ids >= vocab": (seq2seq_call(decoder_input_ids=with_value(decoder_ids(), (2, 3), VOCAB + 5)),
                                   "decoder_input_ids"),
    "decoder_input_ids float": (seq2seq_call(decoder_input_ids=decoder_ids().float()), "decoder_input_ids"),
    "decoder_input_ids empty": (seq2seq_call(decoder_input_ids=decoder_ids()[:, :0]), "decoder_input_ids"),
    "decoder_input_ids 1-D": (seq2seq_call(decoder_input_ids=decoder_ids()[0]), "decoder_input_ids"),
    "decoder rows": (seq2seq_call(decoder_input_ids=decoder_ids(rows=4)), "decoder_input_ids"),
    "labels >= vocab (eval)": (seq2seq_call(labels=with_value(decoder_ids(), (0, 0), VOCAB)), "labels"),
    "labels -5 (eval)": (seq2seq_call(labels=with_value(decoder_ids(), (0, 0), -5)), "labels"),
    "labels shape (eval)": (seq2seq_call(labels=decoder_ids(steps=5)), "labels"),
    "labels float (eval)": (seq2seq_call(labels=decoder_ids().float()), "labels"),
    "labels >= vocab (train)": (seq2seq_training_call(labels=with_value(decoder_ids(), (0, 0), VOCAB)), "labels"),
    "labels shape (train)": (seq2seq_training_call(decoder_input_ids=decoder_ids(steps=3)), "labels"),
    "labels empty (train)": (seq2seq_training_call(labels=decoder_ids()[:, :0]), "labels"),
    "inputs_embeds width": (seq2seq_call(input_ids=None, inputs_embeds=torch.zeros(3, 5, 7)), "inputs_embeds"),
    "inputs_embeds 2-D": (seq2seq_call(input_ids=None, inputs_embeds=torch.zeros(3, 12)), "inputs_embeds"),
    "ids and embeds": (seq2seq_call(inputs_embeds=torch.zeros(3, 5, 12)), "inputs_embeds"),
    "no source": (seq2seq_call(input_ids=None, attention_mask=None), "input_ids"),
    "encoder_outputs width": (seq2seq_call(input_ids=None, encoder_outputs=encoder_outputs(7, 5)), "encoder_outputs"),
    "encoder_outputs length": (seq2seq_call(input_ids=None, encoder_outputs=encoder_outputs(16, 6)),
                               "encoder_outputs"),
    "decoder_inputs_embeds width": (seq2seq_call(decoder_input_ids=None, decoder_inputs_embeds=torch.zeros(3, 4, 5)),
                                    "decoder_inputs_embeds"),
    # generate()
    "generate input_ids >= vocab": (generate_call(input_ids=with_value(SOURCE_IDS, (0, 0), VOCAB)), "input_ids"),
    "generate mask hole": (generate_call(attention_mask=HOLE), "attention_mask"),
    "generate empty source": (generate_call(input_ids=SOURCE_IDS[:, :0], attention_mask=None), "input_ids"),
    "generate float ids": (generate_call(input_ids=SOURCE_IDS.float()), "input_ids"),
    "generate decoder_input_ids >= vocab": (generate_call(decoder_input_ids=torch.full((3, 1), VOCAB)),
                                            "decoder_input_ids"),
    # the tagger
    "tagger labels >= num_labels": (head_call("tagger", labels=with_value(TAG_LABELS, (0, 0), NUM_LABELS)), "labels"),
    "tagger labels shape": (head_call("tagger", labels=TAG_LABELS[:, :4]), "labels"),
    "tagger input_ids >= vocab": (head_call("tagger", input_ids=with_value(SOURCE_IDS, (0, 0), VOCAB)), "input_ids"),
    "tagger mask hole": (head_call("tagger", attention_mask=HOLE), "attention_mask"),
    "tagger inputs_embeds width": (head_call("tagger", input_ids=None, inputs_embeds=torch.zeros(3, 5, 4)),
                                   "inputs_embeds"),
    # the classifiers
    "classifier labels >= num_labels": (head_call("classifier", labels=torch.tensor([0, 1, NUM_LABELS])), "labels"),
    "classifier labels shape": (head_call("classifier", labels=torch.tensor([0, 1])), "labels"),
    "classifier input_ids >= vocab": (head_call("classifier", input_ids=with_value(SOURCE_IDS, (0, 0), VOCAB)),
                                      "input_ids"),
    "classifier mask hole": (head_call("classifier", attention_mask=HOLE), "attention_mask"),
    "han 4-D ids": (head_call("han", input_ids=SOURCE_IDS[:, None, None], attention_mask=None), "input_ids"),
    "han mask shape": (head_call("han", input_ids=SOURCE_IDS.view(3, 1, 5),
                                 attention_mask=torch.ones(3, 2, 5, dtype=torch.long)), "attention_mask"),
    "han word hole": (head_call("han", input_ids=SOURCE_IDS.view(3, 1, 5), attention_mask=HOLE.view(3, 1, 5)),
                      "attention_mask"),
}


@pytest.mark.parametrize("call, argument", BAD_INPUTS.values(), ids=BAD_INPUTS.keys())
def test_a_bad_model_input_is_refused_naming_the_argument(models, call, argument):
    refuses(lambda: call(models), argument)


def test_labels_with_rows_for_another_batch_are_refused_naming_labels(models):
    """The message names what the caller passed (it used to name `decoder_input_ids` and `rows_per_source`)."""
    input_ids, mask = source()
    model = models["seq2seq"]
    for rows in (6, 2):
        with pytest.raises(ValueError) as caught:
            model(input_ids=input_ids, attention_mask=mask, labels=decoder_ids(rows=rows))
        assert str(caught.value) == (f"`labels` [{rows}, 4] must have one row for each of the 3 sources of "
                                     f"`input_ids` [3, 5] (3 rows), got {rows}.")
    with pytest.raises(ValueError) as caught:
        model(input_ids=input_ids, attention_mask=mask, labels=decoder_ids(rows=4), rows_per_source=2)
    assert str(caught.value) == ("`labels` [4, 4] must have `rows_per_source` = 2 rows for each of the 3 sources of "
                                 "`input_ids` [3, 5] (6 rows), got 4.")
    with pytest.raises(ValueError) as caught:
        model(inputs_embeds=torch.zeros(3, 5, 12), attention_mask=mask, labels=decoder_ids(rows=6))
    assert str(caught.value).startswith("`labels` [6, 4] must have one row for each of the 3 sources of "
                                        "`inputs_embeds` [3, 5, 12] (3 rows)")
    with pytest.raises(ValueError) as caught:
        model(input_ids=input_ids, attention_mask=mask, decoder_inputs_embeds=torch.zeros(6, 4, 12))
    assert str(caught.value) == ("`decoder_inputs_embeds` [6, 4, 12] must have one row for each of the 3 sources in "
                                 "the batch (3 rows), got 6.")


def test_image_to_text_labels_for_another_batch_are_refused_naming_labels():
    from hf_bahdanau import BahdanauForImageToText, BahdanauImageToTextConfig

    model = BahdanauForImageToText(BahdanauImageToTextConfig(
        vocab_size=12, embedding_size=8, hidden_size=16, attention_size=8, output_size=8, cnn_channels=[4],
        cnn_pool_sizes=[[2, 2]])).eval()
    with pytest.raises(ValueError) as caught:
        model(pixel_values=torch.zeros(2, 3, 4, 4), labels=torch.full((4, 3), 5))
    assert str(caught.value) == ("`labels` [4, 3] must have one row for each of the 2 sources of `pixel_values` "
                                 "[2, 3, 4, 4] (2 rows), got 4.")


BAD_GENERATION_ARGUMENTS = {
    "num_beams=0": ({"num_beams": 0}, ValueError, "`num_beams` must be an int ≥ 1 (the beams of beam search; 1 = greedy "
                    "search or sampling), got 0."),
    "num_beams=-1": ({"num_beams": -1}, ValueError, "`num_beams` must be an int ≥ 1 (the beams of beam search; 1 = "
                     "greedy search or sampling), got -1."),
    "num_beams=2.5": ({"num_beams": 2.5}, TypeError, "`num_beams` must be an int ≥ 1 (the beams of beam search; 1 = "
                      "greedy search or sampling), got 2.5 (float)."),
    "num_beams='2'": ({"num_beams": "2"}, TypeError, "got '2' (str)."),
    "num_return_sequences=0": ({"num_beams": 2, "num_return_sequences": 0}, ValueError,
                               "`num_return_sequences` must be an int ≥ 1 (the sequences returned per input, at most "
                               "num_beams), got 0."),
    "max_new_tokens=2.5": ({"max_new_tokens": 2.5}, TypeError, "`max_new_tokens` must be an int ≥ 1 (the most tokens "
                           "generated), got 2.5 (float)."),
    "max_length=0": ({"max_new_tokens": None, "max_length": 0}, ValueError, "`max_length` must be an int ≥ 1 (the "
                     "longest output, the start token included), got 0."),
    "min_new_tokens=-1": ({"num_beams": 2, "min_new_tokens": -1}, ValueError, "`min_new_tokens` must be an int ≥ 0 "
                          "(the fewest tokens generated before EOS), got -1."),
    "length_penalty=nan": ({"num_beams": 2, "length_penalty": float("nan")}, ValueError,
                           "`length_penalty` must be a finite number (the exponent α of the length penalty), got nan."),
    "pad_token_id=-1": ({"num_beams": 2, "pad_token_id": -1}, ValueError,
                        f"`pad_token_id` must be a token id in [0, {VOCAB}) (the model's vocabulary), got -1."),
    "eos_token_id >= vocab": ({"eos_token_id": [2, VOCAB]}, ValueError, f"`eos_token_id` must be a token id in [0, "
                              f"{VOCAB}) (the model's vocabulary) or a list of them (generation stops at any), got "
                              f"[2, {VOCAB}]."),
    "decoder_start_token_id >= vocab": ({"decoder_start_token_id": [1, VOCAB, 1]}, ValueError,
                                        f"`decoder_start_token_id` must be a token id in [0, {VOCAB}) (the model's "
                                        f"vocabulary) or a list of them (one per input), got [1, {VOCAB}, 1]."),
}


@pytest.mark.parametrize("arguments, error, message", BAD_GENERATION_ARGUMENTS.values(),
                         ids=BAD_GENERATION_ARGUMENTS.keys())
def test_a_bad_generation_argument_is_refused_before_decoding(models, arguments, error, message):
    """Also in a generation config: generate() checks what its loops read, whichever way it was given."""
    with pytest.raises(error) as caught:
        generate_call(**arguments)(models)
    assert str(caught.value).endswith(message)
    input_ids, mask = source()
    with pytest.raises(error) as caught:
        models["seq2seq"].generate(input_ids, attention_mask=mask,
                                   generation_config=GenerationConfig(**{"max_new_tokens": 3, **arguments}))
    assert str(caught.value).endswith(message)


# 3. decoding helpers -----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def translator():
    tokenizer = train_tokenizer(["3 March 2015", "2015-03-03"], kind="char")
    model = tiny_model("rnnsearch", vocab_size=len(tokenizer))
    model.generation_config.max_new_tokens = 4
    return model, tokenizer


@pytest.mark.parametrize("texts", [[""], ["   "], ["3 March", "\t\n"]], ids=["empty", "blank", "one blank"])
def test_translate_refuses_blank_texts(translator, texts):
    model, tokenizer = translator
    refuses(lambda: translate(model, tokenizer, texts), "texts")


def image_to_text_generate(**arguments):
    from hf_bahdanau import BahdanauForImageToText, BahdanauImageToTextConfig

    model = BahdanauForImageToText(BahdanauImageToTextConfig(
        vocab_size=12, embedding_size=8, hidden_size=16, attention_size=8, output_size=8, cnn_channels=[4],
        cnn_pool_sizes=[[2, 2]])).eval()
    return model.generate(pixel_values=torch.zeros(2, 3, 8, 8), max_new_tokens=3, **arguments)


def ensemble_generate(**arguments):
    from hf_bahdanau.ensemble import BahdanauEnsembleForConditionalGeneration

    input_ids, mask = source()
    return BahdanauEnsembleForConditionalGeneration([tiny_model("rnnsearch")] * 2).generate(
        input_ids, attention_mask=mask, max_new_tokens=3, **arguments)


def pointer_generate(**arguments):
    from test_pointer_network import inputs_of, pointer_batch, pointer_model

    model = pointer_model()
    return model.generate(**inputs_of(pointer_batch(model)), max_new_tokens=3, **arguments)


@pytest.mark.parametrize("generate", [image_to_text_generate, ensemble_generate, pointer_generate],
                         ids=["image-to-text", "ensemble", "pointer network"])
def test_every_generating_family_refuses_num_beams_0(generate):
    with pytest.raises(ValueError, match=r"^`num_beams` must be an int ≥ 1 .*, got 0\.$"):
        generate(num_beams=0)


def test_good_special_token_ids_pass_the_generation_checks(models):
    """A list of EOS ids, and one start id per input, as generate() takes them."""
    input_ids, mask = source()
    sequences = models["seq2seq"].generate(input_ids, attention_mask=mask, max_new_tokens=2, eos_token_id=[2, 3],
                                           decoder_start_token_id=[1, 4, 5], num_beams=2)
    assert sequences[:, 0].tolist() == [1, 4, 5]


def test_the_translation_pipeline_refuses_num_beams_0_by_name(translator):
    model, tokenizer = translator
    with pytest.raises(ValueError, match=r"^`num_beams` must be an int ≥ 1 .*, got 0\.$"):
        BahdanauTranslationPipeline(model=model, tokenizer=tokenizer)("3 March 2015", num_beams=0)


def test_translate_refuses_a_string_for_the_list_of_texts(translator):
    model, tokenizer = translator
    refuses(lambda: translate(model, tokenizer, "3 March 2015"), "texts")


def test_translate_warns_about_unknown_tokens_and_inputs_longer_than_training(translator, caplog):
    model, tokenizer = translator
    model.config.max_training_source_length = 12
    with caplog.at_level(logging.WARNING, logger="hf_bahdanau.modeling.source_warnings"):
        results = translate(model, tokenizer, ["3 March", "1985年5月14日", "3 March 2015 3 March 2015"])
    assert len(results) == 3
    messages = [record.getMessage() for record in caplog.records]
    assert messages == [
        "'1985年5月14日': 6 of its 11 tokens are unknown to the tokenizer (<unk>); the output is unreliable.",
        "'3 March 2015 3 March 2015': 26 tokens, longer than every source seen in training (at most 12 tokens); the "
        "output is unreliable.",
    ]


# 4. training scripts -----------------------------------------------------------------------------------------------


def seq2seq_script_arguments(tmp_path: Path, train_file: Path, *extra: str) -> list[str]:
    return ["--preset", "rnnsearch", "--train_file", str(train_file), "--do_train", "--output_dir",
            str(tmp_path / "out"), "--max_steps", "2", "--report_to", "none", *extra]


def run_seq2seq_main(argv):
    from training.run_seq2seq import main

    return main(argv)


def good_rows(path: Path) -> Path:
    path.write_text("".join(json.dumps({"source": f"{n} March", "target": f"03-{n:02d}"}) + "\n" for n in range(1, 9)))
    return path


SCRIPT_CASES = {
    "empty jsonl": (lambda tmp: (tmp / "train.jsonl").write_text("") and None, "train.jsonl", "train_file"),
    "empty csv": (lambda tmp: (tmp / "train.csv").write_text(""), "train.csv", "train_file"),
    "header-only csv": (lambda tmp: (tmp / "train.csv").write_text("source,target\n"), "train.csv", "train_file"),
    "latin-1 jsonl": (lambda tmp: (tmp / "train.jsonl").write_bytes('{"source": "März", "target": "03"}\n'
                                                                      .encode("latin-1")), "train.jsonl", "train.jsonl"),
    "latin-1 csv": (lambda tmp: (tmp / "train.csv").write_bytes("source,target\nMärz,03\n".encode("latin-1")),
                    "train.csv", "train.csv"),
}


@pytest.mark.parametrize("write, name, argument", SCRIPT_CASES.values(), ids=SCRIPT_CASES.keys())
def test_the_seq2seq_script_refuses_unreadable_data_naming_the_file(tmp_path, capsys, write, name, argument):
    write(tmp_path)
    exits_as_argparse_does(lambda: run_seq2seq_main(seq2seq_script_arguments(tmp_path, tmp_path / name)), argument,
                           capsys)


def test_the_seq2seq_script_refuses_negative_max_steps(tmp_path, capsys):
    train = good_rows(tmp_path / "train.jsonl")
    arguments = seq2seq_script_arguments(tmp_path, train)
    arguments[arguments.index("--max_steps") + 1] = "-3"
    exits_as_argparse_does(lambda: run_seq2seq_main(arguments), "max_steps", capsys)


@pytest.mark.parametrize("path", ["./no/such/model", "outputs/missing-model", "/tmp/hf-bahdanau-missing"])
def test_a_missing_local_model_path_is_refused_at_once(tmp_path, monkeypatch, capsys, path):
    """Without network a missing path that could be a Hub id costs a long wait; these three can only be local paths
    (``outputs/`` exists here)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "outputs").mkdir()
    train = good_rows(tmp_path / "train.jsonl")
    arguments = ["--model_name_or_path", path, "--train_file", str(train), "--do_train", "--output_dir",
                 str(tmp_path / "out"), "--report_to", "none"]
    exits_as_argparse_does(lambda: run_seq2seq_main(arguments), "model_name_or_path", capsys)


def test_the_head_scripts_refuse_empty_data_and_negative_max_steps(tmp_path, capsys):
    from training.run_classification import main as run_classification
    from training.run_ner import main as run_ner

    (tmp_path / "empty.jsonl").write_text("")
    common = ["--train_file", str(tmp_path / "empty.jsonl"), "--do_train", "--output_dir", str(tmp_path / "out"),
              "--report_to", "none"]
    exits_as_argparse_does(lambda: run_ner(common), "train_file", capsys)
    exits_as_argparse_does(lambda: run_classification(common), "train_file", capsys)
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"text": f"word {n} .", "label": n % 2}) + "\n" for n in range(6)))
    arguments = ["--train_file", str(rows), "--do_train", "--output_dir", str(tmp_path / "out"), "--report_to",
                 "none", "--max_steps", "-3"]
    exits_as_argparse_does(lambda: run_classification(arguments), "max_steps", capsys)


def test_the_vqa_image_encoder_refuses_an_image_smaller_than_its_first_pooling_window():
    from hf_bahdanau.modeling.configuration_coattention import BahdanauVisualQuestionAnsweringConfig
    from hf_bahdanau.modeling.modeling_coattention import BahdanauForVisualQuestionAnswering

    config = BahdanauVisualQuestionAnsweringConfig(vocab_size=VOCAB, hidden_size=16, attention_size=8,
                                                   answer_hidden_size=8, num_labels=NUM_LABELS, cnn_channels=[4, 8],
                                                   cnn_pool_sizes=[[3, 2], [2, 2]])
    model = BahdanauForVisualQuestionAnswering(config).eval()
    question = torch.tensor([[4, 5, 6]])
    with pytest.raises(ValueError) as caught:
        model(input_ids=question, pixel_values=torch.zeros(1, 3, 2, 5))
    assert str(caught.value) == ("`pixel_values` images must be at least 3×2 pixels (height × width: the first "
                                 "convolution block's max pooling window, `cnn_pool_sizes[0]`), got 2×5.")
    assert model(input_ids=question, pixel_values=torch.zeros(1, 3, 3, 2)).logits.shape == (1, NUM_LABELS)


@pytest.mark.parametrize("field", ["decoder_start_token_id", "pad_token_id"])
@pytest.mark.parametrize("family", ["seq2seq", "image_to_text"])
def test_labels_without_a_start_or_pad_id_in_the_config_are_refused_naming_the_field(field, family):
    from hf_bahdanau import BahdanauForImageToText, BahdanauImageToTextConfig

    if family == "seq2seq":
        model = BahdanauForConditionalGeneration(tiny_config("rnnsearch", **{field: None}))
        inputs = dict(input_ids=torch.tensor([[4, 5, 6]]))
    else:
        model = BahdanauForImageToText(BahdanauImageToTextConfig(vocab_size=VOCAB, hidden_size=8, embedding_size=8,
                                                                 cnn_channels=[4], cnn_pool_sizes=[[2, 2]],
                                                                 **{field: None}))
        inputs = dict(pixel_values=torch.zeros(1, 1, 4, 4))
    with pytest.raises(ValueError) as caught:
        model(**inputs, labels=torch.tensor([[4, 5, -100]]))
    assert str(caught.value) == (f"`config.{field}` is None, so the decoder's inputs cannot be made by shifting the "
                                 "target ids right ([decoder_start_token_id, y_1, …], -100 read as pad_token_id): set "
                                 "it, or pass `decoder_input_ids`.")
    assert model(**inputs, labels=torch.tensor([[4, 5, 6]]), decoder_input_ids=torch.tensor([[1, 4, 5]])).loss > 0


@pytest.mark.parametrize("script, flags, config_class", [
    ("run_seq2seq", ["--preset", "rnnsearch"], "BahdanauConfig"),
    ("run_seq2seq", ["--architecture", "transformer"], "MarianConfig"),
    ("run_pointer", [], "BahdanauPointerConfig"),
    ("run_classification", [], "BahdanauEncoderConfig"),
    ("run_ner", [], "BahdanauEncoderConfig"),
    ("run_image_to_text", [], "BahdanauImageToTextConfig"),
    ("run_vqa", [], "BahdanauVisualQuestionAnsweringConfig"),
])
def test_a_bad_config_override_ends_the_run_scripts_before_any_data_is_read(script, flags, config_class, tmp_path,
                                                                             capsys):
    import importlib

    main = importlib.import_module(f"training.{script}").main
    arguments = [*flags, "--config_overrides", "vocab_size=8,hiden_size=3", "--output_dir", str(tmp_path)]
    error = exits_as_argparse_does(lambda: main(arguments), "--config_overrides", capsys)
    assert f"`--config_overrides` takes 'field=value,...' with {config_class} fields [" in error
    assert error.rstrip().endswith("got 'hiden_size=3'."), error
