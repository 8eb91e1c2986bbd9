"""Entry point: `python -m pointer_gen.run --mode=train|eval|decode|export [flags]`."""

import contextlib
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from pointer_gen import stopping  # absl only: imported before TensorFlow

if __name__ == "__main__":
  # Before TensorFlow's import, which takes seconds: Ctrl-C or SIGTERM stops cleanly from the
  # first moment (stopping.py).
  stopping.install()

from absl import app
from absl import flags
from absl import logging

from pointer_gen import checkpoints
from pointer_gen import config
from pointer_gen import data
from pointer_gen import decode
from pointer_gen import demo_data
from pointer_gen import distribute
from pointer_gen import environment
from pointer_gen import evaluate
from pointer_gen import export
from pointer_gen import raw_text
from pointer_gen import records
from pointer_gen import run_lock
from pointer_gen import run_record
from pointer_gen import train
from pointer_gen import train_utilities
from pointer_gen import usage
from pointer_gen import vocab as vocab_lib
from pointer_gen.errors import DataError
from pointer_gen.errors import OutputError

FLAGS = flags.FLAGS
config.define_flags()


def resolve_data(hps, given=frozenset()):
  """Fills in the demo corpus when --data_path is empty; requires --exp_name otherwise.
  `given`: the flags the user set (a vocab_path not among them came from run_config.json)."""
  if hps.data_path:
    if not hps.exp_name:
      raise DataError("--exp_name is required with --data_path (the run directory is "
                      "--log_root/--exp_name)")
    if not hps.vocab_path:
      raise DataError("--vocab_path is required with --data_path")
    return hps
  if hps.vocab_path and hps.mode == "export":
    return hps  # export reads only the vocab, no data
  demo_dir = os.path.join(hps.log_root or "runs", "demo_data")
  demo_vocab = demo_data.demo_vocab_path(demo_dir)
  recorded = run_record.read(hps.run_dir)
  if "vocab_path" in given and not recorded:
    raise DataError("--vocab_path was given without --data_path; give both, or neither to "
                    "use the demo corpus")
  if ("vocab_path" not in given and hps.vocab_path
      and os.path.abspath(hps.vocab_path) != os.path.abspath(demo_vocab)):
    raise DataError(f"--data_path is required: {run_record.path_in(hps.run_dir)} says this run "
                    f"was trained with the vocab {hps.vocab_path}, not on the demo corpus")
  corpus = demo_data.ensure_demo_corpus(demo_dir)
  if "vocab_path" in given:
    # In place of a recorded vocab that is gone (the run was moved): the run's vocab, the
    # checksum says, must be the demo corpus's.
    _check_is_demo_run(hps, recorded, corpus["vocab"])
  split = "train" if hps.mode == "train" else "val"
  logging.info("No --data_path: using the built-in demo corpus (%s split) at %s", split,
               corpus[split])
  return hps.replace(data_path=corpus[split], vocab_path=corpus["vocab"])


def _check_is_demo_run(hps, recorded, demo_vocab):
  expected = recorded.get("vocab_sha256")
  if expected and run_record.file_checksum(demo_vocab) != expected:
    vocab = run_record.recorded_vocab_path(hps.run_dir, recorded)
    raise DataError(f"--data_path is required: {run_record.path_in(hps.run_dir)} says this run "
                    f"was trained with the vocab {vocab} (sha256 {expected}), not on the demo "
                    f"corpus (vocab {demo_vocab})")


def checkpoint_to_load(hps):
  """The checkpoint whose model the mode builds: the one it loads (the first one, for eval
  beside training), or None when there is none yet (a new run)."""
  if hps.restore_best_model:
    return checkpoints.newest(hps.eval_dir)
  if hps.mode == "export":
    return export.resolve_checkpoint(hps)
  if hps.mode == "decode" or (hps.mode == "eval" and hps.single_pass):
    return checkpoints.resolve(hps, hps.ckpt_path)
  return checkpoints.newest(hps.train_dir)


