"""Multi-representational attention (``meta_embedding_sources``, Kiela et al. 2018's dynamic meta-embeddings): the
mixture against the plain reference in float64, the spellings and the pretrained vectors, padding, gradients, every
model class, save/load and remote code, the word-vector reader, and bad input refused by name."""

import json
from pathlib import Path

import pytest
import torch
from conftest import PAD, VOCAB, padded_batch, tiny_config, tiny_encoder_config

from hf_bahdanau import (BahdanauConfig, BahdanauForConditionalGeneration, BahdanauForSequenceClassification,
                         BahdanauForTokenClassification)
from hf_bahdanau.modeling.meta_embedding import MetaEmbedding, spell_tokens
from hf_bahdanau.reference import meta_embedding as reference_meta_embedding
from hf_bahdanau.word_vectors import prepare_meta_embedding, read_word_vectors
from child_process import run_script

REPO_ROOT = Path(__file__).resolve().parents[1]
TOKENS = ["<pad>", "<s>", "</s>", "<unk>", *(f"w{index}é" * (1 + index % 3) for index in range(4, VOCAB))]
SOURCES = ["word", "chars", "pretrained"]


def meta_config(**overrides) -> BahdanauConfig:
    return tiny_config("rnnsearch", **{"meta_embedding_sources": SOURCES, "pretrained_embedding_size": 5,
                                       "char_hidden_size": 6, "char_embedding_size": 4, **overrides})


def filled(model, seed: int = 3):
    """The model with spellings from ``TOKENS`` and random pretrained vectors."""
    model.set_token_spellings(TOKENS)
    model.set_pretrained_vectors(torch.randn(VOCAB, 5, generator=torch.Generator().manual_seed(seed)))
    return model


def tiny_meta_model(**overrides) -> BahdanauForConditionalGeneration:
    torch.manual_seed(0)
    return filled(BahdanauForConditionalGeneration(meta_config(**overrides))).eval()


def test_spellings_are_the_utf8_bytes_between_the_marks():
    # "é" is the two bytes 0xC3 0xA9; byte b is spelled b + 3, after 1 (begin), before 2 (end), padded with 0
    assert spell_tokens(["ab", "é", ""]).tolist() == [[1, 97 + 3, 98 + 3, 2], [1, 0xC3 + 3, 0xA9 + 3, 2],
                                                     [1, 2, 0, 0]]
    assert spell_tokens(["ab"], width=6).tolist() == [[1, 100, 101, 2, 0, 0]]
    with pytest.raises(ValueError, match="`width` must hold the longest spelling, 4 ids"):
        spell_tokens(["ab"], width=3)


@pytest.mark.parametrize("rnn_type", ["gru", "lstm"])
def test_the_mixture_equals_the_reference_in_float64(rnn_type):
    torch.manual_seed(0)
    config = meta_config(rnn_type=rnn_type)
    model = filled(BahdanauForConditionalGeneration(config)).double().eval()
    meta = model.model.encoder.meta_embedding
    input_ids, mask = padded_batch((7, 5, 2))
    with torch.no_grad():
        words = model.model.encoder.embed_tokens(input_ids)
        embeddings, weights = meta(input_ids, words)
        for row, length in enumerate(mask.sum(1).tolist()):
            expected, expected_weights = reference_meta_embedding(meta, input_ids[row, :length].tolist(),
                                                                  words[row, :length])
            # float64: relative rounding ~1e-16 per operation on values of order 1, a few hundred operations deep
            torch.testing.assert_close(embeddings[row, :length], expected, rtol=0, atol=1e-12)
            torch.testing.assert_close(weights[row, :length], expected_weights, rtol=0, atol=1e-12)
    assert weights.shape == (3, 7, 3)
    torch.testing.assert_close(weights.sum(-1), torch.ones(3, 7, dtype=torch.float64), rtol=0, atol=1e-15)


