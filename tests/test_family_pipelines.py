"""Every family's saved folder loads as one: ``pipeline(model=folder, trust_remote_code=True)``, offline, in a fresh
``python -I`` process where hf_bahdanau cannot be imported, gives the answer the family's pipeline gives here from
the model in memory; and every family's pipeline refuses an empty list by name."""

import importlib
import json
import logging
import re

import numpy as np
import pytest
import torch
from PIL import Image

from child_process import run_child
from hf_bahdanau import (
    BahdanauConfig, BahdanauEncoderConfig, BahdanauEncoderModel, BahdanauForConditionalGeneration,
    BahdanauForImageToText, BahdanauForPointerNetwork, BahdanauForSequenceClassification,
    BahdanauForTextPairClassification,
    BahdanauForTokenClassification, BahdanauForVisualQuestionAnswering, BahdanauImageProcessor,
    BahdanauImageToTextConfig, BahdanauMemoryNetworkConfig, BahdanauMemoryNetworkForSequenceClassification,
    BahdanauPointerConfig, BahdanauTextCoAttentionConfig, BahdanauVisualQuestionAnsweringConfig,
)
from hf_bahdanau.families import FAMILIES as REGISTERED
from hf_bahdanau.families import family_of
from hf_bahdanau.modeling.configuration_bahdanau import CLASSIFIER_PIPELINES, CUSTOM_PIPELINES, TAGGER_PIPELINES
from hf_bahdanau.modeling.pipeline_answers import answer_record
from hf_bahdanau.modeling.pipeline_inputs import SCALE_WARNING
from hf_bahdanau.modeling.pointing import positions
from training.common.tokenization import train_tokenizer

pytestmark = pytest.mark.usefixtures("one_thread")

CORPUS = ["mary moved to the bathroom .", "john went to the hallway .", "where is mary ?", "it is red . it is round ."]
LABELS = ["bathroom", "hallway", "kitchen", "garden"]
POOLS = [[2, 2], [2, 3]]
IMAGE_HEIGHT = 9


def labelled(**fields) -> dict:
    return dict(num_labels=len(LABELS), id2label=dict(enumerate(LABELS)), label2id={l: i for i, l in enumerate(LABELS)},
                **fields)


def decisive(model):
    """Every weight redrawn from N(0, 1): answers far from ties, so both processes give the same ones."""
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator))
    return model.eval()


def picture(height: int, width: int, channels: int = 3, seed: int = 0) -> Image.Image:
    pixels = np.random.default_rng(seed).integers(0, 256, (height, width, channels), dtype=np.uint8)
    return Image.fromarray(pixels[..., 0] if channels == 1 else pixels)


