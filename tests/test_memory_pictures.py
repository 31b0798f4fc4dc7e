"""Pictures and pages of a memory network's hops: ``plot_memory_hops``' heat map holds the weights (sentences as rows,
oldest first; hops as columns), labels the sentences, marks the supporting facts and titles the question and answers;
``memory_page``'s embedded data round-trip (weights to 4 decimals, wrong answers first, accuracy and how often each
hop's strongest sentence is a supporting fact), story text that looks like HTML stays text, and in a headless chromium
the page shows each question's rows and hop columns and filters the wrong answers; bad input is refused by name."""

import numpy as np
import pytest
import torch

from hf_bahdanau.explorer.memory_page import memory_page, write_memory_page
from hf_bahdanau.pictures import plot_memory_hops
from test_explore import ROUNDING, StartTags, browser, open_page, page_data, sentences_shown  # noqa: F401  (fixture)

STORY = ["Mary moved to the bathroom.", "John went to the hallway.", "Mary travelled to the office.",
         "Daniel journeyed to the garden."]
HOPS = [[0.10, 0.05, 0.80, 0.05],  # p^k [K = 3, n = 4]: every row and every column different
        [0.25, 0.50, 0.15, 0.10],
        [0.00, 0.00, 0.30, 0.70]]


def test_the_heat_map_is_the_weights_with_a_row_per_sentence_and_a_column_per_hop(tmp_path):
    figure = plot_memory_hops(STORY, "Where is Mary?", torch.tensor(HOPS), answer="office", expected="office",
                              supporting_facts=[2], path=tmp_path / "hops.png")
    ax = figure.axes[0]
    (image,) = ax.images
    np.testing.assert_array_equal(np.asarray(image.get_array()), np.array(HOPS, np.float32).T)  # [n, K]
    assert image.get_clim() == (0.0, 1.0)
    assert [label.get_text() for label in ax.get_xticklabels()] == ["hop 1", "hop 2", "hop 3"]
    labels = ax.get_yticklabels()
    assert [label.get_text() for label in labels] == [STORY[0], STORY[1], f"* {STORY[2]}", STORY[3]]
    assert [label.get_fontweight() for label in labels] == ["normal", "normal", "bold", "normal"]
    assert list(ax.get_yticks()) == [0, 1, 2, 3] and ax.get_ylim()[0] > ax.get_ylim()[1]  # row 0 (oldest) on top
    # each cell's text is its weight, at (hop, sentence)
    cells = {(text.get_position(), text.get_text()) for text in ax.texts}
    assert cells == {((hop, sentence), f"{HOPS[hop][sentence]:.2f}") for hop in range(3) for sentence in range(4)}
    assert ax.get_title() == "Q: Where is Mary?\nanswer: office · expected: office ✓\n(* = supporting fact)"
    assert (tmp_path / "hops.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_titles_say_what_was_given_and_a_wrong_answer():
    wrong = plot_memory_hops(STORY, "Where is John?", HOPS, answer="office", expected="hallway")
    assert wrong.axes[0].get_title() == "Q: Where is John?\nanswer: office · expected: hallway ✗"
    assert plot_memory_hops(STORY, "Where is John?", np.array(HOPS)).axes[0].get_title() == "Q: Where is John?"
    assert plot_memory_hops(STORY, "?", HOPS, expected="x").axes[0].get_title() == "Q: ?\nexpected: x"


def test_a_long_story_grows_the_figure():
    story = [f"Sentence number {index} of a long story." for index in range(50)]
    weights = torch.full((2, 50), 1 / 50)
    short, long = plot_memory_hops(STORY, "?", HOPS), plot_memory_hops(story, "?", weights)
    assert long.get_figheight() >= short.get_figheight() + 0.25 * 46
    assert len(long.axes[0].get_yticklabels()) == 50


@pytest.mark.parametrize("change, message", [
    (dict(memory="Mary moved."), "`memory` must be a non-empty list of sentences"),
    (dict(memory=[]), "`memory` must be a non-empty list of sentences"),
    (dict(hop_attentions=[[0.5, 0.5]]), r"`hop_attentions` must be \[hops, len\(memory\)\] = \[K, 4\].*got \[1, 2\]"),
    (dict(hop_attentions=HOPS[0]), r"`hop_attentions` must be \[hops, len\(memory\)\].*got \[4\]"),
    (dict(hop_attentions=[[0.1, 0.2], [0.3]]), "`hop_attentions` must be \\[hops, sentences\\] numbers"),
    (dict(hop_attentions=[[0.5, float("nan"), 0.25, 0.25]]), "`hop_attentions` must be weights in \\[0, 1\\].*NaN"),
    (dict(hop_attentions=[[1.5, -0.5, 0.0, 0.0]]), "`hop_attentions` must be weights in \\[0, 1\\].*from -0.5 to 1.5"),
    (dict(supporting_facts=[4]), r"`supporting_facts` must be 0-based indices into `memory`, in \[0, 4\), got \[4\]"),
    (dict(supporting_facts=[-1]), r"`supporting_facts` .* got \[-1\]"),
    (dict(supporting_facts=[True]), "`supporting_facts` must be a list of sentence indices"),
])
def test_bad_input_is_refused_by_name(change, message):
    arguments = dict(memory=STORY, question="Where is Mary?", hop_attentions=HOPS) | change
    with pytest.raises(ValueError, match=message):
        plot_memory_hops(arguments.pop("memory"), arguments.pop("question"), arguments.pop("hop_attentions"),
                         **arguments)


# The explorer's page --------------------------------------------------------------------------------------------------

def record(answer: str, expected: str | None = "office", **extra) -> dict:
    return dict(memory=STORY, question="Where is Mary?", answer=answer, hop_attentions=HOPS, expected=expected,
                supporting_facts=[2]) | extra


def test_the_page_data_round_trip_with_the_wrong_answers_first(tmp_path):
    weights = torch.tensor([[0.123456, 0.876544], [0.5, 0.5]])
    records = [record("office"), record("hallway"),
               record("garden", memory=STORY[:2], hop_attentions=weights, expected="garden", supporting_facts=[0, 1])]
    path = write_memory_page(records, tmp_path / "pages" / "memory.html", title="babi", page_size=2,
                             metrics={"eval_accuracy": 0.75}, model_summary={"num_hops": 3})
    data = page_data(path.read_text(encoding="utf-8"))
    assert data["kind"] == "memory" and data["title"] == "babi" and data["page_size"] == 2
    assert data["has_references"] is True
    assert data["model_summary"] == [["num_hops", "3"]]
    assert data["model_metrics"] == {"columns": ["metric", "eval"], "rows": [["accuracy", "0.75"]]}
    assert [question["number"] for question in data["questions"]] == [2, 1, 3]  # the wrong one first
    assert [question["correct"] for question in data["questions"]] == [False, True, True]
    wrong, right, short = data["questions"]
    assert wrong == dict(number=2, memory=STORY, question="Where is Mary?", answer="hallway", expected="office",
                         correct=False, supporting_facts=[2], hop_attentions=HOPS)
    assert short["memory"] == STORY[:2] and short["supporting_facts"] == [0, 1]
    torch.testing.assert_close(torch.tensor(short["hop_attentions"], dtype=torch.float64), weights.double(),
                               atol=ROUNDING, rtol=0)
    assert short["hop_attentions"][0] == [0.1235, 0.8765]
    # hop 1's strongest sentence is 2 (a supporting fact) in the first two, 1 of {0, 1} in the third: 3 / 3;
    # hop 2's: sentence 1 (not supporting) twice, a tie in the third (the first, 0: supporting): 1 / 3;
    # hop 3's: sentence 3 (not supporting) in the first two; the third has 2 hops: 0 / 2
    assert data["page_metrics"] == [["questions", "3"], ["accuracy", "66.7 % (2 / 3)"], ["wrong", "1"],
                                    ["hop 1 strongest on a supporting fact", "100.0 % (3 / 3)"],
                                    ["hop 2 strongest on a supporting fact", "33.3 % (1 / 3)"],
                                    ["hop 3 strongest on a supporting fact", "0.0 % (0 / 2)"]]


def test_a_page_without_expected_answers_or_supporting_facts():
    data = page_data(memory_page([record("office", expected=None, supporting_facts=None)]))
    assert data["has_references"] is False and data["page_metrics"] == [["questions", "1"]]
    (question,) = data["questions"]
    assert question["correct"] is None and question["expected"] is None and question["supporting_facts"] == []


def test_story_text_that_looks_like_html_stays_text():
    story = ["</script><b>x</b> & <!--", "<img src=x onerror=alert(1)>"]
    page = memory_page([dict(memory=story, question="<i>who?</i>", answer="</SCRIPT>", expected="a & b",
                             hop_attentions=[[0.5, 0.5]])], title="<title>")
    parser = StartTags()
    parser.feed(page)
    assert parser.tags.count("script") == 2 and not {"b", "i", "img"} & set(parser.tags)
    assert page.count("</script>") == 2 and "<title>&lt;title&gt;</title>" in page
    assert "<h2>These questions</h2>" in page and "only wrong answers</label>" in page
    (question,) = page_data(page)["questions"]
    assert question["memory"] == story and question["question"] == "<i>who?</i>"
    assert question["answer"] == "</SCRIPT>" and question["expected"] == "a & b" and question["correct"] is False


@pytest.mark.parametrize("records, message", [
    ([], "`records` must be a non-empty list of dicts"),
    ([dict(memory=STORY, question="?", answer="x")], r"`records\[0\]` must be a dict with the keys"),
    ([record("x"), record("x", hop_attentions=[[0.5, 0.5]])],
     r"`records\[1\].hop_attentions` must be \[hops, len\(memory\)\] = \[K, 4\]"),
    ([record("x", supporting_facts=[7])], r"`records\[0\].supporting_facts` must be 0-based indices into "
                                          r"`records\[0\].memory`, in \[0, 4\), got \[7\]"),
    ([record("x", memory=[])], r"`records\[0\].memory` must be a non-empty list of sentences"),
    ([record(3)], r"`records\[0\].answer` must be a string, got 3"),
    ([record("x"), record("x", expected=None)], r"`records\[1\]` lacks an 'expected' answer but `records\[0\]` has"),
])
def test_bad_records_are_refused_by_name(records, message):
    with pytest.raises(ValueError, match=message):
        memory_page(records)


def test_the_command_answers_the_questions_of_a_jsonl_file_through_the_pipeline(tmp_path, capsys):
    """hf-bahdanau-explore on a memory network's folder: the page its family declares (``MEMORY_EXPLORER``), with the
    pipeline's answers and hop weights; a bad line and --references end as usage errors that name them."""
    import json

    from hf_bahdanau.explorer.page import main
    from test_memory_network import answerer

    pipe = answerer()
    pipe.model.save_pretrained(tmp_path / "babi-tiny")
    pipe.tokenizer.save_pretrained(tmp_path / "babi-tiny")
    rows = [dict(memory=["a b", "c d e", "f"], question="a g", supporting_facts=[1], id=7),
            dict(memory=["b c", "g"], question="d")]
    answers = pipe([dict(memory=row["memory"], question=row["question"]) for row in rows])
    rows[0]["expected"], rows[1]["expected"] = answers[0]["answer"], "not an answer"
    (tmp_path / "questions.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    main([str(tmp_path / "babi-tiny"), "--input", str(tmp_path / "questions.jsonl"), "--output",
          str(tmp_path / "page.html")])
    assert capsys.readouterr().out == f"{tmp_path / 'page.html'}: 2 questions, accuracy 50.0 % (1 wrong)\n"
    data = page_data((tmp_path / "page.html").read_text(encoding="utf-8"))
    assert data["kind"] == "memory" and data["title"] == "babi-tiny"
    assert dict(data["model_summary"])["num_hops"] == str(pipe.model.config.num_hops)
    assert [(question["number"], question["correct"]) for question in data["questions"]] == [(2, False), (1, True)]
    for question in data["questions"]:
        row, answer = rows[question["number"] - 1], answers[question["number"] - 1]
        assert (question["memory"], question["question"], question["answer"], question["expected"]) == (
            row["memory"], row["question"], answer["answer"], row["expected"])
        assert question["supporting_facts"] == row.get("supporting_facts", [])
        torch.testing.assert_close(torch.tensor(question["hop_attentions"], dtype=torch.float64),
                                   torch.tensor(answer["hop_attentions"], dtype=torch.float64), atol=ROUNDING, rtol=0)
    (tmp_path / "bad.jsonl").write_text(json.dumps(rows[0]) + "\n" + json.dumps({"memory": ["a"]}) + "\n")
    (tmp_path / "half.jsonl").write_text(json.dumps(rows[1] | {"expected": None}) + "\n" + json.dumps(rows[0]) + "\n")
    for options, error in (
            (["--input", str(tmp_path / "bad.jsonl")], f'line 2 of --input {tmp_path / "bad.jsonl"} must be an object '
                                                        'with "memory" and "question", got {"memory": ["a"]}.'),
            (["--input", str(tmp_path / "half.jsonl")],
             f'line 1 of --input {tmp_path / "half.jsonl"} has no "expected", but line 2 has: give every row its right '
             "answers, or none."),
            (["--input", str(tmp_path / "questions.jsonl"), "--references", str(tmp_path / "bad.jsonl")],
             f"--references {tmp_path / 'bad.jsonl'} is for sentences; give the right answers in the rows of --input "
             f'{tmp_path / "questions.jsonl"} ("expected").')):
        with pytest.raises(SystemExit) as exit:
            main([str(tmp_path / "babi-tiny"), *options, "--output", str(tmp_path / "bad.html")])
        assert exit.value.code == 2
        assert capsys.readouterr().err.splitlines()[-1] == f"hf-bahdanau-explore: error: {error}"
    assert not (tmp_path / "bad.html").exists()


