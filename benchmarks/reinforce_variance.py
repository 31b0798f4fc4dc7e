"""How noisy hard attention's REINFORCE gradient is, with and without Xu et al.'s expected context (2015, §4.1), with
the scalar baseline and with the one proportional to the text's length (``reinforce_baseline``).

    python -m benchmarks.reinforce_variance                # benchmarks/results/reinforce_variance.json, ~1 minute
    python -m benchmarks.reinforce_variance --warm_steps 0 --entropy_weight 0 --probabilities 0 0.5 1 \
        --baselines per_token

Run from the repository's root, as a module: it reads training's digit-strip generator (training is a package of the
repository, not of the installed library).

One batch of generated digit strips (the task of training/configs/digits_soft.json) and a small image-to-text model
(embedding 16, decoder 32, attention 16, CNN 16-32 channels), first trained ``--warm_steps`` Adam steps with soft
attention so that where it looks matters. Then, for each ``reinforce_baseline`` (``--baselines``; "sequence": one moving
average b, "per_token": T_n · r̄ for text n) and each ``reinforce_expected_context_probability`` p (results under
"<baseline> p=<p>"), the same weights with ``attention_mode="hard_reinforce"`` (entropy bonus ``--entropy_weight``, 0.01
as ``--attention hard_reinforce``; the soft gradient has none, so at p = 1 the cosine is below 1 by the entropy term's
share): the moving-average baseline warmed on ``--baseline_batches`` passes, then ``--repeats`` forward-backward passes
of that same batch, which differ only in their random draws. Per baseline and p, over the attention scorer's weights
(``model.decoder.attention``): the mean gradient ḡ and its norm, the total variance V = E‖g − E g‖² (unbiased, n − 1),
the squared signal ‖E g‖² = ‖ḡ‖² − V / n (unbiased; ḡ of n passes still holds V / n of noise), the noise-to-signal ratio
V / ‖E g‖² (how many batches a step must average for its noise to match its signal; None when n passes cannot resolve
‖E g‖² from 0), the same against soft attention's gradient g_s, V / ‖g_s‖² (resolved at any n), and the cosine between ḡ
and g_s (the direction the expected rows follow; noisy when V / n is not small against ‖E g‖²). And the rewards
R = Σ_t log p(y_t | …) of those passes: their spread, its correlation with the text's length, and what a baseline
proportional to the length would leave of it (the moving average b ignores the length, so a long text's R − b is
negative for its length alone; "baseline" is b, or r̄ per token with "per_token").
"""

import argparse
import itertools
import json
import time
from pathlib import Path

import torch
from PIL import Image

from hf_bahdanau import BahdanauForImageToText, BahdanauImageToTextConfig
from hf_bahdanau.modeling.collators import DataCollatorForImageToText
from hf_bahdanau.modeling.configuration_bahdanau import REINFORCE_BASELINES
from hf_bahdanau.modeling.reinforce import token_log_likelihoods
from training.common.image_data import load_tokenizer_and_processor
from training.data.make_image_text import GENERATORS

SIZES = dict(embedding_size=16, hidden_size=32, attention_size=16, output_size=16, cnn_channels=[16, 32],
             cnn_pool_sizes=[[2, 2], [2, 2]], doubly_stochastic_weight=0.0)


def digit_batches(batch_size: int, count: int, seed: int) -> tuple[list[dict], BahdanauImageToTextConfig]:
    """``count`` batches of digit strips and the model config for their vocabulary."""
    pairs = GENERATORS["digits"]("train", batch_size * count, seed)
    rows = [{"image": Image.fromarray(image), "text": text} for image, text in pairs]
    tokenizer, processor = load_tokenizer_and_processor(None, [row["text"] for row in rows], "char", num_channels=1,
                                                        height=20)
    collate = DataCollatorForImageToText(processor, tokenizer)
    batches = [collate(rows[start:start + batch_size]) for start in range(0, len(rows), batch_size)]
    config = BahdanauImageToTextConfig(**SIZES, vocab_size=len(tokenizer), num_channels=1,
                                       pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
                                       eos_token_id=tokenizer.eos_token_id, unk_token_id=tokenizer.unk_token_id,
                                       decoder_start_token_id=tokenizer.bos_token_id)
    return batches, config


