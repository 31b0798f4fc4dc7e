"""Learning: Seq2SeqTrainer trains small models to solve a synthetic task they can only solve by attending."""

import random

import pytest
import torch
from datasets import Dataset
from transformers import Seq2SeqTrainer, Seq2SeqTrainingArguments

from hf_bahdanau import BahdanauConfig, BahdanauForConditionalGeneration

PAD, EOS, FIRST_SYMBOL, SYMBOLS = 0, 2, 3, 20


def reversal_pairs(count: int, seed: int) -> list[list[int]]:
    """Random sequences of 3–12 symbols; the target is the sequence reversed, then EOS."""
    rng = random.Random(seed)
    return [[rng.randrange(FIRST_SYMBOL, FIRST_SYMBOL + SYMBOLS) for _ in range(rng.randint(3, 12))]
            for _ in range(count)]


def collate(rows: list[dict]) -> dict[str, torch.Tensor]:
    source_length = max(len(row["input_ids"]) for row in rows)
    target_length = max(len(row["labels"]) for row in rows)
    input_ids = torch.tensor([row["input_ids"] + [PAD] * (source_length - len(row["input_ids"])) for row in rows])
    labels = torch.tensor([row["labels"] + [-100] * (target_length - len(row["labels"])) for row in rows])
    return dict(input_ids=input_ids, attention_mask=(input_ids != PAD).long(), labels=labels)


def exact_match(model, sources: list[list[int]]) -> float:
    batch = collate([dict(input_ids=source, labels=[]) for source in sources])
    generated = model.generate(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                               max_new_tokens=14).tolist()
    hits = 0
    for source, output in zip(sources, generated):
        output = output[1:]
        output = output[:output.index(EOS)] if EOS in output else output
        hits += output == source[::-1]
    return hits / len(sources)


@pytest.mark.slow
@pytest.mark.parametrize("preset, overrides", [
    ("rnnsearch", {}),
    ("luong-general", dict(encoder_layers=1, decoder_layers=1, rnn_type="gru", bidirectional=True)),
])
def test_trainer_learns_to_reverse_sequences(preset, overrides, tmp_path):
    torch.manual_seed(0)
    config = BahdanauConfig.from_preset(preset, vocab_size=FIRST_SYMBOL + SYMBOLS, embedding_size=32,
                                        hidden_size=64, attention_size=64, output_size=32, **overrides)
    model = BahdanauForConditionalGeneration(config)
    train = reversal_pairs(6000, seed=0)
    dataset = Dataset.from_dict(dict(input_ids=train, labels=[source[::-1] + [EOS] for source in train]))
    args = Seq2SeqTrainingArguments(
        output_dir=str(tmp_path), per_device_train_batch_size=64, learning_rate=3e-3, max_steps=400,
        lr_scheduler_type="linear", logging_steps=100, report_to=[], save_strategy="no", disable_tqdm=True, seed=0,
    )
    Seq2SeqTrainer(model=model, args=args, train_dataset=dataset, data_collator=collate).train()
    model.eval()
    held_out = [source for source in reversal_pairs(400, seed=1234) if source not in train][:300]
    assert exact_match(model, held_out) >= 0.95
