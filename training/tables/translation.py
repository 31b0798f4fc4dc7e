"""The real-translation tables of docs/results.md: per corpus, our RNN against transformers' Transformer at the same
wall-clock budget, and our attention options, each trained, tuned and tested the same way.

    python -m training.tables translation --corpus de_en                   # rnnsearch, then the Transformer
    python -m training.tables translation --corpus de_en --settings local-m coverage copy --max_train_minutes 30
    python -m training.tables translation --corpus de_en --settings local-p --max_steps 2526  # a row's steps
    python -m training.tables translation --corpus bible_es_en --table_only   # the table from the finished runs

Every setting runs in three steps, one setting at a time (two threads; ``--jobs N``: N at a time, after ``rnnsearch``,
each beside the others, so their training minutes are not the wall-clock comparison's):
1. the seq2seq task with the corpus's config (training/configs/<corpus>_rnnsearch.json, or _transformer.json
   for ``transformer``, whose parameters match the ``rnnsearch`` run's folder, so that one runs first) and the
   setting's extra ``--config_overrides``; training stops at ``--max_train_minutes`` (the configs say 60), or at
   ``--max_steps``: the schedule (inverse square root) does not depend on either, so a run stopped at the steps
   another row trained is that row's model with one thing changed, whatever the machine's speed;
2. training.tune_beam_penalties: GNMT's length penalty α (and, for the RNNs, coverage penalty β) on the first
   ``--tuning_samples`` validation sentences, by BLEU; the best cell is written into the folder's generation config;
3. training.evaluate_seq2seq: the whole test set with the tuned beam; its scores go into the folder's model card.

Settings (the RNN ones change one thing of ``rnnsearch``, Bahdanau et al.'s global additive attention):
    rnnsearch     the config as it is
    transformer   transformers' MarianMTModel from scratch, the same tokenizer and parameter count
    local-m       Luong's local attention with the window centred on the step (window ±10)
    local-p       Luong's local attention with a predicted centre
    input-feeding Luong's decoder (attend after the update, h̃ = tanh(W_c [c; h])) with the general score and input
                  feeding
    coverage      a coverage vector in the score and the coverage loss (weight 1)
    copy          See et al.'s copy attention (pointer-generator)

Each run's folder is OUTPUT_DIR/<corpus>/<setting>/. The table (test BLEU and chrF at beam 5 and with the tuned
penalties, α and β, parameters, steps, training minutes, validation BLEU by training minutes) is printed and written
to docs/translation_<corpus>.json, and the curves of validation BLEU against training minutes and steps
to docs/translation_<corpus>_bleu.png. Rows of settings not among this call's finished runs stay as that file has them,
so that options measured in separate sessions make one table. With ``--keep_docs_minutes`` a run that retrained a
row's steps on a machine of another speed fills in that row's scores and keeps its training minutes:

    python -m training.tables translation --corpus bible_es_en --settings transformer --max_steps 705 \
        --tuning_samples 200 --keep_docs_minutes

The same command with ``--resume`` goes on with a pipeline that stopped (its finished steps are not run again).
"""

import argparse
import json
from pathlib import Path

from training.common.table_runs import (
    REPO_ROOT, Cell, Column, Grid, Panel, Setting, Step, Table, predict_metrics, read_json, run_grid, validation_curve,
)

CORPORA = {  # the config's data columns
    "de_en": ("de", "en"),
    "bible_es_en": ("es", "en"),
}
SETTINGS = {  # extra config_overrides of the rnnsearch config; None: the Transformer config
    "rnnsearch": "",
    "transformer": None,
    "local-m": "attention_scope=local-m",
    "local-p": "attention_scope=local-p",
    "input-feeding": "decoder_style=luong,attention_type=general,input_feeding=true",
    "coverage": "use_coverage=true,coverage_loss_weight=1.0",
    "copy": "copy_attention=true",
}


WALL_CLOCK_SETTINGS = ("rnnsearch", "transformer")  # trained one after the other at one minutes budget; the options
# are compared with rnnsearch at its steps (--max_steps), so their rows may come from a machine of another speed
MINUTES_KEYS = ("training_minutes", "validation_bleu_by_minutes")  # a row's wall clock: true on its machine only
GRID = Grid(
    name="translation", description=__doc__.split("\n")[0], task="seq2seq",
    settings={setting: Setting() for setting in SETTINGS}, default_settings=WALL_CLOCK_SETTINGS, jobs=1,
    output_dir="outputs/translation", labels=("model",),
    columns=(Column("test BLEU (beam 5)", "bleu"), Column("chrF", "chrf"), Column("tuned BLEU", "tuned_bleu"),
             Column("chrF", "tuned_chrf"), Column("α", "length_penalty"), Column("β", "coverage_penalty"),
             Column("words per output (tuned)", "tuned_words_per_output"), Column("parameters", "parameters", "{:,}"),
             Column("steps", "steps", "{}"), Column("training minutes", "training_minutes")),
    # validation BLEU against training minutes for the wall-clock comparison (run one after the other on one
    # machine), and against steps for every row that has them (a machine-independent clock)
    panels=(Panel("validation_bleu_by_minutes", "training minutes (evaluations excluded)", "validation BLEU (beam 5)",
                  "{name}: RNN against Transformer, same machine", WALL_CLOCK_SETTINGS),
            Panel("validation_bleu_by_steps", "training steps (batches of 64)", "validation BLEU (beam 5)",
                  "{name}: by steps")))


