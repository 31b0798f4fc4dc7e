"""Model cards of end-to-end memory networks: a tiny saved MemN2N gets a card whose metadata (tags, no pipeline tag,
a model-index from all_results.json), architecture lines (the config's hops, d, axes' words, TE/RN, linear start,
answers), task description and limitations follow its config; its usage code answers as the model does, with the
package (in this process) and with remote code only (a fresh process without hf_bahdanau); the CLI writes it; bad
examples and a task that does not fit are refused."""

import json
import re

import pytest
import torch
from huggingface_hub import ModelCard

from child_process import run_script
from hf_bahdanau import BahdanauMemoryNetworkConfig, BahdanauMemoryNetworkForSequenceClassification
from hf_bahdanau.cards import write_model_card
from hf_bahdanau.cards.__main__ import main as cards_main
from hf_bahdanau.cards.architecture import describe
from hf_bahdanau.modeling.axes import SENTENCE_ENCODINGS, WEIGHT_TYINGS
from hf_bahdanau.modeling.pipeline_memory import BahdanauMemoryQuestionAnsweringPipeline

pytestmark = pytest.mark.usefixtures("one_thread")

TASK = "memory-question-answering"
WORDS = ["[PAD]", "[UNK]", *"Mary John moved went to the bathroom hallway garden . Where is ?".split()]
ANSWERS = ["bathroom", "hallway", "garden"]
EXAMPLE = {"memory": ["Mary moved to the bathroom.", "John went to the hallway.", "Mary went to the garden."],
           "question": "Where is Mary?"}
RESULTS = {"eval_accuracy": 0.875, "eval_loss": 0.4, "eval_runtime": 1.5, "predict_accuracy": 0.8125,
           "predict_hop_2_on_support": 0.5, "predict_supports_covered": 0.25, "train_loss": 0.9, "epoch": 20.0}


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)


def memory_config(**options) -> BahdanauMemoryNetworkConfig:
    return BahdanauMemoryNetworkConfig(**dict(vocab_size=len(WORDS), hidden_size=6, num_hops=2, memory_size=8,
                                      id2label=dict(enumerate(ANSWERS)),
                                      label2id={answer: index for index, answer in enumerate(ANSWERS)}) | options)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """A saved memory network with answers tied to its last output embedding and a word-level tokenizer."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    folder = tmp_path_factory.mktemp("memory-card") / "babi-memn2n"
    torch.manual_seed(0)
    config = memory_config(random_noise=0.1, answer_token_ids=[WORDS.index(answer) for answer in ANSWERS])
    BahdanauMemoryNetworkForSequenceClassification(config).save_pretrained(folder)
    tokenizer = Tokenizer(models.WordLevel({word: index for index, word in enumerate(WORDS)}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token="[PAD]", unk_token="[UNK]").save_pretrained(folder)
    (folder / "all_results.json").write_text(json.dumps(RESULTS))
    return folder


@pytest.fixture(scope="module")
def card(model_dir):
    path = write_model_card(model_dir, task=TASK, dataset_name="babi-task1", dataset_description="Our generator.",
                            example_inputs=[json.dumps(EXAMPLE)], model_id=str(model_dir))
    return ModelCard.load(path)


@pytest.fixture(scope="module")
def expected_answer(model_dir):
    """What the model answers to EXAMPLE, through the pipeline class in this process."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    model = AutoModelForSequenceClassification.from_pretrained(model_dir)
    answerer = BahdanauMemoryQuestionAnsweringPipeline(model=model, tokenizer=AutoTokenizer.from_pretrained(model_dir))
    return answerer(**EXAMPLE)


def test_metadata_and_model_index(card):
    data = card.data
    assert data.pipeline_tag is None  # no Hub pipeline reads a memory
    assert data.tags == ["hf_bahdanau", "memory-network", "attention", TASK, "custom_code"]
    assert data.datasets == ["babi-task1"]
    assert data.metrics == ["accuracy", "hop_2_on_support", "supports_covered"]
    assert {(result.task_type, result.dataset_split, result.metric_type, result.metric_name, result.metric_value)
            for result in data.eval_results} == {
        (TASK, "validation", "accuracy", "Accuracy", 0.875), (TASK, "test", "accuracy", "Accuracy", 0.8125),
        (TASK, "test", "hop_2_on_support", "Hop 2 peaks on a supporting fact", 0.5),
        (TASK, "test", "supports_covered", "Supporting facts all found by some hop's peak", 0.25)}
    assert data.widget == [{"text": json.dumps(EXAMPLE)}]


def test_architecture_task_and_limitations_follow_the_config(card, model_dir):
    text = card.text
    parameters = BahdanauMemoryNetworkForSequenceClassification.from_pretrained(model_dir).num_parameters()
    assert text.count("an end-to-end memory network, MemN2N (Sukhbaatar et al., 2015)") == 1
    assert "An end-to-end memory network, MemN2N (Sukhbaatar et al., 2015), for memory question answering trained " \
           "on babi-task1" in text
    assert "[End-To-End Memory Networks](https://arxiv.org/abs/1503.08895)" in text
    for line in ("- **Sentence encoding** (memory sentences and question alike): "
                 + SENTENCE_ENCODINGS.describe("position_encoding"),
                 f"- **Weight tying**: {WEIGHT_TYINGS.describe('adjacent')}",
                 "- **Temporal encoding**: T_A(t_i) and T_C(t_i) are added to m_i and c_i, t_i = the number of "
                 "sentences after x_i (TE); at most memory_size = 8 sentences; random noise (RN) in training: up to "
                 "⌈0.1 n⌉ empty memories inserted at random among the n sentences",
                 "- **Linear start**: off: every hop's attention is a softmax",
                 "- **Answers**: one of 3 answers (a closed answer vocabulary), â = softmax(W u^{K+1}); W is tied to "
                 "the last output embedding, W^T = C^K (the answers' word rows)",
                 f"- **Parameters**: {parameters:,}"):
        assert line + "\n" in text, line
    assert "closed vocabulary of 3 answers: bathroom, hallway, garden. Each of its 2 hops" in text
    assert "| validation | Accuracy | 0.875 |" in text and "| test | Accuracy | 0.8125 |" in text
    assert "registers the `bahdanau-memory` model type" in text
    assert "at most 8 sentences: the pipeline keeps the most recent ones" in text
    assert "Position encoding keeps word order" in text and "RNN" not in text.split("## Limitations")[1]


