"""Tune GNMT's beam-search penalties (length penalty α, coverage penalty β) on the validation file by grid search.

    python -m training.tune_beam_penalties --model_name_or_path outputs/de-en --validation_file validation.jsonl \\
        --num_beams 5 --output_dir outputs/de-en/penalties --write_generation_config
    python -m training.tune_beam_penalties --model_name_or_path outputs/g2p --validation_file validation.jsonl \\
        --num_beams 5 --metric wer_no_stress --length_penalties 0 0.5 1 --coverage_penalties 0 0.2 \\
        --output_dir outputs/g2p/penalties

Wu et al. (2016, §7) score a finished hypothesis Y of source X by

    s(Y, X) = log P(Y|X) / lp(Y) + cp(X; Y),   lp(Y) = ((5 + |Y|) / 6)^α,   cp(X; Y) = β Σ_j log(min(Σ_t α_tj, 1))

(``hf_bahdanau.modeling.search.BeamPenalties``). Every (α, β) of the grid decodes the validation file with beam
search (training/evaluate_seq2seq.py's ``SplitEvaluation``); the best cell by ``--metric`` (higher BLEU, chrF, exact
match; lower WER, PER) wins, the earliest in grid order (smaller α, then smaller β) on a tie. The grid is printed as a
markdown table and written to ``<output_dir>/beam_penalties.json``; ``--write_generation_config`` stores the best α,
β, style and the beams in the model folder's generation_config.json, which every later generate() (and the model
card) then uses. ``--length_penalty_style transformers`` tunes transformers' |Y|^α instead (with β = 0 the only
choice for a model that is not hf_bahdanau's, e.g. a Transformer baseline).
"""

import json
import logging
import math
import numbers
import sys
from dataclasses import dataclass, field
from pathlib import Path

from transformers import GenerationConfig, HfArgumentParser

from hf_bahdanau.modeling.search import FastSearchMixin
from training.evaluate_seq2seq import (
    DecodingArguments, EvaluationDataArguments, EvaluationModelArguments, SplitEvaluation, read_split_and_model,
)
from training.common.arguments import bad_arguments_exit, exit_on_bad_argument
from training.tasks.seq2seq import REFERENCES

logger = logging.getLogger(__name__)

__all__ = ["METRICS", "TuningArguments", "best_cell", "check_penalties_supported", "grid_table", "main",
           "store_best_penalties", "tune"]

# metric: True where higher is better
METRICS = {"bleu": True, "chrf": True, "exact_match": True, "wer": False, "per": False, "wer_no_stress": False,
           "per_no_stress": False}
RESULTS_NAME = "beam_penalties.json"


@dataclass
class TuningArguments:
    """The grid, the metric it is judged by, and whether the best cell goes into the model's generation config."""

    length_penalties: list[float] = field(
        default_factory=lambda: [0.0, 0.2, 0.4, 0.6, 0.8, 1.0], metadata={"help": "The values of α to try."})
    coverage_penalties: list[float] = field(
        default_factory=lambda: [0.0, 0.1, 0.2, 0.4], metadata={"help": "The values of β ≥ 0 to try."})
    metric: str = field(
        default="bleu", metadata={"help": f"Judge the cells by: {list(METRICS)} (wer/per need a `references` column; "
                                          "*_no_stress imply --score_without_stress)."})
    write_generation_config: bool = field(
        default=False, metadata={"help": "Store the best α, β, style and --num_beams in the model folder's "
                                         "generation_config.json."})

    def __post_init__(self):
        for name in ("length_penalties", "coverage_penalties"):
            values = getattr(self, name)
            if not values:
                raise ValueError(f"`--{name}` must give at least one value, got {values!r}.")
            for value in values:
                if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or (
                        name == "coverage_penalties" and value < 0):
                    allowed = "finite numbers ≥ 0 (GNMT's β)" if name == "coverage_penalties" else "finite numbers (α)"
                    raise ValueError(f"`--{name}` must be {allowed}, got {value!r} in {values}.")
            if len(set(values)) != len(values):
                raise ValueError(f"`--{name}` repeats a value: {values}.")
        if self.metric not in METRICS:
            raise ValueError(f"`--metric` must be one of {list(METRICS)}, got {self.metric!r}.")


