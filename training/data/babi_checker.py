"""An answer checker for bAbI-style stories that reads the English text alone, independent of the generator
(``training/data/babi.py``: nothing is imported from it and none of its word lists is repeated here).

The statements are read in order by the sentence patterns below, which keep a world state: where each person is,
who holds which object, where a dropped object lies, where each object was carried from and to, each named animal's
kind and colour, and which kind fears which. People, places, objects, kinds and colours are whatever words the
patterns find in those positions. A pronoun ("Then he went ...", "After that they ...") means the subject(s) of the
previous statement. Each state keeps the statements it rests on, which gives the supporting facts; a statement the
patterns do not read, or one that contradicts the state (dropping what one does not hold), is refused.

    solve(2, ["Mary got the milk there.", ...], "Where is the milk?") -> ("kitchen", [0, 3])
"""

import re
from collections import defaultdict

NUMBER_WORDS = ("none", "one", "two", "three", "four", "five", "six")  # English, for "How many ...?" answers
MOVE = re.compile(r"(?P<subject>.+?) (?:moved|went back|went|journeyed|travelled) to the (?P<place>\w+)\.")
GET = re.compile(r"(?P<person>[A-Z]\w*) (?:got|grabbed|picked up|took) the (?P<object>\w+)(?: there)?\.")
DROP = re.compile(r"(?P<person>[A-Z]\w*) (?:dropped|discarded|put down|left) the (?P<object>\w+)(?: there)?\.")
IS_A = re.compile(r"(?P<name>[A-Z]\w*) is an? (?P<kind>\w+)\.")
HAS_COLOR = re.compile(r"(?P<name>[A-Z]\w*) is (?P<color>\w+)\.")
AFRAID = re.compile(r"(?P<kinds>[A-Z]\w*) are afraid of (?P<feared>\w+)\.")
PRONOUNS = ("he", "she", "they")


def singular(noun: str) -> str:
    """English plurals of the animals: mice -> mouse, wolves -> wolf, cats -> cat, sheep -> sheep."""
    noun = noun.lower()
    for plural_ending, singular_ending in (("ice", "ouse"), ("ves", "f"), ("s", "")):
        if noun.endswith(plural_ending):
            return noun[:-len(plural_ending)] + singular_ending
    return noun


class Story:
    """The state after reading a story's statements; each value is kept with the indices of its statements."""

    def __init__(self, statements: list[str]):
        self.place: dict[str, tuple[str, set[int]]] = {}  # person -> where, statements
        self.holder: dict[str, tuple[str, int]] = {}  # object -> person, the statement they got it in
        self.lying: dict[str, tuple[str, set[int]]] = {}  # object -> where it was dropped, statements
        self.last_touch: dict[str, dict[str, int]] = defaultdict(dict)  # person -> object -> last get/drop statement
        self.carried: dict[str, tuple[str, str, set[int]]] = {}  # object -> from, to, statements of its last carry
        self.kind: dict[str, tuple[str, int]] = {}  # lower-cased name -> kind, statement
        self.color: dict[str, tuple[str, int]] = {}  # lower-cased name -> colour, statement
        self.fears: dict[str, tuple[str, int]] = {}  # kind -> feared kind (both singular), statement
        self.subjects: list[str] = []
        self.naming = -1  # the statement that named self.subjects
        for index, statement in enumerate(statements):
            self.read(index, statement)

    def read(self, index: int, statement: str) -> None:
        subjects, naming = [], index
        if match := MOVE.fullmatch(statement):
            subjects, naming = self.subjects_of(index, match["subject"])
            for person in subjects:
                self.move(person, match["place"], {index, naming})
        elif match := GET.fullmatch(statement) or DROP.fullmatch(statement):
            person, thing = match["person"], match["object"]
            subjects = [person]
            (self.get if match.re is GET else self.drop)(index, person, thing)
            self.last_touch[person][thing] = index
        elif match := AFRAID.fullmatch(statement):
            self.fears[singular(match["kinds"])] = (singular(match["feared"]), index)
        elif match := IS_A.fullmatch(statement):
            self.kind[match["name"].lower()] = (match["kind"], index)
        elif match := HAS_COLOR.fullmatch(statement):
            self.color[match["name"].lower()] = (match["color"], index)
        else:
            raise ValueError(f"statement {index} {statement!r}: no pattern reads it.")
        self.subjects, self.naming = subjects, naming

    def subjects_of(self, index: int, subject: str) -> tuple[list[str], int]:
        """"Mary" / "Mary and John" -> themselves, named here; "Then he" -> the previous subjects, named there."""
        if subject.split()[-1] in PRONOUNS:
            if not self.subjects:
                raise ValueError(f"statement {index}: {subject!r} refers to no one (the previous statement has no "
                                 "subject).")
            return self.subjects, self.naming
        names = subject.split(" and ")
        if not all(re.fullmatch(r"[A-Z]\w*", name) for name in names):
            raise ValueError(f"statement {index}: the subject {subject!r} is not a name, names joined by 'and', or "
                             "a pronoun.")
        return names, index

    def move(self, person: str, place: str, statements: set[int]) -> None:
        if person in self.place and self.place[person][0] != place:
            for thing, (holder, got) in self.holder.items():
                if holder == person:
                    self.carried[thing] = (self.place[person][0], place, {got} | self.place[person][1] | statements)
        self.place[person] = (place, statements)

    def get(self, index: int, person: str, thing: str) -> None:
        if person not in self.place:
            raise ValueError(f"statement {index}: {person} gets the {thing} with no known place.")
        if thing in self.holder or self.lying.get(thing, self.place[person])[0] != self.place[person][0]:
            raise ValueError(f"statement {index}: {person} gets the {thing}, which is held or lies elsewhere.")
        self.holder[thing] = (person, index)
        self.lying.pop(thing, None)

    def drop(self, index: int, person: str, thing: str) -> None:
        if self.holder.get(thing, ("",))[0] != person:
            raise ValueError(f"statement {index}: {person} drops the {thing} without holding it.")
        del self.holder[thing]
        self.lying[thing] = (self.place[person][0], {index} | self.place[person][1])

    def where(self, thing: str) -> tuple[str, set[int]]:
        if thing in self.holder:
            person, got = self.holder[thing]
            return self.place[person][0], {got} | self.place[person][1]
        return self.lying[thing]

    def carrying(self, person: str) -> tuple[list[str], set[int]]:
        """What the person holds, in the order they got it; supported by their last get/drop of every object."""
        things = sorted((thing for thing, (holder, _) in self.holder.items() if holder == person),
                        key=lambda thing: self.holder[thing][1])
        return things, set(self.last_touch[person].values())


