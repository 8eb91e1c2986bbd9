"""A built-in demo corpus, generated on the spot, in the CNN/DM finished_files format.

Ten kinds of short news story, each telling who did what where. The names of people, places and
organisations are made of random syllables, so each one occurs in only an article or two and falls
outside a vocabulary cut to the template words: the summary can only get them right by copying
(the pointer). Every article restates its facts in a lead, a quote and a background sentence, which
tempts a model without coverage to repeat itself.

Text is tokenised and lower-cased like finished_files: tokens joined by single spaces, punctuation
and quote marks (`` '') as separate tokens.
"""

import collections
import json
import os
import random
import re
import secrets
import shutil
import time

from absl import logging

from pointer_gen.base.errors import cannot_create
from pointer_gen.base.errors import make_output_dir
from pointer_gen.formats.base import Record
from pointer_gen.formats.bin_format import BIN
from pointer_gen.text.vocab import count_words, write_tokenization, write_vocab

# Bump whenever the generated files change, so that ensure_demo_corpus regenerates old copies
# (2: the vocab's .tokenization.json).
FORMAT_VERSION = 2
CHUNK_SIZE = 1000
MIN_ARTICLE_TOKENS = 60
MAX_ARTICLE_TOKENS = 150

_Event = collections.namedtuple("_Event", "pools leads quotes backgrounds facts summaries")

# First names are common (in the vocab); the surname after them is the rare word to copy.
_FIRST_NAMES = (
    "anna", "peter", "maria", "james", "sofia", "daniel", "laura", "michael", "elena", "thomas",
    "sarah", "david", "julia", "robert", "clara", "paul", "nina", "mark", "helen", "samuel",
    "eva", "george", "lucy", "martin", "rosa", "simon", "grace", "victor", "irene", "oscar")

_ONSETS = ("b", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z",
           "br", "dr", "gr", "kr", "tr", "st", "sh")
_VOWELS = ("a", "e", "i", "o", "u")
_CODAS = ("", "", "", "n", "r", "l", "s")
# Endings give each kind of name its own look; with two random syllables in front there are
# millions of names per kind, so a name seldom recurs across articles.
_SURNAME_ENDINGS = ("nek", "ov", "ani", "ez", "ski", "ard", "elli", "sen", "ova", "ic")
_PLACE_ENDINGS = ("ira", "ton", "burg", "ova", "mouth", "ford", "stad", "ia", "vale")
_ORG_ENDINGS = ("ex", "ix", "ora", "on", "al", "co", "ant")

_COMMON_POOLS = {
    "day": ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"),
    "day2": ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"),
    "since": ("2009", "2011", "2012", "2014", "2015", "2016", "2018", "2019"),
    "opening": ("2026", "2027", "2028"),
    "n": ("two", "three", "four", "five", "six", "seven"),
    "money": ("12", "20", "35", "40", "55", "80", "150"),
    "pop": ("8,000", "15,000", "30,000", "60,000"),
    "region": ("north", "south", "east", "west"),
    "weather": ("cold and wet", "warm and sunny", "windy", "grey and cloudy"),
    "shop": ("bakery", "cafe", "bookshop", "hardware store", "flower shop"),
    "festival": ("summer", "harvest", "music", "film"),
    "paper": ("herald", "times", "gazette", "post"),
}

# Sentences about the town, not the event: length, and distractor names the pointer must ignore.
_FILLERS = (
    "{place} is a town of about {pop} people in the {region} of the country .",
    "local resident {witness} said the news had been the talk of {place} all week .",
    "`` everyone here is talking about it , '' said {witness} , who runs a {shop} in {place} .",
    "the weather in {place} was {weather} on {day} .",
    "officials said more details would be released later this week .",
    "the news came as {place} prepares for its annual {festival} festival .",
    "the story was first reported by the local newspaper , the {place} {paper} .",
    "a spokesman for the regional government said it was aware of the reports .",
    "more than {money} people shared the news on social media within hours .",
)

