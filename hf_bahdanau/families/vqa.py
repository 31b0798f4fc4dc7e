"""The visual question answering family: co-attention between a question and the regions of an image, answering
from a closed answer vocabulary (Lu et al., 2016; ``BahdanauForVisualQuestionAnswering``, model type
``bahdanau-vqa``): its examples (an image file of the folder and a question, as JSON), the usage code with the
package, without it and through the pipeline the folder ships, what it reads and outputs, and its limitations.

    {"image": "example_0.png", "question": "what color is the shape?"}   # one example input (run_vqa.py writes them)
"""

import json
import re
import textwrap
from pathlib import Path
from typing import Any

from transformers import AutoConfig, AutoModel, AutoModelForVisualQuestionAnswering

from hf_bahdanau.families import CardWords, Family, Head, Picture, register_family
from hf_bahdanau.families.coattention import CO_ATTENTION_PAPER, coattention_lines
from hf_bahdanau.families.images import (example_paths, folder_images, image_encoder_words, image_size_words,
                                         in_folder)
from hf_bahdanau.families.words import Architecture, closed_answers, dropout_lines, json_example, label_names
from hf_bahdanau.modeling.collators import DataCollatorForVisualQuestionAnswering
from hf_bahdanau.modeling.axes import QUESTION_LEVELS
from hf_bahdanau.modeling.configuration_coattention import (BahdanauCoAttentionConfig,
                                                             BahdanauVisualQuestionAnsweringConfig)
from hf_bahdanau.modeling.configuration_image_encoder import backbone_feature_size
from hf_bahdanau.modeling.image_processing_bahdanau import BahdanauImageProcessor
from hf_bahdanau.modeling.modeling_coattention import (BahdanauForVisualQuestionAnswering,
                                                       BahdanauVisualQuestionAnsweringModel)

__all__ = ["VQA", "VQA_QUESTION", "VQA_TAGS", "describe_visual_question_answering", "vqa_examples",
           "vqa_limitations", "vqa_parts", "vqa_pipeline_usage", "vqa_task_description", "vqa_usage"]

TASK = "visual-question-answering"
VQA_QUESTION = "What is in the image?"  # asked of each of the folder's example images when no example is given
# the card's tag for each ``coattention`` form (axes.CO_ATTENTIONS)
VQA_TAGS = {"parallel": "co-attention", "alternating": "co-attention", "context": "attention", "none": "no-attention"}
# what a VQA model is, by its ``coattention`` form (axes.CO_ATTENTIONS; the card's lines say the form in full)
VQA_FAMILIES = {"parallel": "hierarchical question–image co-attention, parallel",
                "alternating": "hierarchical question–image co-attention, alternating",
                "context": "question-guided image attention",
                "none": "a question and image model without attention (the means of both)"}
VQA_BASELINES = {"question": "a question-only baseline", "context": "an image-only baseline"}  # by ``inputs``
VQA_METRICS = {  # run_vqa.py's own metrics; the shape_* ones also per question level ("shape_peak_overlap_word")
    "accuracy_yes_no": "Accuracy, yes/no questions", "accuracy_color": "Accuracy, colour questions",
    "accuracy_shape": "Accuracy, shape questions",
    "shape_peak_overlap": "Image attention's peak region overlaps the shape",
    "shape_attention_mass": "Image attention on the regions overlapping the shape",
}
PER_LEVEL = re.compile(rf"(\w+?)_({'|'.join(QUESTION_LEVELS)})")
COATTENTION = Picture(re.compile(r"coattention_\d+\.png"), "Attention over the question and the image",
                      "One test question per picture: at each level of the question (one row each), its words shaded "
                      "by their weight a^q (white = the level's largest weight) and the image's regions by theirs a^v, "
                      "drawn over the image (the brighter a region, the more weight it gets), as in figure 4 of Lu et "
                      "al.", "co-attention")


def metric_names(name: str) -> str | None:
    """The words of a VQA model's own metrics, each of them also per question level."""
    if (match := PER_LEVEL.fullmatch(name)) and match[1] in VQA_METRICS:
        return f"{VQA_METRICS[match[1]]}, {match[2]} level"
    return VQA_METRICS.get(name)