def families(vocab: int, separator: int) -> dict:
    """name -> (model, image processor or None, pipeline arguments, pipeline keyword arguments); images are given as
    the names of files in the folder, written by ``saved``."""
    text = dict(vocab_size=vocab, embedding_size=8, hidden_size=8)
    question = {"memory": ["mary moved to the bathroom .", "john went to the hallway ."], "question": "where is mary ?"}
    image_fields = dict(vocab_size=vocab, cnn_channels=[4, 8], cnn_pool_sizes=POOLS)
    return {
        "seq2seq": (BahdanauForConditionalGeneration(BahdanauConfig(**text, attention_size=8, output_size=8)), None,
                    (["mary moved to the hallway ."],), dict(max_new_tokens=4, num_beams=2)),
        "pointer": (BahdanauForPointerNetwork(BahdanauPointerConfig(input_feature_size=2, embedding_size=8,
                                                                    hidden_size=8)), None,
                    ([[0.1, 0.9], [0.5, 0.2], [0.8, 0.7], [0.3, 0.3]],), dict(forbid_repeats=True)),
        "tagger": (BahdanauForTokenClassification(BahdanauEncoderConfig(**text, **labelled())), None,
                   ("john went to the hallway .",), {}),
        "classifier": (BahdanauForSequenceClassification(BahdanauEncoderConfig(**text, **labelled())), None,
                       (["it is red .", "where is mary ?"],), dict(top_k=None)),
        "han": (BahdanauForSequenceClassification(BahdanauEncoderConfig(
            **text, **labelled(hierarchical=True, sentence_separator_token_id=separator))), None,
                ("it is red . it is round .",), dict(top_k=2)),
        "memory": (BahdanauMemoryNetworkForSequenceClassification(BahdanauMemoryNetworkConfig(
            vocab_size=vocab, hidden_size=6, memory_size=8, **labelled())), None, (question,), {}),
        "passage": (BahdanauForTextPairClassification(BahdanauTextCoAttentionConfig(
            vocab_size=vocab, hidden_size=6, attention_size=5, answer_hidden_size=7, context_hidden_size=4,
            **labelled())), None,
                    ({"context": " ".join(question["memory"]), "question": question["question"]},), dict(top_k=2)),
        "image_to_text": (BahdanauForImageToText(BahdanauImageToTextConfig(
            **image_fields, embedding_size=8, hidden_size=16, attention_size=8, output_size=8)),
                          BahdanauImageProcessor(size={"height": IMAGE_HEIGHT}), (["strip.png"],),
                          dict(max_new_tokens=4)),
        "vqa": (BahdanauForVisualQuestionAnswering(BahdanauVisualQuestionAnsweringConfig(
            **image_fields, hidden_size=6, attention_size=5, answer_hidden_size=7, phrase_windows=[1, 2, 3],
            **labelled())), BahdanauImageProcessor(num_channels=3, size={"height": IMAGE_HEIGHT}),
                ({"image": "shape.png", "question": "it is red ?"},), {}),
    }


def in_folder(arguments, folder) -> tuple:
    """The arguments with each image file name made a path in ``folder``."""
    def resolve(value):
        if isinstance(value, str) and value.endswith(".png"):
            return str(folder / value)
        if isinstance(value, dict):
            return {key: resolve(item) for key, item in value.items()}
        if isinstance(value, list):
            return [resolve(item) for item in value]
        return value
    return tuple(resolve(argument) for argument in arguments)


def save_picture(name: str, processor, folder) -> None:
    """The image ``families``' arguments name for family ``name``, in ``folder``."""
    picture(IMAGE_HEIGHT, 14, processor.num_channels).save(folder / ("strip.png" if name == "image_to_text"
                                                                     else "shape.png"))


def pipeline_of(model) -> tuple[str, type]:
    """The task and the pipeline class the model's config names (``custom_pipelines``), imported from hf_bahdanau."""
    (task, spec), = model.config.custom_pipelines.items()
    module, class_name = spec["impl"].split(".")
    return task, getattr(importlib.import_module(f"hf_bahdanau.modeling.{module}"), class_name)


FAMILIES_CHILD = """
    import json
    import sys

    import torch
    from transformers import pipeline

    torch.set_num_threads(1)
    answers = {}
    for name, call in json.load(open(sys.argv[1])).items():
        answer = pipeline(model=call["folder"], trust_remote_code=True)
        answers[name] = dict(answer=answer(*call["args"], **call["kwargs"]), pipeline=type(answer).__module__,
                             model=type(answer.model).__module__)
    answers["hf_bahdanau_modules"] = sorted(name for name in sys.modules if name.split(".")[0] == "hf_bahdanau")
    print(json.dumps(answers, default=float))
"""


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """Every family's tiny model saved with its tokenizer (and image processor), its pipeline made here from the model
    in memory with the answer it gives, and the calls that ask the folder for the same answer (written to
    calls.json in the folders' root)."""
    root = tmp_path_factory.mktemp("families")
    tokenizer = train_tokenizer(CORPUS, kind="word")
    built = families(len(tokenizer), tokenizer.convert_tokens_to_ids("."))
    calls, here = {}, {}
    for name, (model, processor, args, kwargs) in built.items():
        folder = root / name
        decisive(model).save_pretrained(folder)
        if model.config.model_type != "bahdanau-pointer":
            tokenizer.save_pretrained(folder)
        if processor is not None:
            processor.save_pretrained(folder)
            save_picture(name, processor, folder)
        task, pipeline_class = pipeline_of(model)
        answer = pipeline_class(model=model, tokenizer=None if name == "pointer" else tokenizer,
                                image_processor=processor, task=task)
        args = in_folder(args, folder)
        calls[name] = dict(folder=str(folder), args=args, kwargs=kwargs)
        here[name] = (answer, answer(*args, **kwargs))
    (root / "calls.json").write_text(json.dumps(calls))
    return here, root


