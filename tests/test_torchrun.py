"""Every task under torchrun: ``torchrun --nproc_per_node 2 -m training TASK ... --use_cpu true`` (two processes,
gloo) with B rows per process trains the weights one process trains with 2B rows per step.

The comparison is exact up to the order of the sums: each run's training set holds exactly 2B rows, so every step of
either run sees every row (the two processes' halves together), dropout and other training noise are off, and the
optimizer is plain SGD, whose weights move by the learning rate times the gradient (Adam divides by sqrt(v) + 1e-8
and would blow a rounding difference of a near-zero gradient up to a whole step). Token-level losses are the mean
over the tokens of both processes (Trainer's ``num_items_in_batch``, gathered across processes with
``--average_tokens_across_devices``, the default), not the mean of each process's mean: the control run below
averages the other way and must differ.

All runs of a launch share one interpreter (``training.__main__.main`` per run, as ``python -m training`` calls it):
on two busy cores the imports cost more than these tiny runs.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from child_process import child_env
from test_run_pushes import TINY_RNN
from test_run_vqa import write_folder

REPO = Path(__file__).resolve().parents[1]
ROWS_PER_PROCESS = 4  # B: the single process trains 2B rows a step
STEPS = 2
LEARNING_RATE = 0.1
# Plain SGD: the weights of the two runs differ by LEARNING_RATE times the sum over the steps of their gradients'
# difference. Each gradient is a float32 (ε = 1.2e-7) sum of 8 rows' terms, each through at most a few dozen recurrent
# steps; two orders of these sums (the halves added by the all-reduce, padded to other lengths) differ by about
# (rows + steps) ε ≈ 100 ε of the gradient's size, its norm: ≲ 1e-5 of it. The gradients are not clipped
# (--max_grad_norm 1e9 only measures them), so that a loss off by a constant factor shows too; a loss averaged the
# wrong way differs by the halves' imbalance, tens of percent of the gradient: far above. Each step also rounds the
# weights to float32, by up to ε of their size: two runs whose updates differ a little may round a weight apart.
GRADIENT_RTOL = 1e-5

# Every run: no evaluation or prediction, no pictures, plain SGD at a constant rate, one seed for data and weights.
COMMON = ["--do_train", "--do_eval", "false", "--eval_strategy", "no", "--do_predict", "false", "--save_strategy",
          "no", "--num_pictures", "0", "--report_to", "none", "--disable_tqdm", "true", "--max_steps", str(STEPS),
          "--optim", "sgd", "--learning_rate", str(LEARNING_RATE), "--lr_scheduler_type", "constant",
          "--warmup_steps", "0", "--max_grad_norm", "1e9", "--logging_steps", "1", "--seed", "0", "--use_cpu", "true"]
IMAGE_CNN = "cnn_channels=[4,8],cnn_pool_sizes=[[2,2],[2,2]]"
TRAIN_ROWS = ["--max_train_samples", str(2 * ROWS_PER_PROCESS)]
# The bAbI and image tasks evaluate and predict whatever --do_eval and --do_predict say: on a few rows.
FEW_TESTED = ["--max_eval_samples", "4", "--max_predict_samples", "4"]
# bAbI: one training question more, held out for validation; a few test questions.
BABI = ["--max_train_samples", str(2 * ROWS_PER_PROCESS + 1), "--max_predict_samples", "4"]
# Each task's run with 2B training rows and no dropout or noise ("{data}": the test's data folder).
RUNS = {
    "seq2seq": ["seq2seq", "training/configs/dates_rnnsearch.json", "--train_file", "{data}/pairs.jsonl",
                "--config_overrides", f"{TINY_RNN},output_size=8,dropout=0"],
    # transformers' MarianMTModel averages its loss over each batch's tokens: on targets of one length (ISO dates),
    # the processes' means average to the mean.
    "seq2seq, Marian baseline": ["seq2seq", "--train_file", "training/data/dates/train.jsonl", *TRAIN_ROWS,
                                 "--tokenizer_type", "char", "--architecture", "transformer", "--config_overrides",
                                 "d_model=16,encoder_layers=1,decoder_layers=1,encoder_attention_heads=2,"
                                 "decoder_attention_heads=2,encoder_ffn_dim=16,decoder_ffn_dim=16,dropout=0,"
                                 "attention_dropout=0,activation_dropout=0"],
    "tagging": ["tagging", "training/configs/ner_tagger.json", *TRAIN_ROWS, "--config_overrides",
                f"{TINY_RNN},dropout=0"],
    "classification": ["classification", "training/configs/han_classifier.json", *TRAIN_ROWS, "--config_overrides",
                       f"{TINY_RNN},dropout=0"],
    "pointer": ["pointer", "--task", "sorting", "--train_n", "3-7", "--train_size", str(2 * ROWS_PER_PROCESS),
                "--hidden_size", "16", "--embedding_size", "8"],
    "memory-qa": ["memory-qa", "training/configs/babi_memn2n.json", *BABI, "--linear_start", "false",
                  "--config_overrides", "random_noise=0"],
    "memory-qa, summed loss": ["memory-qa", "training/configs/babi_memn2n.json", *BABI, "--linear_start", "false",
                               "--config_overrides", "random_noise=0", "--loss_reduction", "sum"],
    "passage-qa": ["passage-qa", "training/configs/babi_coattention.json", *BABI, "--config_overrides", "dropout=0"],
    "image-to-text": ["image-to-text", "--predict_with_generate", "true", *TRAIN_ROWS, *FEW_TESTED,
                      "--explorer_examples", "1", "--config_overrides",
                      f"hidden_size=16,embedding_size=8,attention_size=8,output_size=8,{IMAGE_CNN}"],
    "vqa": ["vqa", "--dataset_name", "{data}/vqa", "--image_height", "16", *TRAIN_ROWS, *FEW_TESTED,
            "--config_overrides", f"hidden_size=8,attention_size=8,answer_hidden_size=8,{IMAGE_CNN},dropout=0"],
}
# What a run does beyond training: image-to-text predicts, its long texts' metrics through trainer.predict.
ALSO = {"image-to-text": ["--do_predict", "true"]}
# More runs under torchrun, each against one process's run of a task: (that run, rows per process, flags). With
# gradient accumulation the mean is over the tokens of every accumulated batch of every process; the control
# averages each process's own mean.
ACCUMULATED = "seq2seq, 2 accumulated half batches"
PROCESS_MEANS = "seq2seq, mean of process means"
VARIANTS = {ACCUMULATED: ("seq2seq", ROWS_PER_PROCESS // 2, ["--gradient_accumulation_steps", "2"]),
            PROCESS_MEANS: ("seq2seq", ROWS_PER_PROCESS, ["--average_tokens_across_devices", "false"])}

# One interpreter trains every run of a JSON list [[output_dir, argv], ...]; a run that fails leaves its traceback
# in output_dir/error.txt and the next one starts (every process fails alike: the data and arguments are the same).
RUN_ALL = """
import json, sys, traceback
from pathlib import Path
from training.__main__ import main
for output_dir, argv in json.loads(sys.argv[1]):
    try:
        main([*argv, "--output_dir", output_dir])
    except BaseException:
        Path(output_dir).mkdir(parents=True, exist_ok=True)
        Path(output_dir, "error.txt").write_text(traceback.format_exc())