def vqa_parts(config: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(image encoder, question) of a ``BahdanauVisualQuestionAnsweringConfig`` dict: its ``vision_config``, and its
    ``text_config`` with the answers the head holds (``id2label``); a flat config.json (hf_bahdanau 0.1.0) is both."""
    question = {**config.get("text_config", config), "id2label": config.get("id2label")}
    return config.get("vision_config", config), question


def describe_visual_question_answering(config: dict[str, Any], trainer_state: dict[str, Any] | None = None
                                       ) -> Architecture:
    """Bullet lines naming every choice of a ``BahdanauVisualQuestionAnsweringConfig`` dict (Lu et al., 2016): the image
    encoder (as Show, Attend and Tell's, ``image_encoder_words``), then ``coattention_lines``."""
    vision, question = vqa_parts(config)
    if question["inputs"] == "question":
        image = "none: this baseline reads the question alone (v̂ = 0)"
    else:
        annotations = (vision["cnn_channels"][-1] if vision.get("backbone_config") is None
                       else backbone_feature_size(vision["backbone_config"]))
        image = image_encoder_words(vision, annotations,
                                    f"made question-sized, v_n = tanh(W_i a_n + b_i), d = {question['hidden_size']}")
    lines = [f"**Image encoder**: {image}", *coattention_lines(question, "image"), *dropout_lines(question)]
    family = VQA_BASELINES.get(question["inputs"]) or VQA_FAMILIES[question["coattention"]]
    return Architecture(None, CO_ATTENTION_PAPER, lines, family=family)


def vqa_examples(model_dir: Path, examples: list[str] | None) -> list[dict[str, str]]:
    """The examples of a VQA card as {"image": file, "question": text}: ``examples`` (JSON objects of that form, each
    image a file in ``model_dir`` named relative to it; ``[]``: none), or when None each of the folder's
    EXAMPLE_IMAGES with VQA_QUESTION; ValueError naming ``example_inputs`` otherwise."""
    if examples is None:
        images = folder_images(model_dir, "a visual question answering")
        return [{"image": name, "question": VQA_QUESTION} for name in images]
    items = []
    for example in examples:
        item = json_example(example, dict.fromkeys(("image", "question"), lambda text: isinstance(text, str)
                                                   and bool(text.strip())),
                            "a visual question answering model", '{"image": file, "question": text}')
        if not in_folder(model_dir, item["image"]):
            raise ValueError(f"`example_inputs` of a visual question answering model must name image files in "
                             f"`model_dir` ({model_dir}), relative to it, got {item['image']!r}.")
        items.append(item)
    return items


def _load(model_id: str, examples: list[dict[str, str]], imports: str) -> str:
    """The usage code's start: ``imports``, the model's folder (downloaded with its example images) and the
    examples' image paths and questions."""
    questions = [item["question"] for item in examples] or [VQA_QUESTION]
    return (f"import os\n\nfrom huggingface_hub import snapshot_download\n{imports}\n\n"
            f"model_id = {json.dumps(model_id)}\n" + example_paths([item["image"] for item in examples])
            + f"questions = {json.dumps(questions, ensure_ascii=False)}\n")


def _inputs(reads: str) -> str:
    """The line(s) making the model's inputs from ``images`` and ``questions``: both, or the one a baseline reads
    (``config.inputs``: it refuses the other)."""
    images = 'processor([Image.open(path) for path in images], return_tensors="pt")  # pixel_values, pixel_mask\n'
    questions = 'tokenizer(questions, add_special_tokens=False, padding=True, return_tensors="pt")'
    if reads == "question":
        return f"inputs = {questions}  # a question-only baseline reads no image\n"
    if reads == "context":
        return f"inputs = {images.rstrip()}; an image-only baseline reads no question\n"
    return f"inputs = {images}inputs.update({questions})\n"


def vqa_usage(model_id: str, examples: list[dict[str, str]], generation: dict[str, Any], config: dict[str, Any],
              remote: bool) -> str:
    """Answering ``examples`` through the Auto classes (one padded batch), with remote code only or with the plugin;
    with the plugin and a model reading both inputs, then the first example's attention picture
    (``plot_vqa_example``)."""
    reads = vqa_parts(config)[1]["inputs"]
    trust = ", trust_remote_code=True" if remote else ""
    imports = ("from PIL import Image\nfrom transformers import AutoImageProcessor, "
               "AutoModelForVisualQuestionAnswering, AutoTokenizer")
    if remote:
        imports = ("# pip install torch transformers pillow: the shipped image processor reads images with Pillow\n"
                   + imports)
    code = _load(model_id, examples, imports) + textwrap.dedent(f"""\
        processor = AutoImageProcessor.from_pretrained(folder{trust})
        tokenizer = AutoTokenizer.from_pretrained(folder{trust})
        model = AutoModelForVisualQuestionAnswering.from_pretrained(folder{trust})
""") + _inputs(reads) + textwrap.dedent("""\
        logits = model(**inputs).logits  # [questions, answers]
        print([model.config.id2label[int(index)] for index in logits.argmax(-1)])""")
    if remote or reads != "both":
        return code
    return code + "\n\n" + textwrap.dedent("""\
        # the first example's attention over the question's words and the image's regions, level by level
        # (needs matplotlib)
        from hf_bahdanau.pictures import plot_vqa_example

        plot_vqa_example(model, processor, tokenizer, images[0], questions[0], path="coattention.png")""")


def vqa_pipeline_usage(model_id: str, examples: list[dict[str, str]], generation: dict[str, Any],
                       config: dict[str, Any]) -> str:
    """Answering ``examples`` through the visual-question-answering pipeline the folder ships (remote code), the
    likeliest answers and both attentions of the first."""
    return _load(model_id, examples, "from transformers import pipeline") + textwrap.dedent("""\
        vqa = pipeline(model=folder, trust_remote_code=True)  # the visual-question-answering pipeline the model ships
        print([vqa(image=image, question=question)["answer"] for image, question in zip(images, questions)])
        answered = vqa(image=images[0], question=questions[0], top_k=3, return_attentions=True)
        print(answered["answers"])  # the 3 likeliest answers, each {"answer", "score"}
        # answered["question_attentions"]: per level (answered["levels"]), a weight per answered["question_tokens"];
        # answered["image_attentions"]: per level, rows × columns of weights over the image's grid_size regions""")


def vqa_task_description(config: dict[str, Any], processor: dict[str, Any]) -> str:
    """What the model reads and outputs; processor: its image processor's preprocessor_config.json."""
    count, names = label_names(config)
    levels = ", ".join(vqa_parts(config)[1]["question_levels"])
    return (f"It reads an image ({image_size_words(processor)}) into a grid of regions and a question, and picks the "
            f"answer from a closed vocabulary of {count} answers: {names}. At each level of the question "
            f"({levels}) the question's words and the image's regions attend to each "
            "other; `output_attentions=True` returns per level `question_attentions` [batch, words] and "
            "`context_attentions` [batch, regions] (each image's own grid first, row-major; `grid_size` gives its "
            "rows and columns), and for parallel co-attention the `affinities` [batch, words, regions]. The shipped "
            "pipeline's `return_attentions=True` gives the question's tokens and both weights per level, the image's "
            "as rows × columns.")


def vqa_limitations(config: dict[str, Any], processor: dict[str, Any]) -> list[str]:
    """What a VQA model cannot do, from its config and its image processor's."""
    question = vqa_parts(config)[1]
    lines = [closed_answers(config),
             "Closed vocabulary: question words the tokenizer does not know become its unknown token."]
    if question["inputs"] != "both":
        unread = "image" if question["inputs"] == "question" else "question"
        lines.append(f"A baseline: it reads no {unread} (`inputs={question['inputs']!r}`), so it answers from the "
                     "other input alone.")
    elif question["coattention"] != "none":
        lines.append("Attention weights are learned without being shown where the answer lies: they usually, not "
                     "always, fall on the words and the regions that decide it.")
    lines += [f"Every image is {image_size_words(processor)}: images much unlike the training ones (sizes, scenes, "
              "backgrounds) are answered worse.",
              "The model knows only its training distribution; check it on your own images and questions before "
              "relying on it."]
    return lines


# the question's sub-config (the image encoder's is registered with the image-to-text family), loaded by AutoConfig
AutoConfig.register(BahdanauCoAttentionConfig.model_type, BahdanauCoAttentionConfig, exist_ok=True)
VQA = register_family(Family(
    name="vqa", task=TASK, config_class=BahdanauVisualQuestionAnsweringConfig,
    heads=(Head(AutoModel, BahdanauVisualQuestionAnsweringModel),
           Head(AutoModelForVisualQuestionAnswering, BahdanauForVisualQuestionAnswering)),
    card_head=AutoModelForVisualQuestionAnswering,
    card=CardWords(task_words="Visual Question Answering", pipeline_tag=TASK,
                   architecture=describe_visual_question_answering,
                   tags=lambda config, processor: [VQA_TAGS[vqa_parts(config)[1]["coattention"]], "vision"],
                   description=vqa_task_description, usage=vqa_usage, limitations=vqa_limitations,
                   examples=vqa_examples, widget=lambda examples: [{"src": item["image"], "text": item["question"]}
                                                                   for item in examples],
                   pipeline_usage=vqa_pipeline_usage, metric_names=metric_names, pictures=(COATTENTION,)),
    image_processor=BahdanauImageProcessor,
    collator=DataCollatorForVisualQuestionAnswering,
))
