"""Model cards of image-to-text models (Show, Attend and Tell): a tiny saved model (our CNN, a character tokenizer,
two example PNGs, all_results.json) gets a card whose metadata (pipeline tag, tags, the image widget, a model-index
with sequence accuracy, CER and their longer-input versions in words), architecture lines (the CNN's channels, pools
and grid, or a backbone and where its weights came from; the decoder's axis words and values) and pictures follow the
folder; its usage code reads the example images as the model does, with the package (in this process, attention
picture included) and with remote code only (a fresh process without hf_bahdanau); the CLI writes it without --task;
bad example images and a task that does not fit are refused."""

import ast
import json
import re

import numpy as np
import pytest
import torch
from huggingface_hub import ModelCard
from PIL import Image

from child_process import run_script
from hf_bahdanau import BahdanauForImageToText, BahdanauImageProcessor, BahdanauImageToTextConfig
from hf_bahdanau.cards import write_model_card
from hf_bahdanau.cards.__main__ import main as cards_main
from hf_bahdanau.cards.architecture import describe
from hf_bahdanau.families.image_to_text import image_limitations
from hf_bahdanau.families.images import image_size_words
from hf_bahdanau.modeling.axes import ATTENTION_MODES, ATTENTION_SCOPES, ATTENTION_SCORES, BRIDGES, DECODER_STYLES

pytestmark = pytest.mark.usefixtures("one_thread")

TASK = "image-to-text"
CHARACTERS = ["<pad>", "<s>", "</s>", "<unk>", *"0123456789"]
EXAMPLES = ["example_0.png", "example_1.png"]
IMAGES = [(0, (16, 40)), (255, (16, 24))]  # (grey level, (height, width)): the second is padded to 40 in a batch
RESULTS = {"eval_sequence_accuracy": 0.75, "eval_cer": 0.125, "eval_loss": 0.9, "eval_gen_len": 6.5,
           "eval_runtime": 1.5, "predict_sequence_accuracy": 0.5, "predict_cer": 0.2,
           "predict_long_sequence_accuracy": 0.25, "predict_long_cer": 0.4, "train_loss": 1.1, "epoch": 3.0}
PNG = b"\x89PNG\r\n\x1a\n"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)


def image_config(**options) -> BahdanauImageToTextConfig:
    sizes = dict(vocab_size=len(CHARACTERS), embedding_size=8, hidden_size=8, attention_size=8, output_size=8,
                 cnn_channels=[4, 8], cnn_pool_sizes=[[2, 2], [2, 1]], pad_token_id=0, bos_token_id=1,
                 eos_token_id=2, decoder_start_token_id=1)
    return BahdanauImageToTextConfig(**sizes | options)