def settle_hparams(flag_values):
  """The run's HParams: the flags, with those left out taken from the run's run_config.json
  (a conflicting one is an error), the data resolved and checked, before anything is written."""
  hps = config.HParams.from_flags(flag_values)
  given = config.given_flags(flag_values)
  utility = hps.convert_to_coverage_model or hps.restore_best_model
  if utility and hps.mode != "train":
    raise DataError("--convert_to_coverage_model and --restore_best_model work with "
                    f"--mode=train, not --mode={hps.mode}")
  if hps.data_path and hps.mode != "export" and not utility:
    records.expand_glob(hps.data_path)  # a glob that matches nothing fails before any mkdir
  if hps.mode == "eval" and not hps.single_pass:
    evaluate.wait_for_train_dir(hps)  # started with its trainer, it needs the trainer's record
  # A train dir without a checkpoint holds no model yet: training it (re)writes the record.
  recorded = None
  if utility or hps.mode != "train" or checkpoints.newest(hps.train_dir):
    changeable = run_record.CHANGEABLE_BY_TRAIN if hps.mode == "train" else ()
    hps = run_record.reconcile(hps, given, changeable)
    recorded = run_record.read(hps.run_dir)
    # The conversion reads a model without coverage and writes one with it (--coverage).
    path = None if hps.convert_to_coverage_model else checkpoint_to_load(hps)
    if path:
      hps = checkpoints.with_coverage_of(hps, given, path)
  hps = resolve_data(hps, given)
  vocab_lib.check_tokenization(hps.vocab_path, hps.tokenizer, hps.lowercase)
  hps = raw_text.settle(hps, given, recorded)
  if hps.mode == "export":
    raw_text.required(hps, "--mode=export")  # the SavedModel tokenises raw text
  elif not utility:
    raw_text.check_data(hps)
  return hps


def run_train(hps, vocab, strategy):
  # Only the chief writes the run directory; the other workers write private temporary ones.
  chief = distribute.is_chief(strategy)
  with run_lock.held(hps.run_dir) if chief else contextlib.nullcontext():
    # A new run's record comes before its train dir, which an eval started beside waits for;
    # a resumed run's after the restore, so that a checkpoint not fitting the flags fails first.
    resumed = checkpoints.newest(hps.train_dir)
    if chief and not resumed:
      run_record.write(hps, new_run=True)
    trainer = train.Trainer(hps, vocab, strategy)
    trainer.restore()
    if chief and resumed:
      run_record.write(hps)
    history = trainer.train(restored=True)
  if history:
    print(_curve_summary(history))
  print(f"Checkpoints and TensorBoard logs: {os.path.abspath(hps.train_dir)}")
  # Before the trainer goes: tearing down its input pipeline would take seconds.
  stopping.exit_if_requested()


def run_checkpoint_utility(hps, vocab):
  """--convert_to_coverage_model / --restore_best_model: write one checkpoint and exit."""
  if hps.convert_to_coverage_model and hps.restore_best_model:
    raise DataError("--convert_to_coverage_model and --restore_best_model: give one at a time")
  with run_lock.held(hps.run_dir, "checkpoint utility"):
    if hps.convert_to_coverage_model:
      path = train_utilities.convert_to_coverage_model(hps, len(vocab))
      _record_phase(hps, path, "convert_to_coverage_model")
      print(f"Wrote the coverage model {path} (fresh w_c and optimizer); train on with "
            "--coverage")
    else:
      source = checkpoints.newest(hps.eval_dir)
      path = train_utilities.restore_best_model(hps, len(vocab))
      _record_phase(hps, path, "restore_best_model")
      if hps.coverage:
        print(f"Wrote the best model {source} (with coverage) as {path}, the newest checkpoint "
              "(fresh optimizer): training resumes from it")
      else:
        print(f"Wrote the best model {source} (without coverage) as {path}, the newest "
              "checkpoint (fresh optimizer): training resumes from it without coverage; "
              "--convert_to_coverage_model is the way back to coverage")