def check_penalties_supported(model, style: str, coverage_penalties: list[float]) -> None:
    """A ValueError naming the flag where the model cannot decode the grid: GNMT's style or β > 0 with a model that
    is not hf_bahdanau's, β > 0 with a model without attention."""
    beta = max(coverage_penalties)
    if not isinstance(model, FastSearchMixin):
        if style != "transformers" or beta:
            raise ValueError(f"{type(model).__name__} decodes with transformers' beam search, which takes neither "
                             f"length_penalty_style='gnmt' nor coverage_penalty (hf_bahdanau's; got style {style!r}, "
                             f"--coverage_penalties {coverage_penalties}): give --length_penalty_style transformers "
                             "--coverage_penalties 0.")
    elif beta and model.config.attention_type == "none":
        raise ValueError(f"`--coverage_penalties` {coverage_penalties}: the coverage penalty scores the attention "
                         f"weights, and this model has none (attention_type='none'); give --coverage_penalties 0.")


def best_cell(grid: list[dict], metric: str) -> dict:
    """The cell of ``grid`` with the best ``metric`` (the highest, or the lowest for an error rate), the first of
    equals."""
    sign = 1 if METRICS[metric] else -1
    return max(grid, key=lambda cell: sign * cell["metrics"][metric])  # max() keeps the first of equal keys


def grid_table(grid: list[dict], metric: str, best: dict) -> str:
    """The grid as a markdown table: a row per α, a column per β, the best cell in bold."""
    alphas = list(dict.fromkeys(cell["length_penalty"] for cell in grid))
    betas = list(dict.fromkeys(cell["coverage_penalty"] for cell in grid))
    values = {(cell["length_penalty"], cell["coverage_penalty"]): cell["metrics"][metric] for cell in grid}
    lines = [f"| {metric}: α \\ β | " + " | ".join(f"{beta:g}" for beta in betas) + " |",
             "| --- |" + " ---: |" * len(betas)]
    for alpha in alphas:
        cells = [f"{values[alpha, beta]:.2f}" for beta in betas]
        cells = [f"**{text}**" if (alpha, beta) == (best["length_penalty"], best["coverage_penalty"]) else text
                 for beta, text in zip(betas, cells)]
        lines.append(f"| {alpha:g} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def tune(model, tokenizer, rows, data_args: EvaluationDataArguments, decoding_args: DecodingArguments,
         tuning_args: TuningArguments) -> dict:
    """{"metric", "higher_is_better", "num_beams", "length_penalty_style", "grid": [{"length_penalty": α,
    "coverage_penalty": β, "metrics": {...}}, ...], "best": the best cell} of decoding ``rows`` at every (α, β)."""
    style = decoding_args.length_penalty_style or "gnmt"
    check_penalties_supported(model, style, tuning_args.coverage_penalties)
    num_beams = decoding_args.num_beams or model.generation_config.num_beams or 1
    if num_beams < 2:
        raise ValueError(f"The beam penalties score beam search's hypotheses: give `--num_beams` ≥ 2 (the model's "
                         f"generation config has num_beams={model.generation_config.num_beams}).")
    needs_references = tuning_args.metric.startswith(("wer", "per"))
    if needs_references and REFERENCES not in rows.column_names:
        raise ValueError(f"`--metric {tuning_args.metric}` scores the `{REFERENCES}` column, and the validation file "
                         f"has none (its columns: {rows.column_names}).")
    ours = isinstance(model, FastSearchMixin)
    evaluation, grid = SplitEvaluation(model, tokenizer, rows, data_args, decoding_args), []
    for alpha in tuning_args.length_penalties:
        for beta in tuning_args.coverage_penalties:
            penalties = ({"length_penalty_style": style, "coverage_penalty": beta} if ours
                         else {"length_penalty_style": None})  # transformers' own beam search: α alone
            metrics, _ = evaluation(num_beams=num_beams, length_penalty=alpha, **penalties)
            grid.append({"length_penalty": alpha, "coverage_penalty": beta, "metrics": metrics})
            logger.info("α=%g β=%g: %s %.2f", alpha, beta, tuning_args.metric, metrics[tuning_args.metric])
    return {"metric": tuning_args.metric, "higher_is_better": METRICS[tuning_args.metric], "num_beams": num_beams,
            "length_penalty_style": style, "grid": grid, "best": best_cell(grid, tuning_args.metric)}