_EVENTS = (
    _Event(
        pools={"obj": ("bridge", "hospital", "school", "library", "stadium", "museum",
                       "sports centre", "train station"),
               "season": ("spring", "summer", "autumn")},
        leads=("mayor {name} of {place} announced on {day} that the city will build a new {obj} .",
               "the city of {place} will build a new {obj} , mayor {name} said on {day} ."),
        quotes=("`` this {obj} is what {place} has needed for years , '' mayor {last} told "
                "reporters .",
                "`` the people of {place} deserve a new {obj} , '' {last} said at a news "
                "conference ."),
        backgrounds=("{last} , who has been mayor of {place} since {since} , promised a new {obj} "
                     "during the election campaign .",
                     "{last} first proposed a new {obj} for {place} in {since} ."),
        facts=(("the {obj} will cost about {money} million dollars .",
                "it will cost about {money} million dollars ."),
               ("work on the {obj} is due to start next {season} .", None)),
        summaries=("mayor {last} announced a new {obj} for {place} .",
                   "{place} will build a new {obj} , mayor {last} said .")),
    _Event(
        pools={"crime": ("robbery", "break-in", "fire", "theft"),
               "target": ("bank", "jewellery shop", "petrol station", "post office", "warehouse"),
               "age": ("24", "31", "45")},
        leads=("police in {place} arrested {name} , {age} , on {day} after a {crime} at a local {target} .",
               "{name} , {age} , was arrested in {place} on {day} after a {crime} at a {target} ."),
        quotes=("`` we believe {last} acted alone , '' police chief {other} told reporters in "
                "{place} .",
                "`` the arrest of {last} is a relief for everyone in {place} , '' said police "
                "chief {other_last} ."),
        backgrounds=("{last} , who lives in {place} , is due to appear in court next week .",
                     "the {crime} at the {target} happened late on {day2} night , and {last} was "
                     "arrested hours later ."),
        facts=(("officers found {money} thousand dollars in cash at the home of {last} .",
                "police found {money} thousand dollars at the home of {last} ."),
               ("no one was hurt in the {crime} , police said .", None)),
        summaries=("police in {place} arrested {last} after a {crime} at a {target} .",
                   "{last} was arrested after a {crime} at a {target} in {place} .")),
    _Event(
        pools={"org_suffix": ("united", "rovers", "athletic", "wanderers"),
               "comp": ("cup", "trophy", "shield", "championship"),
               "goals": ("two", "three", "four"),
               "crowd": ("5,000", "20,000")},
        leads=("{name} scored {goals} goals on {day} as {org} won the {comp} final in {place} .",
               "{org} won the {comp} final in {place} on {day} , with striker {name} scoring "
               "{goals} goals ."),
        quotes=("`` scoring {goals} goals in a final is a dream , '' {last} said after the match "
                "in {place} .",
                "`` {last} was the difference today , '' said {org} coach {other} ."),
        backgrounds=("{last} joined {org} {n} years ago and has become the club 's top scorer .",
                     "it is the first time {org} have won the {comp} since {since} ."),
        facts=(("more than {crowd} fans watched the final in {place} .", None),
               ("the win means {org} will play in europe next season .",
                "{org} will play in europe next season .")),
        summaries=("{last} scored {goals} goals as {org} won the {comp} final .",
                   "{org} won the {comp} final after {last} scored {goals} goals .")),
    _Event(
        pools={"org_suffix": ("industries", "group", "motors", "foods", "systems"),
               "facility": ("factory", "warehouse", "research centre", "office", "data centre"),
               "jobs": ("80", "150", "200", "300", "500")},
        leads=("{org} will open a new {facility} in {place} , creating {jobs} jobs , chief "
               "executive {name} said on {day} .",
               "chief executive {name} announced on {day} that {org} is opening a {facility} in "
               "{place} that will employ {jobs} people ."),
        quotes=("`` {place} has the skilled workers we need , '' {last} said .",
                "`` this {facility} shows our commitment to {place} , '' said {last} ."),
        backgrounds=("{org} , which {last} has run since {since} , already employs thousands of "
                     "people across the country .",
                     "{last} said {org} chose {place} over {n} other towns ."),
        facts=(("the {facility} is expected to open in {opening} .",
                "it is expected to open in {opening} ."),
               ("local leaders welcomed the news about the {facility} .", None)),
        summaries=("{org} will open a {facility} in {place} , creating {jobs} jobs .",
                   "chief executive {last} said {org} will open a {facility} in {place} .")),
    _Event(
        pools={"species": ("frog", "beetle", "spider", "orchid", "lizard", "moth", "bat"),
               "habitat": ("forest", "river", "caves", "hills", "wetlands"),
               "size": ("two", "five", "ten")},
        leads=("scientists led by professor {name} of the university of {place} have discovered "
               "a new species of {species} .",
               "a new species of {species} has been found in the {habitat} near {place} by a team "
               "led by professor {name} ."),
        quotes=("`` finding a new {species} here in {place} was a complete surprise , '' {last} "
                "said on {day} .",
                "`` we had walked past this {species} many times , '' said professor {last} ."),
        backgrounds=("{last} has studied the {habitat} around {place} for {n} years .",
                     "the team of professor {last} spent {n} months searching the {habitat} near "
                     "{place} ."),
        facts=(("the {species} is about {size} centimetres long .",
                "it is about {size} centimetres long ."),
               ("the findings were published in a scientific journal on {day} .", None)),
        summaries=("professor {last} discovered a new species of {species} near {place} .",
                   "a team led by {last} found a new {species} in the {habitat} near {place} .")),
    _Event(
        pools={"office": ("governor", "senator", "council leader"),
               "pct": ("52", "55", "58", "61", "64", "67"),
               "job": ("teacher", "doctor", "lawyer"),
               "month": ("january", "march", "may", "september")},
        leads=("{name} won the election for {office} of {place} on {day} with {pct} percent of "
               "the vote .",
               "voters in {place} elected former {job} {name} as their new {office} on {day} , "
               "giving {last} {pct} percent of the vote ."),
        quotes=("`` tonight the people of {place} voted for change , '' {last} told supporters .",
                "`` i will work for every family in {place} , '' said {last} after the result was "
                "announced ."),
        backgrounds=("{last} , a former {job} , beat {other} , who had been {office} of {place} "
                     "since {since} .",
                     "{last} campaigned on better roads and schools for {place} ."),
        facts=(("{last} will take office in {month} .", "{last} takes office in {month} ."),
               ("turnout was high , election officials said .", None)),
        summaries=("{last} was elected {office} of {place} with {pct} percent of the vote .",
                   "{last} won the race for {office} of {place} with {pct} percent .")),
    _Event(
        pools={"disaster": ("storm", "flood", "wildfire", "landslide"),
               "families": ("40", "120", "300", "600")},
        leads=("a {disaster} hit {place} on {day} , forcing {families} families to leave their "
               "homes , fire chief {name} said .",
               "{families} families in {place} had to leave their homes after a {disaster} on "
               "{day} , according to fire chief {name} ."),
        quotes=("`` this is the worst {disaster} {place} has seen in decades , '' {last} said .",
                "`` our teams worked through the night in {place} , '' said fire chief {last} ."),
        backgrounds=("{last} said the {disaster} damaged roads and power lines across {place} .",
                     "{place} was last hit by a major {disaster} in {since} , {last} said ."),
        facts=(("no deaths have been reported .", "no deaths were reported ."),
               ("volunteers handed out blankets and hot food .", None)),
        summaries=("a {disaster} forced {families} families from their homes in {place} .",
                   "fire chief {last} said a {disaster} forced {families} families from their "
                   "homes .")),
    _Event(
        pools={("title", "prize", "work", "craft"): (
                   ("singer", "music prize", "album", "singing"),
                   ("writer", "book prize", "novel", "writing"),
                   ("painter", "art prize", "painting", "painting"),
                   ("director", "film prize", "film", "making films")),
               "young": ("eight", "twelve", "fifteen")},
        leads=("{title} {name} from {place} has won the national {prize} for a new {work} .",
               "the national {prize} went to {title} {name} of {place} at a ceremony on {day} ."),
        quotes=("`` i want to thank everyone back home in {place} , '' {last} said .",
                "`` {craft} is all i ever wanted to do , '' {last} told the audience in {place} ."),
        backgrounds=("{last} began {craft} in {place} at the age of {young} .",
                     "{last} beat {n} other finalists , including {other} , to win the prize ."),
        facts=(("the prize comes with {money} thousand dollars .",
                "the prize is worth {money} thousand dollars ."),
               ("the ceremony was held in the capital .", None)),
        summaries=("{title} {last} from {place} won the national {prize} for a new {work} .",
                   "the national {prize} went to {title} {last} of {place} .")),
    _Event(
        pools={"org_suffix": ("bank", "airlines", "energy", "telecom"),
               "reason": ("a fall in profits", "a data breach", "a pay scandal",
                          "a failed merger"),
               "drop": ("3", "5", "8", "11")},
        leads=("{org} chairman {name} resigned on {day} after {reason} .",
               "{name} has stepped down as chairman of {org} following {reason} , the company "
               "said on {day} ."),
        quotes=("`` it is right that i take responsibility , '' {last} said in a statement .",
                "`` {last} has served {org} well , '' said board member {other} ."),
        backgrounds=("{last} had led {org} , which is based in {place} , since {since} .",
                     "{org} , based in {place} , has faced questions about {reason} for months ."),
        facts=(("shares in {org} fell {drop} percent on the news .",
                "shares in {org} fell {drop} percent ."),
               ("the board will choose a new chairman next month .", None)),
        summaries=("{org} chairman {last} resigned after {reason} .",
                   "{last} stepped down as chairman of {org} after {reason} .")),
    _Event(
        pools={"finder": ("helicopter crew", "search dog", "local farmer"),
               "kind": ("young", "retired", "keen")},
        leads=("{name} , a {kind} hiker , was rescued on {day} after {n} nights lost in "
               "the hills above {place} .",
               "rescuers found hiker {name} in the hills above {place} on {day} after {n} nights "
               "in the cold ."),
        quotes=("`` i never gave up hope , '' {last} told reporters at the hospital in {place} .",
                "`` {last} was very lucky , '' said rescue team leader {other} ."),
        backgrounds=("{last} had set out from {place} on {day2} for a short walk .",
                     "rescue teams from {place} searched for {last} for {n} days ."),
        facts=(("{last} was found by a {finder} .", "{last} was found by a {finder} ."),
               ("{last} is recovering in hospital .", None)),
        summaries=("hiker {last} was rescued after {n} nights lost in the hills above {place} .",
                   "{last} was found alive in the hills above {place} after {n} nights .")),
)

