"""Model cards of visual question answering models (co-attention, Lu et al. 2016): a tiny untrained saved model (our
CNN, a word tokenizer, two example images with questions, a co-attention picture, all_results.json) gets a card whose
metadata (pipeline tag, tags, the image + question widget, a model-index with accuracy overall, by question type and
the shape statistics per level, in words), architecture lines (the CNN, the question levels, the co-attention form in
its axis' words, the answers) and pictures follow the folder; its usage code answers the examples as the model does,
with the package (in this process, attention picture included), without it and through the shipped pipeline (a fresh
``python -I`` process without hf_bahdanau); a card written again keeps its examples; bad examples are refused."""

import ast
import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from huggingface_hub import ModelCard
from PIL import Image

from child_process import run_script
from hf_bahdanau import (
    BahdanauForVisualQuestionAnswering, BahdanauImageProcessor, BahdanauVisualQuestionAnsweringConfig,
)
from hf_bahdanau.cards import write_model_card
from hf_bahdanau.cards.architecture import describe
from hf_bahdanau.modeling.axes import CO_ATTENTIONS

pytestmark = pytest.mark.usefixtures("one_thread")

TASK = "visual-question-answering"
WORDS = ["<pad>", "<unk>", "what", "color", "shape", "is", "the", "there", "a", "circle", "?"]
ANSWERS = {0: "yes", 1: "no", 2: "red", 3: "blue", 4: "circle", 5: "triangle"}
EXAMPLES = [{"image": "example_0.png", "question": "what color is the shape ?"},
            {"image": "example_1.png", "question": "is there a circle ?"}]
COLOURS = [(200, 30, 30), (20, 40, 220)]  # one flat colour per 12 x 10 example image
RESULTS = {"eval_accuracy": 0.75, "eval_accuracy_yes_no": 0.5, "eval_accuracy_color": 1.0, "eval_accuracy_shape": 0.75,
           "eval_loss": 0.9, "eval_runtime": 1.5, "predict_accuracy": 0.625, "predict_accuracy_color": 0.875,
           "predict_shape_peak_overlap_word": 0.25, "predict_shape_attention_mass_question": 0.125,
           "train_loss": 1.1, "epoch": 3.0}
PNG = b"\x89PNG\r\n\x1a\n"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)


def vqa_config(**options) -> BahdanauVisualQuestionAnsweringConfig:
    sizes = dict(vocab_size=len(WORDS), hidden_size=8, attention_size=8, answer_hidden_size=8, cnn_channels=[4, 8],
                 cnn_pool_sizes=[[2, 2], [2, 2]], id2label=ANSWERS)
    return BahdanauVisualQuestionAnsweringConfig(**sizes | options)


def save_tokenizer(folder) -> None:
    """One token per word (split at whitespace), no special tokens added."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.WordLevel({word: index for index, word in enumerate(WORDS)}, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token="<pad>", unk_token="<unk>").save_pretrained(folder)


def answer_alone(model, processor, folder: Path, example: dict) -> str:
    """The model's answer to one example, its image and question alone (only the one a baseline reads)."""
    ids = torch.tensor([[WORDS.index(word) for word in example["question"].split()]])
    inputs = {}
    if model.config.text_config.inputs != "context":
        inputs |= dict(input_ids=ids, attention_mask=torch.ones_like(ids))
    if model.config.text_config.inputs != "question":
        inputs |= processor(Image.open(folder / example["image"]), return_tensors="pt")
    with torch.no_grad():
        return ANSWERS[int(model(**inputs).logits.argmax())]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """A saved VQA model whose two examples get different answers (the first seed that does so), its processor
    (12 x 10 RGB) and word tokenizer, the example images, a co-attention picture, a training curve and
    all_results.json."""
    folder = tmp_path_factory.mktemp("vqa-card") / "easy-vqa"
    folder.mkdir()
    processor = BahdanauImageProcessor(num_channels=3, size={"height": 12, "width": 10})
    for example, colour in zip(EXAMPLES, COLOURS):
        Image.fromarray(np.full((12, 10, 3), colour, dtype=np.uint8)).save(folder / example["image"])
    for seed in range(20):
        torch.manual_seed(seed)
        model = BahdanauForVisualQuestionAnswering(vqa_config()).eval()
        if len({answer_alone(model, processor, folder, example) for example in EXAMPLES}) == 2:
            break
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    save_tokenizer(folder)
    for picture in ("coattention_0.png", "training_curve.png"):
        (folder / picture).write_bytes((folder / EXAMPLES[0]["image"]).read_bytes())
    (folder / "all_results.json").write_text(json.dumps(RESULTS))
    return folder


