"""Batches by tokens (``--max_tokens_per_batch``) against transformers' batches of rows, plain and
``--train_sampling_strategy group_by_length``, at equal tokens per step, on the Bible corpus.

    python -m training.data.make_bible          # once: training/data/bible-es-en/ (apt sword-text-web sword-text-sparv)
    python -m benchmarks.token_batching         # 6 minutes, one thread: benchmarks/results/token_batching.json
    python -m benchmarks.token_batching --max_tokens 4096 --steps 20000 --eval_rows 500 --threads 16 \\
        --config_overrides \\
        "embedding_size=256,hidden_size=512,encoder_hidden_size=256,attention_size=256,output_size=256,dropout=0.3" \\
        --output outputs/token_batching_full.json   # the full run: the Bible config's model and batch

Run from the repository's root, as a module (it reads training's modules). The training split is tokenised as the
seq2seq task does it (a BPE tokenizer of ``--vocab_size`` trained on the training sources and targets, EOS ending
each side). The token budget ``--max_tokens`` fixes the batches by tokens; the batches of rows get ``--max_tokens``'s
number of batches per epoch, that is rows / batches rows each, so every way trains the same real tokens per step on
average (the table shows each one's measured mean).

1. Padding fraction: over one whole epoch of each way's batches (seed 0), the share of padded tokens (rows x
   (longest source + longest target)) that are padding.
2. Training speed and quality: the same new ``rnnsearch`` model (``--config_overrides``; a small one by default, so
   that each run stays near 2 minutes on a laptop's cores) trained ``--steps`` Adam steps by each way through the
   training driver's ``TaskTrainer`` (its ``max_tokens_per_batch``, or its batches of rows), with the same seed,
   learning rate and schedule, on CUDA when there is one. Tokens/s: the real (not padding) source + target tokens
   the steps trained over ``train()``'s wall-clock seconds. Then, on the first ``--eval_rows`` validation verses, the
   teacher-forced cross-entropy per target token (the validation loss, which moves long before BLEU does) and the
   sacreBLEU of greedy decoding: after the same steps each way has seen about the same target tokens (shown).
"""

import argparse
import json
import tempfile
import time
from pathlib import Path

import datasets
import numpy as np
import sacrebleu
import torch
from transformers import Seq2SeqTrainingArguments
from transformers.trainer_pt_utils import LengthGroupedSampler

from hf_bahdanau import BahdanauConfig, BahdanauForConditionalGeneration, DataCollatorWithRightPaddedLabels
from training.common.arguments import parse_config_overrides
from training.common.token_batching import TokenBatchSampler, padded_tokens, row_lengths
from training.common.tokenization import train_tokenizer
from training.common.trainer import TaskTrainer

CORPUS = Path("training/data/bible-es-en")
RESULTS = Path("benchmarks/results/token_batching.json")
WAYS = ("tokens", "group_by_length", "plain")


class CountingCollator:
    """The seq2seq task's collator, counting the real and the padded tokens of every batch it pads."""

    def __init__(self, collator):
        self.collator, self.real, self.padded, self.target = collator, 0, 0, 0

    def __call__(self, features: list[dict]) -> dict:
        sources = np.array([len(feature["input_ids"]) for feature in features])
        targets = np.array([len(feature["labels"]) for feature in features])
        self.real += int(sources.sum() + targets.sum())
        self.target += int(targets.sum())
        self.padded += padded_tokens(sources, targets)
        return self.collator(features)


def tokenised_splits(vocab_size: int, eval_rows: int):
    """The BPE tokenizer and the tokenised training split; the first ``eval_rows`` validation rows, raw."""
    raw = datasets.load_dataset("json", data_files={"train": str(CORPUS / "train.jsonl"),
                                                    "validation": str(CORPUS / "validation.jsonl")})
    train = raw["train"]
    tokenizer = train_tokenizer((text for column in ("es", "en") for text in train[column]), kind="bpe",
                                vocab_size=vocab_size)

    def tokenise(batch):
        input_ids = tokenizer(batch["es"])["input_ids"]
        return {"input_ids": input_ids, "attention_mask": [[1] * len(ids) for ids in input_ids],
                "labels": tokenizer(text_target=batch["en"])["input_ids"]}

    train = train.map(tokenise, batched=True, remove_columns=train.column_names)
    return tokenizer, train, raw["validation"].select(range(min(eval_rows, len(raw["validation"]))))


def epoch_batches(way: str, source: np.ndarray, target: np.ndarray, max_tokens: int, rows_per_batch: int):
    """One epoch of ``way``'s batches (lists of rows), drawn as the Trainer would draw them with seed 0."""
    if way == "tokens":
        return [np.array(rows) for rows in TokenBatchSampler(source, target, max_tokens, seed=0)]
    generator = torch.Generator().manual_seed(0)
    order = (list(LengthGroupedSampler(rows_per_batch, lengths=source.tolist(), generator=generator))
             if way == "group_by_length" else torch.randperm(len(source), generator=generator).tolist())
    return [np.array(order[k:k + rows_per_batch]) for k in range(0, len(order), rows_per_batch)]


