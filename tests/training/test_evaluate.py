"""--mode=eval: beside a real training process, the running average and best-model choice, the
reader's handling of checkpoints deleted under it, --single_pass metrics, and what TensorBoard
shows of eval's samples (read through its HTTP API)."""

import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import numpy as np
import pytest
import tensorflow as tf

from pointer_gen import config
from pointer_gen.base import checkpoints
from pointer_gen.base.errors import DataError
from pointer_gen.data import demo as demo_data
from pointer_gen.data import pipeline as data
from pointer_gen.formats import bin_format
from pointer_gen.formats import data_files
from pointer_gen.formats import registry as data_formats
from pointer_gen.formats import skips as skips_lib
from pointer_gen.inference import attention_view
from pointer_gen.inference import eval_samples
from pointer_gen.model import losses
from pointer_gen.model import pointer_generator as model_lib
from pointer_gen.text import vocab as vocab_lib
from pointer_gen.training import evaluate

from helpers import reference
from helpers import events
from helpers import REPO, project_error_lines, run_main, tiny_flags, tiny_hparams

NUM_SAVES = 6
MIN_SCORED = 3
MODEL_FLAGS = tiny_flags(min_dec_steps=2)


def _start(log_path, *args):
  """`python -m pointer_gen.run` with stdout and stderr in files (a pipe could fill and block)."""
  with open(f"{log_path}.out", "w") as out, open(f"{log_path}.err", "w") as err:
    return subprocess.Popen([sys.executable, "-m", "pointer_gen.run", *args], cwd=REPO,
                            stdout=out, stderr=err)


def _read(path):
  with open(path, encoding="utf-8") as f:
    return f.read()


def _wait_until(path, found, process, timeout=120):
  """Polls the log file `path` until `found(its text)`; fails if `process` ends first."""
  deadline = time.time() + timeout
  while not found(_read(path)):
    if process.poll() is not None or time.time() > deadline:
      pytest.fail(f"gave up waiting on {path}:\n{_read(path)[-3000:]}")
    time.sleep(0.2)


def _saved_steps(train_log):
  """The steps of the checkpoints the trainer saved (the last may be saved twice: on time, then
  on exit)."""
  return sorted({int(s) for s in re.findall(r"Saved checkpoint \S+model\.ckpt-(\d+)", train_log)})


@pytest.fixture(scope="module")
def concurrent_run(tmp_path_factory):
  """Eval started first; once it waits for a checkpoint, a trainer saving every second (keep 3).
  Ctrl-C to the trainer after NUM_SAVES checkpoints of which eval scored MIN_SCORED, then to eval
  once it has scored the trainer's last."""
  root = tmp_path_factory.mktemp("eval")
  # Generated once here: two processes generating it at once would race.
  corpus = demo_data.ensure_demo_corpus(str(root / "demo_data"))
  common = [f"--log_root={root}", *MODEL_FLAGS]
  evaluator = _start(root / "eval", "--mode=eval", *common, "--eval_poll_secs=0.2")
  trainer = None
  try:
    # Started together, eval would still be importing TensorFlow while the first checkpoints
    # come and go, and on a busy machine see too few of them.
    _wait_until(root / "eval.err", lambda text: "Waiting for a checkpoint" in text, evaluator)
    trainer = _start(root / "train", "--mode=train", *common, "--checkpoint_secs=1")
    # Stopped by counts, not steps: steps take 30-80 ms here, and eval's first scoring (which
    # compiles) a few seconds, depending on what else the machine runs.
    _wait_until(root / "train.err", lambda text: len(_saved_steps(text)) >= NUM_SAVES, trainer)
    _wait_until(root / "eval.err", lambda text: text.count("eval step") >= MIN_SCORED, evaluator)
    trainer.send_signal(signal.SIGINT)
    assert trainer.wait(timeout=60) == 0, _read(root / "train.err")[-3000:]
    last_step = _saved_steps(_read(root / "train.err"))[-1]
    _wait_until(root / "eval.err", lambda text: f"eval step {last_step}:" in text, evaluator)
    evaluator.send_signal(signal.SIGINT)
    eval_code = evaluator.wait(timeout=30)
  finally:
    for process in (trainer, evaluator):
      if process is not None and process.poll() is None:
        process.kill()
  return {"root": root, "corpus": corpus, "common": common, "eval_code": eval_code,
          "run_dir": root / "run", "last_step": last_step,
          **{name: _read(root / name) for name in ("train.err", "eval.out", "eval.err")}}


