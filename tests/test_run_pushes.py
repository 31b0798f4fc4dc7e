"""Every task's checkpoint pushes to the Hub (``--push_to_hub``, ``--save_strategy steps``) carry the model code (and
an image processor), so that each pushed checkpoint loads with ``trust_remote_code``: the driver gives every task's
Trainer ``training.common.steps.trainer_callbacks()`` (``CodeFilesCallback``). Each task of ``training/tasks/`` trains
two steps through the driver (``python -m training TASK``) against the recorded Hub of test_hub_push.py: a new task is
run with no edit here, with its defaults, or with the tiny settings of its entry in ``RUNS``."""

import json

import huggingface_hub.repocard
import pytest
import transformers.utils.hub
from safetensors.torch import load_file

from child_process import run_child
from test_hub_push import RecordingHfApi
from test_run_arguments import REPO
from test_run_vqa import write_folder
from training.__main__ import main
from training.tasks import task_names

TINY_RNN = "embedding_size=8,hidden_size=16,attention_size=8"
BABI = ["--max_train_samples", "64", "--max_predict_samples", "8", "--do_eval", "false"]
# What makes a task's run tiny besides the flags of PUSH ("{data}": a folder of user data it may write).
RUNS = {
    "classification": ["training/configs/han_classifier.json", "--config_overrides", TINY_RNN,
                       "--max_train_samples", "32", "--max_eval_samples", "8", "--max_predict_samples", "8"],
    "image-to-text": ["--predict_with_generate", "--max_train_samples", "32",
                      "--per_device_train_batch_size", "16", "--explorer_examples", "1", "--config_overrides",
                      "hidden_size=16,embedding_size=8,attention_size=8,output_size=8,cnn_channels=[4,8],"
                      "cnn_pool_sizes=[[2,2],[2,2]]"],
    "memory-qa": ["training/configs/babi_memn2n.json", *BABI, "--linear_start", "false"],  # 2 steps: in linear start
    "passage-qa": ["training/configs/babi_coattention.json", *BABI],
    "pointer": ["--task", "sorting", "--train_n", "4-5", "--eval_n", "5", "--test_n", "5", "--train_size", "64",
                "--eval_size", "8", "--test_size", "8", "--hidden_size", "16", "--embedding_size", "8"],
    "seq2seq": ["training/configs/dates_rnnsearch.json", "--config_overrides", TINY_RNN, "--max_train_samples", "32",
                "--max_eval_samples", "8", "--max_predict_samples", "8"],
    "tagging": ["training/configs/ner_tagger.json", "--config_overrides", TINY_RNN, "--max_train_samples", "32",
                "--max_eval_samples", "8", "--max_predict_samples", "8"],
    "vqa": ["--dataset_name", "{data}", "--image_height", "16", "--config_overrides",
            "hidden_size=8,attention_size=8,answer_hidden_size=8,cnn_channels=[4,8],cnn_pool_sizes=[[2,2],[2,2]]"],
}
PUSH = ["--do_train", "--push_to_hub", "--hub_model_id", "user/tiny", "--hub_always_push", "true", "--save_strategy",
        "steps", "--save_steps", "1", "--max_steps", "2", "--per_device_train_batch_size", "8", "--eval_strategy", "no",
        "--num_pictures", "0", "--report_to", "none", "--disable_tqdm", "true", "--seed", "0"]

pytestmark = pytest.mark.usefixtures("one_thread")

LOAD_CHECKPOINT = """
    import json
    import sys
    from pathlib import Path

    import transformers

    folder = sys.argv[1]
    config = json.loads((Path(folder) / "config.json").read_text())
    (auto_class,) = [name for name, reference in config["auto_map"].items()
                     if reference.endswith("." + config["architectures"][0])]
    model = getattr(transformers, auto_class).from_pretrained(folder, trust_remote_code=True)
    loaded = [type(model).__module__, type(model).__name__, sum(float(p.sum()) for p in model.state_dict().values())]
    if (Path(folder) / "preprocessor_config.json").is_file():
        loaded.append(type(transformers.AutoImageProcessor.from_pretrained(folder, trust_remote_code=True)).__name__)
    print(json.dumps(loaded))
"""


def test_every_run_is_a_task():
    assert set(RUNS) <= set(task_names())


@pytest.mark.slow
@pytest.mark.parametrize("task", task_names())
def test_every_checkpoint_push_carries_the_model_code_and_loads_without_the_package(task, tmp_path, monkeypatch):
    hub = RecordingHfApi(tmp_path / "hub")
    monkeypatch.setattr(transformers.utils.hub, "_hf_api", hub)
    monkeypatch.setattr(huggingface_hub.repocard, "hf_hub_download", hub.download)
    monkeypatch.chdir(REPO)  # the configs name the bundled data from the repository's root
    write_folder(tmp_path / "data")
    output = tmp_path / "out"
    arguments = [argument.replace("{data}", str(tmp_path / "data")) for argument in RUNS.get(task, [])]
    main([task, *arguments, *PUSH, "--output_dir", str(output)])

    auto_map = json.loads((output / "config.json").read_text())["auto_map"]
    modules = {f"{reference.split('.')[0]}.py" for reference in auto_map.values()}
    code = {path.name for path in output.glob("*.py")}  # those, the modules they import, an image processor's
    assert modules <= code
    loadable = code | {"config.json", "model.safetensors"} | {path.name for path in output.glob("preprocessor_*")}
    checkpoint_pushes = [commit for commit in hub.commits if commit.message.startswith("Training in progress")]
    assert [commit.message for commit in checkpoint_pushes] == ["Training in progress, step 1",
                                                                "Training in progress, step 2"]
    for commit in checkpoint_pushes:
        assert loadable <= set(commit.paths), commit.message
    assert hub.commits[-1].message == "End of training" and loadable <= set(hub.commits[-1].paths)
    # the final push holds the run's arguments, written by the driver for every task
    assert {"run_arguments.json", "README.md"} <= set(hub.commits[-1].paths)
    recorded = json.loads((output / "run_arguments.json").read_text())
    assert recorded["data"]["num_pictures"] == 0 and recorded["model"]["max_train_minutes"] is None

    # the first checkpoint's push loads, without hf_bahdanau, as the weights of checkpoint-1
    module, name, total, *processor = run_child(LOAD_CHECKPOINT, tmp_path, str(checkpoint_pushes[0].snapshot),
                                                isolated=True, hide_package=True)
    architecture = json.loads((output / "config.json").read_text())["architectures"][0]
    assert module.startswith("transformers_modules.") and name == architecture
    weights = load_file(output / "checkpoint-1" / "model.safetensors")
    assert total == pytest.approx(sum(float(tensor.sum()) for tensor in weights.values()), rel=1e-6)
    assert processor == (["BahdanauImageProcessor"] if "preprocessor_config.json" in loadable else [])