@pytest.fixture(scope="module")
def answered_without_the_package(saved):
    """The answers of ``pipeline(model=folder, trust_remote_code=True)`` in a fresh process without hf_bahdanau."""
    _, root = saved
    return run_child(FAMILIES_CHILD, root, str(root / "calls.json"), isolated=True, hide_package=True)


def plain(value):
    """Numbers as floats, tuples as lists: an answer as JSON gives it back."""
    return json.loads(json.dumps(value, default=float))


def assert_same_answer(got, expected, path: str = "answer") -> None:
    """Equal labels, texts and positions; scores equal to float32 rounding (two processes, the same float32 weights)."""
    if isinstance(expected, dict):
        assert got.keys() == expected.keys(), path
        for key in expected:
            assert_same_answer(got[key], expected[key], f"{path}[{key!r}]")
    elif isinstance(expected, list):
        assert len(got) == len(expected), path
        for index, (item, want) in enumerate(zip(got, expected)):
            assert_same_answer(item, want, f"{path}[{index}]")
    elif isinstance(expected, float):
        assert got == pytest.approx(expected, abs=1e-5), path
    else:
        assert got == expected, path


FAMILIES = ["seq2seq", "pointer", "tagger", "classifier", "han", "memory", "passage", "image_to_text", "vqa"]


def test_every_registered_family_has_a_case_here():
    cases = families(vocab=12, separator=5)
    config = {name: {**model.config.to_dict(), "architectures": [type(model).__name__]}
              for name, (model, *_) in cases.items()}
    assert {family_of(fields).name for fields in config.values()} == set(REGISTERED)


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_a_saved_folder_of_every_family_answers_in_a_process_without_the_package(saved, answered_without_the_package,
                                                                                   family):
    here, _ = saved
    child = answered_without_the_package
    assert child["hf_bahdanau_modules"] == []
    assert child[family]["pipeline"].startswith("transformers_modules.")
    assert child[family]["model"].startswith("transformers_modules.")
    _, expected = here[family]
    assert expected  # a real answer, not an empty list
    assert_same_answer(child[family]["answer"], plain(expected))


@pytest.mark.parametrize("family", FAMILIES)
def test_every_pipeline_refuses_an_empty_list_by_name(saved, family):
    answer, _ = saved[0][family]
    name = "images" if family == "image_to_text" else "inputs"
    with pytest.raises(ValueError, match=rf"^`{name}` is an empty list: pass .*, or a list of at least one\.$"):
        answer([])


@pytest.mark.parametrize("family", ["memory", "passage", "vqa"])
def test_answering_pipelines_name_a_bad_top_k_or_return_attentions(saved, family):
    """One rule for the answering pipelines' options (``pipeline_answers.answer_parameters``): ``top_k`` a positive int,
    ``return_attentions`` True or False (the memory pipeline has no ``return_attentions``)."""
    here, root = saved
    answer, _ = here[family]
    args = json.loads((root / "calls.json").read_text())[family]["args"]
    for top_k in (0, True, 1.5):
        with pytest.raises(ValueError, match=rf"^`top_k` must be a positive int, got {re.escape(repr(top_k))}\.$"):
            answer(*args, top_k=top_k)
    if family != "memory":
        with pytest.raises(ValueError, match=r"^`return_attentions` must be True or False, got 1\.$"):
            answer(*args, return_attentions=1)
        assert "answers" in answer(*args, top_k=2, return_attentions=False)