@pytest.mark.slow
def test_eval_beside_training_scores_new_checkpoints_and_keeps_the_best(concurrent_run):
  run = concurrent_run
  train_dir, eval_dir = run["run_dir"] / "train", run["run_dir"] / "eval"
  assert run["eval_code"] == 0
  assert project_error_lines(run["eval.err"]) == []
  assert "Waiting for a checkpoint in" in run["eval.err"]
  assert run["eval.err"].count("Stopping on SIGINT.") == 1

  assert run["train.err"].count("Stopping on SIGINT.") == 1
  saved = _saved_steps(run["train.err"])
  # Enough checkpoints for the trainer (keep 3) to have deleted several under eval.
  assert len(saved) >= NUM_SAVES

  # Eval scored each checkpoint it loaded, once, in order; all were the trainer's.
  loaded = [int(s) for s in re.findall(r"Loaded weights from \S+model\.ckpt-(\d+)",
                                       run["eval.err"])]
  skipped = re.findall(r"Skipping \S+model\.ckpt-(\d+)", run["eval.err"])
  scalars = events.read_scalars(str(eval_dir))
  steps = [step for step, _ in scalars["loss"]]
  assert steps == loaded == sorted(set(loaded))
  assert set(steps) <= set(saved) and len(steps) >= MIN_SCORED
  assert steps[-1] == saved[-1]
  # Some of them the trainer deleted later, while eval went on.
  assert set(steps) - set(saved[-checkpoints.MAX_TO_KEEP:])
  assert set(map(int, skipped)) <= set(saved)
  assert f"Scored {len(steps)} checkpoints" in run["eval.out"]

  # The running average follows the original's formula on the scored losses...
  expected, running, best_steps, best = [], 0.0, [], None
  for step, loss in scalars["loss"]:
    running = loss if running == 0 else running * 0.99 + 0.01 * loss
    running = min(running, 12.0)
    expected.append(running)
    if best is None or running < best:
      best, best_steps = running, best_steps + [step]
  assert [s for s, _ in scalars["running_avg_loss"]] == steps
  np.testing.assert_allclose([v for _, v in scalars["running_avg_loss"]], expected, rtol=1e-5)
  # ...and a best model was saved at each new lowest one, the last 3 kept in eval's own state.
  best_names = [f"bestmodel-{s}" for s in best_steps[-checkpoints.MAX_TO_KEEP:]]
  state = tf.train.get_checkpoint_state(str(eval_dir))
  assert [os.path.basename(p) for p in state.all_model_checkpoint_paths] == best_names
  assert {n[:-len(".index")] for n in os.listdir(eval_dir) if n.endswith(".index")} == (
      set(best_names))
  # Each is the weights of the train checkpoint of its step (where that still exists).
  model = model_lib.PointerGenerator.from_hparams(
      config.HParams(hidden_dim=8, emb_dim=8, min_dec_steps=2, max_dec_steps=10), 519)
  for name in best_names:
    train_path = train_dir / name.replace("bestmodel", "model.ckpt")
    if os.path.exists(f"{train_path}.index"):
      checkpoints.restore_weights(model, str(train_path))
      want = [v.numpy() for v in model.trainable_variables]
      assert checkpoints.restore_weights(model, str(eval_dir / name)) == int(name.split("-")[1])
      for a, b in zip(want, model.trainable_variables):
        np.testing.assert_array_equal(a, b.numpy())

  # Nothing of eval's is in the train dir: the trainer's 3 checkpoints, state and events only.
  names = os.listdir(train_dir)
  assert {n for n in names if n.endswith(".index")} == {
      f"model.ckpt-{s}.index" for s in saved[-checkpoints.MAX_TO_KEEP:]}
  assert all(n == "checkpoint" or n.startswith(("model.ckpt-", "events.out.tfevents."))
             for n in names)


