"""An answer checker for bAbI-style stories that reads the English text alone, independent of the generator
(``training/data/babi.py``: nothing is imported from it and none of its word lists is repeated here).

The statements are read in order by the sentence patterns below, which keep a world state: where each person is,
who holds which object, where a dropped object lies, where each object was carried from and to, each named animal's
kind, which kind fears which, what each name was last said to be ("Lily is white.", "Sumit is hungry."), which
place lies which way of which, and which shape lies beside or which thing fits inside which ("The triangle is above
the red square.", "The box is bigger than the chest."). People, places, objects, kinds and colours are whatever words
the patterns find in those positions; the meaning of the directions, sides, sizes and needs is the common sense the
tasks test, written below in its own terms (directions and sides as steps on a map, sizes as walks from smaller to
bigger things, a need as the place one goes to). A pronoun ("Then he went ...", "After that they ...") means the
subject(s) of the previous statement. Each state keeps the statements it rests on, which gives the supporting
facts; a statement the patterns do not read, or one that contradicts the state (dropping what one does not hold), is
refused.

For tasks 5, 9, 10 and 14 it also keeps who handed what to whom, what each person was last said about where they are
("Mary is in / is not in / is either in the A or the B.") and where each person went at each time of day
("Yesterday Mary went ...", "Mary went ... this evening").

    solve(2, ["Mary got the milk there.", ...], "Where is the milk?") -> ("kitchen", [0, 3])
"""

import re
from collections import defaultdict
from functools import partial

NUMBER_WORDS = ("none", "one", "two", "three", "four", "five", "six")  # English, for "How many ...?" answers
MOVED = r"(?:moved|went back|went|journeyed|travelled) to the (?P<place>\w+)"
MOVE = re.compile(rf"(?P<subject>.+?) {MOVED}\.")
GET = re.compile(r"(?P<person>[A-Z]\w*) (?:got|grabbed|picked up|took) the (?P<object>\w+)(?: there)?\.")
DROP = re.compile(r"(?P<person>[A-Z]\w*) (?:dropped|discarded|put down|left) the (?P<object>\w+)(?: there)?\.")
IS_A = re.compile(r"(?P<name>[A-Z]\w*) is an? (?P<kind>\w+)\.")
DESCRIBED = re.compile(r"(?P<name>[A-Z]\w*) is (?P<adjective>\w+)\.")  # a colour (task 16), a need (task 20)
SIDE_OR_SIZE = re.compile(  # tasks 17, 18: "The triangle is to the left of the red square.", "... fits inside ..."
    r"The (?P<subject>[a-z][a-z ]*?) (?P<relation>is [a-z ]+|fits inside) the (?P<thing>[a-z][a-z ]*)\.")
AFRAID = re.compile(r"(?P<kinds>[A-Z]\w*) are afraid of (?P<feared>\w+)\.")
PRONOUNS = ("he", "she", "they")
GIVE = re.compile(r"(?P<giver>[A-Z]\w*) (?:gave|handed|passed) the (?P<object>\w+) to (?P<receiver>[A-Z]\w*)\.")
IS_IN = re.compile(r"(?P<person>[A-Z]\w*) is in the (?P<place>\w+)\.")
IS_NOT_IN = re.compile(r"(?P<person>[A-Z]\w*) is (?:not|no longer) in the (?P<place>\w+)\.")
EITHER = re.compile(r"(?P<person>[A-Z]\w*) is either in the (?P<first>\w+) or the (?P<second>\w+)\.")
RELATION = re.compile(r"The (?P<place>\w+) is (?P<direction>\w+) of the (?P<other>\w+)\.")
COMPASS = {"north": (0, 1), "east": (1, 0), "south": (0, -1), "west": (-1, 0)}  # a direction's step on a map
DAY = ("yesterday", "morning", "afternoon", "evening")  # the last word of a time of day, in the day's order
TIME = r"(?:[Yy]esterday|(?:[Tt]his|[Ii]n the) (?:morning|afternoon|evening))"
TIMED_MOVE = re.compile(rf"(?:(?P<opening>{TIME}) )?(?P<person>[A-Z]\w*) {MOVED}(?: (?P<ending>{TIME}))?\.")