def test_an_answer_record_is_the_likeliest_label_or_the_k_likeliest():
    logits = torch.log(torch.tensor([0.2, 0.5, 0.3], dtype=torch.float64))
    labels = {0: "red", 1: "blue", 2: "green"}
    assert answer_record(logits, labels, 1) == {"answer": "blue", "score": pytest.approx(0.5, abs=1e-7)}
    assert answer_record(logits, labels, 5) == {"answers": [
        {"answer": "blue", "score": pytest.approx(0.5, abs=1e-7)},
        {"answer": "green", "score": pytest.approx(0.3, abs=1e-7)},
        {"answer": "red", "score": pytest.approx(0.2, abs=1e-7)}]}


@pytest.mark.parametrize("family", ["image_to_text", "vqa"])
def test_image_pipelines_refuse_what_is_not_an_image(saved, family, tmp_path):
    answer, _ = saved[0][family]
    name = "images" if family == "image_to_text" else "image"

    def call(image):
        return answer(image) if family == "image_to_text" else answer(image=image, question="it is red ?")

    for path in ("", "  ", str(tmp_path / "missing.png")):
        with pytest.raises(ValueError, match=rf"^`{name}` {re.escape(repr(path))} is not an image file: pass the path"):
            call(path)
    with pytest.raises(ValueError, match=rf"^`{name}` has no pixels \(0 × 5\)\.$"):
        call(np.zeros((5, 0, 3), np.uint8))


def test_the_image_to_text_pipeline_refuses_a_blank_image_and_vqa_answers_about_it(saved):
    """Text is not read from nothing (an image of one colour: a 1 × 1 image, a blank page); a question may ask for
    the colour of an image."""
    read, _ = saved[0]["image_to_text"]
    blanks = ((Image.new("RGB", (1, 1), (7, 7, 7)), "[7, 7, 7]"), (np.full((4000, 4000), 255, np.uint8), "255"))
    for blank, value in blanks:
        width, height = blank.size if isinstance(blank, Image.Image) else blank.shape[::-1]
        with pytest.raises(ValueError, match=rf"^`images` is blank: its {width} × {height} pixels all have the value "
                                             rf"{re.escape(value)}, so there is nothing in it to read\.$"):
            read(blank)
    with pytest.raises(ValueError, match=r"^`images\[1\]` is blank: its 3 × 3 pixels all have the value 0"):
        read([picture(IMAGE_HEIGHT, 14, 1), Image.new("L", (3, 3))])
    with pytest.raises(ValueError, match=r"^`images` is blank: its 14 × 9 pixels all have the value \[255, 0, 0\]"):
        read(Image.new("RGB", (14, IMAGE_HEIGHT), (255, 0, 0)))  # one colour, though not one value
    answer, _ = saved[0]["vqa"]
    assert answer(image=Image.new("RGB", (14, IMAGE_HEIGHT), (7, 7, 7)), question="it is red ?")["answer"] in LABELS


@pytest.mark.parametrize("family", ["image_to_text", "vqa"])
def test_image_pipelines_warn_about_images_far_from_the_training_height(saved, family, caplog):
    answer, _ = saved[0][family]
    name = "images" if family == "image_to_text" else "image"
    kwargs = dict(max_new_tokens=2) if family == "image_to_text" else {}

    def call(image):
        return answer(image, **kwargs) if family == "image_to_text" else answer(image=image, question="it is red ?")

    for height, warned in ((IMAGE_HEIGHT, False), (IMAGE_HEIGHT * SCALE_WARNING, False),
                           (IMAGE_HEIGHT * SCALE_WARNING + 1, True), (2, True)):
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            assert call(picture(height, 14))  # still answered
        message = (f"`{name}`: an image {height} pixels high is resized to the training images' height, "
                   f"{IMAGE_HEIGHT} pixels")
        assert (message in caplog.text) == warned, caplog.text


