"""How raw text becomes a run's tokens (`raw_tokenizer`, `raw_lowercase`), kept apart from how
its data files are read (`tokenizer`, `lowercase`).

The original's `.bin` files hold text tokenised before training (CNN/DailyMail's by CoreNLP and
lower-casing), which a run reads by splitting on whitespace; a SavedModel, and a decode of raw
JSONL, must turn raw text into tokens as that data was prepared. That is a fact of the data,
and of the model trained on it, known from:
- the run's run_config.json, where training, a converted checkpoint and a statement record it;
- the vocab's `<vocab>.tokenization.json`, where tools/make_datafiles.py writes it;
- the data: text read with a tokenizer other than whitespace, or the raw text (a format that
  is not pre-tokenised: JSONL) a new run trains on, is raw text, which became the model's tokens
  by that --tokenizer and --lowercase;
- the user's statement, --raw_tokenizer and --raw_lowercase, for data and checkpoints that carry
  no record (the original's finished_files and pretrained models: ptb, lower-cased).
Two of them that disagree are an error naming both.

What is raw text is the data format's to say (formats.base.DataFormat.pretokenized): the functions
that look at the data take the formats of --data_path's files, as settle.py finds them.

Each answer is a Tokenization: `known` (None when nothing says it) and `required` (a DataError
then) are how raw text became the run's tokens; `for_raw_text` is what the run applies to raw
text (the data files' when unknown); `for_data` what reads --data_path's files.
"""

from pointer_gen.base.errors import DataError
from pointer_gen.base.errors import flag_text
from pointer_gen.data import run_record
from pointer_gen.text import vocab as vocab_lib
from pointer_gen.text.tokenizers import Tokenization

STATEMENT = "--raw_tokenizer and --raw_lowercase"
# For the data and checkpoints that carry no record.
PAPER = "--raw_tokenizer=ptb --raw_lowercase"
# How the source of the user's statement starts (`settle`'s list of what knows the value).
_GIVEN = "given as "


def settle(hps, given, recorded=None, formats=()):
  """`hps` with raw_tokenizer and raw_lowercase from every source that knows them (both None
  when none does). `given`: the flags the user set; `recorded`: the run's record, if this mode
  reads it; `formats`: those of the --data_path files.

  Raises DataError when two sources disagree, or for --raw_lowercase without --raw_tokenizer. A
  statement of --raw_tokenizer alone says nothing of the case: it takes a known source's.
  """
  stated = [f"--{name}" for name in ("raw_tokenizer", "raw_lowercase") if name in given]
  if stated == ["--raw_lowercase"]:
    raise DataError(f"--raw_lowercase={flag_text(hps.raw_lowercase)} without --raw_tokenizer: "
                    "state how raw text became the data's tokens with both")
  known = []  # (value, where it came from)
  if recorded and recorded.raw_tokenizer is not None:
    known.append(((recorded.raw_tokenizer, recorded.raw_lowercase),
                  f"recorded in {run_record.path_in(hps.run_dir)}"))
  sidecar = vocab_lib.read_tokenization(hps.vocab_path) if hps.vocab_path else None
  if sidecar and sidecar.get("raw_tokenizer") is not None:
    known.append(((sidecar["raw_tokenizer"], sidecar["raw_lowercase"]),
                  f"recorded in {vocab_lib.tokenization_path(hps.vocab_path)}"))
  flags = f"--tokenizer={hps.tokenizer} --lowercase={flag_text(hps.lowercase)}"
  if hps.tokenizer != "whitespace":
    known.append(((hps.tokenizer, hps.lowercase), f"{flags}, which read raw text"))
  elif not known and not stated and hps.mode == "train" and _all_raw(formats):
    # Raw text that nothing else describes becomes the model's tokens as training reads it.
    known.append(((hps.tokenizer, hps.lowercase), f"{flags}, with which this run reads its "
                  f"{_names(formats)} training data"))
  if stated:
    lowercase = (known[0][0][1] if known and "--raw_lowercase" not in stated
                 else bool(hps.raw_lowercase))
    known.insert(0, ((hps.raw_tokenizer, lowercase), _GIVEN + " and ".join(stated)))
  for value, source in known[1:]:
    if value != known[0][0]:
      raise _conflict(known[0], (value, source))
  tokenizer, lowercase = known[0][0] if known else (None, None)
  return hps.replace(raw_tokenizer=tokenizer, raw_lowercase=lowercase)


def known(hps):
  """The Tokenization that turned raw text into the run's tokens, or None when unknown."""
  if hps.raw_tokenizer is not None:
    return Tokenization(hps.raw_tokenizer, bool(hps.raw_lowercase))
  if hps.tokenizer != "whitespace":
    return Tokenization(hps.tokenizer, hps.lowercase)
  return None


def for_raw_text(hps):
  """The Tokenization the run applies to raw text: `known`, or, when that is unknown, the data
  files' (the modes refuse to come here then: `required`, `check_data`)."""
  return known(hps) or Tokenization(hps.tokenizer, hps.lowercase)