def opposite(direction: str) -> str:
    """north <-> south, east <-> west: the direction whose step on a map is the reverse."""
    step = COMPASS[direction]
    return next(name for name, vector in COMPASS.items() if vector == (-step[0], -step[1]))


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
        self.last_touch: dict[str, dict[str, int]] = defaultdict(dict)  # person -> object -> last get/drop/give
        self.carried: dict[str, tuple[str, str, set[int]]] = {}  # object -> from, to, statements of its last carry
        self.kind: dict[str, tuple[str, int]] = {}  # lower-cased name -> kind, statement
        self.adjective: dict[str, tuple[str, int]] = {}  # lower-cased name -> what it was last said to be, statement
        self.fears: dict[str, tuple[str, int]] = {}  # kind -> feared kind (both singular), statement
        self.relations: dict[int, tuple[str, str, str]] = {}  # statement -> its (subject, relation, thing) (17, 18)
        self.gifts: list[dict[str, str | int]] = []  # {giver, thing, receiver, statement}, in story order
        # person -> the latest statement of where they are: (places, negated, statements), e.g. ({"office"}, True, {3})
        # for "Mary is not in the office." and ({"office", "garden"}, False, {3}) for "... either in ... or ..."
        self.known: dict[str, tuple[set[str], bool, set[int]]] = {}
        # place -> direction -> (place, statement)
        self.neighbour: dict[str, dict[str, tuple[str, int]]] = defaultdict(dict)
        self.day: dict[str, dict[int, tuple[str, int]]] = defaultdict(dict)  # person -> time of day -> place, statement
        self.subjects: list[str] = []
        self.naming = -1  # the statement that named self.subjects
        for index, statement in enumerate(statements):
            self.read(index, statement)

    def read(self, index: int, statement: str) -> None:
        subjects, naming = [], index
        if (match := TIMED_MOVE.fullmatch(statement)) and (time := match["opening"] or match["ending"]):
            subjects = [match["person"]]
            self.timed(index, match["person"], DAY.index(time.split()[-1].lower()), match["place"])
        elif match := MOVE.fullmatch(statement):
            subjects, naming = self.subjects_of(index, match["subject"])
            for person in subjects:
                self.move(person, match["place"], {index, naming})
        elif match := GET.fullmatch(statement) or DROP.fullmatch(statement):
            person, thing = match["person"], match["object"]
            subjects = [person]
            (self.get if match.re is GET else self.drop)(index, person, thing)
            self.last_touch[person][thing] = index
        elif match := GIVE.fullmatch(statement):
            subjects = [match["giver"]]
            self.give(index, match["giver"], match["receiver"], match["object"])
        elif match := IS_IN.fullmatch(statement):
            subjects = [match["person"]]
            self.move(match["person"], match["place"], {index})
        elif match := IS_NOT_IN.fullmatch(statement) or EITHER.fullmatch(statement):
            subjects = [match["person"]]
            negated = match.re is IS_NOT_IN
            self.known[match["person"]] = (set(match.groups()[1:]), negated, {index})
            self.place.pop(match["person"], None)
        elif match := RELATION.fullmatch(statement):
            self.relate(index, match["place"], match["direction"], match["other"])
        elif match := AFRAID.fullmatch(statement):
            self.fears[singular(match["kinds"])] = (singular(match["feared"]), index)
        elif match := SIDE_OR_SIZE.fullmatch(statement):
            self.relations[index] = (match["subject"], match["relation"], match["thing"])
        elif match := IS_A.fullmatch(statement):
            self.kind[match["name"].lower()] = (match["kind"], index)
        elif match := DESCRIBED.fullmatch(statement):
            self.adjective[match["name"].lower()] = (match["adjective"], index)
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
        self.known[person] = ({place}, False, statements)

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

    def give(self, index: int, giver: str, receiver: str, thing: str) -> None:
        if self.holder.get(thing, ("",))[0] != giver:
            raise ValueError(f"statement {index}: {giver} gives the {thing} without holding it.")
        if self.place.get(receiver, (None,))[0] != self.place[giver][0]:
            raise ValueError(f"statement {index}: {giver} gives the {thing} to {receiver}, who is not known to be "
                             "in the same place.")
        self.holder[thing] = (receiver, index)
        self.gifts.append({"giver": giver, "thing": thing, "receiver": receiver, "statement": index})
        self.last_touch[giver][thing] = self.last_touch[receiver][thing] = index

    def relate(self, index: int, place: str, direction: str, other: str) -> None:
        """"The office is north of the kitchen.": north of the kitchen is the office, south of the office the
        kitchen; a place already known there is a contradiction."""
        if direction not in COMPASS:
            raise ValueError(f"statement {index}: {direction!r} is not a direction of {sorted(COMPASS)}.")
        for here, way, there in ((other, direction, place), (place, opposite(direction), other)):
            if self.neighbour[here].get(way, (there,))[0] != there:
                raise ValueError(f"statement {index}: {way} of the {here} is the {self.neighbour[here][way][0]}.")
            self.neighbour[here][way] = (there, index)

    def timed(self, index: int, person: str, time: int, place: str) -> None:
        if time in self.day[person]:
            raise ValueError(f"statement {index}: where {person} went in the {DAY[time]} was told before.")
        self.day[person][time] = (place, index)

    def where(self, thing: str) -> tuple[str, set[int]]:
        if thing in self.holder:
            person, got = self.holder[thing]
            return self.place[person][0], {got} | self.place[person][1]
        return self.lying[thing]

    def carrying(self, person: str) -> tuple[list[str], set[int]]:
        """What the person holds, in the order they got it; supported by their last get, drop or hand-over (either
        side) of every object."""
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
    """Yes / no from where the person is; after "... is not in the P": no about P (nothing about elsewhere); after
    "... is either in the P or the Q": maybe about P and Q, no elsewhere."""
    places, negated, statements = story.known[person]
    if negated and place not in places:
        raise KeyError(f"whether {person} is in the {place}")
    if negated or place not in places:
        return "no", statements
    return ("yes" if len(places) == 1 else "maybe"), statements


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
    other = max((other for other in story.adjective
                 if other != name.lower() and story.kind.get(other, ("",))[0] == kind),
                key=lambda other: story.adjective[other][1], default=None)
    if other is None:
        raise KeyError(f"another {kind} with a colour")
    return story.adjective[other][0], {is_a, story.kind[other][1], story.adjective[other][1]}