_FIELD = re.compile(r"\{\w+\}")


def template_words():
  """Every word the templates can produce apart from the made-up names: the demo's vocabulary."""
  texts = list(_FIRST_NAMES) + list(_FILLERS)
  for pools in [_COMMON_POOLS] + [e.pools for e in _EVENTS]:
    for values in pools.values():
      texts.extend(" ".join(v) if isinstance(v, tuple) else v for v in values)
  for event in _EVENTS:
    texts.extend(event.leads + event.quotes + event.backgrounds + event.summaries)
    texts.extend(s for fact in event.facts for s in fact if s)
  return frozenset(w for text in texts for w in _FIELD.sub(" ", text).split())


def _made_up_word(rng, endings):
  syllables = [rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS) for _ in range(2)]
  return "".join(syllables) + rng.choice(endings)


def _names(rng, reserved):
  """Made-up names for one article, new to the split (added to `reserved`)."""
  kinds = (("last", _SURNAME_ENDINGS), ("other_last", _SURNAME_ENDINGS),
           ("witness_last", _SURNAME_ENDINGS), ("place", _PLACE_ENDINGS),
           ("org_base", _ORG_ENDINGS))
  names = {}
  for key, endings in kinds:
    word = _made_up_word(rng, endings)
    while word in reserved:
      word = _made_up_word(rng, endings)
    reserved.add(word)
    names[key] = word
  return names