def test_the_weights_move_with_the_sources():
    """A source whose score is raised takes the weight: a is read, not ignored."""
    model = tiny_meta_model()
    meta = model.model.encoder.meta_embedding
    input_ids, _ = padded_batch((4,))
    words = model.model.encoder.embed_tokens(input_ids)
    with torch.no_grad():
        meta.projections["chars"].bias += 100 * meta.score.weight[0] / meta.score.weight[0].norm()
        _, weights = meta(input_ids, words)
    assert (weights[..., 1] > 0.999).all()


def test_padding_gets_no_weight_and_left_padding_equals_right_padding():
    model = tiny_meta_model()
    input_ids, mask = padded_batch((6, 3))
    labels = input_ids[:, :4].clone()
    with torch.no_grad():
        right = model(input_ids=input_ids, attention_mask=mask, labels=labels, output_attentions=True)
        shifted = torch.stack([row.roll(int((~mask[index].bool()).sum())) for index, row in enumerate(input_ids)])
        left_mask = torch.stack([row.roll(int((~mask[index].bool()).sum())) for index, row in enumerate(mask)])
        left = model(input_ids=shifted, attention_mask=left_mask, labels=labels, output_attentions=True)
    weights = right.embedding_attentions
    assert weights.shape == (2, 6, 3)
    assert (weights[1, 3:] == 0).all() and (weights[1, :3].sum(-1) - 1).abs().max() < 1e-6
    torch.testing.assert_close(left.embedding_attentions[1, 3:], weights[1, :3])
    # float32: the same sums in the same order after the layout change, so equal up to a few ulps of values ~1
    torch.testing.assert_close(left.logits, right.logits, rtol=0, atol=1e-5)


def test_gradients_reach_every_source_but_the_fixed_vectors():
    model = tiny_meta_model().train()
    input_ids, mask = padded_batch((5, 4))
    model(input_ids=input_ids, attention_mask=mask, labels=input_ids[:, :3]).loss.backward()
    encoder = model.model.encoder
    chars = encoder.meta_embedding.sources["chars"]
    for parameter in (encoder.embed_tokens.weight, chars.byte_embeddings.weight, chars.rnn.layers[0].weight_hh_l0,
                      encoder.meta_embedding.score.weight, *encoder.meta_embedding.projections.parameters()):
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0
    pretrained = encoder.meta_embedding.sources["pretrained"]
    assert "vectors" not in dict(pretrained.named_parameters()) and not pretrained.vectors.requires_grad


def test_set_token_spellings_widens_the_table_and_reads_a_tokenizer():
    model = BahdanauForConditionalGeneration(meta_config())
    long_token = "x" * 30

    class Tokenizer:  # the two things read from a tokenizer
        def __len__(self):
            return 5

        def convert_ids_to_tokens(self, ids):
            return ["<pad>", "<s>", "</s>", long_token, None][:len(ids)]

    model.set_token_spellings(Tokenizer())
    spellings = model.model.encoder.meta_embedding.sources["chars"].spellings
    assert model.config.token_spelling_length == 32 and spellings.shape == (VOCAB, 32)
    assert spellings[3, :32].tolist() == [1, *[ord("x") + 3] * 30, 2]
    assert spellings[4].tolist()[:3] == [1, 2, 0]  # a token without text is spelled empty
    assert (spellings[5:] == 0).all()


def test_save_and_load_keep_the_spellings_and_the_vectors(tmp_path):
    model = tiny_meta_model()
    model.set_token_spellings([*TOKENS[:-1], "z" * 20])
    input_ids, mask = padded_batch((5, 3))
    model.save_pretrained(tmp_path)
    loaded = BahdanauForConditionalGeneration.from_pretrained(tmp_path).eval()
    assert loaded.config.token_spelling_length == 22
    with torch.no_grad():
        expected = model(input_ids=input_ids, attention_mask=mask, labels=input_ids).logits
        torch.testing.assert_close(loaded(input_ids=input_ids, attention_mask=mask, labels=input_ids).logits,
                                   expected, rtol=0, atol=0)
    assert json.loads((tmp_path / "config.json").read_text())["meta_embedding_sources"] == SOURCES


