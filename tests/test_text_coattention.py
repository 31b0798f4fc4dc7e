"""The question–passage co-attention classifier (Lu et al. 2016 over two texts): the batched model against the paper's
equations one pair at a time (``reference.text_coattention``, float64) for every form and passage encoder, padding on
both texts (exactly 0 weight, left = right), gradients into both texts' embeddings, the pipeline in process, bad
inputs named, and a short run that learns bAbI task 1 far above chance. What every head does (the -100 loss, save/load,
remote code) is tests/contract/'s."""

import itertools

import pytest
import torch
from torch.testing import assert_close

from hf_bahdanau import BahdanauForTextPairClassification, BahdanauTextCoAttentionConfig, reference
from hf_bahdanau.modeling.collators import DataCollatorForTextPairs
from hf_bahdanau.modeling.pipeline_text_pair import BahdanauPassageQuestionAnsweringPipeline

pytestmark = pytest.mark.usefixtures("one_thread")

VOCAB, D = 25, 6
QUESTIONS = [[1, 2, 3, 4], [5, 6], [7]]  # word ids; 0 is padding
PASSAGES = [[8, 9, 10, 11, 12], [13, 14, 15], [16, 17, 18, 19, 20, 21, 22]]
FORMS, ENCODERS = ("parallel", "alternating", "context", "none"), ("bilstm", "embeddings")


def model_for(**options) -> BahdanauForTextPairClassification:
    torch.manual_seed(0)
    config = BahdanauTextCoAttentionConfig(vocab_size=VOCAB, hidden_size=D, attention_size=5, answer_hidden_size=7,
                                   context_hidden_size=4, num_labels=4, **options)
    return BahdanauForTextPairClassification(config).double().eval()