def test_running_average_and_best_model_choice():
  selector = evaluate.BestModelSelector()
  # (loss, running average by hand, new best?)
  script = [
      (13.0, 12.0, True),        # the first loss is taken as it is, then capped at 12
      (14.0, 12.0, False),       # 12 * 0.99 + 0.14 = 12.02, capped: equal to the best
      (6.0, 11.94, True),        # 12 * 0.99 + 6 * 0.01
      (20.0, 12.0, False),       # 11.94 * 0.99 + 0.2 = 12.0206, capped
      (2.0, 11.9, True),         # 12 * 0.99 + 0.02, below 11.94
      (12.0, 11.901, False),     # 11.9 * 0.99 + 0.12
      (0.0, 11.78199, True),     # 11.901 * 0.99: a zero loss still counts
  ]
  for loss, running, new_best in script:
    assert selector.update(loss) == new_best
    assert selector.running_avg == pytest.approx(running, abs=1e-12)
  assert selector.best == pytest.approx(11.78199, abs=1e-12)
  # The original uses 0 as "no value yet": after a loss of exactly 0, the next loss is taken
  # as it is again (and is no improvement on 0).
  selector = evaluate.BestModelSelector()
  assert selector.update(0.0) and selector.running_avg == 0.0
  assert not selector.update(3.0) and selector.running_avg == 3.0
  assert evaluate.running_avg_loss(4.0, 2.0, decay=0.5) == 3.0


def _eval_of_a_copy(run, tmp_path, **changes):
  """(HParams, vocab) of an eval that scores one checkpoint of a copy of the run's train dir."""
  shutil.copytree(run["run_dir"] / "train", tmp_path / "run" / "train")
  hps = tiny_hparams(run["corpus"], tmp_path, mode="eval", data_path=run["corpus"]["val"],
                     min_dec_steps=2, eval_max_checkpoints=1, **changes)
  return hps, vocab_lib.Vocab.from_file(hps.vocab_path, hps.vocab_size)


@pytest.mark.slow
def test_eval_skips_checkpoints_deleted_under_it_and_stops_when_told(concurrent_run, tmp_path):
  run = concurrent_run
  hps, vocab = _eval_of_a_copy(run, tmp_path)
  evaluator = evaluate.ConcurrentEvaluator(hps, vocab)
  kept = tf.train.get_checkpoint_state(hps.train_dir).all_model_checkpoint_paths
  # The trainer's rotation deletes the .index first, then the .data file: a reader can find
  # either missing.
  os.remove(f"{kept[0]}.index")
  for name in tf.io.gfile.glob(f"{kept[1]}.data-*"):
    os.remove(name)
  assert evaluator._load(kept[0]) is None
  assert evaluator._load(kept[1]) is None
  assert evaluator._load(kept[2]) == run["last_step"]
  # A checkpoint that is there but does not fit the flags is an error, not a race.
  coverage = evaluate.ConcurrentEvaluator(hps.replace(coverage=True), vocab)
  with pytest.raises(DataError, match="--coverage"):
    coverage._load(kept[2])
  # Started after training, eval scores the newest checkpoint, then stops as told.
  assert evaluator.run() == 1
  assert checkpoints.newest(hps.eval_dir) == os.path.join(hps.eval_dir,
                                                          f"bestmodel-{run['last_step']}")


@pytest.mark.slow
def test_one_line_per_checkpoint_with_the_means_of_its_batches(concurrent_run, tmp_path, caplog):
  run = concurrent_run
  hps, vocab = _eval_of_a_copy(run, tmp_path, eval_batches_per_checkpoint=3)
  with caplog.at_level("INFO", logger="absl"):
    assert evaluate.ConcurrentEvaluator(hps, vocab).run() == 1
  [line] = [m for m in caplog.messages if m.startswith("eval step")]
  scalars = events.read_scalars(hps.eval_dir)
  batch_losses = [value for step, value in scalars["loss"] if step == run["last_step"]]
  running = [value for _, value in scalars["running_avg_loss"]]
  assert len(batch_losses) == len(running) == 3
  match = re.fullmatch(rf"eval step {run['last_step']}: loss ([\d.]+) \(means of 3 batches\), "
                       r"running average ([\d.]+) \(best ([\d.]+)\)", line)
  assert match, line
  assert float(match.group(1)) == pytest.approx(np.mean(batch_losses), abs=5e-5)
  assert float(match.group(2)) == pytest.approx(running[-1], abs=5e-5)
  assert float(match.group(3)) == pytest.approx(min(running), abs=5e-5)