def store_best_penalties(folder: str | Path, results: dict, ours: bool) -> GenerationConfig:
    """Store the best cell's α (and for an hf_bahdanau model β and the style) and the beams in ``folder``'s
    generation_config.json; returns the written config."""
    config = GenerationConfig.from_pretrained(folder)
    best = results["best"]
    config.num_beams, config.length_penalty = results["num_beams"], best["length_penalty"]
    if ours:
        config.length_penalty_style, config.coverage_penalty = results["length_penalty_style"], best["coverage_penalty"]
    # A file marked "_from_model_config": true (what save_pretrained writes for a config made from the model's) is
    # loaded with the fields GenerationConfig knows only: coverage_penalty and length_penalty_style would be dropped.
    config._from_model_config = False
    config.save_pretrained(folder)
    return config


def checked_arguments(parser: HfArgumentParser, argv: list[str]) -> tuple:
    """The model, data, decoding and tuning arguments of ``argv``; a ValueError where the tuner cannot use them."""
    model_args, data_args, decoding_args, tuning_args = parser.parse_args_into_dataclasses(args=argv)
    if data_args.test_file is not None:
        raise ValueError(f"`--test_file` {data_args.test_file}: the penalties are tuned on the validation file "
                         "(`--validation_file`); score the test file with `python -m training.evaluate_seq2seq` "
                         "afterwards.")
    for name in ("length_penalty", "coverage_penalty"):
        if getattr(decoding_args, name) is not None:
            raise ValueError(f"`--{name}` {getattr(decoding_args, name)}: the tuner tries the values of "
                             f"`--{name.replace('penalty', 'penalties')}`; give those instead.")
    if model_args.ensemble and max(tuning_args.coverage_penalties):
        raise ValueError(f"`--coverage_penalties` {tuning_args.coverage_penalties}: an ensemble takes no coverage "
                         "penalty (each member has its own attention); give --coverage_penalties 0.")
    return model_args, data_args, decoding_args, tuning_args


def main(argv: list[str] | None = None) -> dict:
    """Tune on the validation file; returns what is written to ``<output_dir>/beam_penalties.json``."""
    parser = HfArgumentParser((EvaluationModelArguments, EvaluationDataArguments, DecodingArguments, TuningArguments),
                              description=__doc__.split("\n")[0])
    model_args, data_args, decoding_args, tuning_args = exit_on_bad_argument(
        parser, lambda: checked_arguments(parser, sys.argv[1:] if argv is None else argv))
    data_args.score_without_stress |= tuning_args.metric.endswith("_no_stress")
    rows, model, tokenizer = read_split_and_model(model_args, data_args)
    with bad_arguments_exit():  # a ValueError of the tuning arguments for this model: exit 2
        results = {"model": model_args.model_name_or_path, "ensemble": model_args.ensemble,
                   "file": data_args.validation_file,
                   **tune(model, tokenizer, rows, data_args, decoding_args, tuning_args)}
    output_dir = Path(data_args.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / RESULTS_NAME).write_text(json.dumps(results, indent=2) + "\n")
    print(grid_table(results["grid"], results["metric"], results["best"]))
    best = results["best"]
    print(f"Best: α={best['length_penalty']:g}, β={best['coverage_penalty']:g} ({results['metric']} "
          f"{best['metrics'][results['metric']]:.2f}); the grid is in {output_dir / RESULTS_NAME}")
    if tuning_args.write_generation_config:
        store_best_penalties(model_args.model_name_or_path, results, isinstance(model, FastSearchMixin))
        print(f"Wrote them to {Path(model_args.model_name_or_path) / 'generation_config.json'}")
    return results


if __name__ == "__main__":
    main()
