"""Quickstart: train a small RNNsearch (Bahdanau et al., 2014) to reverse strings, then decode and show
its alignment.

Everything is generated locally (no network): random lower-case strings, a character-level
tokenizer trained with `tokenizers`, `Seq2SeqTrainer` for training, `generate()` for decoding.
The alignment of a reversal is the anti-diagonal, so the printed matrix shows at a glance
whether the attention learned what it should.

    python training/quickstart.py --output_dir outputs/quickstart [--max_steps 400] [--preset luong-general]
"""

import json
import random
import string
from dataclasses import dataclass, field
from pathlib import Path

import torch
from datasets import Dataset
from tokenizers import Regex, Tokenizer, models, pre_tokenizers, processors
from transformers import (
    DataCollatorForSeq2Seq,
    HfArgumentParser,
    PreTrainedTokenizerFast,
    Seq2SeqTrainer,
    Seq2SeqTrainingArguments,
)

from hf_bahdanau import BahdanauConfig, BahdanauForConditionalGeneration

SPECIAL_TOKENS = ["<pad>", "<s>", "</s>", "<unk>"]  # ids 0..3 = the config's pad/bos/eos defaults


@dataclass
class QuickstartArguments:
    preset: str = field(default="rnnsearch", metadata={"help": "A BahdanauConfig preset."})
    train_examples: int = field(default=6000)
    test_examples: int = field(default=300)
    min_length: int = field(default=3)
    max_length: int = field(default=12)
    hidden_size: int = field(default=64)
    embedding_size: int = field(default=32)


@dataclass
class QuickstartTrainingArguments(Seq2SeqTrainingArguments):
    """Seq2SeqTrainingArguments with defaults that train the quickstart model in a minute or two on a CPU."""

    output_dir: str = field(default="outputs/quickstart")
    max_steps: int = field(default=400)
    learning_rate: float = field(default=3e-3)
    per_device_train_batch_size: int = field(default=64)
    logging_steps: float = field(default=50)
    save_strategy: str = field(default="no")
    report_to: None | str | list[str] = field(default="none")


def random_strings(count: int, args: QuickstartArguments, seed: int) -> list[str]:
    rng = random.Random(seed)
    alphabet = string.ascii_lowercase[:20]
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(args.min_length, args.max_length)))
            for _ in range(count)]


def character_tokenizer(texts: list[str]) -> PreTrainedTokenizerFast:
    """A character-level tokenizer (`tokenizers` WordLevel over single characters) that appends </s>."""
    vocab = {token: index for index, token in enumerate(SPECIAL_TOKENS)}
    for character in sorted(set("".join(texts))):
        vocab.setdefault(character, len(vocab))
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tokenizer.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 2)])
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, pad_token="<pad>", bos_token="<s>", eos_token="</s>", unk_token="<unk>"
    )


def text_alignment(weights: torch.Tensor, source: list[str], target: list[str]) -> str:
    """A text heat map: one row per generated token, one column per source token."""
    shades = " .:-=+*#%@"
    lines = ["    " + " ".join(source)]
    for token, row in zip(target, weights):
        lines.append(f"{token:>3} " + " ".join(shades[min(int(w * len(shades)), len(shades) - 1)] for w in row))
    return "\n".join(lines)


def main() -> None:
    parser = HfArgumentParser((QuickstartArguments, QuickstartTrainingArguments))
    args, training_args = parser.parse_args_into_dataclasses()
    train_texts = random_strings(args.train_examples, args, seed=0)
    test_texts = [text for text in random_strings(args.test_examples * 2, args, seed=1) if text not in train_texts]
    test_texts = test_texts[: args.test_examples]
    tokenizer = character_tokenizer(train_texts)

    def tokenize(batch):
        encoded = tokenizer(batch["source"], add_special_tokens=False)
        encoded["labels"] = tokenizer([text[::-1] for text in batch["source"]])["input_ids"]
        return encoded

    train = Dataset.from_dict({"source": train_texts}).map(tokenize, batched=True, remove_columns=["source"])

    torch.manual_seed(training_args.seed)
    config = BahdanauConfig.from_preset(
        args.preset, vocab_size=len(tokenizer), embedding_size=args.embedding_size, hidden_size=args.hidden_size,
        attention_size=args.hidden_size, output_size=args.embedding_size,
        **({} if args.preset in ("rnnsearch", "rnnencdec") else dict(encoder_layers=1, decoder_layers=1)),
    )
    model = BahdanauForConditionalGeneration(config)
    print(f"{args.preset}: {model.num_parameters():,} parameters")
    trainer = Seq2SeqTrainer(
        model=model, args=training_args, train_dataset=train, processing_class=tokenizer,
        data_collator=DataCollatorForSeq2Seq(tokenizer, model=model),
    )
    trainer.train()

    model.eval()
    model.generation_config.max_new_tokens = args.max_length + 2
    batch = tokenizer(test_texts, add_special_tokens=False, padding=True, return_tensors="pt")
    generated = model.generate(**batch)
    predictions = tokenizer.batch_decode(generated, skip_special_tokens=True)
    predictions = [prediction.replace(" ", "") for prediction in predictions]
    accuracy = sum(p == t[::-1] for p, t in zip(predictions, test_texts)) / len(test_texts)
    print(f"exact match on {len(test_texts)} held-out strings: {accuracy:.3f}")

    example = tokenizer([test_texts[0]], add_special_tokens=False, return_tensors="pt")
    out = model.generate(**example, output_attentions=True, return_dict_in_generate=True)
    weights = torch.cat([step[0][0, 0] for step in out.cross_attentions])  # [generated, source]
    target = tokenizer.convert_ids_to_tokens(out.sequences[0, 1:])
    print(f"\n{test_texts[0]} -> {predictions[0]}\n" + text_alignment(weights, list(test_texts[0]), target))

    output_dir = Path(training_args.output_dir)
    model.save_pretrained(output_dir)
    tokenizer.save_pretrained(output_dir)
    (output_dir / "all_results.json").write_text(json.dumps({"exact_match": accuracy}, indent=2))
    print(f"\nsaved to {output_dir} (load with AutoModelForSeq2SeqLM.from_pretrained(..., trust_remote_code=True))")


if __name__ == "__main__":
    main()