def test_a_model_trained_with_linear_start_says_so(model_dir, tmp_path):
    """LinearStartCallback puts the softmax back (the saved config says linear_start=False) and records in
    trainer_state.json when: the card reads it there (it used to say "Linear start: off")."""
    folder = tmp_path / "trained"
    folder.mkdir()
    for path in model_dir.iterdir():
        if path.name != "README.md":
            (folder / path.name).write_bytes(path.read_bytes())
    state = {"epoch": 20.0, "global_step": 200, "log_history": [],
             "stateful_callbacks": {"LinearStartCallback": {"args": {"max_epochs": 10.0},
                                                            "attributes": {"ended_at_epoch": 8.0}}}}
    (folder / "trainer_state.json").write_text(json.dumps(state))
    text = ModelCard.load(write_model_card(folder, task=TASK, example_inputs=[json.dumps(EXAMPLE)])).text
    assert ("- **Linear start**: in training: the hops' softmax was left out (p_i = u^kᵀ m_i) for the first 8 epochs, "
            "then put back; every hop of the saved model is a softmax\n") in text


def test_the_other_options_are_described_by_their_own_words():
    config = memory_config(weight_tying="layer_wise", sentence_encoding="bag_of_words", temporal_encoding=False,
                           linear_start=True, num_hops=1).to_dict()
    architecture = describe(config, TASK)
    assert architecture.lines[0].startswith("**Memory**: K = 1 hop of attention")
    assert architecture.lines[1:] == [
        "**Sentence encoding** (memory sentences and question alike): " + SENTENCE_ENCODINGS.describe("bag_of_words"),
        f"**Weight tying**: {WEIGHT_TYINGS.describe('layer_wise')}",
        "**Temporal encoding**: none: the sentences' order is not seen (the memory is a set)",
        "**Linear start**: on: the hops' softmax is left out (p_i = u^kᵀ m_i), as in the first epochs of training",
        "**Answers**: one of 3 answers (a closed answer vocabulary), â = softmax(W u^{K+1}); W is its own "
        "[answers, d] matrix"]


def test_usage_code_with_the_package_answers_as_the_model(card, expected_answer, tmp_path, monkeypatch, capsys):
    plugin, remote = python_blocks(card.text)
    assert "import hf_bahdanau" in plugin and "trust_remote_code" not in plugin
    monkeypatch.chdir(tmp_path)
    exec(compile(plugin, "card-usage", "exec"), {})
    answer, score = capsys.readouterr().out.split()
    assert answer == expected_answer["answer"] and float(score) == pytest.approx(expected_answer["score"], abs=1e-6)
    assert (tmp_path / "hops.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_usage_code_without_the_package_answers_as_the_model(card, expected_answer, tmp_path):
    _, remote = python_blocks(card.text)
    assert "hf_bahdanau" not in remote and "pipeline(model=model_id, trust_remote_code=True)" in remote
    output = run_script(remote + "\nassert not [m for m in sys.modules if m.startswith('hf_bahdanau')]\n", tmp_path,
                        isolated=True, hide_package=True)
    answer, score = output.split()
    # the same float32 arithmetic in another process: equal up to float32 rounding of a probability
    assert answer == expected_answer["answer"] and float(score) == pytest.approx(expected_answer["score"], abs=1e-6)


def test_the_cli_writes_a_memory_card_and_bad_input_is_refused(model_dir, tmp_path, capsys):
    folder = tmp_path / "model"
    folder.mkdir()
    for path in model_dir.iterdir():
        if path.is_file() and path.name != "README.md":
            (folder / path.name).write_bytes(path.read_bytes())
    cards_main([str(folder), "--task", TASK, "--model_id", "me/babi", "--example_inputs", json.dumps(EXAMPLE)])
    assert capsys.readouterr().out.strip() == str(folder / "README.md")
    text = (folder / "README.md").read_text()
    assert all('model_id = "me/babi"' in block for block in python_blocks(text))
    assert 'memory = ["Mary moved to the bathroom.", "John went to the hallway.", "Mary went to the garden."]' in text
    for bad in ("Where is Mary?", json.dumps({"memory": "Mary moved.", "question": "Where?"}),
                json.dumps({"memory": [], "question": " "})):
        with pytest.raises(ValueError, match=r"`example_inputs` of a memory network must be JSON objects"):
            write_model_card(folder, task=TASK, example_inputs=[bad])
    with pytest.raises(ValueError, match=r"`task='text-classification'` does not fit .*'bahdanau-memory'"):
        write_model_card(folder, task="text-classification")