@pytest.fixture(scope="module")
def card(model_dir):
    path = write_model_card(model_dir, task=TASK, dataset_name="easy-vqa", dataset_description="Coloured shapes.",
                            example_inputs=[json.dumps(example) for example in EXAMPLES], model_id=str(model_dir))
    return ModelCard.load(path)


@pytest.fixture(scope="module")
def expected_answers(model_dir):
    model = BahdanauForVisualQuestionAnswering.from_pretrained(model_dir).eval()
    processor = BahdanauImageProcessor.from_pretrained(model_dir)
    answers = [answer_alone(model, processor, model_dir, example) for example in EXAMPLES]
    assert answers[0] != answers[1], answers  # a mix-up of the examples would show
    return answers


def test_metadata_and_model_index(card):
    data = card.data
    assert data.pipeline_tag == TASK
    assert data.tags == ["hf_bahdanau", "co-attention", "vision", TASK, "custom_code"]
    assert data.datasets == ["easy-vqa"]
    assert data.widget == [{"src": example["image"], "text": example["question"]} for example in EXAMPLES]
    task_name = "Visual Question Answering"
    assert {(result.task_type, result.task_name, result.dataset_split, result.metric_type, result.metric_name,
             result.metric_value) for result in data.eval_results} == {
        (TASK, task_name, "validation", "accuracy", "Accuracy", 0.75),
        (TASK, task_name, "validation", "accuracy_yes_no", "Accuracy, yes/no questions", 0.5),
        (TASK, task_name, "validation", "accuracy_color", "Accuracy, colour questions", 1.0),
        (TASK, task_name, "validation", "accuracy_shape", "Accuracy, shape questions", 0.75),
        (TASK, task_name, "test", "accuracy", "Accuracy", 0.625),
        (TASK, task_name, "test", "accuracy_color", "Accuracy, colour questions", 0.875),
        (TASK, task_name, "test", "shape_peak_overlap_word", "Image attention's peak region overlaps the shape, word "
         "level", 0.25),
        (TASK, task_name, "test", "shape_attention_mass_question", "Image attention on the regions overlapping the "
         "shape, question level", 0.125)}