def config_path(corpus: str, setting: str) -> Path:
    return REPO_ROOT / "training" / "configs" / \
        f"{corpus}_{'transformer' if SETTINGS[setting] is None else 'rnnsearch'}.json"


def training_arguments(corpus: str, setting: str, folder: Path, output_dir: Path,
                       max_train_minutes: float | None, max_steps: int | None = None) -> list[str]:
    """The seq2seq task's arguments for one setting: the config, the setting's overrides after the config's own, the
    Transformer sized to this corpus's rnnsearch run."""
    config = config_path(corpus, setting)
    arguments = [str(config), "--output_dir", str(folder), "--disable_tqdm", "true"]
    if SETTINGS[setting] is None:
        arguments += ["--match_rnn_parameters", str(output_dir / corpus / "rnnsearch")]
    elif SETTINGS[setting]:
        base = json.loads(config.read_text())["config_overrides"]
        arguments += ["--config_overrides", f"{base},{SETTINGS[setting]}"]
    if max_train_minutes is not None:
        arguments += ["--max_train_minutes", str(max_train_minutes)]
    if max_steps is not None:
        arguments += ["--max_steps", str(max_steps)]
    return arguments


def split_file(corpus: str, split: str) -> str:
    return json.loads(config_path(corpus, "rnnsearch").read_text())[f"{split}_file"]


def cell(corpus: str, setting: str, output_dir: Path, max_train_minutes: float | None = None,
         max_steps: int | None = None, tuning_samples: int = 500) -> Cell:
    """Train, tune, test one setting: three steps in OUTPUT_DIR/CORPUS/SETTING/ (and its penalties/ and tuned/)."""
    folder = output_dir / corpus / setting
    source, target = CORPORA[corpus]
    columns = ["--source_column", source, "--target_column", target, "--torch_num_threads", "2"]
    tuning = ["--model_name_or_path", str(folder), "--validation_file", split_file(corpus, "validation"), *columns,
              "--num_beams", "5", "--metric", "bleu", "--max_samples", str(tuning_samples), "--write_generation_config",
              *(["--coverage_penalties", "0", "--length_penalty_style", "transformers"]
                if SETTINGS[setting] is None else []),
              "--output_dir", str(folder / "penalties")]
    test = ["--model_name_or_path", str(folder), "--test_file", split_file(corpus, "test"), *columns,
            "--update_model_card", "--output_dir", str(folder / "tuned")]
    return Cell((setting,), folder, (
        Step(("training", GRID.task),
             tuple(training_arguments(corpus, setting, folder, output_dir, max_train_minutes, max_steps)), folder),
        Step(("training.tune_beam_penalties",), tuple(tuning), folder / "penalties"),
        Step(("training.evaluate_seq2seq",), tuple(test), folder / "tuned")))


def with_earlier_rows(results: dict, earlier: dict) -> dict:
    """``results`` with the ``earlier`` table's rows of the other settings, in the order of SETTINGS."""
    rows = {**earlier, **results}
    return {setting: rows[setting] for setting in SETTINGS if setting in rows}


def with_minutes_of(row: dict, earlier: dict, setting: str) -> dict:
    """``row``, a run that retrained the ``earlier`` row's steps on another machine, with the earlier row's training
    minutes and validation curve by minutes: the wall clock measured beside the other rows of the comparison."""
    if row.get("steps") is None or row.get("steps") != earlier.get("steps"):
        raise ValueError(f"--keep_docs_minutes: {setting} trained {row.get('steps')} steps and its docs row "
                         f"{earlier.get('steps')}; retrain it with --max_steps {earlier.get('steps')}")
    kept = {key: earlier[key] for key in MINUTES_KEYS if key in earlier}
    return {**{key: value for key, value in row.items() if key not in MINUTES_KEYS}, **kept}