# Tasks 17-20: what the sides, sizes and needs mean.

SIDES = {"to the left of": (-1, 0), "to the right of": (1, 0), "below": (0, -1), "above": (0, 1)}  # a side's step
NEED_PLACE = {"hungry": "kitchen", "thirsty": "kitchen", "tired": "bedroom", "bored": "garden"}  # where one goes


def shortest_walk(steps: dict[str, list[tuple[str, object, int]]], start: str, goal: str) -> list[tuple[object, int]]:
    """The one shortest walk from `start` to `goal` where ``steps[thing]`` lists (next thing, the step's label, the
    statement linking them): the walk's (label, statement) pairs. KeyError when there is no walk; ValueError when
    several are shortest (which statements support the answer would be ambiguous)."""
    walks, frontier = {start: [[]]}, [start]  # thing -> every shortest walk to it
    while frontier and goal not in walks:
        reached = defaultdict(list)
        for thing in frontier:
            for after, label, index in steps.get(thing, ()):
                if after not in walks:
                    reached[after] += [[*walk, (label, index)] for walk in walks[thing]]
        walks |= reached
        frontier = list(reached)
    if goal not in walks:
        raise KeyError(f"a chain of statements from the {start} to the {goal}")
    if len(walks[goal]) > 1:
        raise ValueError(f"`story`: {len(walks[goal])} chains of statements lead from the {start} to the {goal}, none "
                         "shorter: which of them supports the answer is ambiguous.")
    return walks[goal][0]


