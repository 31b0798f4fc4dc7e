"""Pushing to the Hub without a Hub: ``transformers.utils.hub._hf_api`` is replaced by a real ``HfApi`` whose network
calls (create_repo, create_commit, upload_folder, YAML validation, and the card download of ``ModelCard.load``)
write to and read from a local folder. Each test asserts the exact files of every commit, then loads the recorded
repository in a fresh ``python -I`` process where hf_bahdanau cannot be imported and compares generations."""

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import huggingface_hub.repocard
import pytest
import torch
import transformers.utils.hub
from datasets import Dataset
from huggingface_hub import CommitInfo, CommitOperationAdd, HfApi, ModelCard, RepoUrl
from huggingface_hub.errors import EntryNotFoundError
from huggingface_hub.hf_api import future_compatible
from huggingface_hub.utils._paths import DEFAULT_IGNORE_PATTERNS
from transformers import DataCollatorForSeq2Seq, Seq2SeqTrainer, Seq2SeqTrainingArguments

from child_process import run_child
from conftest import tiny_config
from hf_bahdanau import BahdanauForConditionalGeneration
from hf_bahdanau.pictures import plot_alignment
from hf_bahdanau.cards import write_model_card
from training.common.hub_utils import CodeFilesCallback, push_output_dir
from training.common.tokenization import train_tokenizer

pytestmark = pytest.mark.usefixtures("one_thread")

TEXTS = ["3 March 2015", "le 14 juillet", "1.2.99"]
MAX_NEW = 6
MODEL_FILES = {"config.json", "generation_config.json", "model.safetensors"}
TOKENIZER_FILES = {"tokenizer.json", "tokenizer_config.json"}


@dataclass
class Commit:
    repo_id: str
    message: str
    paths: list[str]
    snapshot: Path  # the whole repository right after this commit


class RecordingHfApi(HfApi):
    """A real HfApi whose network calls use ``root``: ``root/repos/<repo_id>`` is the repository, and every commit
    leaves a copy of it in ``root/snapshots/<n>``."""

    def __init__(self, root: Path):
        super().__init__(library_name="transformers")
        self.root = root
        self.commits: list[Commit] = []

    def repo(self, repo_id: str) -> Path:
        return self.root / "repos" / repo_id

    def create_repo(self, repo_id: str, *, exist_ok: bool = False, **kwargs) -> RepoUrl:
        repo_id = repo_id if "/" in repo_id else f"user/{repo_id}"
        self.repo(repo_id).mkdir(parents=True, exist_ok=exist_ok)
        return RepoUrl(f"https://huggingface.co/{repo_id}")

    def _validate_yaml(self, content: str, **kwargs) -> None:
        ModelCard(content)  # the Hub rejects a README whose metadata does not parse

    @future_compatible
    def upload_folder(self, *, repo_id: str, folder_path, path_in_repo: str | None = None,
                      commit_message: str | None = None, allow_patterns=None, ignore_patterns=None,
                      run_as_future: bool = False, **kwargs) -> CommitInfo:
        ignore = [ignore_patterns] if isinstance(ignore_patterns, str) else list(ignore_patterns or [])
        operations = self._prepare_upload_folder_additions(
            folder_path, path_in_repo or "", allow_patterns=allow_patterns, ignore_patterns=ignore + DEFAULT_IGNORE_PATTERNS)
        return self.create_commit(repo_id, operations, commit_message=commit_message or "Upload folder")

    def create_commit(self, repo_id: str, operations, *, commit_message: str, **kwargs) -> CommitInfo:
        repo = self.repo(repo_id)
        paths = []
        for operation in operations:
            assert isinstance(operation, CommitOperationAdd), operation
            target = repo / operation.path_in_repo
            target.parent.mkdir(parents=True, exist_ok=True)
            with operation.as_file() as source:
                target.write_bytes(source.read())
            paths.append(operation.path_in_repo)
        snapshot = self.root / "snapshots" / str(len(self.commits))
        shutil.copytree(repo, snapshot)
        self.commits.append(Commit(repo_id, commit_message, sorted(paths), snapshot))
        oid = f"{len(self.commits):040x}"
        return CommitInfo(commit_url=f"https://huggingface.co/{repo_id}/commit/{oid}", commit_message=commit_message,
                          commit_description="", oid=oid)

    def download(self, repo_id: str, filename: str, **kwargs) -> str:
        """``hf_hub_download`` of the recorded repository (what ``ModelCard.load(repo_id)`` fetches)."""
        path = self.repo(repo_id) / filename
        if not path.is_file():
            raise EntryNotFoundError(f"{filename} is not in {repo_id}")
        return str(path)