@pytest.mark.slow
def test_single_pass_matches_a_batch_by_batch_computation(concurrent_run, capsys):
  run = concurrent_run
  step = run["last_step"]
  ckpt = run["run_dir"] / "train" / f"model.ckpt-{step}"
  code, out, err = run_main(capsys, "--mode=eval", "--single_pass", f"--ckpt_path={ckpt}",
                         *run["common"])
  assert code == 0, err
  metrics_path = run["run_dir"] / "eval" / f"metrics-{step}.json"
  assert f"metrics in {metrics_path}" in out
  metrics = json.loads(_read(metrics_path))

  # The same numbers from the full final distribution (tensor_scatter_nd_add), in numpy, over
  # batches of another size (large: the model runs eagerly here, which costs per batch).
  hps = config.HParams(
      mode="eval", single_pass=True, data_path=run["corpus"]["val"], hidden_dim=8, emb_dim=8,
      vocab_size=519, batch_size=64, max_enc_steps=40, max_dec_steps=10, min_dec_steps=2)
  vocab = vocab_lib.Vocab.from_file(run["corpus"]["vocab"], hps.vocab_size)
  model = model_lib.PointerGenerator.from_hparams(hps, len(vocab))
  checkpoints.restore_weights(model, str(ckpt))
  source = data.RecordSource(data_files.DataFiles.find(hps.data_path), single_pass=True)
  per_example, token_sums, token_counts = [], 0.0, 0
  for batch in data.make_dataset(source, vocab.lookup_table(), len(vocab), hps):
    probs = reference.gold_probs_scattered(model(batch), batch.target, batch.enc_input_ext,
                                        tf.reduce_max(batch.num_oovs)).numpy()  # [B, T]
    dec_len = batch.dec_len.numpy()  # [B]
    mask = np.arange(probs.shape[1])[None, :] < dec_len[:, None]  # [B, T]
    step_nll = -np.log(np.maximum(probs.astype(np.float64), losses.PROB_FLOOR)) * mask  # [B, T]
    per_example.extend(step_nll.sum(axis=1) / dec_len)
    token_sums += step_nll.sum()
    token_counts += int(dec_len.sum())
  assert metrics["checkpoint"] == str(ckpt) and metrics["step"] == step
  assert metrics["num_examples"] == len(per_example) == source.num_records
  assert metrics["num_target_tokens"] == token_counts
  assert metrics["mean_nll_per_example"] == pytest.approx(np.mean(per_example), rel=1e-5)
  assert metrics["mean_nll_per_token"] == pytest.approx(token_sums / token_counts, rel=1e-5)
  assert metrics["loss"] == metrics["mean_nll_per_example"]
  assert "mean_coverage_loss" not in metrics
  assert set(metrics["definitions"]) == {"mean_nll_per_example", "mean_nll_per_token", "loss"}
  # The same figures for TensorBoard, under the checkpoint's step.
  scalars = events.read_scalars(run["run_dir"] / "eval")
  for name in ("loss", "mean_nll_per_example", "mean_nll_per_token"):
    assert scalars[f"single_pass/{name}"] == [(step, pytest.approx(metrics[name], rel=1e-6))]
  assert "single_pass/mean_coverage_loss" not in scalars


# ------------------------------------------------------------------- samples in TensorBoard


@pytest.mark.slow
def test_eval_samples_flag(concurrent_run, tmp_path):
  with pytest.raises(DataError, match=r"--eval_samples=-1: must be >= 0"):
    config.HParams(eval_samples=-1).validated()
  hps, vocab = _eval_of_a_copy(concurrent_run, tmp_path, eval_samples=0)
  assert evaluate.ConcurrentEvaluator(hps, vocab, eval_samples.Samples).samples is None


