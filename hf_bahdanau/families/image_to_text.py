"""The image-to-text family: Show, Attend and Tell's recurrent decoder attending over the regions of an image (Xu et
al., 2015; ``BahdanauForImageToText``, model type ``bahdanau-image-to-text``)."""

import json
import re
import textwrap
from pathlib import Path
from typing import Any

from transformers import AutoConfig, AutoModel, AutoModelForImageTextToText

from hf_bahdanau.explorer.image_page import IMAGE_EXPLORER
from hf_bahdanau.families import CardWords, Family, Head, Picture, register_family
from hf_bahdanau.families.images import (example_paths, folder_images, image_encoder_words, image_size_words,
                                         in_folder)
from hf_bahdanau.families.recurrent import CLOSED_VOCABULARY, decoder_lines, rnn_tags, vocabulary_output
from hf_bahdanau.families.words import Architecture, dropout_lines, generate_kwargs
from hf_bahdanau.modeling.collators import DataCollatorForImageToText
from hf_bahdanau.modeling.configuration_bahdanau import BahdanauDecoderConfig
from hf_bahdanau.modeling.configuration_image_encoder import BahdanauImageEncoderConfig
from hf_bahdanau.modeling.configuration_image_to_text import BahdanauImageDecoderConfig, BahdanauImageToTextConfig
from hf_bahdanau.modeling.image_processing_bahdanau import BahdanauImageProcessor
from hf_bahdanau.modeling.modeling_image_to_text import BahdanauForImageToText, BahdanauImageToTextModel

__all__ = ["IMAGE_TO_TEXT", "describe_image_to_text", "example_images", "image_limitations"]

TASK = "image-to-text"
IMAGE_TO_TEXT_PAPER = ("Xu et al., 2015",
                       "Show, Attend and Tell: Neural Image Caption Generation with Visual Attention",
                       "https://arxiv.org/abs/1502.03044")
ATTENTION = Picture(re.compile(r"attention_\d+\.png"), "Attention over the image", "Each output token's attention α_t "
                    "over the image's regions, drawn over the image: the brighter a region, the more weight it gets "
                    "(as in figures 2 and 3 of Xu et al.).", "attention")
DECODER_TAGS = rnn_tags(("show-attend-and-tell",), ("vision",))  # read from the config's decoder


def describe_image_to_text(config: dict[str, Any], trainer_state: dict[str, Any] | None = None) -> Architecture:
    """Bullet lines naming every choice of a ``BahdanauImageToTextConfig`` dict (Xu et al., 2015): the image encoder
    (its ``encoder``: our CNN's blocks and the grid they leave, or the backbone and where its weights came from; the
    region position encoding), then the recurrent decoder's lines as for translation (its ``decoder``)."""
    decoder = config["decoder"]
    encoder = image_encoder_words(config["encoder"], decoder["encoder_output_size"],
                                  "ā = the mean annotation over the image's real regions")
    lines = [f"**Image encoder**: {encoder}", *decoder_lines(decoder, vocabulary_output(decoder)),
             *dropout_lines(decoder)]
    family = ("Show, Attend and Tell: a recurrent decoder attending over the regions of an image"
              if decoder["attention_type"] != "none" else
              "an image-to-text model without attention: a recurrent decoder reading the image's mean annotation")
    return Architecture(None, IMAGE_TO_TEXT_PAPER, lines, family=family)


def description(config: dict[str, Any], processor: dict[str, Any]) -> str:
    return (f"It reads an image ({image_size_words(processor)}) into a grid of region annotations and generates "
            "its text token by token with `generate(pixel_values=…, pixel_mask=…)` (greedy or beam search; the "
            "image processor pads a batch of images of different widths and marks the real pixels in "
            "`pixel_mask`). With `output_attentions=True`, every step's attention over the regions is returned "
            "as `cross_attentions`; the shipped pipeline's `return_attentions=True` gives each token's weights "
            "over the image's own H' × W' grid.")


def example_images(model_dir: Path, examples: list[str] | None) -> list[str]:
    """The example images of an image-to-text card: ``examples`` (``[]``: none), or when None the folder's
    EXAMPLE_IMAGES; each a file in ``model_dir`` named relative to it (the usage code opens it there, or in the
    repository's download)."""
    if examples is None:
        examples = folder_images(model_dir, "an image-to-text")
    for name in examples:
        if not in_folder(model_dir, name):
            raise ValueError(f"`example_inputs` of an image-to-text model must be image files in `model_dir` "
                             f"({model_dir}), named relative to it, got {name!r}.")
    return examples


