"""The bAbI-style generator (training/data/babi.py): deterministic, exact counts, every answer and supporting fact
re-derived from the story's text by the independent checker (babi_checker.py, itself tested on hand-written
stories), Facebook's text format written and read (a hand-written file in that format, malformed lines refused)."""

import re

import pytest

from training.data.babi import (
    MEMORY_SIZE, TASKS, BabiExample, generate_task, read_babi, task_file_name, write_babi,
)
from training.data.babi_checker import answer_question, solve
from training.data.make_babi import main

# the question's entity (person, object, animal's name), which some supporting statement must name
ENTITY = {1: r"Where is (\w+)", 2: r"the (\w+)\?", 3: r"the (\w+) before", 6: r"Is (\w+)", 7: r"is (\w+) carrying",
          8: r"is (\w+) carrying", 11: r"Where is (\w+)", 12: r"Where is (\w+)", 13: r"Where is (\w+)",
          15: r"is (\w+) afraid", 16: r"color is (\w+)"}


def flat(stories: list[list[BabiExample]]) -> list[BabiExample]:
    return [example for story in stories for example in story]


def test_the_cli_writes_facebooks_layout_deterministically_with_exact_counts(tmp_path):
    def run(folder: str, *arguments: str) -> dict[str, dict]:
        return main(["--output_dir", str(tmp_path / folder), "--tasks", "1", "16", *arguments])

    first = run("a", "--seed", "3", "--sizes", "en")
    run("b", "--seed", "3", "--sizes", "en")
    run("c", "--seed", "4", "--sizes", "en")
    ten_k = main(["--output_dir", str(tmp_path / "a"), "--tasks", "1", "--seed", "3", "--sizes", "en-10k"])
    names = [f"en/{task_file_name(task, split)}" for task in (1, 16) for split in ("train", "test")]
    names_10k = [f"en-10k/{task_file_name(1, split)}" for split in ("train", "test")]
    assert sorted(str(path.relative_to(tmp_path / "a")) for path in (tmp_path / "a").rglob("*.txt")) == \
        sorted(names + names_10k)
    for name in names:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
        assert (tmp_path / "a" / name).read_bytes() != (tmp_path / "c" / name).read_bytes()
        assert len(read_babi(tmp_path / "a" / name)) == first[name]["questions"] == 1000
    assert len(read_babi(tmp_path / "a" / names_10k[0])) == ten_k[names_10k[0]]["questions"] == 10000
    assert (tmp_path / "a" / names[1]).read_bytes() == (tmp_path / "a" / names_10k[1]).read_bytes()  # one test set
    assert (tmp_path / "a" / names[0]).read_bytes() != (tmp_path / "a" / names[1]).read_bytes()  # train != test
    assert first[names[0]] == {"questions": 1000, "stories": 200, "mean_length": 10, "max_length": 10}
    assert first[names[2]]["stories"] == 1000  # task 16: one question a story
    with pytest.raises(ValueError, match=r"`--tasks` must be among \[1, 2, .*\], got \[21\]"):
        main(["--output_dir", str(tmp_path), "--tasks", "1", "21"])


def test_the_same_seed_gives_the_same_stories_and_the_smaller_set_begins_the_larger():
    assert generate_task(2, 60, seed=7) == generate_task(2, 60, seed=7)
    assert generate_task(2, 60, seed=7) != generate_task(2, 60, seed=8)
    small, large = generate_task(1, 100, seed=5), generate_task(1, 1000, seed=5)
    assert small == large[:len(small)] and len(flat(small)) == 100


@pytest.mark.parametrize("task", sorted(TASKS))
def test_the_checker_derives_every_answer_and_its_supporting_facts_from_the_text(task):
    examples = flat(generate_task(task, 300, seed=11))
    assert len(examples) == 300
    for example in examples:
        assert example.task == task
        assert solve(task, example.story, example.question) == (example.answer, example.supporting_facts), example
        assert len(example.story) - MEMORY_SIZE <= min(example.supporting_facts)
        assert max(example.supporting_facts) < len(example.story)
        entity = re.search(ENTITY[task], example.question).group(1).lower()
        assert any(entity in example.story[index].lower().rstrip(".").split() for index in example.supporting_facts)


def test_the_answers_are_not_one_class():
    for task in TASKS:
        answers = {example.answer for example in flat(generate_task(task, 200, seed=2))}
        assert len(answers) >= 2, (task, answers)
    assert {example.answer for example in flat(generate_task(7, 200, seed=2))} >= {"none", "one", "two"}
    assert "nothing" in {example.answer for example in flat(generate_task(8, 200, seed=2))}


@pytest.mark.parametrize("task", sorted(TASKS))
def test_write_then_read_gives_the_same_examples(tmp_path, task):
    stories = generate_task(task, 40, seed=task)
    path = tmp_path / task_file_name(task, "train")
    write_babi(path, stories)
    assert read_babi(path) == flat(stories)