def train_and_score(way: str, tokenizer, train, validation, args) -> dict:
    """``args.steps`` steps of a new model trained by ``way``'s batches: tokens/s, target tokens, validation BLEU."""
    config = BahdanauConfig.from_preset(
        "rnnsearch", vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        decoder_start_token_id=tokenizer.bos_token_id, unk_token_id=tokenizer.unk_token_id,
        **parse_config_overrides(args.config_overrides))
    torch.manual_seed(0)
    model = BahdanauForConditionalGeneration(config)
    collator = CountingCollator(DataCollatorWithRightPaddedLabels(tokenizer, model=model))
    with tempfile.TemporaryDirectory() as output_dir:
        training_args = Seq2SeqTrainingArguments(
            output_dir, max_steps=args.steps, per_device_train_batch_size=args.rows_per_batch, learning_rate=1e-3,
            warmup_steps=min(100, args.steps // 10), lr_scheduler_type="inverse_sqrt", seed=0,
            train_sampling_strategy="group_by_length" if way == "group_by_length" else "random",
            save_strategy="no", report_to="none", disable_tqdm=True, logging_steps=args.steps,
            dataloader_pin_memory=False)
        trainer = TaskTrainer(model=model, args=training_args, train_dataset=train, data_collator=collator,
                              max_tokens_per_batch=args.max_tokens if way == "tokens" else None)
        start = time.perf_counter()
        trainer.train()
        seconds = time.perf_counter() - start
    model.eval()
    outputs, loss_sum, target_tokens = [], 0.0, 0
    for begin in range(0, len(validation), 64):
        sources, targets = validation["es"][begin:begin + 64], validation["en"][begin:begin + 64]
        batch = tokenizer(sources, return_tensors="pt", padding=True).to(model.device)
        labels = tokenizer(text_target=targets)["input_ids"]
        teacher_forced = collator.collator([{"input_ids": ids, "labels": target} for ids, target
                                            in zip(tokenizer(sources)["input_ids"], labels)])
        teacher_forced = {name: tensor.to(model.device) for name, tensor in teacher_forced.items()}
        with torch.no_grad():
            generated = model.generate(**batch, num_beams=1, max_new_tokens=args.max_new_tokens)
            counted = sum(map(len, labels))  # the mean over the batch's target tokens, back to their sum
            loss_sum += float(model(**teacher_forced).loss) * counted
        target_tokens += counted
        outputs += [text.strip() for text in tokenizer.batch_decode(generated, skip_special_tokens=True)]
    bleu = sacrebleu.corpus_bleu(outputs, [validation["en"]]).score
    return {"tokens_per_second": collator.real / seconds, "real_tokens_per_step": collator.real / args.steps,
            "target_tokens": collator.target, "train_seconds": seconds, "validation_bleu": bleu,
            "validation_loss": loss_sum / target_tokens}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max_tokens", type=int, default=2048, help="The token budget of a batch by tokens.")
    parser.add_argument("--steps", type=int, default=150, help="Training steps of each way.")
    parser.add_argument("--config_overrides", default="embedding_size=64,hidden_size=128,encoder_hidden_size=64,"
                                                      "attention_size=64,output_size=64,dropout=0.1")
    parser.add_argument("--vocab_size", type=int, default=8000)
    parser.add_argument("--eval_rows", type=int, default=200)
    parser.add_argument("--max_new_tokens", type=int, default=120)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--ways", nargs="+", default=list(WAYS), choices=WAYS)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    tokenizer, train, validation = tokenised_splits(args.vocab_size, args.eval_rows)
    source, target = row_lengths(train, "input_ids"), row_lengths(train, "labels")
    token_batch_count = len(TokenBatchSampler(source, target, args.max_tokens))
    args.rows_per_batch = round(len(train) / token_batch_count)
    results = {"corpus": str(CORPUS), "train_rows": len(train), "max_tokens": args.max_tokens,
               "batches_per_epoch": token_batch_count, "rows_per_batch": args.rows_per_batch, "steps": args.steps,
               "config_overrides": args.config_overrides, "threads": args.threads, "ways": {}}
    for way in args.ways:
        batches = epoch_batches(way, source, target, args.max_tokens, args.rows_per_batch)
        real = sum(int(source[rows].sum() + target[rows].sum()) for rows in batches)
        padded = [padded_tokens(source[rows], target[rows]) for rows in batches]
        results["ways"][way] = {"padding_fraction": 1 - real / sum(padded), "largest_batch_tokens": max(padded),
                                **train_and_score(way, tokenizer, train, validation, args)}
        print(way, json.dumps(results["ways"][way]), flush=True)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=1) + "\n")
    print(f"\n{len(train)} training rows; {token_batch_count} batches of <= {args.max_tokens} tokens per epoch, "
          f"against batches of {args.rows_per_batch} rows; {args.steps} steps each\n")
    print("| batches | padding | largest batch (tokens) | real tokens/step | training tokens/s | target tokens | "
          "validation loss | validation BLEU |\n|---|---|---|---|---|---|---|---|")
    for way, row in results["ways"].items():
        print(f"| {way} | {100 * row['padding_fraction']:.1f} % | {row['largest_batch_tokens']} | "
              f"{row['real_tokens_per_step']:.0f} | {row['tokens_per_second']:.0f} | {row['target_tokens']} | "
              f"{row['validation_loss']:.3f} | {row['validation_bleu']:.2f} |")


if __name__ == "__main__":
    main()
