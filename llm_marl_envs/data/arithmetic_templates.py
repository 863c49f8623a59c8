"""Story templates for :mod:`llm_marl_envs.data.arithmetic` (pure data).

Every template is a dict with:

* ``"id"``: a short identifier.
* ``"scale"`` (optional, default ``True``): whether additive ranges with
  ``hi >= 12`` grow with difficulty (see ``_SCALE`` in the generator).
* ``"vars"``: a list of dicts; one is drawn per problem and its keys become
  extra placeholders (e.g. ``{item}``).  An empty list means no extra keys.
* ``"steps"``: exactly five *slots*.  A problem of difficulty ``d`` uses slots
  ``1..d``; one variant of each slot is drawn.  All variants of a slot describe
  the same kind of quantity, so any variant of slot ``i + 1`` reads naturally
  after any variant of slot ``i``.

A variant is a tuple ``(op, spec, sentence, line, question)``:

* ``op``/``spec`` -- the arithmetic step (``p`` is the previous result):

  ==========  =========================================  ==================
  op          spec                                       result
  ==========  =========================================  ==================
  ``"a+b"``   ``((lo, hi), (lo, hi))`` ranges of a, b     ``a + b``
  ``"a-b"``   ``((lo, hi), (lo, hi))`` (a ~ total)        ``a - b``
  ``"a*b"``   ``((lo, hi), (lo, hi))``                    ``a * b``
  ``"+k"``    ``(lo, hi)``                                ``p + k``
  ``"-k"``    ``(lo, hi)``                                ``p - k``
  ``"*k"``    ``(lo, hi)`` or a list of choices           ``p * k``
  ``"/k"``    tuple of allowed divisors                   ``p / k``
  ``"%k"``    tuple of allowed percentages                ``p * k / 100``
  ``"frac"``  ``None`` (uses :data:`FRACTIONS`)           ``p * n / m``
  ``"k-"``    ``(lo, hi)`` range of the *result*          ``k - p``
  ==========  =========================================  ==================

  Slot 1 always holds at least one ``"a+b"`` or ``"a-b"`` variant (used at
  difficulty 1); the ``a``/``b`` ops appear only in slot 1.
* ``sentence`` -- the story sentence(s) stating the step (placeholders
  ``{name} {friend} {Pron} {pron} {poss} {Poss} {obj} {a} {b} {k} {frac}`` and
  the template's vars).
* ``line`` -- the worked-solution line; ``{calc}`` expands to
  ``"12 + 7 = <<12+7=19>>19"``.
* ``question`` -- the question asked when this slot is the last one.
"""

from __future__ import annotations

# Hand-laid-out data tables: keep the formatter away.
# fmt: off

#: ``(numerator, denominator, words)`` used by the ``"frac"`` op.
FRACTIONS: tuple[tuple[int, int, str], ...] = (
    (1, 2, "half"),
    (1, 3, "one third"),
    (2, 3, "two thirds"),
    (1, 4, "one quarter"),
    (3, 4, "three quarters"),
    (1, 5, "one fifth"),
    (2, 5, "two fifths"),
    (3, 5, "three fifths"),
    (4, 5, "four fifths"),
)

#: ``(name, gender)`` pairs; gender selects the pronoun set.
NAMES: tuple[tuple[str, str], ...] = (
    ("Amara", "f"), ("Beatriz", "f"), ("Chloe", "f"), ("Dalia", "f"),
    ("Elena", "f"), ("Fatima", "f"), ("Grace", "f"), ("Hana", "f"),
    ("Ines", "f"), ("Jada", "f"), ("Keiko", "f"), ("Lucia", "f"),
    ("Maya", "f"), ("Nadia", "f"), ("Olivia", "f"), ("Priya", "f"),
    ("Rosa", "f"), ("Sofia", "f"), ("Tamar", "f"), ("Zoe", "f"),
    ("Ahmed", "m"), ("Bruno", "m"), ("Carlos", "m"), ("Dmitri", "m"),
    ("Ethan", "m"), ("Felix", "m"), ("Gabriel", "m"), ("Hiro", "m"),
    ("Ivan", "m"), ("Jamal", "m"), ("Kofi", "m"), ("Liam", "m"),
    ("Mateo", "m"), ("Noah", "m"), ("Omar", "m"), ("Pavel", "m"),
    ("Rahul", "m"), ("Samuel", "m"), ("Tariq", "m"), ("Victor", "m"),
)

#: Pronoun placeholders per gender.
PRONOUNS: dict[str, dict[str, str]] = {
    "f": {"Pron": "She", "pron": "she", "poss": "her", "Poss": "Her", "obj": "her"},
    "m": {"Pron": "He", "pron": "he", "poss": "his", "Poss": "His", "obj": "him"},
}

_PCT = (10, 20, 25, 30, 40, 50, 60, 75, 80)