"""


def write_data(folder: Path) -> None:
    """Seq2seq pairs whose targets (the sources reversed) have 1 … 7 and 30 characters: whichever 4 rows a process
    gets, the two processes hold different numbers of target tokens; and a user's VQA folder."""
    lengths = [1, 2, 3, 4, 5, 6, 7, 30]
    letters = "abcdefghijklmnopqrstuvwxyz"
    sources = [(letters * 2)[start:start + length] for start, length in enumerate(lengths)]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pairs.jsonl").write_text("".join(json.dumps({"source": source, "target": source[::-1]}) + "\n"
                                                for source in sources))
    write_folder(folder / "vqa")


def launch(launcher: list[str], runs: list[tuple[Path, list[str]]], log: Path) -> subprocess.Popen:
    """Start one interpreter (or torchrun's processes) training ``runs`` from the repository's root, its output in
    ``log``."""
    payload = json.dumps([[str(output), argv] for output, argv in runs])
    with log.open("w") as output:
        return subprocess.Popen([*launcher, sys.executable, "-c", RUN_ALL, payload], cwd=REPO, stdout=output,
                                stderr=subprocess.STDOUT, env=child_env(log.parent, TOKENIZERS_PARALLELISM="false"))


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """Every run of RUNS once in one process with 2B rows a step (``one/NAME``) and under torchrun with B rows on
    each of two processes (``two/NAME``, and ``two/VARIANT``); both launches at once."""
    root = tmp_path_factory.mktemp("torchrun")
    write_data(root / "data")

    def argv(name: str, rows: int, *extra: str) -> list[str]:
        return [argument.replace("{data}", str(root / "data")) for argument in RUNS[name]] + [
            *COMMON, *ALSO.get(name, []), "--per_device_train_batch_size", str(rows), *extra]

    one = [(root / "one" / name, argv(name, 2 * ROWS_PER_PROCESS)) for name in RUNS]
    two = [(root / "two" / name, argv(name, ROWS_PER_PROCESS)) for name in RUNS]
    two += [(root / "two" / name, argv(run, rows, *flags)) for name, (run, rows, flags) in VARIANTS.items()]
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", "--no-python"]
    processes = {"two.log": launch(torchrun, two, root / "two.log"), "one.log": launch([], one, root / "one.log")}
    try:
        for log, process in processes.items():
            assert process.wait(timeout=900) == 0, (root / log).read_text()[-5000:]
    finally:
        for process in processes.values():
            process.terminate()  # only those still running (torchrun passes it on to its processes)
    return root


