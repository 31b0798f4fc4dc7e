"""The alignment explorer's page for an end-to-end memory network: one self-contained HTML page of its questions, each
with the memory's sentences (oldest first) as rows and one column per hop shaded by the hop's weight p^k_i, the
supporting facts marked "*", the question, the answer and the expected answer; wrong answers come first, are counted
and can be shown alone, as on ``explorer_page``'s page (same style, script and paging).

    answered = answerer(memory=story, question=question)          # the memory network's pipeline
    write_memory_page([{"memory": story, "question": question, "answer": answered["answer"],
                        "hop_attentions": answered["hop_attentions"], "expected": "office",
                        "supporting_facts": [2]}], "questions.html", title="babi-memn2n")
"""

from __future__ import annotations

from argparse import Namespace
from collections.abc import Mapping, Sequence
from os import PathLike
from pathlib import Path

from ..pictures import check_hop_attentions, check_supporting_facts
from .shell import (WEIGHT_DECIMALS, Explorer, check_page_size, html_page, is_exact_match, judged_records, page_data,
                    read_model_metrics, read_rows, summarise_model, summary_line)

__all__ = ["MEMORY_EXPLORER", "MEMORY_SUMMARY_FIELDS", "memory_page", "write_memory_page"]

# the config fields of a memory network that ``shell.summarise_model(model, MEMORY_SUMMARY_FIELDS)`` shows at the top
MEMORY_SUMMARY_FIELDS = ("model_type", "num_hops", "hidden_size", "sentence_encoding", "weight_tying",
                         "temporal_encoding", "memory_size", "random_noise", "linear_start", "num_labels")
RECORD_KEYS = {"memory", "question", "answer", "hop_attentions"}  # and optionally "expected", "supporting_facts"
HELP = """Each question's memory sentences, oldest first, with one column per hop: the hop's attention weight
p over the sentences (the shade and the number; four decimals in the tooltip). Rows marked * are the supporting facts
the answer follows from."""


def _question_record(index: int, record: Mapping) -> dict:
    """What the page's script reads of one question, checked; ``records[index]`` names it in errors."""
    where = f"records[{index}]."
    if not isinstance(record, Mapping) or not RECORD_KEYS <= record.keys() or (
            record.keys() - RECORD_KEYS - {"expected", "supporting_facts"}):
        raise ValueError(f"`records[{index}]` must be a dict with the keys {sorted(RECORD_KEYS)} and optionally "
                         f"'expected' and 'supporting_facts', got {record!r:.200}.")
    for key in ("question", "answer", "expected"):
        if key in record and not isinstance(record[key], str) and not (key == "expected" and record[key] is None):
            raise ValueError(f"`{where}{key}` must be a string, got {record[key]!r:.200}.")
    weights = check_hop_attentions(record["memory"], record["hop_attentions"], where)
    expected = record.get("expected")
    return dict(
        number=index + 1,
        memory=list(record["memory"]),
        question=record["question"],
        answer=record["answer"],
        expected=expected,
        correct=None if expected is None else is_exact_match(record["answer"], [expected]),
        supporting_facts=sorted(check_supporting_facts(record.get("supporting_facts"), len(record["memory"]), where)),
        hop_attentions=weights.round(WEIGHT_DECIMALS).tolist(),
    )


def _supporting_fact_rates(questions: list[dict]) -> list[tuple[str, str]]:
    """Per hop k: how often its strongest sentence is a supporting fact, over the questions that name theirs."""
    named = [question for question in questions if question["supporting_facts"]]
    hops = max((len(question["hop_attentions"]) for question in named), default=0)
    rows = []
    for hop in range(hops):
        counted = [question for question in named if hop < len(question["hop_attentions"])]
        hits = sum(max(range(len(question["memory"])), key=question["hop_attentions"][hop].__getitem__)
                   in question["supporting_facts"] for question in counted)
        rows.append((f"hop {hop + 1} strongest on a supporting fact",
                     f"{100 * hits / len(counted):.1f} % ({hits:,} / {len(counted):,})"))
    return rows