def save_tokenizer(folder) -> None:
    """One token per character."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.WordLevel({token: index for index, token in enumerate(CHARACTERS)},
                                           unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    tokenizer.decoder = decoders.Fuse()
    PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token="<pad>", bos_token="<s>", eos_token="</s>",
                            unk_token="<unk>").save_pretrained(folder)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """A saved image-to-text model with the doubly stochastic regulariser, its processor (16 pixels high) and
    tokenizer, two example images, an attention picture, a training curve, an explorer page and all_results.json."""
    folder = tmp_path_factory.mktemp("image-card") / "digit-strips"
    torch.manual_seed(3)  # random weights that read the two examples differently
    model = BahdanauForImageToText(image_config(doubly_stochastic_weight=0.5))
    with torch.no_grad():  # never a special token: each example reads as 5 characters, whatever the random weights
        model.lm_head.bias[:CHARACTERS.index("0")] = -1e4
    model.generation_config.max_new_tokens = 5
    model.save_pretrained(folder)
    BahdanauImageProcessor(size={"height": 16}).save_pretrained(folder)
    save_tokenizer(folder)
    for name, (level, size) in zip(EXAMPLES, IMAGES):
        pixels = np.full(size, level, dtype=np.uint8)
        pixels[:, ::4] = 255 - level  # not blank: the pipeline refuses an image with nothing in it
        Image.fromarray(pixels).save(folder / name)
    for picture in ("attention_0.png", "training_curve.png"):
        (folder / picture).write_bytes((folder / EXAMPLES[0]).read_bytes())
    (folder / "image_explorer.html").write_text("<!doctype html>")
    (folder / "all_results.json").write_text(json.dumps(RESULTS))
    return folder


@pytest.fixture(scope="module")
def card(model_dir):
    path = write_model_card(model_dir, task=TASK, dataset_name="digit-strips", dataset_description="Handwriting.",
                            example_inputs=EXAMPLES, model_id=str(model_dir))
    return ModelCard.load(path)


@pytest.fixture(scope="module")
def expected_texts(model_dir):
    """What the model reads in each example image alone (greedy, 5 new tokens), in this process."""
    model = BahdanauForImageToText.from_pretrained(model_dir).eval()
    processor = BahdanauImageProcessor.from_pretrained(model_dir)
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    texts = []
    for name in EXAMPLES:
        with torch.no_grad():
            ids = model.generate(**processor(Image.open(model_dir / name), return_tensors="pt"), num_beams=1,
                                 max_new_tokens=5)
        texts.append(tokenizer.decode(ids[0], skip_special_tokens=True))
    assert texts[0] != texts[1] and all(texts), texts  # the images read differently: a mix-up would show
    return texts


def test_metadata_and_model_index(card):
    data = card.data
    assert data.pipeline_tag == "image-to-text"
    assert data.tags == ["hf_bahdanau", "show-attend-and-tell", "rnn", "attention", "lstm", "vision", TASK,
                         "custom_code"]
    assert data.datasets == ["digit-strips"]
    assert data.metrics == ["cer", "long_cer", "long_sequence_accuracy", "sequence_accuracy"]
    assert {(result.task_type, result.task_name, result.dataset_split, result.metric_type, result.metric_name,
             result.metric_value) for result in data.eval_results} == {
        (TASK, "Image-to-Text", "validation", "sequence_accuracy", "Sequence accuracy", 0.75),
        (TASK, "Image-to-Text", "validation", "cer", "Character error rate", 0.125),
        (TASK, "Image-to-Text", "test", "sequence_accuracy", "Sequence accuracy", 0.5),
        (TASK, "Image-to-Text", "test", "cer", "Character error rate", 0.2),
        (TASK, "Image-to-Text", "test", "long_sequence_accuracy", "Sequence accuracy, longer inputs than in training",
         0.25),
        (TASK, "Image-to-Text", "test", "long_cer", "Character error rate, longer inputs than in training", 0.4)}
    assert data.widget == [{"src": name} for name in EXAMPLES]


def test_text_follows_the_cnn_config_and_the_folder(card, model_dir):
    text = card.text
    title = "Show, Attend and Tell: a recurrent decoder attending over the regions of an image (Xu et al., 2015)"
    assert f"{title}, for image-to-text trained on digit-strips" in text
    assert (f"**Architecture**: {title}, as in [Show, Attend and Tell: Neural Image Caption Generation with Visual "
            "Attention](https://arxiv.org/abs/1502.03044).") in text
    parameters = BahdanauForImageToText.from_pretrained(model_dir).num_parameters()
    for line in (
        "- **Image encoder**: our CNN over 1 input channel (grey): 2 blocks a^l = maxpool_{p_l}(ReLU(W_l ∗ a^{l−1} + "
        "b_l)) of 3×3 convolutions with 4 → 8 channels and max pooling p_l = 2×2, 2×1 (ceil mode); an H × W image "
        "leaves a grid of H' = ⌈H / 4⌉ × W' = ⌈W / 2⌉ regions, each an annotation a_i of D = 8 features, read row by "
        "row; ā = the mean annotation over the image's real regions; the annotations carry no encoding of their "
        "position (as in the paper)",
        f"- **Attention**: {ATTENTION_SCORES.describe('additive')}, attention size 8; "
        f"{ATTENTION_SCOPES.describe('global')}; {ATTENTION_MODES.describe('soft')}; gated context β_i c_i, β_i = "
        "σ(w_βᵀ q_i + b_β) (Xu et al., 2015); trained with the doubly stochastic regulariser λ Σ_j (1 − Σ_i α_ij)², "
        "λ = 0.5",
        f"- **Decoder**: 1-layer LSTM with 8 units; {DECODER_STYLES.describe('bahdanau')}",
        f"- **Initial decoder state**: {BRIDGES.describe('mean_cell')}",
        "- **Output**: a linear layer t_i = W_r [features] before the vocabulary projection, over a vocabulary of 14 "
        "tokens",
        f"- **Parameters**: {parameters:,}",
    ):
        assert line + "\n" in text, line
    assert "It reads an image (resized to 16 pixels high, keeping its aspect ratio) into a grid" in text
    for row in ("| validation | Sequence accuracy | 0.75 |", "| validation | Mean generated length | 6.5 |",
                "| test | Character error rate | 0.2 |",
                "| test | Sequence accuracy, longer inputs than in training | 0.25 |",
                "| test | Character error rate, longer inputs than in training | 0.4 |"):
        assert row in text, row
    attention = text.split("### Attention over the image\n")[1].split("## How to use")[0]
    assert "(as in figures 2 and 3 of Xu et al.). `image_explorer.html` (open it in a browser)" in attention
    assert "![attention 1](attention_0.png)" in attention
    figures = text.split("### Figures\n")[1].split("###")[0]
    assert "![training_curve.png](training_curve.png)" in figures and "example_" not in figures  # inputs, not figures
    limitations = text.split("## Limitations")[1]
    assert "Every image is resized to 16 pixels high" in limitations
    assert "`region_position_encoding=False`" in limitations
    assert "vision backbone" not in limitations


def test_a_backbone_and_reinforce_are_described_by_the_config():
    from transformers import ResNetConfig

    resnet = ResNetConfig(num_channels=1, embedding_size=8, hidden_sizes=[8, 12], depths=[1, 1], layer_type="basic")
    config = image_config(backbone_config=resnet.to_dict(), backbone="microsoft/resnet-18",
                          use_pretrained_backbone=False, region_position_encoding=True,
                          attention_mode="hard_reinforce", reinforce_baseline_decay=0.95,
                          reinforce_entropy_weight=0.01, context_gate=False).to_dict()
    architecture = describe(config, TASK)
    assert architecture.lines[0] == (
        "**Image encoder**: a transformers `resnet` vision backbone, weights initialised from `microsoft/resnet-18`, "
        "over 1 input channel (grey); its last feature map is the grid of H' × W' regions, each an annotation a_i of "
        "D = 12 features, read row by row; ā = the mean annotation over the image's real regions; a 2-D sinusoidal "
        "encoding of each region's row and column is added to its annotation")
    assert architecture.lines[1] == (
        f"**Attention**: {ATTENTION_SCORES.describe('additive')}, attention size 8; "
        f"{ATTENTION_SCOPES.describe('global')}; {ATTENTION_MODES.describe('hard_reinforce')} (baseline b ← 0.95 b + "
        "0.05 mean R; entropy bonus weight λ_e = 0.01)")
    (padding,) = [line for line in image_limitations(config, {}) if "backbone" in line]
    assert padding.startswith("The vision backbone reads a padded batch as it is")
    assert image_size_words({}) == "at its own size"
    assert image_size_words({"size": {"height": 32, "width": 128}}) == "resized to 32 × 128 pixels"
    assert image_size_words({"size": {"height": 32}, "max_width": 400}) == ("resized to 32 pixels high, keeping its "
                                                                            "aspect ratio, at most 400 wide")
    random_start = describe(config | {"encoder": config["encoder"] | {"backbone": None}}, TASK).lines[0]
    assert random_start.startswith("**Image encoder**: a transformers `resnet` vision backbone, weights initialised "
                                   "at random, over 1 input channel (grey);")
    without_attention = describe(image_config(attention_type="none", context_mode="sutskever").to_dict(), TASK)
    assert without_attention.title == ("an image-to-text model without attention: a recurrent decoder reading the "
                                       "image's mean annotation (Xu et al., 2015)")


def test_usage_code_with_the_package_reads_as_the_model(card, expected_texts, tmp_path, monkeypatch, capsys):
    plugin, _ = python_blocks(card.text)
    assert "import hf_bahdanau" in plugin and "pipeline(model=folder, trust_remote_code=True)" in plugin
    monkeypatch.chdir(tmp_path)
    exec(compile(plugin, "card-usage", "exec"), {})
    assert ast.literal_eval(capsys.readouterr().out.strip()) == expected_texts
    assert (tmp_path / "attention.png").read_bytes()[:8] == PNG


def test_usage_code_without_the_package_reads_as_the_model(card, expected_texts, tmp_path):
    _, remote = python_blocks(card.text)
    assert "hf_bahdanau" not in remote and "AutoModelForImageTextToText.from_pretrained(folder, " in remote
    output = run_script(remote + "\nassert not [m for m in sys.modules if m.startswith('hf_bahdanau')]\n", tmp_path,
                        isolated=True, hide_package=True)
    # a batch: example_1.png is padded to example_0.png's width, and reads as alone
    assert ast.literal_eval(output.strip()) == expected_texts


def test_the_cli_writes_an_image_card_and_bad_examples_are_refused(model_dir, tmp_path, capsys):
    folder = tmp_path / "model"
    folder.mkdir()
    for path in model_dir.iterdir():
        if path.is_file() and path.name != "README.md":
            (folder / path.name).write_bytes(path.read_bytes())
    cards_main([str(folder), "--model_id", "me/digits"])  # the task is the model type's; the examples its PNGs
    assert capsys.readouterr().out.strip() == str(folder / "README.md")
    card = ModelCard.load(folder / "README.md")
    assert card.data.pipeline_tag == TASK and card.data.widget == [{"src": name} for name in EXAMPLES]
    assert all('model_id = "me/digits"' in block for block in python_blocks(card.text))
    cards_main([str(folder), "--example_inputs", "example_1.png"])
    write_model_card(folder)  # written again without examples: the card's own are kept
    assert ModelCard.load(folder / "README.md").data.widget == [{"src": "example_1.png"}]
    for bad in ("missing.png", "../model/example_0.png", str(folder / "example_0.png")):
        with pytest.raises(ValueError, match=r"`example_inputs` of an image-to-text model must be image files in "
                                             rf"`model_dir` \(.*\), named relative to it, got '{re.escape(bad)}'"):
            write_model_card(folder, example_inputs=[bad])
    (folder / "README.md").unlink()
    for name in EXAMPLES:
        (folder / name).unlink()
    with pytest.raises(ValueError, match=r"`example_inputs`: .* none were given and it holds no example_\*\.png"):
        write_model_card(folder)
    with pytest.raises(ValueError, match=r"`task='translation'` does not fit .*'bahdanau-image-to-text'"):
        write_model_card(folder, task="translation")