def _slots(rng, event, reserved):
  slots = _names(rng, reserved)
  for key, last in (("name", "last"), ("other", "other_last"), ("witness", "witness_last")):
    slots[key] = f"{rng.choice(_FIRST_NAMES)} {slots[last]}"
  for pools in (_COMMON_POOLS, event.pools):
    for key, values in pools.items():
      value = rng.choice(values)
      slots.update(zip(key, value) if isinstance(key, tuple) else [(key, value)])
  if "org_suffix" in slots:
    slots["org"] = f"{slots['org_base']} {slots['org_suffix']}"
  return slots


def _tokens(template, slots):
  return template.format(**slots).split()


def _article(rng, event, slots):
  """Returns the article and the summary sentence of its fact (None if not worth summarising).

  The lead comes first (news style), then the restatements and fillers in random order.
  """
  body = [rng.choice(event.quotes), rng.choice(event.backgrounds)]
  # A second quote or background now and then: more restatement, more temptation to repeat.
  if rng.random() < 0.5:
    body.append(rng.choice(event.quotes + event.backgrounds))
  fact = rng.choice(event.facts)
  body.append(fact[0])
  body = [_tokens(s, slots) for s in dict.fromkeys(body)]
  lead = _tokens(rng.choice(event.leads), slots)
  length = len(lead) + sum(map(len, body))
  target = rng.randint(MIN_ARTICLE_TOKENS, MAX_ARTICLE_TOKENS)
  for filler in rng.sample(_FILLERS, len(_FILLERS)):
    tokens = _tokens(filler, slots)
    if length >= target or length + len(tokens) > MAX_ARTICLE_TOKENS:
      break
    body.append(tokens)
    length += len(tokens)
  rng.shuffle(body)
  return " ".join(" ".join(s) for s in [lead] + body), fact[1]


def _example(rng, reserved):
  """One (article, abstract sentences) pair."""
  event = rng.choice(_EVENTS)
  slots = _slots(rng, event, reserved)
  article, fact_summary = _article(rng, event, slots)
  sentences = [rng.choice(event.summaries)] + ([fact_summary] if fact_summary else [])
  return article, [" ".join(_tokens(s, slots)) for s in sentences]