@pytest.fixture
def hub(tmp_path, monkeypatch):
    api = RecordingHfApi(tmp_path / "hub")
    monkeypatch.setattr(transformers.utils.hub, "_hf_api", api)
    monkeypatch.setattr(huggingface_hub.repocard, "hf_hub_download", api.download)
    return api


def code_files(folder: Path) -> set[str]:
    return {path.name for path in folder.glob("*.py")}


def decisive_model(tokenizer) -> BahdanauForConditionalGeneration:
    model = BahdanauForConditionalGeneration(tiny_config("rnnsearch", vocab_size=len(tokenizer))).eval()
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator))
    return model


def translations(model, tokenizer) -> list[str]:
    inputs = tokenizer(TEXTS, return_tensors="pt", padding=True)
    with torch.no_grad():
        generated = model.eval().generate(**inputs, num_beams=3, max_new_tokens=MAX_NEW)
    return tokenizer.batch_decode(generated, skip_special_tokens=True)


LOAD_REPOSITORIES = """
    import json
    import sys

    import torch
    from transformers import AutoConfig, AutoModelForSeq2SeqLM, AutoTokenizer, pipeline

    torch.set_num_threads(1)
    texts = json.loads(sys.argv[1])
    results = []
    for folder in sys.argv[2:]:
        assert AutoConfig.from_pretrained(folder, trust_remote_code=True).model_type == "bahdanau"
        tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=True)
        model = AutoModelForSeq2SeqLM.from_pretrained(folder, trust_remote_code=True).eval()
        inputs = tokenizer(texts, return_tensors="pt", padding=True)
        with torch.no_grad():
            generated = model.generate(**inputs, num_beams=3, max_new_tokens=%d)
        results.append(dict(module=type(model).__module__,
                            translations=tokenizer.batch_decode(generated, skip_special_tokens=True)))
    print(json.dumps(dict(results=results, modules=[m for m in sys.modules if m.startswith("hf_bahdanau")])))
""" % MAX_NEW


def load_in_fresh_process(tmp_path: Path, folders: list[Path]) -> list[list[str]]:
    child = run_child(LOAD_REPOSITORIES, tmp_path, json.dumps(TEXTS), *map(str, folders), isolated=True,
                      hide_package=True)
    assert child["modules"] == []
    assert all(result["module"].startswith("transformers_modules.") for result in child["results"])
    return [result["translations"] for result in child["results"]]


def test_model_push_to_hub_ships_code_tokenizer_and_the_real_card(hub, tmp_path):
    tokenizer = train_tokenizer(TEXTS + ["2015-03-03"], kind="char")
    model = decisive_model(tokenizer)
    folder = tmp_path / "saved"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    plot_alignment(torch.softmax(torch.randn(3, 4), -1), list("abcd"), list("xyz"), path=folder / "alignment_0.png")
    write_model_card(folder, results={"eval_exact_match": 0.5}, dataset_name="dates", model_id="org/dates")
    card = (folder / "README.md").read_text()

    loaded = BahdanauForConditionalGeneration.from_pretrained(folder)
    loaded.push_to_hub("org/dates")
    loaded_tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    loaded_tokenizer.push_to_hub("org/dates")

    model_commit, tokenizer_commit = hub.commits
    assert set(model_commit.paths) == MODEL_FILES | code_files(folder) | {"README.md", "alignment_0.png"}
    assert {"modeling_bahdanau.py", "configuration_bahdanau.py", "pipeline_bahdanau.py"} <= code_files(folder)
    assert set(tokenizer_commit.paths) == TOKENIZER_FILES | {"README.md"}
    repo = hub.repo("org/dates")
    assert (repo / "README.md").read_text() == card  # the real card survives both pushes
    assert ModelCard.load(repo / "README.md").data.eval_results[0].metric_value == 0.5
    assert (repo / "alignment_0.png").read_bytes() == (folder / "alignment_0.png").read_bytes()
    config = json.loads((repo / "config.json").read_text())
    assert set(config["auto_map"]) >= {"AutoConfig", "AutoModel", "AutoModelForSeq2SeqLM"}
    assert "translation" in config["custom_pipelines"]

    assert load_in_fresh_process(tmp_path, [repo]) == [translations(model, tokenizer)]