def test_generate_and_remote_code_without_the_package(tmp_path):
    model = tiny_meta_model()
    input_ids, mask = padded_batch((5, 3))
    with torch.no_grad():
        expected = model.generate(input_ids, attention_mask=mask, num_beams=2, max_new_tokens=4)
    model.register_for_auto_class("AutoModelForSeq2SeqLM")
    model.save_pretrained(tmp_path / "model")
    script = f"""
import torch
from transformers import AutoModelForSeq2SeqLM
model = AutoModelForSeq2SeqLM.from_pretrained({str(tmp_path / 'model')!r}, trust_remote_code=True).eval()
ids, mask = torch.tensor({input_ids.tolist()}), torch.tensor({mask.tolist()})
with torch.no_grad():
    out = model(input_ids=ids, attention_mask=mask, labels=ids, output_attentions=True)
    print(model.generate(ids, attention_mask=mask, num_beams=2, max_new_tokens=4).tolist())
print(list(out.embedding_attentions.shape))
"""
    lines = run_script(script, tmp_path, isolated=True, hide_package=True).strip().splitlines()
    assert lines[-2:] == [str(expected.tolist()), "[2, 5, 3]"]


def test_every_model_class_mixes_its_source_embeddings():
    input_ids, mask = padded_batch((6, 4))
    config = dict(num_labels=3, meta_embedding_sources=SOURCES, pretrained_embedding_size=5)
    heads = {
        "tagger": BahdanauForTokenClassification(tiny_encoder_config("rnnsearch", **config)),
        "classifier": BahdanauForSequenceClassification(tiny_encoder_config("rnnsearch", **config)),
    }
    for name, head in heads.items():
        filled(head).eval()
        with torch.no_grad():
            output = head(input_ids=input_ids, attention_mask=mask, output_attentions=True)
        weights = output.embedding_attentions
        assert weights.shape == (2, 6, 3), name
        assert (weights[1, 4:] == 0).all(), name
        torch.testing.assert_close(weights[0].sum(-1), torch.ones(6), rtol=0, atol=1e-6)


def test_the_hierarchical_classifier_returns_the_weights_per_sentence():
    torch.manual_seed(0)
    head = filled(BahdanauForSequenceClassification(tiny_encoder_config(
        "rnnsearch", num_labels=2, hierarchical=True, meta_embedding_sources=SOURCES, pretrained_embedding_size=5)))
    words = torch.tensor([[[5, 6, 7], [8, 9, PAD]], [[10, PAD, PAD], [PAD, PAD, PAD]]])
    with torch.no_grad():
        output = head.eval()(input_ids=words, attention_mask=(words != PAD).long(), output_attentions=True)
    weights = output.embedding_attentions
    assert weights.shape == (2, 2, 3, 3)
    assert (weights[0, 1, 2] == 0).all() and (weights[1, 1] == 0).all() and (weights[1, 0, 1:] == 0).all()
    torch.testing.assert_close(weights[0, 0].sum(-1), torch.ones(3), rtol=0, atol=1e-6)


def test_a_model_used_before_its_data_is_filled_says_what_to_call():
    input_ids, mask = padded_batch((4,))
    model = BahdanauForConditionalGeneration(meta_config())
    with pytest.raises(ValueError, match=r"no spelling: call `model.set_token_spellings\(tokenizer\)`"):
        model(input_ids=input_ids, attention_mask=mask, labels=input_ids)
    model.set_token_spellings(TOKENS)
    with pytest.raises(ValueError, match=r"pretrained vectors are all 0: call `model.set_pretrained_vectors"):
        model(input_ids=input_ids, attention_mask=mask, labels=input_ids)


