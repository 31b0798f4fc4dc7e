"""The parts of a visual question answering model's card (``task="visual-question-answering"``, model type
``bahdanau-vqa``): its examples (an image file of the folder and a question, as JSON), the usage code with the package,
without it and through the pipeline the folder ships, what it reads and outputs, and its limitations.

    {"image": "example_0.png", "question": "what color is the shape?"}   # one example input (run_vqa.py writes them)
"""

import json
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .example_images import example_paths, folder_images

__all__ = ["VQA_QUESTION", "VQA_TAGS", "vqa_examples", "vqa_limitations", "vqa_pipeline_usage", "vqa_task_description",
           "vqa_usage"]

VQA_QUESTION = "What is in the image?"  # asked of each of the folder's example images when no example is given
# the card's tag for each ``coattention`` form (axes.CO_ATTENTIONS)
VQA_TAGS = {"parallel": "co-attention", "alternating": "co-attention", "context": "attention", "none": "no-attention"}


def vqa_examples(model_dir: Path, examples: Sequence[str] | None) -> list[dict[str, str]]:
    """The examples of a VQA card as {"image": file, "question": text}: ``examples`` (JSON objects of that form, each
    image a file in ``model_dir`` named relative to it; ``[]``: none), or when None each of the folder's
    EXAMPLE_IMAGES with VQA_QUESTION; ValueError naming ``example_inputs`` otherwise."""
    if examples is None:
        images = folder_images(model_dir, "a visual question answering")
        return [{"image": name, "question": VQA_QUESTION} for name in images]
    items = []
    for example in examples:
        try:
            item = json.loads(example)
        except (TypeError, json.JSONDecodeError):
            item = None
        if not (isinstance(item, dict) and set(item) == {"image", "question"}
                and all(isinstance(value, str) and value.strip() for value in item.values())):
            raise ValueError('`example_inputs` of a visual question answering model must be JSON objects {"image": '
                             f'file, "question": text}}, got {example!r:.200}.')
        path = Path(item["image"])
        if path.is_absolute() or ".." in path.parts or not (model_dir / path).is_file():
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


def vqa_usage(model_id: str, examples: list[dict[str, str]], config: dict[str, Any], remote: bool) -> str:
    """Answering ``examples`` through the Auto classes (one padded batch), with remote code only or with the plugin;
    with the plugin and a model reading both inputs, then the first example's attention picture
    (``plot_vqa_example``)."""
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
""") + _inputs(config["inputs"]) + textwrap.dedent("""\
        logits = model(**inputs).logits  # [questions, answers]
        print([model.config.id2label[int(index)] for index in logits.argmax(-1)])""")
    if remote or config["inputs"] != "both":
        return code
    return code + "\n\n" + textwrap.dedent("""\
        # the first example's attention over the question's words and the image's regions, level by level
        # (needs matplotlib)
        from hf_bahdanau.pictures import plot_vqa_example

        plot_vqa_example(model, processor, tokenizer, images[0], questions[0], path="coattention.png")""")


def vqa_pipeline_usage(model_id: str, examples: list[dict[str, str]]) -> str:
    """Answering ``examples`` through the visual-question-answering pipeline the folder ships (remote code), the
    likeliest answers and both attentions of the first."""
    return _load(model_id, examples, "from transformers import pipeline") + textwrap.dedent("""\
        vqa = pipeline(model=folder, trust_remote_code=True)  # the visual-question-answering pipeline the model ships
        print([vqa(image=image, question=question)["answer"] for image, question in zip(images, questions)])
        answered = vqa(image=images[0], question=questions[0], top_k=3, return_attentions=True)
        print(answered["answers"])  # the 3 likeliest answers, each {"answer", "score"}
        # answered["question_attentions"]: per level (answered["levels"]), a weight per answered["question_tokens"];
        # answered["image_attentions"]: per level, rows × columns of weights over the image's grid_size regions""")


def vqa_task_description(config: dict[str, Any], image_size: str) -> str:
    """What the model reads and outputs; image_size: how its image processor sizes an image, in words."""
    labels = config.get("id2label") or {}
    names = ", ".join(str(labels[key]) for key in sorted(labels, key=int)) if labels else "see config.json"
    return (f"It reads an image ({image_size}) into a grid of regions and a question, and picks the answer from a "
            f"closed vocabulary of {len(labels)} answers: {names}. At each level of the question "
            f"({', '.join(config['question_levels'])}) the question's words and the image's regions attend to each "
            "other; `output_attentions=True` returns per level `question_attentions` [batch, words] and "
            "`context_attentions` [batch, regions] (each image's own grid first, row-major; `grid_size` gives its "
            "rows and columns), and for parallel co-attention the `affinities` [batch, words, regions]. The shipped "
            "pipeline's `return_attentions=True` gives the question's tokens and both weights per level, the image's "
            "as rows × columns.")


def vqa_limitations(config: dict[str, Any], image_size: str) -> list[str]:
    """What a VQA model cannot do, from its config; image_size: how its image processor sizes an image, in words."""
    lines = [f"Answers come from a closed answer vocabulary of {len(config.get('id2label') or {})} answers "
             "(`id2label`): a question whose answer is not among them still gets one of them.",
             "Closed vocabulary: question words the tokenizer does not know become its unknown token."]
    if config["inputs"] != "both":
        unread = "image" if config["inputs"] == "question" else "question"
        lines.append(f"A baseline: it reads no {unread} (`inputs={config['inputs']!r}`), so it answers from the other "
                     "input alone.")
    elif config["coattention"] != "none":
        lines.append("Attention weights are learned without being shown where the answer lies: they usually, not "
                     "always, fall on the words and the regions that decide it.")
    lines += [f"Every image is {image_size}: images much unlike the training ones (sizes, scenes, backgrounds) are "
              "answered worse.",
              "The model knows only its training distribution; check it on your own images and questions before "
              "relying on it."]
    return lines