FACEBOOK_FILE = """\
1 Mary moved to the bathroom.
2 John went to the hallway.
3 Where is Mary? \tbathroom\t1
4 Daniel went back to the hallway.
5 Where is Daniel? \thallway\t4
1 Gertrude is a mouse.
2 Mice are afraid of wolves.
3 What is gertrude afraid of?\twolf\t1 2
4 Sheep are afraid of cats.
5 Where is the football?\tgarden\t4 2
"""


def test_a_file_in_facebooks_format_reads_with_supporting_ids_as_story_indices(tmp_path):
    path = tmp_path / "qa1_single-supporting-fact_train.txt"
    path.write_text(FACEBOOK_FILE, encoding="utf-8")
    assert read_babi(path) == [
        BabiExample(1, ["Mary moved to the bathroom.", "John went to the hallway."], "Where is Mary?", "bathroom", [0]),
        BabiExample(1, ["Mary moved to the bathroom.", "John went to the hallway.", "Daniel went back to the hallway."],
                    "Where is Daniel?", "hallway", [2]),
        BabiExample(1, ["Gertrude is a mouse.", "Mice are afraid of wolves."], "What is gertrude afraid of?", "wolf",
                    [0, 1]),
        BabiExample(1, ["Gertrude is a mouse.", "Mice are afraid of wolves.", "Sheep are afraid of cats."],
                    "Where is the football?", "garden", [2, 1]),
    ]
    assert read_babi(path, task=15)[0].task == 15
    other = tmp_path / "stories.txt"
    other.write_text(FACEBOOK_FILE, encoding="utf-8")
    with pytest.raises(ValueError, match="`task` is needed for .*stories.txt"):
        read_babi(other)