@pytest.mark.parametrize("call, message", [
    (lambda model: model.set_pretrained_vectors(torch.ones(VOCAB, 4)), r"`vectors` must be \[n ≤ vocab_size=40, "
                                                                        r"pretrained_embedding_size=5\], got \[40, 4\]"),
    (lambda model: model.set_pretrained_vectors(torch.ones(VOCAB + 1, 5)), r"`vectors` must be \[n ≤ vocab_size"),
    (lambda model: model.set_pretrained_vectors(torch.full((2, 5), float("nan"))), "`vectors` must be finite"),
    (lambda model: model.set_token_spellings(["a"] * (VOCAB + 1)), "`tokens` holds 41 tokens, but the model's "
                                                                   "vocabulary has 40"),
])
def test_bad_data_is_refused_by_name(call, message):
    with pytest.raises(ValueError, match=message):
        call(BahdanauForConditionalGeneration(meta_config()))


def test_models_without_the_source_refuse_its_data():
    model = BahdanauForConditionalGeneration(tiny_config("rnnsearch"))
    with pytest.raises(ValueError, match="spells no tokens: `meta_embedding_sources` is None"):
        model.set_token_spellings(TOKENS)
    with pytest.raises(ValueError, match="reads no pretrained vectors"):
        model.set_pretrained_vectors(torch.ones(2, 5))


@pytest.mark.parametrize("overrides, message", [
    (dict(meta_embedding_sources=[]), "`meta_embedding_sources` must be distinct names of"),
    (dict(meta_embedding_sources=["word", "word"]), "`meta_embedding_sources` must be distinct names of"),
    (dict(meta_embedding_sources=["word", "glove"]), "got 'glove' in"),
    (dict(meta_embedding_sources=["word", "pretrained"]), "set `pretrained_embedding_size`"),
    (dict(pretrained_embedding_size=5), "only the 'pretrained' source reads it"),
    (dict(char_hidden_size=8), "`char_hidden_size=8`: only the 'chars' source reads it"),
    (dict(meta_embedding_sources=["chars"], token_spelling_length=1), "`token_spelling_length` must be at least 2"),
    (dict(meta_embedding_sources=["chars"], char_embedding_size=0), "`char_embedding_size` must be a positive"),
])
def test_bad_fields_are_refused_by_name(overrides, message):
    with pytest.raises(ValueError, match=message):
        BahdanauConfig(**overrides)


def test_the_module_is_the_documented_one():
    meta = MetaEmbedding(meta_config())
    assert list(meta.sources) == SOURCES
    assert {name: tuple(projection.weight.shape) for name, projection in meta.projections.items()} == {
        "word": (12, 12), "chars": (12, 12), "pretrained": (12, 5)}  # E x d_j; the chars' d_j = 2 x char_hidden_size
    assert tuple(meta.score.weight.shape) == (1, 12)


def test_read_word_vectors_reads_glove_and_word2vec_text(tmp_path):
    path = tmp_path / "vectors.vec"
    path.write_text("3 2\nthe 0.5 -1\nNew York 2 3\ncat 0.625e-1 4\n", encoding="utf-8")
    vectors, found = read_word_vectors(path, ["<pad>", "The", "the", "New York", "dog", "cat"])
    assert found == 4
    assert vectors.tolist() == [[0, 0], [0.5, -1], [0.5, -1], [2, 3], [0, 0], [0.0625, 4]]
    glove = tmp_path / "glove.txt"
    glove.write_text("the 1 2 3\n", encoding="utf-8")
    assert read_word_vectors(glove, ["the"])[0].tolist() == [[1, 2, 3]]


@pytest.mark.parametrize("text, message", [
    ("the 1 2\ncat 1\n", "line 2: expected a word and 2 numbers, got 2 fields"),
    ("the 1 2\ncat 1 x\n", "line 2: the last 2 fields must be numbers"),
    ("the 1 2\ncat 1 inf\n", "line 2: the vector of 'cat' is not finite"),
    ("", "holds no vectors"),
    ("words only\n", "line 1: expected a word and its vector's numbers"),
])
def test_read_word_vectors_refuses_bad_files_by_line(tmp_path, text, message):
    path = tmp_path / "vectors.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        read_word_vectors(path, ["the", "cat"])


