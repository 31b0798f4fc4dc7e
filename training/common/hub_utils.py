"""Hub sharing for the training scripts: every push uploads a repository that loads without hf_bahdanau.

Trainer's checkpoint pushes (``--push_to_hub --hub_strategy every_save|checkpoint``) copy only the weights,
configs and tokenizer into ``output_dir`` before uploading it, so the model code (``trust_remote_code``) would be
missing, and so would an image processor that is not the Trainer's ``processing_class``; and ``trainer.push_to_hub()``
rewrites ``README.md`` with Trainer's own card. The scripts therefore call (``training.common.steps.trainer_callbacks``
gives every script's Trainer the callback):

    trainer = Seq2SeqTrainer(..., callbacks=[CodeFilesCallback()])  # checkpoint pushes carry the code files
    trainer.train()
    trainer.save_model()                                             # weights, config, code, tokenizer
    write_model_card(output_dir, ...)                                # hf_bahdanau.cards: README.md (+ PNGs)
    if training_args.push_to_hub:                                    # instead of trainer.push_to_hub()
        push_output_dir(output_dir, training_args.hub_model_id or Path(output_dir).name,
                        token=training_args.hub_token, private=training_args.hub_private_repo,
                        revision=training_args.hub_revision)

``push_output_dir`` queues its upload behind Trainer's pending checkpoint uploads (one shared ``HfApi`` worker),
so a late checkpoint push cannot overwrite the final model. (With ``push_to_hub``, ``trainer.save_model()`` itself
pushes once, "Model save", with Trainer's card; the final push replaces that card with the real one.)
"""

import os
from collections.abc import Sequence
from pathlib import Path

from huggingface_hub import CommitInfo
from transformers import TrainerCallback
from transformers.utils import PushToHubMixin
from transformers.utils.hub import hf_api

from hf_bahdanau.modeling.remote_code import copy_model_code
from hf_bahdanau.cards import set_model_id

IGNORE_PATTERNS = ["_*", "checkpoint-*",  # what Trainer.push_to_hub leaves out too
                   "restart-*"]  # the runs of --num_restarts (the chosen one is the folder itself)


class CodeFilesCallback(TrainerCallback):
    """Before each checkpoint push, put the model code next to the weights that Trainer copied to output_dir, and
    save there the ``processors`` that Trainer does not save (an image processor beside the tokenizer, which is the
    ``processing_class``), their code included."""

    def __init__(self, processors: Sequence[PushToHubMixin] = ()) -> None:
        self.processors = tuple(processors)

    def on_push_begin(self, args, state, control, model=None, **kwargs):
        copy_model_code(model.config, args.output_dir)
        for processor in self.processors:
            processor.save_pretrained(args.output_dir)


def push_output_dir(
    output_dir: str | os.PathLike,
    repo_id: str,
    *,
    token: str | None = None,
    private: bool | None = None,
    revision: str | None = None,
    commit_message: str = "End of training",
) -> CommitInfo:
    """Upload the finished ``output_dir`` (weights, config with auto_map, code, tokenizer, generation config, model
    card, pictures, results) to ``repo_id``, after any checkpoint uploads still in flight. The card's usage code is
    pointed at ``repo_id`` first."""
    output_dir = Path(output_dir)
    card = output_dir / "README.md"
    if not card.is_file():
        raise ValueError(f"`output_dir` ({output_dir}) has no README.md: write the card first "
                         "(hf_bahdanau.cards.write_model_card or `python -m hf_bahdanau.cards`).")
    api = hf_api()
    repo_id = api.create_repo(repo_id, token=token, private=private, exist_ok=True).repo_id
    set_model_id(card, repo_id)
    upload = api.upload_folder(repo_id=repo_id, folder_path=output_dir, commit_message=commit_message, token=token,
                               revision=revision, ignore_patterns=list(IGNORE_PATTERNS), run_as_future=True)
    return upload.result()