@pytest.mark.browser
def test_the_page_shows_each_hop_over_the_story_and_filters_the_wrong_answers(browser, tmp_path):
    from selenium.webdriver.common.by import By

    records = [record("office"), record("hallway", memory=["<b>John</b> went.", *STORY[1:]])]
    open_page(browser, tmp_path / "memory.html", memory_page(records, page_size=1))
    assert browser.find_element(By.ID, "counts").text == "1 wrong / 2"
    assert sentences_shown(browser) == ["#2"]  # the wrong answer first, one question a page
    assert browser.find_element(By.ID, "showing").text == "questions 1–1 of 2"
    article = browser.find_element(By.CSS_SELECTOR, "#sentences .sentence.wrong")
    assert [node.text for node in article.find_elements(By.CSS_SELECTOR, ".label")] == ["question", "answer",
                                                                                      "expected"]
    assert [node.text for node in article.find_elements(By.CSS_SELECTOR, "th.hop")] == ["hop 1", "hop 2", "hop 3"]
    rows = article.find_elements(By.CSS_SELECTOR, ".heatmap.memory tbody tr")
    assert [row.find_element(By.CSS_SELECTOR, ".memory-sentence").text for row in rows] == [
        "<b>John</b> went.", *STORY[1:]]
    assert [[cell.text for cell in row.find_elements(By.CSS_SELECTOR, ".hop-weight")] for row in rows] == [
        [f"{HOPS[hop][sentence]:.2f}" for hop in range(3)] for sentence in range(4)]
    assert [row.find_element(By.CSS_SELECTOR, ".marker").text for row in rows] == ["", "", "*", ""]
    assert [row.get_attribute("class") for row in rows] == ["", "", "supporting", ""]
    assert rows[2].find_elements(By.CSS_SELECTOR, ".hop-weight")[0].get_attribute("title") == (
        "hop 1, sentence 3: p = 0.8000")
    browser.find_element(By.ID, "only-wrong").click()
    assert browser.find_element(By.ID, "page-indicator").text == "page 1 of 1"
    browser.find_element(By.ID, "only-wrong").click()
    browser.find_element(By.ID, "next-page").click()
    assert sentences_shown(browser) == ["#1"]