@pytest.mark.parametrize("family, item", [
    ("passage", {"context": "mary moved to the zorblax .", "question": "where is mary ?"}),
    ("vqa", {"image": picture(IMAGE_HEIGHT, 14), "question": "is it zorblax ?"}),
])
def test_question_answering_pipelines_warn_about_unknown_words(saved, family, item, caplog):
    answer, _ = saved[0][family]
    with caplog.at_level(logging.WARNING):
        assert answer(item)["answer"] in LABELS
    assert "1 of its" in caplog.text and "tokens are unknown to the tokenizer (<unk>); the output is unreliable" in \
        caplog.text


def test_each_head_of_a_config_names_its_own_pipeline_and_keeps_a_users():
    """A model's config names the pipeline of its head: a config passed from head to head (as a checkpoint of one
    head is loaded as another) names the pipeline of the head built last; a BahdanauConfig given to the tagger or a
    classifier is left as it was (the model reads its upgrade, a BahdanauEncoderConfig, which does not inherit the
    translation pipeline); the encoder alone names none; pipelines the user set are kept."""
    seq2seq = BahdanauConfig(vocab_size=12, embedding_size=8, hidden_size=8, num_labels=2)
    BahdanauForConditionalGeneration(seq2seq)
    assert seq2seq.custom_pipelines == CUSTOM_PIPELINES
    config = BahdanauForTokenClassification(seq2seq).config
    assert config.custom_pipelines == TAGGER_PIPELINES and seq2seq.custom_pipelines == CUSTOM_PIPELINES
    for head, pipelines in ((BahdanauForSequenceClassification, CLASSIFIER_PIPELINES),
                            (BahdanauForTokenClassification, TAGGER_PIPELINES)):
        head(config)
        assert config.custom_pipelines == pipelines
    BahdanauEncoderModel(config)
    assert not hasattr(config, "custom_pipelines")
    own = {"my-task": {"impl": "my_pipeline.MyPipeline", "pt": ["AutoModelForTokenClassification"]}}
    config.custom_pipelines = seq2seq.custom_pipelines = own
    for head in (BahdanauForSequenceClassification, BahdanauEncoderModel):
        head(config)
        assert config.custom_pipelines == own
    BahdanauForConditionalGeneration(seq2seq)
    assert seq2seq.custom_pipelines == own and BahdanauForTokenClassification(seq2seq).config.custom_pipelines == own


def test_the_pointing_pipeline_answers_generates_positions(saved):
    """One input and a list of inputs (of different lengths) give generate()'s positions, each input alone."""
    point, _ = saved[0]["pointer"]
    inputs = [[[0.1, 0.9], [0.5, 0.2], [0.8, 0.7], [0.3, 0.3]], [[0.6, 0.4], [0.2, 0.8]]]
    expected = []
    for item in inputs:
        with torch.no_grad():
            generated = point.model.generate(input_features=torch.tensor([item]), forbid_repeats=True, num_beams=2)
        expected.append({"positions": positions(generated[0, 1:])})
    assert expected[0]["positions"]  # it points somewhere
    assert point(inputs, forbid_repeats=True, num_beams=2) == expected
    assert point(inputs[1], forbid_repeats=True, num_beams=2) == expected[1]


@pytest.mark.parametrize("inputs, message", [
    ([[0.1, 0.9], [0.5]], r"^`inputs\[1\]` must be a list of 2 numbers \(`config.input_feature_size`\), got \[0\.5\]"),
    ([[[0.1, 0.9]], [[0.5, "a"]]], r"^`inputs\[1\]\[0\]` must be a list of 2 numbers .*, got \[0\.5, 'a'\]\.$"),
    ([[[0.1, 0.9]], []], r"^`inputs\[1\]` must be a non-empty list with a list of 2 numbers .* per position, got \[\]"),
    ([0.1, 0.9], r"^`inputs\[0\]` must be a non-empty list with a list of 2 numbers .* per position, got 0\.1\."),
])
def test_the_pointing_pipeline_names_a_bad_input(saved, inputs, message):
    point, _ = saved[0]["pointer"]
    with pytest.raises(ValueError, match=message):
        point(inputs)