@pytest.fixture(scope="module")
def tensorboard(concurrent_run, tmp_path_factory):
  """The address of TensorBoard (the `tensorboard` install extra) serving the concurrent run's
  directory, started once for the module; skipped without the package (failing under CI=true,
  which installs it from requirements-test.txt)."""
  if importlib.util.find_spec("tensorboard") is None:
    message = ("the tensorboard package is not installed (pip install -e '.[tensorboard]', or "
               "-r requirements-test.txt)")
    if os.environ.get("CI", "").lower() == "true":
      pytest.fail(message)
    pytest.skip(f"{message}; skipped (CI=true fails instead)")
  log = tmp_path_factory.mktemp("tensorboard") / "tensorboard.log"
  with open(log, "w") as out:
    process = subprocess.Popen(
        [sys.executable, "-m", "tensorboard.main", f"--logdir={concurrent_run['run_dir']}",
         "--host=127.0.0.1", "--port=0"], stdout=out, stderr=subprocess.STDOUT)
  try:
    _wait_until(log, lambda text: re.search(r"TensorBoard \S+ at http://", text), process, 60)
    yield re.search(r"TensorBoard \S+ at (http://[\d.:]+)/", _read(log)).group(1)
  finally:
    process.terminate()
    try:
      process.wait(timeout=30)
    except subprocess.TimeoutExpired:
      process.kill()


def _get_json(url, route, **query):
  with urllib.request.urlopen(f"{url}{route}?{urllib.parse.urlencode(query)}", timeout=30) as r:
    return json.loads(r.read())


def _served(url, steps, tags, timeout=60):
  """Waits until TensorBoard serves eval's scalars `tags` at each of `steps` (it reads the event
  files in the background after it starts)."""
  deadline = time.time() + timeout
  while True:
    listed = _get_json(url, "/data/plugin/scalars/tags").get("eval", {})
    served = {tag: {step for _, step, _ in _get_json(url, "/data/plugin/scalars/scalars",
                                                     run="eval", tag=tag)}
              for tag in tags if tag in listed}
    if len(served) == len(tags) and all(set(steps) <= s for s in served.values()):
      return
    if time.time() > deadline:
      pytest.fail(f"TensorBoard served {served} of steps {steps} after {timeout} s")
    time.sleep(0.5)


# A row of a sample's p_gen table, as TensorBoard renders the markdown: number, word, p_gen.
_TABLE_ROW = re.compile(
    r"<tr>\s*<td[^>]*>(\d+)</td>\s*<td[^>]*>(.*?)</td>\s*<td[^>]*>([\d.]+)</td>", re.S)


def _sample_text(url, sample, step):
  """(the HTML TensorBoard renders of sample `sample`'s text at `step`, its summary's words,
  their p_gens)."""
  [html] = [entry["text"] for entry in _get_json(url, "/data/plugin/text/text", run="eval",
                                                 tag=f"samples/text_{sample}")
            if entry["step"] == step]
  rows = _TABLE_ROW.findall(html)
  assert [int(n) for n, _, _ in rows] == list(range(len(rows)))
  return html, [re.sub(r"<[^>]+>", "", w) for _, w, _ in rows], [float(p) for _, _, p in rows]


def _sample_image(url, sample, step):
  """The pixels of sample `sample`'s attention picture at `step`, as TensorBoard serves it."""
  [entry] = [e for e in _get_json(url, "/data/plugin/images/images", run="eval",
                                  tag=f"samples/attention_{sample}", sample=0)
             if e["step"] == step]
  with urllib.request.urlopen(f"{url}/data/plugin/images/individualImage?{entry['query']}",
                              timeout=30) as response:
    png = response.read()
  assert png.startswith(b"\x89PNG\r\n\x1a\n")
  return tf.io.decode_png(png).numpy()


def _duplicate_3gram_pct(summaries):
  """Duplicate 3-grams over all 3-grams of `summaries` (word lists), in percent: each 3-gram
  that occurred before in its summary is a duplicate."""
  total = duplicates = 0
  for words in summaries:
    seen = set()
    for i in range(len(words) - 2):
      total += 1
      duplicates += tuple(words[i:i + 3]) in seen
      seen.add(tuple(words[i:i + 3]))
  return 100.0 * duplicates / total if total else 0.0