def _record_phase(hps, path, how):
  """The run's record follows the model a utility wrote (its coverage, the phase it begins)."""
  run_record.write(hps, run_record.recorded_num_train_steps(hps.run_dir),
                   phase_begins=(checkpoints.step_of(path), how))


def run_eval(hps, vocab):
  if hps.single_pass:
    scored = evaluate.run_single_pass(hps, vocab)
    if scored is None:  # stopped by Ctrl-C or SIGTERM
      return
    path, result = scored
    print(f"{result['checkpoint']}: loss {result['loss']:.4f} over {result['num_examples']} "
          f"examples ({result['num_target_tokens']} target tokens); metrics in {path}")
    return
  evaluator = evaluate.ConcurrentEvaluator(hps, vocab)
  scored = evaluator.run()
  best = evaluator.best_manager.latest_checkpoint
  print(f"Scored {scored} checkpoint{'' if scored == 1 else 's'}; best model: "
        f"{best or 'none saved'}")
  # Before the evaluator goes: tearing down its input pipeline would take seconds.
  stopping.exit_if_requested()


def _curve_summary(history):
  """First vs last tenth of the run, so noise from single batches does not mislead."""
  tenth = max(1, len(history) // 10)

  def mean(rows, key):
    values = [row[key] for row in rows if key in row]
    return sum(values) / len(values) if values else None

  parts = [f"Trained steps {history[0]['step']}-{history[-1]['step']}:"]
  for key, label in (("loss", "loss"), ("coverage_loss", "coverage loss"),
                     ("p_gen_mean", "mean p_gen")):
    first, last = mean(history[:tenth], key), mean(history[-tenth:], key)
    if first is not None:
      parts.append(f"{label} {first:.3f} -> {last:.3f}")
  return " ".join(parts[:1]) + " " + ", ".join(parts[1:]) + " (means of the first and last tenth)"


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"Unexpected arguments: {' '.join(argv[1:])}")
  stopping.exit_if_requested()  # a signal while TensorFlow was being imported
  try:
    hps = settle_hparams(FLAGS)
    if "raw_tokenizer" in config.given_flags(FLAGS) and hps.mode != "train":
      run_record.add_raw_text(hps)  # train and the utilities write the whole record
    environment.configure_tensorflow(hps.debug)
    utility = hps.convert_to_coverage_model or hps.restore_best_model
    # Before any TensorFlow op runs: a multi-worker strategy can only be made at program start.
    strategy = (distribute.make_strategy(hps.strategy, hps.tpu)
                if hps.mode == "train" and not utility else None)
    vocab = vocab_lib.Vocab.from_file(hps.vocab_path, hps.vocab_size)
    if hps.mode != "export" and not utility:
      data.warn_if_many_oovs(hps, vocab)
    if utility or hps.mode == "export":
      # One-shot writes with their own clean-up: Ctrl-C interrupts them as usual.
      stopping.exit_if_requested()
      stopping.uninstall()
    if utility:
      run_checkpoint_utility(hps, vocab)
    elif hps.mode == "train":
      run_train(hps, vocab, strategy)
    elif hps.mode == "eval":
      run_eval(hps, vocab)
    elif hps.mode == "export":
      export.run(hps, vocab)
    else:
      decode.run(hps, vocab)
    stopping.exit_if_requested()
  except (DataError, OutputError, train.NonFiniteError) as e:
    logging.error("%s", e)
    print(f"error: {e}", file=sys.stderr)
    sys.exit(1)


def parse_flags(argv):
  """absl's parsing, except that --help prints the project's flags grouped by mode (exit 0)."""
  before_end = argv[1:argv.index("--")] if "--" in argv else argv[1:]
  if any(arg in usage.HELP_ARGS for arg in before_end):
    print(usage.help_text(FLAGS))
    sys.exit(0)
  return app.parse_flags_with_usage(argv)


if __name__ == "__main__":
  app.run(main, flags_parser=parse_flags)