def image_usage(model_id: str, examples: list[str], generation: dict[str, Any], config: dict[str, Any],
                remote: bool) -> str:
    """An image-to-text model reading ``examples`` (files of its folder or repository): with remote code only through
    the Auto classes, with the plugin through the pipeline it ships, then the first image's attention picture."""
    imports = ("# pip install torch transformers pillow: the shipped image processor reads images with Pillow\n"
               "from PIL import Image\nfrom transformers import AutoImageProcessor, AutoModelForImageTextToText, "
               "AutoTokenizer" if remote else "from transformers import pipeline")
    load = (f"import os\n\nfrom huggingface_hub import snapshot_download\n{imports}\n\n"
            f"model_id = {json.dumps(model_id)}\n" + example_paths(examples))
    if remote:
        return load + textwrap.dedent(f"""\
            processor = AutoImageProcessor.from_pretrained(folder, trust_remote_code=True)
            tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=True)
            model = AutoModelForImageTextToText.from_pretrained(folder, trust_remote_code=True)
            inputs = processor([Image.open(path) for path in images], return_tensors="pt")  # pixel_values, pixel_mask
            outputs = model.generate(**inputs, {generate_kwargs(generation)})
            print(tokenizer.batch_decode(outputs, skip_special_tokens=True))
            # or the pipeline the model ships: pipeline(model=folder, trust_remote_code=True)(images)""")
    return load + textwrap.dedent(f"""\
        reader = pipeline(model=folder, trust_remote_code=True)  # the image-to-text pipeline the model ships
        print([read["generated_text"] for read in reader(images, {generate_kwargs(generation)})])

        # each output token's attention over the first image, drawn over it (needs matplotlib)
        from PIL import Image

        from hf_bahdanau.pictures import plot_image_attention

        image = reader.image_processor.to_image(Image.open(images[0]))  # resized, as the model reads it
        attention = reader(image, return_attentions=True, {generate_kwargs(generation)})[0]["attention"]
        plot_image_attention(image, attention["tokens"], attention["weights"], grid=attention["grid"],
                             path="attention.png")""")


def image_limitations(config: dict[str, Any], processor: dict[str, Any]) -> list[str]:
    """What the image-to-text model cannot do, from its config (its ``encoder`` and ``decoder``) and its image
    processor's."""
    lines = []
    encoder, attends = config["encoder"], config["decoder"]["attention_type"] != "none"
    if attends:
        lines.append("Attention weights over the regions are learned without supervision: they usually, not always, "
                     "fall on the part of the image a token reads.")
    if attends and not encoder.get("region_position_encoding"):
        lines.append("The region annotations carry no encoding of their position (`region_position_encoding=False`, "
                     "as in the paper): the decoder tells regions apart only by what they show and by its own state.")
    if encoder.get("backbone_config") is not None:
        lines.append("The vision backbone reads a padded batch as it is: the padding of a narrower image reaches its "
                     "real regions through the convolutions, so an image can read differently alone and in a batch.")
    lines += [f"Every image is {image_size_words(processor)}: text much smaller, larger or longer than in training, "
              "other fonts, hands or backgrounds read worse.",
              "Recurrent decoder: the text is generated token by token, so long texts take longer than with a "
              "Transformer decoder of the same size.",
              CLOSED_VOCABULARY,
              "The model knows only its training distribution; check it on your own images before relying on it."]
    return lines


# the sub-configs (the image encoder's is also the VQA config's), loaded by AutoConfig from their model types
for sub_config in (BahdanauImageEncoderConfig, BahdanauDecoderConfig, BahdanauImageDecoderConfig):
    AutoConfig.register(sub_config.model_type, sub_config, exist_ok=True)
IMAGE_TO_TEXT = register_family(Family(
    name="image-to-text", task=TASK, config_class=BahdanauImageToTextConfig,
    heads=(Head(AutoModel, BahdanauImageToTextModel), Head(AutoModelForImageTextToText, BahdanauForImageToText)),
    card_head=AutoModelForImageTextToText,
    card=CardWords(task_words="Image-to-Text", pipeline_tag=TASK, architecture=describe_image_to_text,
                   tags=lambda config, processor: DECODER_TAGS(config["decoder"], processor),
                   description=description, usage=image_usage, limitations=image_limitations,
                   examples=example_images, widget=lambda examples: [{"src": name} for name in examples],
                   pictures=(ATTENTION,), explorer_page="image_explorer.html"),
    image_processor=BahdanauImageProcessor,
    explorer=IMAGE_EXPLORER,
    collator=DataCollatorForImageToText,
))
