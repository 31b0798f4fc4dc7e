"""``--bf16`` training on the CPU (``--use_cpu true``: Trainer's CPU autocast) for every task of ``python -m training``:
a few steps of a tiny model, whose logged losses are finite and whose saved folder loads, in float32. ``--fp16`` without
a GPU is refused by name (Trainer would train in float32). The heads themselves under autocast: the contract's
``mixed_precision`` checks."""

import json
import math
from pathlib import Path

import pytest
import torch

from conftest import exits_as_argparse_does, padded_batch, tiny_model
from contract.mixed_precision import logits_tolerance
from hf_bahdanau.families import family_of
from hf_bahdanau.modeling.attention import AdditiveAttention
from training.__main__ import main
from training.tasks import task_names

pytestmark = pytest.mark.usefixtures("one_thread")

REPO = Path(__file__).resolve().parents[1]
SMALL = ["--max_train_samples", "32", "--max_eval_samples", "8", "--max_predict_samples", "8"]
# each task's bundled configuration (or its defaults) with a tiny model and little data
TINY_RUNS = {
    "seq2seq": ["training/configs/dates_rnnsearch.json", *SMALL, "--config_overrides",
                "embedding_size=8,hidden_size=16,attention_size=8,output_size=8"],
    "tagging": ["training/configs/ner_tagger.json", *SMALL, "--config_overrides", "embedding_size=8,hidden_size=16"],
    "classification": ["training/configs/han_classifier.json", *SMALL, "--config_overrides",
                       "embedding_size=8,hidden_size=16,attention_size=8"],
    "pointer": ["training/configs/pointer_sorting.json", "--train_size", "32", "--eval_size", "8", "--test_size", "8",
                "--hidden_size", "16", "--embedding_size", "8"],
    "memory-qa": ["training/configs/babi_memn2n.json", "--max_train_samples", "32", "--max_predict_samples", "8"],
    "passage-qa": ["training/configs/babi_coattention.json", "--max_train_samples", "32", "--max_predict_samples",
                   "8"],
    "image-to-text": ["--do_train", "--do_eval", "--do_predict", "--predict_with_generate", "true", *SMALL,
                      "--config_overrides", "hidden_size=16,embedding_size=8,attention_size=8,output_size=8,"
                                            "cnn_channels=[4,8],cnn_pool_sizes=[[2,2],[2,2]]"],
    "vqa": ["training/configs/easy_vqa.json", "--image_height", "16", "--config_overrides",
            "hidden_size=8,attention_size=8,answer_hidden_size=8,cnn_channels=[4,8],cnn_pool_sizes=[[2,2],[2,2]]"],
}
BF16_ON_THE_CPU = ["--bf16", "true", "--use_cpu", "true", "--max_steps", "3", "--logging_steps", "1",
                   "--per_device_train_batch_size", "8", "--per_device_eval_batch_size", "8", "--eval_strategy", "no",
                   "--save_strategy", "no", "--num_pictures", "0", "--report_to", "none", "--disable_tqdm", "true"]


def test_every_task_has_a_tiny_run():
    assert sorted(TINY_RUNS) == task_names()


@pytest.mark.slow
@pytest.mark.parametrize("task", sorted(TINY_RUNS))
def test_bf16_training_logs_finite_losses_and_saves_a_float32_model_that_loads(task, tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)  # the configurations name the bundled data from the repository's root
    main([task, *TINY_RUNS[task], *BF16_ON_THE_CPU, "--output_dir", str(tmp_path)])
    history = json.loads((tmp_path / "trainer_state.json").read_text())["log_history"]
    losses = [entry["loss"] for entry in history if "loss" in entry]
    assert len(losses) == 3 and all(math.isfinite(loss) for loss in losses), losses
    config = json.loads((tmp_path / "config.json").read_text())
    family = family_of(config)
    model = family.card_head.from_pretrained(tmp_path, trust_remote_code=True)
    assert type(model) in {head.model_class for head in family.heads}
    assert {parameter.dtype for parameter in model.parameters()} == {torch.float32}
    assert all(torch.isfinite(parameter).all() for parameter in model.parameters())


def test_fp16_without_a_gpu_is_refused_by_name(capsys):
    if torch.cuda.is_available():
        pytest.skip("a GPU trains in float16")
    arguments = ["seq2seq", str(REPO / "training/configs/dates_rnnsearch.json"), "--fp16", "true", "--output_dir",
                 "unused"]
    error = exits_as_argparse_does(lambda: main(arguments), "--fp16", capsys)
    assert "--bf16 true --use_cpu true" in error


def test_the_additive_scores_blocks_run_under_autocast(monkeypatch):
    """generate() at a batch large enough for the additive score's blocks (``_score_in_blocks``, whose out= products
    autocast does not cast) runs under autocast, its step scores within ``logits_tolerance`` of the unblocked ones."""
    model, (input_ids, attention_mask) = tiny_model("rnnsearch").eval(), padded_batch()
    greedy = dict(max_new_tokens=4, output_scores=True, return_dict_in_generate=True)
    scores = {}
    for entries in (AdditiveAttention.HIDDEN_BLOCK_ENTRIES, 16):  # 16: a block per source
        monkeypatch.setattr(AdditiveAttention, "HIDDEN_BLOCK_ENTRIES", entries)
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            scores[entries] = torch.stack(model.generate(input_ids=input_ids, attention_mask=attention_mask,
                                                         **greedy).scores)
    unblocked, blocked = scores.values()
    torch.testing.assert_close(blocked, unblocked, atol=logits_tolerance(torch.bfloat16, unblocked), rtol=0)