@pytest.mark.slow
def test_tensorboard_shows_the_samples_of_each_checkpoint(concurrent_run, tensorboard):
  url, run = tensorboard, concurrent_run
  steps = [step for step, _ in events.read_scalars(run["run_dir"] / "eval")["loss"]]
  assert len(steps) >= MIN_SCORED
  figures = ("samples/mean_length", "samples/p_gen_mean", "samples/duplicate_3grams_pct")
  _served(url, steps, figures)
  assert set(_get_json(url, "/data/plugin/text/tags")["eval"]) == {
      f"samples/text_{i}" for i in range(3)}
  assert set(_get_json(url, "/data/plugin/images/tags")["eval"]) == {
      f"samples/attention_{i}" for i in range(3)}
  # The samples are the first 3 validation articles, as the model reads them (40 tokens).
  val = data_formats.read_records(data_files.expand_glob(run["corpus"]["val"]), "auto",
                                  skips_lib.SkipCounter())
  articles = [next(val).article.split()[:40] for _ in range(3)]
  scalars = {tag: {step: value for _, step, value in _get_json(
      url, "/data/plugin/scalars/scalars", run="eval", tag=tag)} for tag in figures}
  for step in steps:
    summaries = []
    for i, article in enumerate(articles):
      html, words, p_gens = _sample_text(url, i, step)
      assert " ".join(article[:10]) in re.sub(r"<[^>]+>", "", html)  # the article's start
      assert all(0.0 <= p <= 1.0 for p in p_gens)
      summaries.append(words)
      # A row for each summary word, a column for each article token, p_gen bars beside them.
      assert _sample_image(url, i, step).shape == (
          2 * attention_view.MARGIN + attention_view.LABEL_SIZE + len(words) * attention_view.CELL,
          2 * attention_view.MARGIN + attention_view.LABEL_SIZE + len(article) * attention_view.CELL
          + attention_view.P_GEN_WIDTH, 3)
    assert scalars["samples/mean_length"][step] == pytest.approx(
        np.mean([len(w) for w in summaries]), rel=1e-6)
    assert scalars["samples/duplicate_3grams_pct"][step] == pytest.approx(
        _duplicate_3gram_pct(summaries), rel=1e-6)
    assert 0.0 < scalars["samples/p_gen_mean"][step] < 1.0


def _unmarked(words):
  """Decode's words without its OOV marks (`__word__`)."""
  return [re.sub(r"^__(.+)__$", r"\1", w) for w in words]


@pytest.mark.slow
def test_the_attention_picture_is_the_attention_decode_writes(concurrent_run, tensorboard,
                                                              tmp_path, capsys):
  # --mode=decode of the first validation article alone (a data file of its own: continuous
  # decode takes random articles) with the checkpoint eval scored last.
  run, step = concurrent_run, concurrent_run["last_step"]
  first = next(data_formats.read_records(data_files.expand_glob(run["corpus"]["val"]), "auto",
                                         skips_lib.SkipCounter()))
  bin_format.BIN.write(str(tmp_path / "first.bin"), [first])
  code, _, err = run_main(capsys, "--mode=decode", f"--data_path={tmp_path / 'first.bin'}",
                          f"--vocab_path={run['corpus']['vocab']}", f"--log_root={tmp_path}",
                          f"--ckpt_path={run['run_dir'] / 'train' / f'model.ckpt-{step}'}",
                          "--max_decode_examples=1", *MODEL_FLAGS)
  assert code == 0, err
  decoded = json.loads(_read(tmp_path / "run" / "decode" / "attn_vis_data.json"))
  assert _unmarked(decoded["article_lst"]) == first.article.split()[:40]
  # Its attention, drawn, is eval's picture of that article at that step, pixel for pixel...
  np.testing.assert_array_equal(_sample_image(tensorboard, 0, step),
                                attention_view.image(decoded))
  # ...and eval's text names the same summary, with the same p_gens.
  _, words, p_gens = _sample_text(tensorboard, 0, step)
  assert words == _unmarked(decoded["decoded_lst"])
  assert p_gens == [round(p, 3) for p in decoded["p_gens"]]