def trained_weights(folder: Path) -> tuple[dict[str, torch.Tensor], float]:
    """The saved model of a run that trained STEPS steps of 2B rows (all its training rows) in all, and how far
    rounding may move its weights: LEARNING_RATE · GRADIENT_RTOL · Σ_steps ‖gradient‖."""
    error = folder / "error.txt"
    assert not error.exists(), f"{error.read_text()}\n(its messages: {folder.parent}.log)"
    results = json.loads((folder / "all_results.json").read_text())
    state = json.loads((folder / "trainer_state.json").read_text())
    assert (results["train_samples"], state["global_step"]) == (2 * ROWS_PER_PROCESS, STEPS), (results, state)
    norms = [entry["grad_norm"] for entry in state["log_history"] if "grad_norm" in entry]
    assert len(norms) == STEPS, state["log_history"]
    return load_file(folder / "model.safetensors"), LEARNING_RATE * GRADIENT_RTOL * sum(norms)


@pytest.mark.slow
@pytest.mark.parametrize("name", [*RUNS, ACCUMULATED])
def test_two_processes_with_b_rows_train_the_weights_one_process_trains_with_2b(name, trained):
    expected, tolerance = trained_weights(trained / "one" / VARIANTS.get(name, [name])[0])
    got, _ = trained_weights(trained / "two" / name)
    assert got.keys() == expected.keys()
    rounding = STEPS * torch.finfo(torch.float32).eps
    for weight in expected:
        atol = tolerance + rounding * float(expected[weight].abs().max())
        torch.testing.assert_close(got[weight], expected[weight], rtol=0, atol=atol, msg=weight)


@pytest.mark.slow
def test_the_mean_of_each_process_own_mean_trains_other_weights(trained):
    """The control: with --average_tokens_across_devices false each process divides by its own tokens, and the
    weights leave the tolerance above far behind (so the comparison sees a loss averaged the wrong way)."""
    expected, tolerance = trained_weights(trained / "one" / VARIANTS[PROCESS_MEANS][0])
    got, _ = trained_weights(trained / "two" / PROCESS_MEANS)
    assert max(float((got[weight] - expected[weight]).abs().max()) for weight in expected) > 100 * tolerance


@pytest.mark.slow
def test_image_to_text_scores_its_long_texts_in_both_processes(trained):
    """Its extra metrics predict the long-text split through trainer.predict, which under DDP every process must
    join (the main process alone waited for the other in vain): the two launches' weights give the same scores."""
    one, two = (json.loads((trained / where / "image-to-text" / "all_results.json").read_text())
                for where in ("one", "two"))
    scores = ("predict_long_sequence_accuracy", "predict_long_cer", "predict_samples")
    assert [two[name] for name in scores] == [one[name] for name in scores]