TEMPLATES: list[dict] = [
    {
        "id": "bakery",
        "vars": [
            {"item": "cookies"},
            {"item": "muffins"},
            {"item": "cupcakes"},
            {"item": "brownies"},
            {"item": "scones"},
        ],
        "steps": [
            [
                ("a+b", ((10, 40), (10, 40)),
                 "{name} baked {a} {item} on Saturday and {b} {item} on Sunday.",
                 "{name} baked {calc} {item} over the weekend.",
                 "How many {item} did {name} bake over the weekend?"),
                ("a-b", ((20, 60), (2, 9)),
                 "{name} baked {a} {item}, but {b} of them got burnt.",
                 "{name} had {calc} good {item}.",
                 "How many good {item} did {name} have?"),
            ],
            [
                ("-k", (2, 9),
                 "{Pron} gave {k} of the {item} to {friend}.",
                 "{Pron} had {calc} {item} left.",
                 "How many {item} did {name} have left?"),
                ("+k", (3, 15),
                 "{friend} brought over {k} more {item}.",
                 "Together they had {calc} {item}.",
                 "How many {item} did they have together?"),
            ],
            [
                ("/k", (2, 3, 4, 5, 6, 8, 10, 12),
                 "All the {item} were packed into boxes of {k}.",
                 "They filled {calc} boxes.",
                 "How many boxes were filled?"),
            ],
            [
                ("*k", (3, 9),
                 "Each box was sold for ${k}.",
                 "The boxes brought in {calc} dollars.",
                 "How many dollars did the boxes bring in?"),
            ],
            [
                ("-k", (5, 20),
                 "Then ${k} of that money was spent on new baking trays.",
                 "There were {calc} dollars left.",
                 "How many dollars were left?"),
                ("%k", _PCT,
                 "{name} saved {k}% of that money.",
                 "{Pron} saved {calc} dollars.",
                 "How many dollars did {name} save?"),
            ],
        ],
    },
    {
        "id": "orchard",
        "vars": [
            {"item": "apples"},
            {"item": "pears"},
            {"item": "peaches"},
            {"item": "oranges"},
            {"item": "plums"},
        ],
        "steps": [
            [
                ("a+b", ((10, 40), (5, 30)),
                 "{name} picked {a} {item} at the orchard and {friend} gave {obj} {b} more.",
                 "{name} had {calc} {item}.",
                 "How many {item} did {name} have?"),
                ("a*b", ((2, 6), (6, 12)),
                 "{name} bought {a} bags of {item} with {b} {item} in each bag.",
                 "{Pron} bought {calc} {item}.",
                 "How many {item} did {name} buy?"),
            ],
            [
                ("-k", (2, 8),
                 "{Pron} used {k} of the {item} to make a pie.",
                 "{Pron} had {calc} {item} left.",
                 "How many {item} did {name} have left?"),
                ("frac", None,
                 "{Pron} kept {frac} of the {item} and gave the rest away.",
                 "{Pron} kept {calc} {item}.",
                 "How many {item} did {name} keep?"),
            ],
            [
                ("/k", (2, 3, 4, 5, 6),
                 "{Pron} shared those {item} equally among {k} friends.",
                 "Each friend got {calc} {item}.",
                 "How many {item} did each friend get?"),
            ],
            [
                ("*k", (4, 8),
                 "Each friend cut each of their {item} into {k} slices.",
                 "Each friend had {calc} slices.",
                 "How many slices did each friend have?"),
            ],
            [
                ("-k", (2, 6),
                 "Each friend ate {k} slices.",
                 "Each friend had {calc} slices left.",
                 "How many slices did each friend have left?"),
            ],
        ],
    },
    {
        "id": "road_trip",
        "vars": [
            {"place": "the lake"},
            {"place": "the coast"},
            {"place": "a national park"},
            {"place": "the mountains"},
        ],
        "steps": [
            [
                ("a+b", ((40, 120), (30, 100)),
                 "{name} drove {a} miles to {place} and then {b} miles to a campsite.",
                 "{Pron} drove {calc} miles.",
                 "How many miles did {name} drive?"),
                ("a*b", ((2, 5), (40, 65)),
                 "{name} drove to {place} for {a} hours at {b} miles per hour.",
                 "{Pron} drove {calc} miles.",
                 "How many miles did {name} drive?"),
            ],
            [
                ("/k", (10, 15, 20, 25, 30),
                 "{Poss} car goes {k} miles on one gallon of gas.",
                 "{Pron} used {calc} gallons of gas.",
                 "How many gallons of gas did {name} use?"),
            ],
            [
                ("*k", (3, 6),
                 "Gas costs ${k} per gallon.",
                 "The gas cost {calc} dollars.",
                 "How many dollars did the gas cost?"),
            ],
            [
                ("+k", (4, 18),
                 "{Pron} also paid ${k} in road tolls.",
                 "The trip cost {calc} dollars in total.",
                 "How many dollars did the trip cost in total?"),
            ],
            [
                ("/k", (2, 3, 4),
                 "The total cost was split equally among the {k} people in the car.",
                 "Each person paid {calc} dollars.",
                 "How many dollars did each person pay?"),
            ],
        ],
    },
    {
        "id": "savings",
        "vars": [
            {"job": "walking dogs"},
            {"job": "mowing lawns"},
            {"job": "babysitting"},
            {"job": "washing cars"},
        ],
        "steps": [
            [
                ("a+b", ((15, 60), (10, 40)),
                 "{name} had ${a} in {poss} piggy bank and got ${b} for {poss} birthday.",
                 "{Pron} had {calc} dollars.",
                 "How many dollars did {name} have?"),
                ("a-b", ((30, 90), (5, 25)),
                 "{name} had ${a} and spent ${b} on a book.",
                 "{Pron} had {calc} dollars left.",
                 "How many dollars did {name} have left?"),
            ],
            [
                ("+k", (10, 40),
                 "Then {pron} earned ${k} by {job}.",
                 "{Pron} then had {calc} dollars.",
                 "How many dollars does {name} have now?"),
            ],
            [
                ("%k", _PCT,
                 "{Pron} put {k}% of all {poss} money into a savings account.",
                 "{Pron} put {calc} dollars into savings.",
                 "How many dollars did {name} put into savings?"),
                ("frac", None,
                 "{Pron} put {frac} of all {poss} money into a savings account.",
                 "{Pron} put {calc} dollars into savings.",
                 "How many dollars did {name} put into savings?"),
            ],
            [
                ("*k", (2, 3),
                 "{friend} promised to give {obj} {k} dollars for every dollar {pron} saved.",
                 "{friend} gave {obj} {calc} dollars.",
                 "How many dollars did {friend} give {name}?"),
            ],
            [
                ("/k", (2, 3, 4, 5),
                 "{name} split {friend}'s gift equally among {k} charities.",
                 "Each charity got {calc} dollars.",
                 "How many dollars did each charity get?"),
            ],
        ],
    },
    {
        "id": "classroom",
        "scale": False,
        "vars": [
            {"item": "markers"},
            {"item": "glue sticks"},
            {"item": "sheets of paper"},
            {"item": "pencils"},
            {"item": "rulers"},
        ],
        "steps": [
            [
                ("a+b", ((10, 18), (10, 18)),
                 "A class has {a} boys and {b} girls.",
                 "There are {calc} students in the class.",
                 "How many students are in the class?"),
                ("a-b", ((24, 36), (2, 6)),
                 "A class has {a} students, but {b} of them are absent today.",
                 "{calc} students are present.",
                 "How many students are present?"),
            ],
            [
                ("/k", (2, 3, 4, 5, 6),
                 "The teacher, {name}, splits the students into groups of {k}.",
                 "There are {calc} groups.",
                 "How many groups are there?"),
            ],
            [
                ("*k", (3, 12),
                 "Each group gets {k} {item}.",
                 "The groups get {calc} {item} altogether.",
                 "How many {item} does {name} hand out?"),
            ],
            [
                ("k-", (10, 60),
                 "The supply box held {k} {item} before class.",
                 "There are {calc} {item} left in the box.",
                 "How many {item} are left in the box?"),
            ],
            [
                ("/k", (2, 3, 4, 5),
                 "The leftover {item} are shared equally among {k} other classrooms.",
                 "Each classroom gets {calc} {item}.",
                 "How many {item} does each of the other classrooms get?"),
            ],
        ],
    },
    {
        "id": "garden",
        "vars": [
            {"veg": "tomato", "vegs": "tomatoes"},
            {"veg": "pepper", "vegs": "peppers"},
            {"veg": "cucumber", "vegs": "cucumbers"},
            {"veg": "zucchini", "vegs": "zucchinis"},
        ],
        "steps": [
            [
                ("a+b", ((6, 24), (4, 20)),
                 "{name} planted {a} {veg} plants in the spring and {b} more in early summer.",
                 "{Pron} planted {calc} {veg} plants.",
                 "How many {veg} plants did {name} plant?"),
                ("a*b", ((3, 6), (4, 8)),
                 "{name} planted {a} rows of {veg} plants with {b} plants in each row.",
                 "{Pron} planted {calc} {veg} plants.",
                 "How many {veg} plants did {name} plant?"),
                ("a-b", ((15, 40), (2, 6)),
                 "{name} planted {a} {veg} seedlings, but {b} of them did not survive.",
                 "{calc} plants survived.",
                 "How many {veg} plants survived?"),
            ],
            [
                ("*k", (4, 12),
                 "Each plant grew {k} {vegs}.",
                 "The plants grew {calc} {vegs}.",
                 "How many {vegs} did the plants grow?"),
            ],
            [
                ("-k", (3, 15),
                 "Rabbits ate {k} of the {vegs}.",
                 "{calc} {vegs} were left.",
                 "How many {vegs} were left?"),
                ("frac", None,
                 "{Pron} kept {frac} of the {vegs} and gave the rest to neighbors.",
                 "{Pron} kept {calc} {vegs}.",
                 "How many {vegs} did {name} keep?"),
            ],
            [
                ("/k", (2, 4, 5, 6, 10),
                 "{Pron} packed those {vegs} into baskets of {k}.",
                 "{Pron} filled {calc} baskets.",
                 "How many baskets did {name} fill?"),
            ],
            [
                ("*k", (3, 9),
                 "{Pron} sold each basket for ${k}.",
                 "{Pron} made {calc} dollars.",
                 "How many dollars did {name} make?"),
            ],
        ],
    },
    {
        "id": "basketball",
        "scale": False,
        "vars": [],
        "steps": [
            [
                ("a+b", ((6, 20), (4, 18)),
                 ("In the first half of a basketball game, {name} scored {a} points, and in the "
                  "second half {pron} scored {b} points."),
                 "{Pron} scored {calc} points in the game.",
                 "How many points did {name} score in the game?"),
            ],
            [
                ("*k", (3, 6),
                 "{Pron} scored that many points in each of the team's {k} games this month.",
                 "{Pron} scored {calc} points this month.",
                 "How many points did {name} score this month?"),
            ],
            [
                ("+k", (5, 30),
                 "{friend} scored {k} more points than {name} this month.",
                 "{friend} scored {calc} points.",
                 "How many points did {friend} score this month?"),
            ],
            [
                ("%k", (20, 25, 40, 50, 60, 75),
                 "Three-pointers made up {k}% of {friend}'s points.",
                 "{friend} scored {calc} points from three-pointers.",
                 "How many points did {friend} score from three-pointers?"),
            ],
            [
                ("/k", (3,),
                 "Each three-pointer is worth {k} points.",
                 "{friend} made {calc} three-pointers.",
                 "How many three-pointers did {friend} make?"),
            ],
        ],
    },
    {
        "id": "reading",
        "vars": [
            {"book": "novel"},
            {"book": "mystery book"},
            {"book": "history book"},
            {"book": "comic collection"},
        ],
        "steps": [
            [
                ("a+b", ((10, 40), (10, 40)),
                 "{name} read {a} pages of a {book} on Monday and {b} pages on Tuesday.",
                 "{Pron} read {calc} pages.",
                 "How many pages did {name} read on those two days?"),
            ],
            [
                ("k-", (30, 150),
                 "The {book} has {k} pages.",
                 "{Pron} has {calc} pages left to read.",
                 "How many pages does {name} have left to read?"),
            ],
            [
                ("/k", (2, 3, 4, 5, 6),
                 ("{Pron} wants to finish the rest in {k} days, reading the same number of pages "
                  "each day."),
                 "{Pron} needs to read {calc} pages per day.",
                 "How many pages does {name} need to read each day?"),
            ],
            [
                ("*k", (2, 4),
                 "It takes {obj} {k} minutes to read one page.",
                 "{Pron} reads for {calc} minutes each day.",
                 "How many minutes does {name} read each day?"),
            ],
            [
                ("-k", (5, 20),
                 "{Pron} does {k} of those minutes on the bus to school.",
                 "{Pron} reads at home for {calc} minutes each day.",
                 "How many minutes does {name} read at home each day?"),
            ],
        ],
    },
    {
        "id": "animal_shelter",
        "vars": [],
        "steps": [
            [
                ("a+b", ((8, 30), (6, 25)),
                 "An animal shelter has {a} dogs and {b} cats.",
                 "The shelter has {calc} animals.",
                 "How many animals does the shelter have?"),
                ("a-b", ((20, 50), (3, 12)),
                 "An animal shelter had {a} animals, and {b} were adopted this week.",
                 "{calc} animals are still at the shelter.",
                 "How many animals are still at the shelter?"),
            ],
            [
                ("*k", (2, 4),
                 "Each animal eats {k} cups of food a day.",
                 "The animals eat {calc} cups of food a day.",
                 "How many cups of food do the animals eat a day?"),
            ],
            [
                ("*k", (5, 14),
                 "{name}, who runs the shelter, buys food for {k} days at a time.",
                 "{Pron} needs {calc} cups of food each time.",
                 "How many cups of food does {name} need each time?"),
            ],
            [
                ("/k", (10, 12, 15, 20, 24),
                 "One bag holds {k} cups of food.",
                 "{Pron} buys {calc} bags.",
                 "How many bags does {name} buy each time?"),
            ],
            [
                ("*k", (8, 25),
                 "Each bag costs ${k}.",
                 "The food costs {calc} dollars.",
                 "How many dollars does {name} spend on food each time?"),
            ],
        ],
    },
    {
        "id": "lemonade",
        "vars": [
            {"drink": "lemonade"},
            {"drink": "iced tea"},
            {"drink": "orange juice"},
            {"drink": "hot cocoa"},
        ],
        "steps": [
            [
                ("a+b", ((10, 40), (10, 40)),
                 "{name} sold {a} cups of {drink} on Saturday and {b} cups on Sunday.",
                 "{Pron} sold {calc} cups.",
                 "How many cups of {drink} did {name} sell?"),
            ],
            [
                ("*k", (2, 5),
                 "Each cup sold for ${k}.",
                 "{Pron} took in {calc} dollars.",
                 "How many dollars did {name} take in?"),
            ],
            [
                ("-k", (5, 25),
                 "The ingredients and cups cost ${k}.",
                 "{Poss} profit was {calc} dollars.",
                 "What was {name}'s profit in dollars?"),
            ],
            [
                ("/k", (2, 3, 4),
                 "{name} shared the profit equally among the {k} friends who ran the stand.",
                 "Each friend got {calc} dollars.",
                 "How many dollars did each friend get?"),
            ],
            [
                ("%k", _PCT,
                 "{name} put {k}% of {poss} share into a college fund.",
                 "{Pron} put {calc} dollars into the fund.",
                 "How many dollars did {name} put into the fund?"),
            ],
        ],
    },
    {
        "id": "toy_workshop",
        "vars": [
            {"toy": "wooden trains"},
            {"toy": "toy cars"},
            {"toy": "puzzle boxes"},
            {"toy": "kites"},
        ],
        "steps": [
            [
                ("a+b", ((20, 80), (20, 80)),
                 "A workshop run by {name} made {a} {toy} in the morning and {b} in the afternoon.",
                 "The workshop made {calc} {toy}.",
                 "How many {toy} did the workshop make?"),
                ("a*b", ((3, 8), (6, 15)),
                 "A workshop run by {name} made {b} {toy} every hour for {a} hours.",
                 "The workshop made {calc} {toy}.",
                 "How many {toy} did the workshop make?"),
            ],
            [
                ("-k", (2, 9),
                 "Of those, {k} {toy} failed the safety check.",
                 "{calc} {toy} passed.",
                 "How many {toy} passed the safety check?"),
            ],
            [
                ("/k", (2, 3, 4, 5, 6, 8),
                 "The {toy} that passed were packed {k} to a crate.",
                 "They packed {calc} crates.",
                 "How many crates were packed?"),
            ],
            [
                ("*k", (6, 15),
                 "Each crate weighs {k} pounds.",
                 "The crates weigh {calc} pounds in total.",
                 "How many pounds do the crates weigh in total?"),
            ],
            [
                ("/k", (2, 3, 4),
                 "The crates are split evenly by weight between {k} trucks.",
                 "Each truck carries {calc} pounds.",
                 "How many pounds does each truck carry?"),
            ],
        ],
    },
    {
        "id": "bus",
        "vars": [
            {"vehicle": "bus"},
            {"vehicle": "tram"},
            {"vehicle": "ferry"},
            {"vehicle": "shuttle"},
        ],
        "steps": [
            [
                ("a+b", ((10, 30), (4, 15)),
                 ("A {vehicle} left the station with {a} passengers. At the first stop, {b} more "
                  "got on."),
                 "There were {calc} passengers.",
                 "How many passengers were on the {vehicle} after the first stop?"),
                ("a-b", ((20, 40), (3, 10)),
                 ("A {vehicle} left the station with {a} passengers. At the first stop, {b} got "
                  "off."),
                 "There were {calc} passengers.",
                 "How many passengers were on the {vehicle} after the first stop?"),
            ],
            [
                ("+k", (3, 12),
                 "At the second stop, {k} people got on.",
                 "There were then {calc} passengers.",
                 "How many passengers were on the {vehicle} after the second stop?"),
                ("-k", (2, 8),
                 "At the second stop, {k} people got off.",
                 "There were then {calc} passengers.",
                 "How many passengers were on the {vehicle} after the second stop?"),
            ],
            [
                ("*k", (2, 5),
                 "Each of those passengers had paid ${k} for a ticket.",
                 "They paid {calc} dollars for tickets.",
                 "How many dollars had those passengers paid for tickets?"),
            ],
            [
                ("%k", _PCT,
                 "The driver, {name}, earns {k}% of the ticket money.",
                 "{name} earns {calc} dollars.",
                 "How many dollars does {name} earn?"),
            ],
            [
                ("*k", (3, 7),
                 "{name} drives this route {k} times a week and earns the same amount each trip.",
                 "{Pron} earns {calc} dollars a week.",
                 "How many dollars does {name} earn in a week?"),
            ],
        ],
    },
    {
        "id": "pancakes",
        "vars": [
            {"dish": "pancakes"},
            {"dish": "waffles"},
            {"dish": "crepes"},
            {"dish": "omelets"},
        ],
        "steps": [
            [
                ("a+b", ((2, 6), (2, 4)),
                 "One batch of {dish} needs {a} eggs for the batter and {b} eggs for the topping.",
                 "One batch uses {calc} eggs.",
                 "How many eggs does one batch of {dish} use?"),
            ],
            [
                ("*k", (3, 10),
                 "{name} is making {k} batches for a party.",
                 "{Pron} needs {calc} eggs.",
                 "How many eggs does {name} need?"),
            ],
            [
                ("/k", (6, 12),
                 "Eggs come in cartons of {k}.",
                 "{Pron} needs {calc} cartons.",
                 "How many cartons of eggs does {name} need?"),
            ],
            [
                ("*k", (2, 6),
                 "Each carton costs ${k}.",
                 "The eggs cost {calc} dollars.",
                 "How many dollars do the eggs cost?"),
            ],
            [
                ("-k", (2, 5),
                 "{Pron} has a coupon for ${k} off.",
                 "{Pron} pays {calc} dollars.",
                 "How many dollars does {name} pay for the eggs?"),
                ("+k", (3, 9),
                 "{Pron} also buys a bottle of syrup for ${k}.",
                 "{Pron} spends {calc} dollars in total.",
                 "How many dollars does {name} spend in total?"),
            ],
        ],
    },
    {
        "id": "track",
        "vars": [],
        "steps": [
            [
                ("a+b", ((3, 10), (2, 8)),
                 "{name} ran {a} laps around the track in the morning and {b} laps in the evening.",
                 "{Pron} ran {calc} laps that day.",
                 "How many laps did {name} run that day?"),
            ],
            [
                ("*k", [200, 250, 400],
                 "Each lap is {k} meters long.",
                 "{Pron} ran {calc} meters that day.",
                 "How many meters did {name} run that day?"),
            ],
            [
                ("*k", (2, 7),
                 "{Pron} runs the same distance every day for {k} days.",
                 "{Pron} runs {calc} meters in {k} days.",
                 "How many meters does {name} run in those {k} days?"),
            ],
            [
                ("/k", (1000,),
                 "There are {k} meters in a kilometer.",
                 "That is {calc} kilometers.",
                 "How many kilometers does {name} run in those days?"),
            ],
            [
                ("*k", (2, 10),
                 "A sponsor pays ${k} to a charity for every kilometer {pron} runs.",
                 "The sponsor pays {calc} dollars.",
                 "How many dollars does the sponsor pay?"),
            ],
        ],
    },
    {
        "id": "stickers",
        "vars": [
            {"thing": "stickers"},
            {"thing": "stamps"},
            {"thing": "postcards"},
            {"thing": "trading cards"},
        ],
        "steps": [
            [
                ("a+b", ((20, 60), (10, 40)),
                 "{name} had {a} {thing}, and {friend} gave {obj} {b} more.",
                 "{name} had {calc} {thing}.",
                 "How many {thing} did {name} have?"),
                ("a-b", ((30, 80), (4, 15)),
                 "{name} had {a} {thing} and traded {b} of them away.",
                 "{name} had {calc} {thing} left.",
                 "How many {thing} did {name} have left?"),
            ],
            [
                ("frac", None,
                 "{Pron} put {frac} of those {thing} into an album.",
                 "{Pron} put {calc} {thing} into the album.",
                 "How many {thing} did {name} put into the album?"),
            ],
            [
                ("/k", (2, 3, 4, 5, 6),
                 "Each album page holds {k} {thing}.",
                 "{Pron} filled {calc} pages.",
                 "How many album pages did {name} fill?"),
            ],
            [
                ("k-", (5, 30),
                 "The album has {k} pages in all.",
                 "{calc} pages are still empty.",
                 "How many pages of the album are still empty?"),
            ],
            [
                ("*k", (2, 4),
                 "{Pron} decorates every empty page with {k} drawings.",
                 "{Pron} makes {calc} drawings.",
                 "How many drawings does {name} make?"),
            ],
        ],
    },
    {
        "id": "library",
        "vars": [],
        "steps": [
            [
                ("a+b", ((20, 60), (20, 60)),
                 "A library received {a} new books on Monday and {b} new books on Tuesday.",
                 "It received {calc} new books.",
                 "How many new books did the library receive?"),
                ("a-b", ((40, 90), (5, 20)),
                 "A library received {a} new books, but {b} of them were damaged and sent back.",
                 "{calc} new books were kept.",
                 "How many new books did the library keep?"),
            ],
            [
                ("/k", (4, 5, 6, 8, 10, 12),
                 "The librarian, {name}, puts them on shelves, {k} books per shelf.",
                 "{Pron} fills {calc} shelves.",
                 "How many shelves does {name} fill?"),
            ],
            [
                ("*k", (4, 15),
                 "Each shelf takes {obj} {k} minutes to label and sort.",
                 "The shelves take {calc} minutes.",
                 "How many minutes do the shelves take?"),
            ],
            [
                ("+k", (10, 30),
                 "{Pron} also takes a break of {k} minutes.",
                 "The job takes {calc} minutes in all.",
                 "How many minutes does the whole job take?"),
            ],
            [
                ("/k", (60,),
                 "There are {k} minutes in an hour.",
                 "That is {calc} hours.",
                 "How many hours does the whole job take?"),
            ],
        ],
    },
    {
        "id": "pizza_party",
        "vars": [],
        "steps": [
            [
                ("a+b", ((6, 20), (3, 12)),
                 "At {name}'s party there are {a} children and {b} adults.",
                 "{calc} people come.",
                 "How many people come to the party?"),
            ],
            [
                ("*k", (2, 4),
                 "Each person eats {k} slices of pizza.",
                 "They eat {calc} slices.",
                 "How many slices of pizza do they eat?"),
            ],
            [
                ("/k", (6, 8, 10, 12),
                 "Each pizza is cut into {k} slices.",
                 "{name} needs {calc} pizzas.",
                 "How many pizzas does {name} need?"),
            ],
            [
                ("*k", (8, 16),
                 "Each pizza costs ${k}.",
                 "The pizzas cost {calc} dollars.",
                 "How many dollars do the pizzas cost?"),
            ],
            [
                ("%k", (10, 20, 25),
                 "{name} adds a tip of {k}% of that cost.",
                 "The tip is {calc} dollars.",
                 "How many dollars is the tip?"),
                ("+k", (3, 9),
                 "Delivery costs ${k} more.",
                 "{name} pays {calc} dollars in total.",
                 "How many dollars does {name} pay in total?"),
            ],
        ],
    },
    {
        "id": "cycling",
        "vars": [],
        "steps": [
            [
                ("a+b", ((10, 40), (10, 40)),
                 "{name} cycled {a} kilometers on Saturday and {b} kilometers on Sunday.",
                 "{Pron} cycled {calc} kilometers that weekend.",
                 "How many kilometers did {name} cycle that weekend?"),
            ],
            [
                ("*k", (2, 6),
                 "{Pron} cycles the same distance every weekend for {k} weekends.",
                 "{Pron} cycles {calc} kilometers in all.",
                 "How many kilometers does {name} cycle in all?"),
            ],
            [
                ("/k", (10, 12, 15, 20),
                 "{Pron} rides at an average speed of {k} kilometers per hour.",
                 "{Pron} spends {calc} hours cycling.",
                 "How many hours does {name} spend cycling?"),
            ],
            [
                ("*k", [60],
                 "There are {k} minutes in an hour.",
                 "That is {calc} minutes.",
                 "How many minutes does {name} spend cycling?"),
            ],
            [
                ("/k", (20, 30, 40, 45),
                 "While riding, {pron} listens to podcast episodes that are {k} minutes long.",
                 "{Pron} listens to {calc} episodes.",
                 "How many episodes does {name} listen to?"),
            ],
        ],
    },
    {
        "id": "hens",
        "vars": [],
        "steps": [
            [
                ("a+b", ((5, 15), (3, 10)),
                 "{name} has {a} hens and buys {b} more.",
                 "{Pron} has {calc} hens.",
                 "How many hens does {name} have now?"),
                ("a-b", ((12, 25), (2, 6)),
                 "{name} had {a} hens, but a fox took {b} of them.",
                 "{Pron} has {calc} hens left.",
                 "How many hens does {name} have left?"),
            ],
            [
                ("*k", (4, 6),
                 "Each hen lays {k} eggs a week.",
                 "The hens lay {calc} eggs a week.",
                 "How many eggs do the hens lay each week?"),
            ],
            [
                ("-k", (4, 12),
                 "{Pron} uses {k} eggs a week for baking.",
                 "{Pron} has {calc} eggs left each week.",
                 "How many eggs does {name} have left each week?"),
            ],
            [
                ("/k", (6, 12),
                 "{Pron} sells the rest in cartons of {k}.",
                 "{Pron} sells {calc} cartons a week.",
                 "How many cartons does {name} sell each week?"),
            ],
            [
                ("*k", (2, 5),
                 "Each carton sells for ${k}.",
                 "{Pron} earns {calc} dollars a week.",
                 "How many dollars does {name} earn each week?"),
            ],
        ],
    },
    {
        "id": "water_tank",
        "vars": [
            {"liquid": "water"},
            {"liquid": "rainwater"},
            {"liquid": "spring water"},
        ],
        "steps": [
            [
                ("a+b", ((40, 120), (20, 80)),
                 "A tank held {a} liters of {liquid}, and {name} added {b} liters.",
                 "The tank held {calc} liters.",
                 "How many liters were in the tank?"),
                ("a-b", ((80, 200), (5, 30)),
                 "A tank held {a} liters of {liquid}, but {b} liters leaked out.",
                 "The tank held {calc} liters.",
                 "How many liters were left in the tank?"),
            ],
            [
                ("-k", (3, 15),
                 "{name} used {k} liters to water the garden.",
                 "{calc} liters were left.",
                 "How many liters were left in the tank?"),
            ],
            [
                ("/k", (2, 4, 5, 10),
                 "{Pron} poured the rest into jugs that hold {k} liters each.",
                 "{Pron} filled {calc} jugs.",
                 "How many jugs did {name} fill?"),
            ],
            [
                ("*k", (2, 6),
                 "{Pron} sold each jug at the market for ${k}.",
                 "{Pron} made {calc} dollars.",
                 "How many dollars did {name} make?"),
            ],
            [
                ("-k", (2, 10),
                 "{Pron} paid ${k} for the market stall.",
                 "{Pron} kept {calc} dollars.",
                 "How many dollars did {name} keep?"),
            ],
        ],
    },
    {
        "id": "cinema",
        "vars": [
            {"show": "afternoon show"},
            {"show": "evening show"},
            {"show": "matinee"},
        ],
        "steps": [
            [
                ("a+b", ((30, 90), (20, 60)),
                 "A cinema sold {a} adult tickets and {b} child tickets for the {show}.",
                 "It sold {calc} tickets.",
                 "How many tickets did the cinema sell for the {show}?"),
            ],
            [
                ("k-", (10, 60),
                 "The cinema has {k} seats.",
                 "{calc} seats were empty.",
                 "How many seats were empty?"),
            ],
            [
                ("*k", (6, 12),
                 "The manager, {name}, says each empty seat means ${k} of lost sales.",
                 "The empty seats cost {calc} dollars in lost sales.",
                 "How many dollars in sales were lost because of empty seats?"),
            ],
            [
                ("*k", (2, 5),
                 "The same thing happens at each of the {k} shows that day.",
                 "The cinema loses {calc} dollars that day.",
                 "How many dollars does the cinema lose that day?"),
            ],
            [
                ("/k", (2, 4, 5),
                 ("{name} plans to win this back with a promotion over {k} weeks, recovering the "
                  "same amount each week."),
                 "The promotion must recover {calc} dollars a week.",
                 "How many dollars must the promotion recover each week?"),
            ],
        ],
    },
    {
        "id": "wages",
        "vars": [
            {"job": "a bookstore"},
            {"job": "a cafe"},
            {"job": "a bike shop"},
            {"job": "a garden center"},
        ],
        "steps": [
            [
                ("a+b", ((3, 8), (3, 8)),
                 "{name} worked {a} hours at {job} on Monday and {b} hours on Tuesday.",
                 "{Pron} worked {calc} hours.",
                 "How many hours did {name} work?"),
            ],
            [
                ("*k", (10, 20),
                 "{Pron} earns ${k} an hour.",
                 "{Pron} earned {calc} dollars.",
                 "How many dollars did {name} earn?"),
            ],
            [
                ("%k", (60, 75, 80),
                 "After taxes, {pron} keeps {k}% of {poss} pay.",
                 "{Pron} takes home {calc} dollars.",
                 "How many dollars does {name} take home?"),
            ],
            [
                ("-k", (6, 20),
                 "{Pron} spends ${k} on lunch.",
                 "{Pron} has {calc} dollars left.",
                 "How many dollars does {name} have left?"),
            ],
            [
                ("/k", (2, 3, 4),
                 "{Pron} divides what is left equally into {k} envelopes.",
                 "Each envelope gets {calc} dollars.",
                 "How many dollars go into each envelope?"),
            ],
        ],
    },
    {
        "id": "knitting",
        "vars": [
            {"garment": "scarves"},
            {"garment": "hats"},
            {"garment": "blankets"},
            {"garment": "pairs of mittens"},
        ],
        "steps": [
            [
                ("a+b", ((3, 12), (2, 10)),
                 "{name} knitted {a} {garment} in October and {b} {garment} in November.",
                 "{Pron} knitted {calc} {garment}.",
                 "How many {garment} did {name} knit?"),
                ("a-b", ((10, 24), (2, 6)),
                 "{name} knitted {a} {garment} and unraveled {b} that came out too small.",
                 "{Pron} had {calc} {garment} left.",
                 "How many {garment} did {name} have left?"),
            ],
            [
                ("*k", (2, 5),
                 "Each one used {k} balls of yarn.",
                 "{Pron} used {calc} balls of yarn.",
                 "How many balls of yarn did {name} use?"),
            ],
            [
                ("*k", (3, 8),
                 "A ball of yarn costs ${k}.",
                 "The yarn cost {calc} dollars.",
                 "How many dollars did the yarn cost?"),
            ],
            [
                ("%k", _PCT,
                 "{friend} paid for {k}% of the yarn.",
                 "{friend} paid {calc} dollars.",
                 "How many dollars did {friend} pay?"),
            ],
            [
                ("k-", (10, 40),
                 "{friend} had brought ${k} to the yarn store.",
                 "{friend} had {calc} dollars left.",
                 "How many dollars did {friend} have left?"),
            ],
        ],
    },
]
# fmt: on