def test_text_follows_the_config_and_the_folder(card, model_dir):
    text = card.text
    assert ("Hierarchical question–image co-attention, parallel (Lu et al., 2016), for visual question answering "
            "trained on easy-vqa;") in text
    assert ("**Architecture**: hierarchical question–image co-attention, parallel (Lu et al., 2016), as in "
            "[Hierarchical Question-Image Co-Attention for Visual Question Answering]"
            "(https://arxiv.org/abs/1606.00061).") in text
    parameters = BahdanauForVisualQuestionAnswering.from_pretrained(model_dir).num_parameters()
    for line in (
        "- **Image encoder**: our CNN over 3 input channels (RGB): 2 blocks a^l = maxpool_{p_l}(ReLU(W_l ∗ a^{l−1} + "
        "b_l)) of 3×3 convolutions with 4 → 8 channels and max pooling p_l = 2×2, 2×2 (ceil mode); an H × W image "
        "leaves a grid of H' = ⌈H / 4⌉ × W' = ⌈W / 4⌉ regions, each an annotation a_i of D = 8 features, read row by "
        "row; made question-sized, v_n = tanh(W_i a_n + b_i), d = 8; the annotations carry no encoding of their "
        "position (as in the paper)",
        "- **Question**: 11 words embedded in d = 8, read at 3 levels: words, q^w_t = E x_t; phrases, q^p_t = max "
        "over n-grams of 1, 2, 3 words of tanh(W_c^n [q^w_t; …; q^w_{t+n−1}]); the question, q^s_t = LSTM(q^p)_t",
        f"- **Co-attention** at each level, k = 8: {CO_ATTENTIONS.describe('parallel')}",
        "- **Answer**: h^1 = tanh(W_1 (q̂^1 + v̂^1)), h^l = tanh(W_l [q̂^l + v̂^l; h^{l−1}]) of 8 units; p = "
        "softmax(W_h h^L) over 6 answers (a closed answer vocabulary)",
        "- **Dropout**: 0.1",
        f"- **Parameters**: {parameters:,}",
    ):
        assert line + "\n" in text, line
    assert ("It reads an image (resized to 12 × 10 pixels) into a grid of regions and a question, and picks the answer "
            "from a closed vocabulary of 6 answers: yes, no, red, blue, circle, triangle. At each level of the "
            "question (word, phrase, question)") in text
    for row in ("| validation | Accuracy | 0.75 |", "| validation | Accuracy, yes/no questions | 0.5 |",
                "| test | Image attention's peak region overlaps the shape, word level | 0.25 |"):
        assert row in text, row
    pictures = text.split("### Attention over the question and the image\n")[1].split("## How to use")[0]
    assert "as in figure 4 of Lu et al." in pictures and "![co-attention 1](coattention_0.png)" in pictures
    figures = text.split("### Figures\n")[1].split("###")[0]
    assert "![training_curve.png](training_curve.png)" in figures and "example_" not in figures  # inputs, not figures
    limitations = text.split("## Limitations")[1]
    assert "closed answer vocabulary of 6 answers" in limitations and "Every image is resized to 12 × 10" in limitations


def test_baselines_and_other_forms_are_described_by_the_config():
    alternating = describe(vqa_config(coattention="alternating", question_levels=["word"], dropout=0).to_dict(), TASK)
    assert alternating.title == "hierarchical question–image co-attention, alternating (Lu et al., 2016)"
    assert alternating.lines[1:] == [
        "**Question**: 11 words embedded in d = 8, read at 1 level: words, q^w_t = E x_t",
        f"**Co-attention** at each level, k = 8: {CO_ATTENTIONS.describe('alternating')}",
        "**Answer**: h^1 = tanh(W_1 (q̂^1 + v̂^1)), h^l = tanh(W_l [q̂^l + v̂^l; h^{l−1}]) of 8 units; p = "
        "softmax(W_h h^L) over 6 answers (a closed answer vocabulary)"]
    question_only = describe(vqa_config(inputs="question", coattention="none").to_dict(), TASK)
    assert question_only.title == "a question-only baseline (Lu et al., 2016)"
    assert question_only.lines[0] == "**Image encoder**: none: this baseline reads the question alone (v̂ = 0)"
    image_only = describe(vqa_config(inputs="context", coattention="none").to_dict(), TASK)
    assert image_only.title == "an image-only baseline (Lu et al., 2016)"
    assert image_only.lines[1] == "**Question**: none: this baseline reads the image alone (q̂ = 0)"


def test_usage_code_with_the_package_answers_as_the_model(card, expected_answers, tmp_path, monkeypatch, capsys):
    plugin = python_blocks(card.text)[0]
    assert "import hf_bahdanau" in plugin and "AutoModelForVisualQuestionAnswering.from_pretrained(folder)" in plugin
    monkeypatch.chdir(tmp_path)
    exec(compile(plugin, "card-usage", "exec"), {})
    assert ast.literal_eval(capsys.readouterr().out.strip()) == expected_answers  # a batch: questions padded
    assert (tmp_path / "coattention.png").read_bytes()[:8] == PNG