def _split_examples(seed, split, count):
  # A string seed is hashed with SHA-512 by `random`, the same on every machine; one stream per
  # split keeps val and test unchanged when num_train changes.
  rng = random.Random(f"pointer_gen demo {seed} {split}")
  # Each name occurs in one article of the split only, so no name's count can reach the
  # template words' and the vocab cut between them is clean.
  reserved = set(template_words())
  return [_example(rng, reserved) for _ in range(count)]


def _paths(out_dir):
  chunk_dir = os.path.join(out_dir, "chunked")
  paths = {split: os.path.join(chunk_dir, f"{split}_*") for split in ("train", "val", "test")}
  paths["vocab"] = os.path.join(out_dir, "vocab")
  return paths


def demo_vocab_path(out_dir):
  """Where the demo corpus in `out_dir` keeps (or will keep) its vocab."""
  return _paths(out_dir)["vocab"]


def generate_demo_corpus(out_dir, seed=0, num_train=2000, num_val=200, num_test=200):
  """Writes the demo corpus (chunked .bin splits and the train vocab) into `out_dir`.

  Returns {"train", "val", "test"}: globs of the chunk files, and "vocab": the vocab file's path.
  """
  start = time.time()
  paths = _paths(out_dir)
  chunk_dir = os.path.dirname(paths["train"])
  os.makedirs(chunk_dir, exist_ok=True)
  sizes = {"train": num_train, "val": num_val, "test": num_test}
  examples = {split: _split_examples(seed, split, n) for split, n in sizes.items()}
  for split, split_examples in examples.items():
    BIN.write_chunks((Record(article, abstract, "demo", i)
                      for i, (article, abstract) in enumerate(split_examples)),
                     chunk_dir, split, CHUNK_SIZE)
  # As for CNN/DM: the words of the train articles and abstracts.
  counts = count_words(article.split() + " ".join(abstract).split()
                       for article, abstract in examples["train"])
  num_words = write_vocab(paths["vocab"], counts)
  # The demo's text is made of its tokens: raw text becomes them by splitting on whitespace.
  write_tokenization(paths["vocab"], "whitespace", False, raw_tokenizer="whitespace",
                     raw_lowercase=False)
  logging.info("Demo corpus (seed %d): %d/%d/%d train/val/test examples, %d vocab words, "
               "in %s (%.1f s)", seed, num_train, num_val, num_test, num_words, out_dir,
               time.time() - start)
  return paths


def _done_record(seed):
  return {"format_version": FORMAT_VERSION, "seed": seed}


def _is_done(out_dir, seed):
  try:
    with open(os.path.join(out_dir, "DONE"), encoding="utf-8") as f:
      return json.load(f) == _done_record(seed)
  except (OSError, ValueError):
    return False


def ensure_demo_corpus(out_dir, seed=0):
  """Returns the paths of the demo corpus in `out_dir`, generating it first if needed.

  A corpus is reused only if its DONE file records this seed and format version. A new one is
  written to a temporary sibling and renamed into place, so an interrupted run never leaves a
  half-written corpus behind.
  """
  out_dir = os.path.abspath(out_dir)
  if _is_done(out_dir, seed):
    logging.info("Reusing the demo corpus in %s (seed %d)", out_dir, seed)
    return _paths(out_dir)
  parent, name = os.path.split(out_dir)
  make_output_dir(parent)
  # A plain mkdir, not mkdtemp (which creates mode 0700): the corpus gets the usual permissions.
  tmp = os.path.join(parent, f".{name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
  try:
    os.mkdir(tmp)
  except OSError as e:  # a read-only --log_root
    raise cannot_create(out_dir, e) from e
  try:
    generate_demo_corpus(tmp, seed)
    with open(os.path.join(tmp, "DONE"), "w", encoding="utf-8") as f:
      json.dump(_done_record(seed), f)
    # Another process (train beside eval) may have finished first; keep its identical copy.
    if _is_done(out_dir, seed):
      logging.info("Demo corpus appeared in %s meanwhile; using it", out_dir)
      return _paths(out_dir)
    if os.path.lexists(out_dir):
      logging.info("Replacing the stale or incomplete demo corpus in %s", out_dir)
      shutil.rmtree(out_dir)
    os.replace(tmp, out_dir)
  finally:
    if os.path.isdir(tmp):
      shutil.rmtree(tmp)
  logging.info("Generated the demo corpus in %s (seed %d)", out_dir, seed)
  return _paths(out_dir)