def where_person(story: Story, person: str) -> tuple[str, set[int]]:
    return story.place[person]


def where_before(story: Story, thing: str, place: str) -> tuple[str, set[int]]:
    """The place the object was carried from into `place`, when that was its last carry."""
    before, to, statements = story.carried[thing]
    if to != place:
        raise KeyError(place)
    return before, statements


def is_in(story: Story, person: str, place: str) -> tuple[str, set[int]]:
    return ("yes" if story.place[person][0] == place else "no"), story.place[person][1]


def how_many(story: Story, person: str) -> tuple[str, set[int]]:
    things, statements = story.carrying(person)
    return NUMBER_WORDS[len(things)], statements


def what_carried(story: Story, person: str) -> tuple[str, set[int]]:
    things, statements = story.carrying(person)
    return ",".join(things) or "nothing", statements


def afraid_of(story: Story, name: str) -> tuple[str, set[int]]:
    kind, is_a = story.kind[name]
    feared, fear = story.fears[kind]
    return feared, {is_a, fear}


def what_color(story: Story, name: str) -> tuple[str, set[int]]:
    """Induction: the colour of the most recently coloured other animal of the same kind."""
    kind, is_a = story.kind[name.lower()]
    other = max((other for other in story.color if other != name.lower() and story.kind.get(other, ("",))[0] == kind),
                key=lambda other: story.color[other][1], default=None)
    if other is None:
        raise KeyError(f"another {kind} with a colour")
    return story.color[other][0], {is_a, story.kind[other][1], story.color[other][1]}


WHERE_PERSON = ((r"Where is (?P<person>[A-Z]\w*)\?", where_person),)
QUESTIONS = {  # task -> its question forms: each a pattern and how it is answered
    1: WHERE_PERSON,
    2: ((r"Where is the (?P<thing>\w+)\?", lambda story, thing: story.where(thing)),),
    3: ((r"Where was the (?P<thing>\w+) before the (?P<place>\w+)\?", where_before),),
    6: ((r"Is (?P<person>[A-Z]\w*) in the (?P<place>\w+)\?", is_in),),
    7: ((r"How many objects is (?P<person>[A-Z]\w*) carrying\?", how_many),),
    8: ((r"What is (?P<person>[A-Z]\w*) carrying\?", what_carried),),
    11: WHERE_PERSON,
    12: WHERE_PERSON,
    13: WHERE_PERSON,
    15: ((r"What is (?P<name>[a-z]\w*) afraid of\?", afraid_of),),
    16: ((r"What color is (?P<name>[A-Z]\w*)\?", what_color),),
}


def solve(task: int, story: list[str], question: str) -> tuple[str, list[int]]:
    """(The answer, its supporting statements as ascending indices into `story`), from the text alone."""
    if task not in QUESTIONS:
        raise ValueError(f"`task` must be one of {sorted(QUESTIONS)}, got {task!r}.")
    for pattern, answer in QUESTIONS[task]:
        if match := re.fullmatch(pattern, question):
            break
    else:
        patterns = " or ".join(pattern for pattern, _ in QUESTIONS[task])
        raise ValueError(f"`question` {question!r} is not a task {task} question ({patterns}).")
    state = Story(story)
    try:
        value, statements = answer(state, **match.groupdict())
    except KeyError as error:  # no statement about the entity
        raise ValueError(f"`story` does not answer {question!r}: nothing known about {error}.") from None
    return value, sorted(statements)


def answer_question(task: int, story: list[str], question: str) -> str:
    """The answer to `question` after the statements `story`, read from the text alone."""
    return solve(task, story, question)[0]