def training_pass(model: BahdanauForImageToText, batch: dict) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The attention scorer's gradient of the training loss on ``batch``, flattened, and each text's reward
    R = Σ_t log p(y_t | …) [N] (None where the training forward returns no logits: soft attention's fused loss)."""
    scorer = list(model.model.decoder.attention.parameters())
    out = model(**batch)
    gradient = torch.cat([gradient.flatten() for gradient in torch.autograd.grad(out.loss, scorer)])
    if out.logits is None:
        return gradient, None
    kept = batch["labels"] != -100
    return gradient, (token_log_likelihoods(out.logits.detach(), batch["labels"]) * kept).sum(1)


def reward_spread(rewards: torch.Tensor, lengths: torch.Tensor) -> dict[str, float]:
    """How much of the rewards' spread [passes, N] the texts' lengths [N] explain: R's standard deviation, its
    correlation with the length T, and the standard deviation of R − T r̄ (r̄ the mean reward per token), which a
    baseline proportional to the length would leave."""
    lengths = lengths.expand_as(rewards).flatten().to(rewards.dtype)
    rewards = rewards.flatten()
    per_token = rewards.sum() / lengths.sum()
    return {"reward_std": rewards.std().item(),
            "reward_length_correlation": torch.corrcoef(torch.stack([rewards, lengths]))[0, 1].item(),
            "reward_std_given_length": (rewards - lengths * per_token).std().item()}


def measure(args: argparse.Namespace) -> dict:
    torch.manual_seed(args.seed)
    batches, config = digit_batches(args.batch_size, args.warm_steps + 1, args.seed)
    probe, training = batches[0], batches[1:]
    soft = BahdanauForImageToText(config).train()
    optimiser = torch.optim.Adam(soft.parameters(), lr=1e-3)
    for batch in training[:args.warm_steps]:
        optimiser.zero_grad()
        soft(**batch).loss.backward()
        optimiser.step()
    reference, _ = training_pass(soft, probe)
    results = {"soft_gradient_norm": reference.norm().item()}
    for baseline, probability in itertools.product(args.baselines, args.probabilities):
        hard = BahdanauForImageToText(BahdanauImageToTextConfig(
            **{**config.to_dict(), "attention_mode": "hard_reinforce", "reinforce_entropy_weight": args.entropy_weight,
               "reinforce_expected_context_probability": probability, "reinforce_baseline": baseline})).train()
        hard.load_state_dict(soft.state_dict(), strict=False)  # the baseline's buffers start empty
        torch.manual_seed(args.seed + 1)
        for _ in range(args.baseline_batches):
            training_pass(hard, probe)  # each training forward with autograd updates the baseline
        gradients, rewards = (torch.stack(parts) for parts in zip(*(training_pass(hard, probe)
                                                                    for _ in range(args.repeats))))
        mean = gradients.mean(0)
        variance = (gradients - mean).pow(2).sum(1).sum().item() / (args.repeats - 1)
        signal = mean.pow(2).sum().item() - variance / args.repeats  # ‖E g‖², unbiased: ‖ḡ‖² holds var / n of noise
        results[f"{baseline} p={probability}"] = {
            "mean_gradient_norm": mean.norm().item(), "total_variance": variance, "squared_signal": signal,
            "noise_to_signal": variance / signal if signal > 0 else None,
            "noise_to_soft_signal": variance / reference.pow(2).sum().item(),
            "cosine_with_soft": torch.nn.functional.cosine_similarity(mean, reference, dim=0).item(),
            "baseline": hard.reinforce_baseline.value(torch.zeros(1)).item(),
            **reward_spread(rewards, (probe["labels"] != -100).sum(1))}
    return results


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--probabilities", type=float, nargs="+", default=[0.0, 0.5])
    parser.add_argument("--baselines", nargs="+", choices=list(REINFORCE_BASELINES), default=list(REINFORCE_BASELINES))
    parser.add_argument("--entropy_weight", type=float, default=0.01)
    parser.add_argument("--warm_steps", type=int, default=200)
    parser.add_argument("--baseline_batches", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, default=Path("benchmarks/results/reinforce_variance.json"))
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    start = time.perf_counter()
    results = {"arguments": {key: str(value) for key, value in vars(args).items()}, **measure(args),
               "seconds": round(time.perf_counter() - start, 1)}
    args.output.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