def test_prepare_meta_embedding_fills_a_new_model_from_a_tokenizer_and_a_file(tmp_path):
    class Tokenizer:
        def __len__(self):
            return len(TOKENS)

        def convert_ids_to_tokens(self, ids):
            return [TOKENS[index] for index in ids]

    path = tmp_path / "vectors.txt"
    path.write_text(f"{TOKENS[5]} 1 2 3 4 5\n", encoding="utf-8")
    model = BahdanauForConditionalGeneration(meta_config())
    prepare_meta_embedding(model, Tokenizer(), vectors_file=path)
    sources = model.model.encoder.meta_embedding.sources
    assert sources["pretrained"].vectors[5].tolist() == [1, 2, 3, 4, 5] and sources["pretrained"].vectors[6].abs().sum() == 0
    assert torch.equal(sources["chars"].spellings[:, :model.config.token_spelling_length][:len(TOKENS)],
                       spell_tokens(TOKENS, width=model.config.token_spelling_length))
    with pytest.raises(ValueError, match="vectors of size 5, but the model's `pretrained_embedding_size` is 4"):
        prepare_meta_embedding(BahdanauForConditionalGeneration(meta_config(pretrained_embedding_size=4)), Tokenizer(),
                               vectors_file=path)
    with pytest.raises(ValueError, match="`vectors_file` is given, but `meta_embedding_sources` is None"):
        prepare_meta_embedding(BahdanauForConditionalGeneration(tiny_config("rnnsearch")), Tokenizer(), path)


def test_the_model_card_names_each_source_with_its_sizes():
    from hf_bahdanau.cards.architecture import describe

    encoder = describe(meta_config().to_dict()).lines[0]
    assert "mixed per token from 3 sources by attention (dynamic meta-embeddings, Kiela et al., 2018" in encoder
    assert "the token's spelling (its UTF-8 bytes), [→h_last; ←h_first] (4-dimensional bytes, 6 units per " in encoder
    assert "never trained (5-dimensional)" in encoder
    assert "sources by attention" not in describe(tiny_config("rnnsearch").to_dict()).lines[0]


def test_run_ner_trains_a_tagger_on_meta_embeddings_with_a_vectors_file(tmp_path, one_thread):
    """The training scripts spell the tokenizer's tokens and read ``--pretrained_vectors``; the saved tagger keeps
    both and serves transformers' pipeline."""
    from transformers import pipeline

    from training import run_ner

    repo = REPO_ROOT
    words = sorted({word for line in (repo / "training/data/ner/train.jsonl").read_text().splitlines()[:64]
                    for word in json.loads(line)["tokens"]})[:20]
    vectors_file = tmp_path / "vectors.txt"
    vectors_file.write_text("".join(f"{word} {index} 1 -1\n" for index, word in enumerate(words, start=1)),
                            encoding="utf-8")
    output_dir = tmp_path / "tagger"
    run_ner.main([str(repo / "training/configs/ner_tagger.json"), "--output_dir", str(output_dir),
                  "--config_overrides", "embedding_size=8,hidden_size=16,meta_embedding_sources=[word,chars,pretrained],"
                                        "pretrained_embedding_size=3",
                  "--pretrained_vectors", str(vectors_file), "--max_train_samples", "64", "--max_eval_samples", "8",
                  "--max_predict_samples", "8", "--num_train_epochs", "1", "--num_pictures", "0"])
    tagger = pipeline("token-classification", model=str(output_dir))
    model, tokenizer = tagger.model, tagger.tokenizer
    sources = model.model.encoder.meta_embedding.sources
    found = [word for word in words if word in tokenizer.get_vocab()]
    assert found, "the tokenizer keeps some of the words"
    for word in found:
        token_id = tokenizer.convert_tokens_to_ids(word)
        assert sources["pretrained"].vectors[token_id].tolist() == [words.index(word) + 1, 1, -1]
        spelling = sources["chars"].spellings[token_id]
        assert bytes((spelling[1:(spelling != 0).sum() - 1] - 3).tolist()).decode() == word
    assert "meta-embeddings" in (output_dir / "README.md").read_text()
    assert tagger("Peter lives in Berlin")  # the pipeline runs the meta-embedding