def is_beside(story: Story, subject: str, side: str, thing: str) -> tuple[str, set[int]]:
    """Task 17: "The A is above the B." puts A one step up from B, in line with it (as bAbI's answers read it). The
    signs of (subject - thing) across and up, added step by step from the thing to the subject (opposite signs on an
    axis leave it unknown), answer "yes" when the side's axis has the side's sign."""
    step_of, steps = {f"is {side}": step for side, step in SIDES.items()}, defaultdict(list)
    for index, (one, relation, other) in story.relations.items():
        if step := step_of.get(relation):
            steps[other].append((one, step, index))
            steps[one].append((other, (-step[0], -step[1]), index))
    walk = shortest_walk(steps, thing, subject)
    offset: list[int | None] = [0, 0]
    for step, _ in walk:
        for axis, sign in enumerate(step):
            if sign:
                offset[axis] = sign if offset[axis] in (0, sign) else None
    axis = 0 if SIDES[side][0] else 1
    if offset[axis] is None:
        raise ValueError(f"`story` does not tell whether the {subject} is {side} the {thing}.")
    return ("yes" if offset[axis] == SIDES[side][axis] else "no"), {index for _, index in walk}


def fits(story: Story, small: str, big: str) -> tuple[str, set[int]]:
    """Task 18: whether `small` fits in `big`: "yes" along a walk from smaller to bigger things ("The A fits inside
    the B.", "The B is bigger than the A."), "no" along one from `big` to `small`."""
    steps = defaultdict(list)
    for index, (subject, relation, thing) in story.relations.items():
        if relation == "fits inside":
            steps[subject].append((thing, None, index))
        elif relation == "is bigger than":
            steps[thing].append((subject, None, index))
    for answer, start, goal in (("yes", small, big), ("no", big, small)):
        try:
            return answer, {index for _, index in shortest_walk(steps, start, goal)}
        except KeyError:
            continue
    raise KeyError(f"the sizes of the {small} and the {big}")


def route(story: Story, start: str, goal: str) -> tuple[str, set[int]]:
    """Task 19: the initials of the directions from `start` to `goal` along the map, comma-separated ("s,e")."""
    steps = {here: [(there, way, index) for way, (there, index) in ways.items()]
             for here, ways in story.neighbour.items()}
    walk = shortest_walk(steps, start, goal)
    return ",".join(way[0] for way, _ in walk), {index for _, index in walk}


def where_will(story: Story, name: str) -> tuple[str, set[int]]:
    """Task 20: where one goes who was last said to be hungry, thirsty, tired or bored."""
    need, index = story.adjective[name]
    return NEED_PLACE[need], {index}


def why_went(story: Story, name: str, place: str) -> tuple[str, set[int]]:
    """Task 20: the need of someone whose last move was to `place`."""
    if story.place[name.capitalize()][0] != place:
        raise KeyError(f"{name} going to the {place}")
    need, index = story.adjective[name]
    return need, {index}


def why_got(story: Story, name: str, thing: str) -> tuple[str, set[int]]:
    """Task 20: the need of someone who holds `thing`."""
    if story.holder.get(thing, ("",))[0] != name.capitalize():
        raise KeyError(f"{name} getting the {thing}")
    need, index = story.adjective[name]
    return need, {index}


def latest_gift(wanted: str, story: Story, **known: str) -> tuple[str, set[int]]:
    """Task 5: the `wanted` role (giver, thing or receiver) of the latest hand-over with the `known` roles."""
    fitting = [gift for gift in story.gifts if all(gift[role] == value for role, value in known.items())]
    if not fitting:
        raise KeyError(f"a hand-over with {known}")
    return fitting[-1][wanted], {fitting[-1]["statement"]}