@pytest.mark.parametrize("inputs", ["question", "context"])
def test_a_baselines_usage_code_gives_it_only_the_input_it_reads(inputs, model_dir, tmp_path, monkeypatch, capsys):
    folder = tmp_path / "baseline"
    folder.mkdir()
    for path in model_dir.iterdir():
        if path.suffix == ".png" or path.name.startswith(("tokenizer", "preprocessor")):
            (folder / path.name).write_bytes(path.read_bytes())
    torch.manual_seed(0)
    model = BahdanauForVisualQuestionAnswering(vqa_config(inputs=inputs, coattention="none")).eval()
    model.save_pretrained(folder)
    processor = BahdanauImageProcessor.from_pretrained(folder)
    expected = [answer_alone(model, processor, folder, example) for example in EXAMPLES]
    path = write_model_card(folder, example_inputs=[json.dumps(example) for example in EXAMPLES], model_id=str(folder))
    plugin = python_blocks(ModelCard.load(path).text)[0]
    assert "plot_vqa_example" not in plugin  # no attention across the two inputs to draw
    monkeypatch.chdir(tmp_path)
    exec(compile(plugin, "card-usage", "exec"), {})
    assert ast.literal_eval(capsys.readouterr().out.strip()) == expected


def test_usage_code_without_the_package_and_the_pipeline_answer_as_the_model(card, expected_answers, tmp_path):
    _, remote, pipeline = python_blocks(card.text)
    assert "hf_bahdanau" not in remote + pipeline
    assert "AutoModelForVisualQuestionAnswering.from_pretrained(folder, trust_remote_code=True)" in remote
    assert "pipeline(model=folder, trust_remote_code=True)" in pipeline
    script = "\n\n".join((remote, "print('---')", pipeline,
                          "assert not [m for m in sys.modules if m.startswith('hf_bahdanau')]"))
    output = run_script(script, tmp_path, isolated=True, hide_package=True)
    by_model, by_pipeline = output.split("---\n")
    assert ast.literal_eval(by_model.strip()) == expected_answers
    answers, top = by_pipeline.strip().splitlines()
    assert ast.literal_eval(answers) == expected_answers
    top = ast.literal_eval(top)
    assert [entry["answer"] for entry in top][:1] == expected_answers[:1] and len(top) == 3
    assert all(earlier["score"] >= later["score"] for earlier, later in zip(top, top[1:]))


def test_a_card_written_again_keeps_its_examples_and_bad_examples_are_refused(model_dir, tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    for path in model_dir.iterdir():
        if path.is_file() and path.name != "README.md":
            (folder / path.name).write_bytes(path.read_bytes())
    write_model_card(folder)  # the task is the model type's; the examples the folder's images, with a question
    assert ModelCard.load(folder / "README.md").data.widget == [
        {"src": example["image"], "text": "What is in the image?"} for example in EXAMPLES]
    write_model_card(folder, example_inputs=[json.dumps(EXAMPLES[1])])
    write_model_card(folder)  # written again without examples: the card's own are kept
    assert ModelCard.load(folder / "README.md").data.widget == [{"src": "example_1.png",
                                                                 "text": "is there a circle ?"}]
    for bad in ("example_0.png", json.dumps({"image": "example_0.png"}), json.dumps({**EXAMPLES[0], "question": " "})):
        with pytest.raises(ValueError, match=r"`example_inputs` of a visual question answering model must be JSON "
                                             r"objects \{\"image\": file, \"question\": text\}, got"):
            write_model_card(folder, example_inputs=[bad])
    for image in ("missing.png", "../model/example_0.png", str(folder / "example_0.png")):
        with pytest.raises(ValueError, match=r"must name image files in `model_dir` \(.*\), relative to it, got "
                                             rf"'{re.escape(image)}'"):
            write_model_card(folder, example_inputs=[json.dumps({"image": image, "question": "is it red ?"})])
    (folder / "README.md").unlink()
    for example in EXAMPLES:
        (folder / example["image"]).unlink()
    with pytest.raises(ValueError, match=r"`example_inputs`: .* none were given and it holds no example_\*\.png"):
        write_model_card(folder)
    with pytest.raises(ValueError, match=r"`task='translation'` does not fit .*'bahdanau-vqa'"):
        write_model_card(folder, task="translation")