def test_push_without_a_card_keeps_transformers_template(hub, tmp_path, monkeypatch):
    monkeypatch.chdir(Path(__file__).parents[1])  # a README.md in the working directory is not the model's card
    tokenizer = train_tokenizer(TEXTS, kind="char")
    decisive_model(tokenizer).push_to_hub("org/plain")
    (commit,) = hub.commits
    assert "README.md" in commit.paths and "model.safetensors" in commit.paths
    assert "automatically generated" in (hub.repo("org/plain") / "README.md").read_text()


@pytest.mark.slow
def test_trainer_checkpoint_pushes_and_final_push_are_loadable(hub, tmp_path):
    tokenizer = train_tokenizer(TEXTS + ["2015-03-03", "1789-07-14", "1999-02-01"], kind="char")
    targets = ["2015-03-03", "1789-07-14", "1999-02-01"]
    rows = dict(input_ids=tokenizer(TEXTS * 8)["input_ids"], labels=tokenizer(targets * 8)["input_ids"])
    torch.manual_seed(0)
    model = BahdanauForConditionalGeneration(tiny_config("rnnsearch", vocab_size=len(tokenizer)))
    output_dir = tmp_path / "run"
    args = Seq2SeqTrainingArguments(
        output_dir=str(output_dir), max_steps=4, save_steps=2, per_device_train_batch_size=8, learning_rate=0.05,
        push_to_hub=True, hub_model_id="org/run", hub_strategy="every_save", report_to="none", logging_steps=1,
        use_cpu=True, hub_always_push=True)
    trainer = Seq2SeqTrainer(model=model, args=args, train_dataset=Dataset.from_dict(rows), processing_class=tokenizer,
                             data_collator=DataCollatorForSeq2Seq(tokenizer, model=model),
                             callbacks=[CodeFilesCallback()])
    trainer.train()
    trainer.push_in_progress.wait_until_done()
    trainer.save_model()
    trainer.save_state()
    write_model_card(output_dir, dataset_name="dates")
    push_output_dir(output_dir, "org/run")

    first, second, saved, final = hub.commits  # trainer.save_model() pushes too ("Model save", Trainer's card)
    assert [first.message, second.message, saved.message, final.message] == [
        "Training in progress, step 2", "Training in progress, step 4", "Model save", "End of training"]
    code = code_files(output_dir / "checkpoint-2")
    checkpoint_files = MODEL_FILES | TOKENIZER_FILES | code | {"training_args.bin"}
    assert set(first.paths) == set(second.paths) == checkpoint_files  # CodeFilesCallback: code in every push
    assert set(saved.paths) == checkpoint_files | {"README.md"}
    assert set(final.paths) == checkpoint_files | {"README.md", "trainer_state.json"}
    card = ModelCard.load(final.snapshot / "README.md")
    assert 'model_id = "org/run"' in card.text  # the usage code points at the repository

    expected = []
    for step in (2, 4):
        checkpoint = BahdanauForConditionalGeneration.from_pretrained(output_dir / f"checkpoint-{step}")
        expected.append(translations(checkpoint, tokenizer))
    expected.append(translations(model, tokenizer))
    assert load_in_fresh_process(tmp_path, [first.snapshot, second.snapshot, final.snapshot]) == expected