@pytest.mark.parametrize("bad_line, line, expected", [
    ("3 Where is Mary?\tbathroom", 3, "'ID statement' or 'ID question<TAB>answer<TAB>supporting IDs'"),
    ("3 Where is Mary?\tbathroom\tone", 3, "'ID statement' or 'ID question<TAB>answer<TAB>supporting IDs'"),
    ("Where is Mary?\tbathroom\t1", 3, "'ID statement'"),
    ("4 Where is Mary?\tbathroom\t1", 3, r"line ID 3 \(the next of its story\) or 1 \(a new story\)"),
    ("3 Where is Mary?\tbathroom\t3", 3, r"supporting IDs of statements before the question in its story; \['3'\]"),
])
def test_malformed_lines_are_refused_naming_the_file_and_line(tmp_path, bad_line, line, expected):
    path = tmp_path / "qa1_single-supporting-fact_test.txt"
    path.write_text(f"1 Mary moved to the bathroom.\n2 John went to the hallway.\n{bad_line}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=f"qa1_single-supporting-fact_test.txt, line {line}: expected {expected}"):
        read_babi(path)


def test_a_support_on_a_question_line_is_refused(tmp_path):
    path = tmp_path / "qa1_x_test.txt"
    path.write_text("1 Mary moved to the bathroom.\n2 Where is Mary?\tbathroom\t1\n3 Where is Mary?\tbathroom\t2\n",
                    encoding="utf-8")
    with pytest.raises(ValueError, match=r"line 3: expected supporting IDs .*\['2'\] are not"):
        read_babi(path)


def test_bad_arguments_are_refused_by_name(tmp_path):
    with pytest.raises(ValueError, match=r"`task` must be one of \[1, 2, .*\], got 21"):
        generate_task(21, 10, seed=0)
    with pytest.raises(ValueError, match="`num_questions` must be a positive integer, got 0"):
        generate_task(1, 0, seed=0)
    first = BabiExample(1, ["Mary went to the office."], "Where is Mary?", "office", [0])
    with pytest.raises(ValueError, match="do not continue those before the previous question"):
        write_babi(tmp_path / "x.txt", [[first, BabiExample(1, ["John went to the office."], "Where is John?",
                                                            "office", [0])]])
    with pytest.raises(ValueError, match=r"must be indices into its 1 statements, got \[1\]"):
        write_babi(tmp_path / "x.txt", [[BabiExample(1, ["Mary went to the office."], "Where is Mary?", "office",
                                                     [1])]])


MOVES = ["Mary moved to the bathroom.", "John went to the hallway.", "Mary went back to the kitchen."]
OBJECTS = ["Mary went to the kitchen.", "Mary got the milk there.", "Mary travelled to the garden.",
           "John moved to the office.", "Mary dropped the milk.", "Mary journeyed to the bedroom."]
CARRYING = ["Daniel went to the office.", "Daniel took the apple there.", "Daniel grabbed the milk there.",
            "Daniel put down the apple there."]
COREFERENCE = ["Mary went to the hallway.", "Then she journeyed to the garden.", "John moved to the office.",
               "After that he went back to the kitchen."]
COMPOUND = ["Mary and Daniel went to the bathroom.", "Then they went to the garden.",
            "Following that they moved to the office.", "Sandra and John journeyed to the hallway."]
DEDUCTION = ["Mice are afraid of wolves.", "Gertrude is a mouse.", "Cats are afraid of sheep.", "Winona is a mouse.",
             "Sheep are afraid of wolves.", "Emily is a mouse.", "Jessica is a wolf.", "Wolves are afraid of cats."]
INDUCTION = ["Lily is a swan.", "Bernhard is a lion.", "Greg is a swan.", "Bernhard is white.", "Brian is a lion.",
             "Lily is gray.", "Julius is a rhino.", "Julius is gray.", "Greg is gray."]


@pytest.mark.parametrize("task, story, question, expected", [
    (1, MOVES, "Where is Mary?", ("kitchen", [2])),
    (1, MOVES, "Where is John?", ("hallway", [1])),
    (2, OBJECTS[:4], "Where is the milk?", ("garden", [1, 2])),  # carried: got it, then went
    (2, OBJECTS, "Where is the milk?", ("garden", [2, 4])),  # dropped where she was, then she left
    (3, ["John went to the garden.", "John picked up the football there.", "John journeyed to the office.",
         "John travelled to the kitchen.", "John left the football."], "Where was the football before the kitchen?",
     ("office", [1, 2, 3])),
    (3, OBJECTS[:3], "Where was the milk before the garden?", ("kitchen", [0, 1, 2])),
    (6, MOVES, "Is Mary in the kitchen?", ("yes", [2])),
    (6, MOVES, "Is John in the kitchen?", ("no", [1])),
    (7, CARRYING, "How many objects is Daniel carrying?", ("one", [2, 3])),
    (7, CARRYING[:3], "How many objects is Daniel carrying?", ("two", [1, 2])),
    (8, CARRYING, "What is Daniel carrying?", ("milk", [2, 3])),
    (8, [*CARRYING, "Daniel got the apple there."], "What is Daniel carrying?", ("milk,apple", [2, 4])),
    (8, OBJECTS, "What is Mary carrying?", ("nothing", [4])),
    (11, COREFERENCE, "Where is Mary?", ("garden", [0, 1])),
    (11, COREFERENCE, "Where is John?", ("kitchen", [2, 3])),
    (12, ["Mary and Daniel went to the bathroom.", "Daniel travelled to the office."], "Where is Mary?",
     ("bathroom", [0])),
    (12, ["Mary and Daniel went to the bathroom.", "Daniel travelled to the office."], "Where is Daniel?",
     ("office", [1])),
    (13, COMPOUND, "Where is Daniel?", ("office", [0, 2])),  # "they" twice: still Mary and Daniel, named in 0
    (13, COMPOUND, "Where is John?", ("hallway", [3])),
    (15, DEDUCTION, "What is jessica afraid of?", ("cat", [6, 7])),
    (15, DEDUCTION, "What is emily afraid of?", ("wolf", [0, 5])),
    (15, [*DEDUCTION[:4], "Emily is a cat."], "What is emily afraid of?", ("sheep", [2, 4])),  # "Cats": singular
    (16, INDUCTION, "What color is Brian?", ("white", [1, 3, 4])),
])
def test_the_checker_on_hand_written_stories(task, story, question, expected):
    assert solve(task, story, question) == expected
    assert answer_question(task, story, question) == expected[0]


@pytest.mark.parametrize("task, story, question, message", [
    (1, ["Mary flew to the moon."], "Where is Mary?", "statement 0 'Mary flew to the moon.': no pattern reads it"),
    (2, ["Mary went to the office.", "Mary dropped the milk."], "Where is the milk?",
     "statement 1: Mary drops the milk without holding it"),
    (2, ["Mary got the milk there."], "Where is the milk?", "statement 0: Mary gets the milk with no known place"),
    (11, ["Then he went to the office."], "Where is John?", "statement 0: 'Then he' refers to no one"),
    (1, MOVES, "Where is the milk?", r"`question` 'Where is the milk\?' is not a task 1 question"),
    (1, MOVES, "Where is Sandra?", r"`story` does not answer 'Where is Sandra\?'"),
    (16, INDUCTION[:3], "What color is Lily?", r"`story` does not answer .*another swan with a colour"),
    (21, MOVES, "Where is Mary?", r"`task` must be one of \[1, 2, .*\], got 21"),
])
def test_the_checker_refuses_what_it_cannot_read_or_answer(task, story, question, message):
    with pytest.raises(ValueError, match=message):
        solve(task, story, question)