def to_the(story: Story, place: str, direction: str) -> tuple[str, set[int]]:
    """Task 4: "What is north of the kitchen?"."""
    there, statement = story.neighbour[place][direction]
    return there, {statement}


def of_what(story: Story, place: str, direction: str) -> tuple[str, set[int]]:
    """Task 4: "What is the office north of?": the place it is north of, which is south of it."""
    return to_the(story, place, opposite(direction))


def before_time(story: Story, person: str, place: str) -> tuple[str, set[int]]:
    """Task 14: where the person was at the latest time of day told before the one they were in `place`."""
    times = [time for time, (there, _) in story.day[person].items() if there == place]
    earlier = [time for time in story.day[person] if times and time < times[0]]
    if len(times) != 1 or not earlier:
        raise KeyError(f"one time of day {person} was in the {place}, and where they were at a time before")
    before, statement = story.day[person][max(earlier)]
    return before, {statement, story.day[person][times[0]][1]}


WHERE_PERSON = ((r"Where is (?P<person>[A-Z]\w*)\?", where_person),)
IS_IN_PLACE = ((r"Is (?P<person>[A-Z]\w*) in the (?P<place>\w+)\?", is_in),)
QUESTIONS = {  # task -> its question forms: each a pattern and how it is answered
    1: WHERE_PERSON,
    2: ((r"Where is the (?P<thing>\w+)\?", lambda story, thing: story.where(thing)),),
    3: ((r"Where was the (?P<thing>\w+) before the (?P<place>\w+)\?", where_before),),
    4: ((r"What is (?P<direction>\w+) of the (?P<place>\w+)\?", to_the),
        (r"What is the (?P<place>\w+) (?P<direction>\w+) of\?", of_what)),
    5: ((r"Who gave the (?P<thing>\w+)\?", partial(latest_gift, "giver")),
        (r"Who received the (?P<thing>\w+)\?", partial(latest_gift, "receiver")),
        (r"What did (?P<giver>[A-Z]\w*) give to (?P<receiver>[A-Z]\w*)\?", partial(latest_gift, "thing")),
        (r"Who did (?P<giver>[A-Z]\w*) give the (?P<thing>\w+) to\?", partial(latest_gift, "receiver")),
        (r"Who gave the (?P<thing>\w+) to (?P<receiver>[A-Z]\w*)\?", partial(latest_gift, "giver"))),
    6: IS_IN_PLACE,
    7: ((r"How many objects is (?P<person>[A-Z]\w*) carrying\?", how_many),),
    8: ((r"What is (?P<person>[A-Z]\w*) carrying\?", what_carried),),
    9: IS_IN_PLACE,
    10: IS_IN_PLACE,
    11: WHERE_PERSON,
    12: WHERE_PERSON,
    13: WHERE_PERSON,
    14: ((r"Where was (?P<person>[A-Z]\w*) before the (?P<place>\w+)\?", before_time),),
    15: ((r"What is (?P<name>[a-z]\w*) afraid of\?", afraid_of),),
    16: ((r"What color is (?P<name>[A-Z]\w*)\?", what_color),),
    17: ((rf"Is the (?P<subject>[a-z ]+?) (?P<side>{'|'.join(SIDES)}) the (?P<thing>[a-z ]+)\?", is_beside),),
    18: ((r"Does the (?P<small>[a-z ]+?) fit in the (?P<big>[a-z ]+)\?", fits),
         (r"Is the (?P<big>[a-z ]+?) bigger than the (?P<small>[a-z ]+)\?", fits)),
    19: ((r"How do you go from the (?P<start>\w+) to the (?P<goal>\w+)\?", route),),
    20: ((r"Where will (?P<name>[a-z]\w*) go\?", where_will),
         (r"Why did (?P<name>[a-z]\w*) go to the (?P<place>\w+)\?", why_went),
         (r"Why did (?P<name>[a-z]\w*) get the (?P<thing>\w+)\?", why_got)),
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