def padded(rows: list[list[int]], left: bool, extra: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    """ids and mask [B, longest + extra], each row padded with 0 on the left or the right."""
    width = max(map(len, rows)) + extra
    ids, mask = torch.zeros(len(rows), width, dtype=torch.long), torch.zeros(len(rows), width, dtype=torch.long)
    for b, words in enumerate(rows):
        columns = slice(width - len(words), width) if left else slice(0, len(words))
        ids[b, columns], mask[b, columns] = torch.tensor(words), 1
    return ids, mask


def batch_of(questions, passages, question_left: bool = False, passage_left: bool = False) -> dict:
    input_ids, attention_mask = padded(questions, question_left)
    context_ids, context_attention_mask = padded(passages, passage_left, extra=2)
    return dict(input_ids=input_ids, attention_mask=attention_mask, context_ids=context_ids,
                context_attention_mask=context_attention_mask)


def real(weights: torch.Tensor, mask: torch.Tensor, row: int) -> torch.Tensor:
    """A row's weights at its real positions (the last dimension)."""
    return weights[row][..., mask[row].bool()]


@pytest.mark.parametrize("form,encoder", list(itertools.product(FORMS, ENCODERS)))
def test_batched_model_equals_the_papers_equations(form, encoder):
    model = model_for(coattention=form, context_encoder=encoder)
    batch = batch_of(QUESTIONS, PASSAGES, question_left=True)  # questions left-padded, passages right-padded
    with torch.no_grad():
        output = model(**batch, output_attentions=True)
        for b, (question, passage) in enumerate(zip(QUESTIONS, PASSAGES)):
            logits, readings = reference.text_coattention(model, question, passage)
            # float64 through different orders of the same sums of values below 10: 1e-12 is ~1e4 roundings
            assert_close(output.logits[b], logits, atol=1e-12, rtol=0)
            for level, (a_q, a_v, affinity) in enumerate(readings):
                assert_close(real(output.question_attentions[level], batch["attention_mask"], b), a_q, atol=1e-12,
                             rtol=0)
                assert_close(real(output.context_attentions[level], batch["context_attention_mask"], b), a_v,
                             atol=1e-12, rtol=0)
                if form == "parallel":
                    rows = output.affinities[level][b][batch["attention_mask"][b].bool()]
                    assert_close(rows[:, batch["context_attention_mask"][b].bool()], affinity, atol=1e-12, rtol=0)
                else:
                    assert output.affinities is None


@pytest.mark.parametrize("form", FORMS)
def test_padding_on_both_texts_gets_exactly_zero_weight(form):
    model = model_for(coattention=form)
    batch = batch_of(QUESTIONS, PASSAGES, question_left=True, passage_left=False)
    with torch.no_grad():
        output = model(**batch, output_attentions=True)
    for level in range(3):
        question, passage = output.question_attentions[level], output.context_attentions[level]
        assert torch.all(question[batch["attention_mask"] == 0] == 0)
        assert torch.all(passage[batch["context_attention_mask"] == 0] == 0)
        assert_close(question.sum(-1), torch.ones(3, dtype=torch.float64), atol=1e-12, rtol=0)
        assert_close(passage.sum(-1), torch.ones(3, dtype=torch.float64), atol=1e-12, rtol=0)
        if form == "parallel":
            both = batch["attention_mask"].bool().unsqueeze(2) & batch["context_attention_mask"].bool().unsqueeze(1)
            assert torch.all(output.affinities[level][~both] == 0)


@pytest.mark.parametrize("encoder", ENCODERS)
def test_left_and_right_padding_agree_on_both_texts(encoder):
    model = model_for(context_encoder=encoder).float()
    with torch.no_grad():
        outputs = {sides: model(**batch_of(QUESTIONS, PASSAGES, *sides), output_attentions=True)
                   for sides in itertools.product((False, True), repeat=2)}
    right = outputs[False, False]
    right_batch = batch_of(QUESTIONS, PASSAGES)
    for (question_left, passage_left), output in outputs.items():
        batch = batch_of(QUESTIONS, PASSAGES, question_left, passage_left)
        # float32: the same products in another order, values below 10, sums over at most 9 terms
        assert_close(output.logits, right.logits, atol=1e-5, rtol=0)
        for level in range(3):
            for b in range(3):
                assert_close(real(output.question_attentions[level], batch["attention_mask"], b),
                             real(right.question_attentions[level], right_batch["attention_mask"], b), atol=1e-6,
                             rtol=0)
                assert_close(real(output.context_attentions[level], batch["context_attention_mask"], b),
                             real(right.context_attentions[level], right_batch["context_attention_mask"], b),
                             atol=1e-6, rtol=0)


@pytest.mark.parametrize("form", ("parallel", "alternating"))
def test_gradients_reach_both_texts_and_not_the_padding_word(form):
    model = model_for(coattention=form, dropout=0.0).train()
    batch = batch_of(QUESTIONS, PASSAGES, question_left=True)
    model(**batch, labels=torch.tensor([0, 1, 3])).loss.backward()
    grad = model.coattention.embeddings.weight.grad
    question_words, passage_words = sorted({w for q in QUESTIONS for w in q}), sorted({w for p in PASSAGES for w in p})
    assert torch.all(grad[question_words].abs().sum(-1) > 0) and torch.all(grad[passage_words].abs().sum(-1) > 0)
    assert torch.all(grad[[0, 23, 24]] == 0)  # padding and unused words
    embeds = model.coattention.embeddings(batch["input_ids"]).detach().requires_grad_()
    model(inputs_embeds=embeds, attention_mask=batch["attention_mask"], context_ids=batch["context_ids"],
          context_attention_mask=batch["context_attention_mask"], labels=torch.tensor([0, 1, 3])).loss.backward()
    assert torch.all(embeds.grad[batch["attention_mask"] == 0] == 0)
    assert torch.all(embeds.grad[batch["attention_mask"] == 1].abs().sum(-1) > 0)


def test_baselines_read_one_text():
    question_only = model_for(inputs="question", coattention="none")
    batch = batch_of(QUESTIONS, PASSAGES)
    with torch.no_grad():
        output = question_only(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                               output_attentions=True)
    assert question_only.coattention.context_encoder is None and output.context_attentions is None
    assert_close(output.question_attentions[0][1], torch.tensor([0.5, 0.5, 0, 0, 0], dtype=torch.float64))
    with pytest.raises(ValueError, match="reads no passage .*leave `context_ids` out"):
        question_only(**batch)
    passage_only = model_for(inputs="context", coattention="none")
    with torch.no_grad():
        output = passage_only(context_ids=batch["context_ids"], context_attention_mask=batch["context_attention_mask"],
                              output_attentions=True)
    assert output.question_attentions is None
    assert_close(output.context_attentions[0][1], torch.tensor([1 / 3] * 3 + [0] * 6, dtype=torch.float64))


BAD_INPUTS = [
    (lambda batch: batch.pop("context_ids"), "`context_ids` is required: the passage's word ids"),
    (lambda batch: batch.update(context_ids=batch["context_ids"][:2],
                                context_attention_mask=batch["context_attention_mask"][:2]),
     "One passage per question: 3 questions, 2 rows of `context_ids`"),
    (lambda batch: batch["context_ids"].__setitem__((0, 0), VOCAB), rf"`context_ids` must hold ids in \[0, {VOCAB}\)"),
    (lambda batch: batch["input_ids"].__setitem__((0, 0), -1), rf"`input_ids` must hold ids in \[0, {VOCAB}\), got -1"),
    (lambda batch: batch.update(context_ids=batch["context_ids"][0]), r"`context_ids` must be \[batch, passage words\]"),
    (lambda batch: batch.update(context_attention_mask=batch["context_attention_mask"][:, :3]),
     r"`context_attention_mask` must have the shape of the ids it masks, \[3, 9\]"),
    (lambda batch: batch["context_attention_mask"].__setitem__(1, 0),
     "Every passage needs at least one word: row 1 of `context_attention_mask` is all padding"),
    (lambda batch: batch["attention_mask"].__setitem__(2, 0),
     "Every question needs at least one word: row 2 of `attention_mask` is all padding"),
    (lambda batch: batch["context_attention_mask"].__setitem__((0, 1), 0),
     "`context_attention_mask` must mark each row's real tokens as one contiguous run"),
    (lambda batch: batch.update(labels=torch.tensor([0, 4, 1])), r"`labels` must hold ids in \[0, 4\) or -100"),
]


@pytest.mark.parametrize("change,message", BAD_INPUTS)
def test_bad_inputs_are_named(change, message):
    model = model_for()
    batch = batch_of(QUESTIONS, PASSAGES)
    change(batch)
    with pytest.raises(ValueError, match=message):
        model(**batch)


@pytest.mark.parametrize("fields,message", [
    (dict(context_encoder="cnn"), r"`context_encoder` must be one of \['bilstm', 'embeddings'\], got 'cnn'"),
    (dict(context_hidden_size=0), "`context_hidden_size` must be a positive integer, got 0"),
    (dict(coattention="cross"), r"`coattention` must be one of \['parallel', 'alternating', 'context', 'none'\], "
                                r"got 'cross'"),
])
def test_bad_config_fields_are_named(fields, message):
    with pytest.raises(ValueError, match=message):
        BahdanauTextCoAttentionConfig(**fields)


def save_with_tokenizer(model: BahdanauForTextPairClassification, folder) -> None:
    """The model and a word-level tokenizer of "[PAD] [UNK] a b … w" (ids 0 … 24), answers "w x y z"."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = ["[PAD]", "[UNK]", *"abcdefghijklmnopqrstuvw"]
    tokenizer = Tokenizer(models.WordLevel({word: index for index, word in enumerate(words)}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    model.config.id2label = dict(enumerate("wxyz"))
    model.config.label2id = {label: index for index, label in enumerate("wxyz")}
    model.save_pretrained(folder)
    PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token="[PAD]", unk_token="[UNK]").save_pretrained(folder)


def test_pipeline_answers_with_the_models_numbers(tmp_path):
    from transformers import AutoTokenizer

    model = model_for().float()
    save_with_tokenizer(model, tmp_path)
    answerer = BahdanauPassageQuestionAnsweringPipeline(model=model, tokenizer=AutoTokenizer.from_pretrained(tmp_path))
    # "a b c" = ids 2 3 4, "f g h i" = 7 8 9 10
    with torch.no_grad():
        alone = model(input_ids=torch.tensor([[2, 3, 4]]), context_ids=torch.tensor([[7, 8, 9, 10]]),
                      output_attentions=True)
    probabilities = alone.logits[0].softmax(-1)
    answered = answerer(context="f g h i", question="a b c", return_attentions=True)
    best = int(probabilities.argmax())
    assert answered["answer"] == "wxyz"[best] and answered["score"] == pytest.approx(float(probabilities[best]),
                                                                                       abs=1e-6)
    assert answered["question_words"] == ["a", "b", "c"] and answered["context_words"] == ["f", "g", "h", "i"]
    assert [level["level"] for level in answered["attentions"]] == ["word", "phrase", "question"]
    for level, weights in enumerate(answered["attentions"]):
        assert_close(torch.tensor(weights["question"]), alone.question_attentions[level][0], atol=1e-7, rtol=0)
        assert_close(torch.tensor(weights["context"]), alone.context_attentions[level][0], atol=1e-7, rtol=0)
    ranked = answerer({"context": "f g h i", "question": "a b c"}, top_k=3)
    assert [entry["answer"] for entry in ranked["answers"]] == ["wxyz"[int(i)] for i in probabilities.argsort(
        descending=True)[:3]]
    assert set(answerer(context="f g h i", question="a b c")) == {"answer", "score"}
    for bad, message in [({"context": "f g"}, "keys 'context' .* and 'question'"),
                         ({"context": " ", "question": "a"}, "`context` must be a non-blank string"),
                         ({"context": "f", "question": 3}, "`question` must be a non-blank string")]:
        with pytest.raises(ValueError, match=message):
            answerer(bad)
    with pytest.raises(ValueError, match="`top_k` must be a positive int, got 0"):
        answerer(context="f", question="a", top_k=0)


@pytest.mark.slow  # trains for seconds
def test_a_short_run_learns_babi_task_1_far_above_chance():
    """900 generated task-1 questions, each about the story's last 3 sentences, 6 epochs of Adam on the word level:
    measured 45.0% test accuracy (chance: 1/6, six places), the same with this CPU's AVX2 kernels and with generic ones
    (ATEN_CPU_CAPABILITY=default); the test asks for 38%, 7 points below. Most of the way, as here, a model learns
    which places the passage names for the person asked about; the full run (``python -m training passage-qa``)
    goes on to learn which is the last (98.6% of the 1,000 test questions after 40 epochs)."""
    from training.common.babi_qa import build_tokenizer, features
    from training.data.babi import generate_task
    from training.tasks.passage_qa import passage_rows

    torch.manual_seed(0)
    train, test = ([example for story in generate_task(1, count, seed) for example in story]
                   for count, seed in ((900, 1), (200, 2)))
    answers = sorted({example.answer for example in train + test})
    tokenizer = build_tokenizer(train, answers)
    keep = ("input_ids", "context_ids", "labels")
    train_rows, test_rows = ([{key: row[key] for key in keep} for row in features(
        examples, tokenizer, answers, passage_rows, memory_size=3)] for examples in (train, test))
    collator = DataCollatorForTextPairs(tokenizer.pad_token_id)
    config = BahdanauTextCoAttentionConfig(vocab_size=len(tokenizer), hidden_size=32, attention_size=32,
                                           answer_hidden_size=64, context_hidden_size=32, num_labels=len(answers),
                                           dropout=0.0, coattention="alternating", question_levels=["word"])
    model = BahdanauForTextPairClassification(config)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    for _ in range(6):
        order = torch.randperm(len(train_rows)).tolist()
        for start in range(0, len(order), 32):
            optimizer.zero_grad()
            model(**collator([train_rows[index] for index in order[start:start + 32]])).loss.backward()
            optimizer.step()
    model.eval()
    batch = collator(test_rows)
    with torch.no_grad():
        accuracy = float((model(**batch).logits.argmax(-1) == batch["labels"]).float().mean())
    assert accuracy >= 0.38, accuracy
