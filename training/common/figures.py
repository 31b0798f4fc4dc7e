"""The pictures a training run leaves in its output folder: the training curve, alignment heat maps and the encoder's
own weights (self-attention, embedding mixture)."""

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hf_bahdanau.modeling.translation import translate
from hf_bahdanau.pictures import plot_alignment, plot_encoder_text

TRAINING_CURVE = "training_curve.png"
ALIGNMENT_PICTURE = "alignment_{}.png"
ENCODER_PICTURES = {"encoder_self_attention": "encoder_self_attention_{}.png",  # plot_encoder_text's names
                    "embedding_mixture": "embedding_mixture_{}.png"}


def plot_training_curve(log_history: Sequence[dict], path: str | Path, metric: str | None = None):
    """Training loss (and evaluation loss, if logged) against the optimisation step; with ``metric`` (e.g.
    "eval_exact_match") that evaluation metric on a second axis. Reads ``trainer.state.log_history``."""
    from matplotlib.figure import Figure

    def series(key: str) -> tuple[list[int], list[float]]:
        points = [(entry["step"], entry[key]) for entry in log_history if key in entry]
        return [step for step, _ in points], [value for _, value in points]

    steps, losses = series("loss")
    if not steps:
        raise ValueError("`log_history` has no training loss: log at least once (logging_steps).")
    figure = Figure(figsize=(6, 4), layout="constrained")
    ax = figure.add_subplot()
    ax.plot(steps, losses, label="training loss")
    eval_steps, eval_losses = series("eval_loss")
    if eval_steps:
        ax.plot(eval_steps, eval_losses, "o-", label="evaluation loss")
    ax.set(xlabel="step", ylabel="cross-entropy per target token", yscale="log")
    handles, labels = ax.get_legend_handles_labels()
    metric_steps, values = series(metric) if metric else ([], [])
    if metric_steps:
        right = ax.twinx()
        right.plot(metric_steps, values, "s--", color="tab:green", label=metric)
        right.set_ylabel(metric)
        more_handles, more_labels = right.get_legend_handles_labels()
        handles, labels = handles + more_handles, labels + more_labels
    ax.legend(handles, labels, loc="center right")
    figure.savefig(path, dpi=120)
    return figure


def save_alignment_pictures(model, tokenizer, sources: Sequence[str], output_dir: str | Path,
                            num_beams: int = 1) -> list[Path]:
    """Decode ``sources`` and save one heat map per sentence as ``output_dir/alignment_<n>.png``."""
    paths = []
    for number, result in enumerate(translate(model, tokenizer, sources, num_beams=num_beams,
                                              output_alignments=True)):
        path = Path(output_dir) / ALIGNMENT_PICTURE.format(number)
        plot_alignment(result.alignment, result.source_tokens, result.target_tokens, path=path,
                       title=f"{result.source} → {result.translation}")
        paths.append(path)
    return paths


def save_encoder_pictures(model, tokenizer, texts: Sequence[Any], output_dir: str | Path,
                          **tokenizer_options: Any) -> list[Path]:
    """With ``encoder_self_attention`` on, save ``output_dir/encoder_self_attention_<n>.png`` of text n, and with
    ``meta_embedding_sources``, ``embedding_mixture_<n>.png`` (``plot_encoder_text``, any model class; the texts as
    the tokenizer reads them, e.g. word lists with is_split_into_words=True); nothing for a model with neither."""
    paths = []
    for number, text in enumerate(texts):
        for name, figure in plot_encoder_text(model, tokenizer, text, **tokenizer_options).items():
            path = Path(output_dir) / ENCODER_PICTURES[name].format(number)
            figure.savefig(path, dpi=150)
            paths.append(path)
    return paths