def test_a_pointer_network_refuses_meta_embeddings_by_name():
    from hf_bahdanau import BahdanauPointerConfig

    with pytest.raises(ValueError, match=r"`meta_embedding_sources=\['word', 'chars'\]`: a pointer network"):
        BahdanauPointerConfig(vocab_size=10, meta_embedding_sources=["word", "chars"])


def test_the_onnx_export_mixes_as_pytorch(tmp_path):
    """The exported graphs (the spellings and the vectors are constants in them) decode to generate()'s tokens, greedy
    and beam search, on a model whose weights are N(0, 1) so that no two tokens nearly tie."""
    pytest.importorskip("onnxruntime", reason="the onnx extra")
    from test_onnx import assert_onnx_decodes_like_generate
    from test_onnx_search import decisive_model

    model = decisive_model("rnnsearch", seed=3, eos_bias=1.0, meta_embedding_sources=SOURCES,
                           pretrained_embedding_size=5)
    assert_onnx_decodes_like_generate(filled(model).eval(), tmp_path)


def test_resized_embeddings_are_spelled_and_vectored_again():
    """After resize_token_embeddings the new ids have no spelling and no vector: the error says so, and setting them
    again (as the training scripts do) covers the new vocabulary."""
    model = tiny_meta_model()
    model.resize_token_embeddings(VOCAB + 2)
    input_ids = torch.tensor([[VOCAB + 1, 5, 2]])
    with pytest.raises(ValueError, match=r"holds token 41, but the character embedding spells 40 tokens: call "
                                         r"`model.set_token_spellings\(tokenizer\)` after resizing"):
        model(input_ids=input_ids, labels=input_ids)
    model.set_token_spellings([*TOKENS, "new", "newer"])
    with pytest.raises(ValueError, match="holds token 41, but the pretrained vectors cover 40 tokens"):
        model(input_ids=input_ids, labels=input_ids)
    model.set_pretrained_vectors(torch.ones(VOCAB + 2, 5))
    sources = model.model.encoder.meta_embedding.sources
    assert sources["chars"].spellings.shape[0] == sources["pretrained"].vectors.shape[0] == VOCAB + 2
    assert model(input_ids=input_ids, labels=input_ids).loss.isfinite()


def test_cache_stepping_equals_teacher_forcing():
    """The meta-embedding is computed once, with the encoder: decoding through the cache gives the teacher-forced
    logits (float64)."""
    from conftest import assert_float64_close, logits_in_cached_chunks, random_labels

    model = tiny_meta_model().double()
    input_ids, mask = padded_batch((7, 5, 2))
    decoder_input_ids = random_labels(3, 5)
    with torch.no_grad():
        full = model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=decoder_input_ids, use_cache=False)
    assert_float64_close(logits_in_cached_chunks(model, input_ids, mask, decoder_input_ids)[0], full.logits)


def test_the_exported_encoder_spells_tokens_longer_than_the_export_example(tmp_path):
    """The graph is traced on an example whose tokens are short: a source holding the vocabulary's longest spelling
    gets the annotations PyTorch computes (float32 through two runtimes' kernels, values ≤ 1: 1e-5, as test_onnx)."""
    onnxruntime = pytest.importorskip("onnxruntime", reason="the onnx extra")
    from hf_bahdanau.onnx.export import export_onnx

    model = tiny_meta_model()
    export_onnx(model, tmp_path)
    lengths = spell_tokens(TOKENS).ne(0).sum(1)
    longest = int(lengths.argmax())
    assert lengths[longest] == 17 > lengths[4]  # the export example's tokens are shorter
    input_ids = torch.tensor([[longest, 7, 2], [5, 2, PAD]])
    mask = (input_ids != PAD).long()
    session = onnxruntime.InferenceSession(str(tmp_path / "encoder.onnx"))
    annotations = session.run(["annotations"], {"input_ids": input_ids.numpy(), "attention_mask": mask.numpy()})[0]
    with torch.no_grad():
        expected = model.get_encoder()(input_ids=input_ids, attention_mask=mask).last_hidden_state
    torch.testing.assert_close(torch.as_tensor(annotations), expected, rtol=0, atol=1e-5)