def required(hps, needed_by):
  """`known`, or a DataError telling the user what to state. `needed_by`: what needs it."""
  value = known(hps)
  if value is not None:
    return value
  raise DataError(
      f"{needed_by} needs to know how raw text became this model's tokens, and nothing says it: "
      f"the run reads its data with --tokenizer={hps.tokenizer} --lowercase="
      f"{flag_text(hps.lowercase)} (pre-tokenised text, such as the original's .bin files), and "
      f"neither {run_record.path_in(hps.run_dir)} nor the vocab's "
      f"{vocab_lib.tokenization_path(hps.vocab_path)} records how that text was tokenised. "
      f"State it once with {STATEMENT} (then recorded in run_config.json): {PAPER} for "
      "CNN/DailyMail's finished_files and the original's pretrained models; "
      "--raw_tokenizer=whitespace if raw text is to be split on whitespace only")


def for_data(hps, formats):
  """The Tokenization that turns the text of --data_path, files of `formats`, into the model's
  tokens (settle.py puts it in the HParams: `HParams.reads`): pre-tokenised formats
  (`.bin`, TFRecord) are read with --tokenizer and --lowercase; raw text (JSONL) is tokenised as
  the data was prepared (the same unless the run was trained on pre-tokenised text; when that is
  unknown, as the data files, which `check_data` refuses for the modes). Raises DataError for a
  glob mixing the two when they differ."""
  files = Tokenization(hps.tokenizer, hps.lowercase)
  raw = for_raw_text(hps)
  if raw == files:
    return files
  if _all_raw(formats):
    return raw
  if any(not f.pretokenized for f in formats):
    pretokenized = _names(f for f in formats if f.pretokenized)
    raw_names = _names(f for f in formats if not f.pretokenized)
    raise DataError(f"--data_path={hps.data_path} mixes {pretokenized} files (pre-tokenised, "
                    f"read with --tokenizer={hps.tokenizer}) and {raw_names} files (raw text, "
                    "tokenised as the data was prepared): give one format at a time")
  return files


def check_data(hps, formats):
  """Raises DataError when --data_path, files of `formats`, holds raw text (JSONL) and how raw
  text became the run's tokens is unknown, when it mixes formats that are read differently, and
  when pre-tokenised files (.bin) whose vocab says their text is tokenised would be tokenised
  again (ptb is not idempotent: `-lrb-` would become `- lrb -`). Returns `for_data`'s value."""
  raw = [f for f in formats if not f.pretokenized]
  if known(hps) is None and raw:
    required(hps, f"--data_path={hps.data_path} ({_names(raw)}: raw text)")
  reads = for_data(hps, formats)
  sidecar = vocab_lib.read_tokenization(hps.vocab_path) if hps.vocab_path else None
  files = (hps.tokenizer, hps.lowercase)
  pretokenized = [f for f in formats if f.pretokenized]
  if (pretokenized and sidecar and files != (sidecar["tokenizer"], sidecar["lowercase"])
      and files == (sidecar.get("raw_tokenizer"), sidecar.get("raw_lowercase"))):
    raise DataError(
        f"--tokenizer={hps.tokenizer} --lowercase={flag_text(hps.lowercase)} would tokenise the "
        f"{_names(pretokenized)} files of --data_path={hps.data_path} again: "
        f"{vocab_lib.tokenization_path(hps.vocab_path)} says their text is already tokenised "
        f"that way from raw text, and is read with --tokenizer={sidecar['tokenizer']} "
        f"--lowercase={flag_text(sidecar['lowercase'])}. Leave --tokenizer and --lowercase "
        "out: the run records how raw text became the tokens and applies it to raw text "
        "(export, decode of JSONL)")
  return reads


def _all_raw(formats):
  """Whether `formats` (a list) are all raw text, and there are some."""
  return bool(formats) and not any(f.pretokenized for f in formats)


def _names(formats):
  """The formats' labels (as `.bin`), each once, in order."""
  return " and ".join(dict.fromkeys(f.label for f in formats))


def _conflict(first, second):
  """The DataError of two sources that disagree; a statement of the user's comes first, showing
  only what it stated."""
  (a, a_source), (b, b_source) = sorted((first, second),
                                        key=lambda k: not k[1].startswith(_GIVEN))
  if a_source.startswith(_GIVEN):
    stated = a_source[len(_GIVEN):]
    hint = f"leave {stated} out to use the known value, or start a new run (another --exp_name)"
    a_text = _pair(a) if "--raw_lowercase" in stated else f"raw_tokenizer={a[0]}"
  else:
    hint = "the run, its vocab and its data must agree: use the data and vocab it was made with"
    a_text = _pair(a)
  return DataError(f"how raw text became this run's tokens: {a_text} ({a_source}) "
                   f"contradicts {_pair(b)} ({b_source}); {hint}")


def _pair(value):
  return f"raw_tokenizer={value[0]}, raw_lowercase={flag_text(value[1])}"