def memory_page(
    records: Sequence[Mapping],
    *,
    title: str = "Memory network",
    model_summary: Mapping[str, object] | None = None,
    metrics: Mapping[str, object] | None = None,
    page_size: int = 50,
) -> str:
    """The HTML of a self-contained page (inline CSS and script, no network) exploring a memory network's answers.

    records: one dict per question: "memory" (its n sentences, oldest first), "question", "answer" (the model's),
        "hop_attentions" [K, n] (each hop's weights over the sentences, in [0, 1]: the pipeline's
        ``hop_attentions``), and optionally "expected" (the right answer: every record or none; then each answer is
        marked right or wrong, ``is_exact_match``, the wrong ones come first and the page's accuracy is shown) and
        "supporting_facts" (0-based indices into "memory"). Weights are kept to ``WEIGHT_DECIMALS``.
    model_summary: a key/value table at the top (``shell.summarise_model(model, MEMORY_SUMMARY_FIELDS)``).
    metrics: a table of metric x split at the top, "eval_accuracy" in row "accuracy", column "eval"
        (``shell.read_model_metrics``).
    page_size: how many questions the page draws at a time.
    """
    check_page_size(page_size)
    questions, page_metrics = judged_records(records, "records", _question_record, "an 'expected' answer",
                                             "questions")
    page_metrics += _supporting_fact_rates(questions)
    data = page_data("memory", ("questions", questions), page_metrics, title=title, model_summary=model_summary,
                     metrics=metrics, page_size=page_size,
                     has_references=all(question["correct"] is not None for question in questions))
    return html_page(data, help=HELP, noun="questions", wrong="answers")


def write_memory_page(records: Sequence[Mapping], path: str | PathLike, **options) -> Path:
    """Write ``memory_page(records, **options)`` to ``path`` (its folder is created) and return the path."""
    path = Path(path)
    page = memory_page(records, **options)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    return path


def read_questions(args: Namespace) -> list[dict]:
    """The questions of ``args.input``, a JSON-lines file with one object a line: "memory" (its sentences, oldest
    first) and "question", and optionally "expected" (the right answer) and "supporting_facts" (0-based indices into
    "memory"); other keys are ignored (``read_rows``)."""
    return [row for _, row in read_rows(args, ("memory", "question"), ("expected", "supporting_facts"))]


def explore_questions(args: Namespace, questions: list[dict]) -> tuple[str, str]:
    """Answer ``questions`` with the memory network ``args.model`` through its pipeline
    (``BahdanauMemoryQuestionAnsweringPipeline``: the answer and each hop's weights over the given sentences) and build
    their page; the summary line counts them and, with expected answers, the accuracy."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from ..modeling.pipeline_memory import BahdanauMemoryQuestionAnsweringPipeline

    options = dict(revision=args.revision, trust_remote_code=args.trust_remote_code)
    answerer = BahdanauMemoryQuestionAnsweringPipeline(
        model=AutoModelForSequenceClassification.from_pretrained(args.model, **options),
        tokenizer=AutoTokenizer.from_pretrained(args.model, **options))
    answered = answerer([dict(memory=question["memory"], question=question["question"]) for question in questions])
    records = [{**question, "answer": answer["answer"], "hop_attentions": answer["hop_attentions"]}
               for question, answer in zip(questions, answered)]
    page = memory_page(records, title=args.title, model_summary=summarise_model(answerer.model, MEMORY_SUMMARY_FIELDS),
                       metrics=read_model_metrics(args.model, args.revision), page_size=args.page_size)
    return page, summary_line("question", [None if record.get("expected") is None
                                           else is_exact_match(record["answer"], [record["expected"]])
                                           for record in records])


MEMORY_EXPLORER = Explorer(read=read_questions, explore=explore_questions)