class TranslationTable(Table):
    """Per corpus: each setting's three steps, rnnsearch first; rows of earlier runs kept from the docs' table."""

    results_flag = False  # the results JSON and figure: --docs_dir/translation_<corpus>.json and _bleu.png

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--corpus", choices=list(CORPORA), required=True)
        parser.add_argument("--max_train_minutes", type=float, default=None,
                            help="Override the configs' budget (60 minutes of training).")
        parser.add_argument("--max_steps", type=int, default=None,
                            help="Stop training at this many steps (also), e.g. the steps of another row's budget.")
        parser.add_argument("--tuning_samples", type=int, default=500,
                            help="Validation sentences the beam penalties are tuned on.")
        parser.add_argument("--keep_docs_minutes", action="store_true",
                            help="Keep the docs rows' training minutes and curves by minutes: for runs that retrain a "
                                 "row's steps (--max_steps) on a machine of another speed, to fill in its scores.")
        parser.add_argument("--docs_dir", type=Path, default=REPO_ROOT / "docs")

    def check(self, args: argparse.Namespace) -> None:
        if args.max_train_minutes is not None and not args.max_train_minutes > 0:
            raise ValueError(f"--max_train_minutes must be > 0, got {args.max_train_minutes}")
        if args.max_steps is not None and args.max_steps < 1:
            raise ValueError(f"--max_steps must be a positive number of steps, got {args.max_steps}")
        if args.tuning_samples < 1:
            raise ValueError(f"--tuning_samples must be a positive number of sentences, got {args.tuning_samples}")
        if "transformer" in args.settings and not args.table_only and "rnnsearch" not in args.settings and not (
                args.output_dir / args.corpus / "rnnsearch" / "config.json").is_file():
            raise ValueError("the transformer matches the parameters of the rnnsearch run: run --settings rnnsearch "
                             "first (or with it)")
        if args.keep_docs_minutes and not args.table_only:
            docs_rows = read_json(self.results_path(args))
            for setting in args.settings:
                steps = docs_rows.get(setting, {}).get("steps")
                if steps is None or args.max_steps != steps:
                    raise ValueError(f"--keep_docs_minutes keeps the minutes of {setting}'s row in "
                                     f"{self.results_path(args)}, "
                                     + (f"which trained {steps} steps: add --max_steps {steps}" if steps is not None
                                        else "which has no steps to retrain (or no such row)"))

    def cells(self, args: argparse.Namespace) -> list[Cell]:
        return [cell(args.corpus, setting, args.output_dir, args.max_train_minutes, args.max_steps,
                     args.tuning_samples) for setting in args.settings]

    def run(self, cells: list[Cell], args: argparse.Namespace) -> None:
        """rnnsearch first, on its own: the Transformer is sized on it; then the others, --jobs at a time."""
        first = [run for run in cells if run.key == ("rnnsearch",)]
        run_grid(first, 1, args.resume)
        run_grid([run for run in cells if run not in first], args.jobs, args.resume)

    def read_row(self, folder: Path) -> dict | None:
        """A finished run's scores: test BLEU/chrF at beam 5 (``predict_*``) and with the tuned penalties, the tuned
        α and β, the tuned outputs' mean length in words, parameters, steps, training minutes, and (minutes,
        validation BLEU) points; None where the run has no all_results.json."""
        metrics = read_json(folder / "all_results.json")
        if not metrics:
            return None
        result = predict_metrics(metrics, ("bleu", "chrf"), digits=2)  # absent when it stopped before its test step
        if "num_parameters" in metrics:
            result["parameters"] = metrics["num_parameters"]
        tuned = read_json(folder / "tuned" / "test_results.json")
        if tuned:
            result.update(tuned_bleu=round(tuned["bleu"], 2), tuned_chrf=round(tuned["chrf"], 2),
                          bleu_signature=tuned.get("bleu_signature"))
        outputs = folder / "tuned" / "test_predictions.txt"
        if outputs.is_file():
            lines = outputs.read_text(encoding="utf-8").splitlines()
            result["tuned_words_per_output"] = round(sum(len(line.split()) for line in lines) / max(len(lines), 1), 2)
        best = read_json(folder / "penalties" / "beam_penalties.json").get("best")
        if best:
            result.update(length_penalty=best["length_penalty"], coverage_penalty=best.get("coverage_penalty", 0.0))
        history = read_json(folder / "trainer_state.json")
        if history:
            minutes = max(entry.get("training_minutes", 0.0) for entry in history["log_history"])
            result.update(steps=history["global_step"], training_minutes=minutes,
                          validation_bleu_by_minutes=validation_curve(history, metrics, "bleu", "training_minutes"),
                          validation_bleu_by_steps=validation_curve(history, metrics, "bleu", "step"))
        return result

    def table_rows(self, results: dict, args: argparse.Namespace) -> dict:
        """The finished runs' rows (with --keep_docs_minutes, the docs rows' minutes), and the docs table's rows of
        the other settings; never an empty table, which would overwrite the docs' one."""
        if not results:
            raise ValueError(f"no finished run of {args.settings} under {args.output_dir / args.corpus} (each "
                             "setting's all_results.json); --output_dir is where the runs are")
        docs_rows = read_json(self.results_path(args))
        if args.keep_docs_minutes:
            results = {setting: with_minutes_of(row, docs_rows.get(setting, {}), setting)
                       for setting, row in results.items()}
        earlier = {setting: row for setting, row in docs_rows.items() if setting not in results}
        if earlier:
            print(f"kept from {self.results_path(args)}: the rows of {', '.join(earlier)}")
        return with_earlier_rows(results, earlier)

    def results_path(self, args: argparse.Namespace) -> Path:
        return args.docs_dir / f"translation_{args.corpus}.json"

    def figure_path(self, args: argparse.Namespace) -> Path:
        return args.docs_dir / f"translation_{args.corpus}_bleu.png"

    def title(self, args: argparse.Namespace) -> str:
        return args.corpus.replace("_", "–")


TABLE = TranslationTable(GRID)