def test_pretrained_vectors_read_a_numpy_array_and_refuse_other_types_by_name():
    import numpy as np

    vectors = np.random.default_rng(0).standard_normal((VOCAB - 2, 5))
    model = BahdanauForConditionalGeneration(meta_config())
    model.set_pretrained_vectors(vectors[:, ::-1])  # any strides
    table = model.model.encoder.meta_embedding.sources["pretrained"].vectors
    torch.testing.assert_close(table[:VOCAB - 2], torch.from_numpy(vectors[:, ::-1].copy()).to(table.dtype))
    assert (table[VOCAB - 2:] == 0).all()
    model.set_pretrained_vectors(np.ones((2, 5), dtype=np.int64))
    assert table.dtype == model.model.encoder.meta_embedding.sources["pretrained"].vectors.dtype
    for bad, message in [
        ([[1.0] * 5], "`vectors` must be a torch tensor or a numpy array [n, pretrained_embedding_size], got list."),
        (np.array([["a"] * 5]), "`vectors` must hold real numbers, got a numpy array of dtype <U1."),
        (torch.ones(2, 5, dtype=torch.bool), "`vectors` must hold real numbers, got dtype torch.bool."),
    ]:
        with pytest.raises(TypeError) as caught:
            model.set_pretrained_vectors(bad)
        assert str(caught.value) == message


def test_a_token_none_is_spelled_empty_and_a_token_of_another_type_is_named():
    model = BahdanauForConditionalGeneration(meta_config())
    model.set_token_spellings([*TOKENS[:4], None, "ab"])  # None: convert_ids_to_tokens of an id out of vocabulary
    spellings = model.model.encoder.meta_embedding.sources["chars"].spellings
    assert spellings[4, :3].tolist() == [1, 2, 0] and spellings[5, :4].tolist() == [1, ord("a") + 3, ord("b") + 3, 2]
    with pytest.raises(TypeError) as caught:
        model.set_token_spellings(["a", 3])
    assert str(caught.value) == ("`tokens[1]`, the spelling of token id 1, must be a string (or None: no text), got 3 "
                                 "(int).")
    for bad, kind in (("abc", "str"), (5, "int")):
        with pytest.raises(TypeError) as caught:
            model.set_token_spellings(bad)
        assert str(caught.value) == ("`tokens` must be a sequence of strings (token id i spelled tokens[i]) or a "
                                     f"tokenizer, got {kind}.")


def test_read_word_vectors_gives_a_token_none_no_vector_and_names_a_token_of_another_type(tmp_path):
    path = tmp_path / "vectors.txt"
    path.write_text("the 1 2\ncat 3 4\n", encoding="utf-8")
    vectors, found = read_word_vectors(path, ["the", None, "cat"])  # None: an id out of the tokenizer's vocabulary
    assert found == 2 and vectors.tolist() == [[1, 2], [0, 0], [3, 4]]
    with pytest.raises(TypeError) as caught:
        read_word_vectors(path, ["the", 7])
    assert str(caught.value) == "`tokens[1]` must be a string (or None: no vector), got 7 (int)."
    with pytest.raises(TypeError) as caught:
        read_word_vectors(path, "the")
    assert str(caught.value) == "`tokens` must be a sequence of strings (row i: tokens[i]'s vector), got one string."
