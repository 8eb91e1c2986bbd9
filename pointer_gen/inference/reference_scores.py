"""`--score_references` (with single-pass decode): the model's score of each article's reference
summary instead of a decode.

For every example of the data, in order, the teacher-forced pass of training on its batch gives
the reference's log-likelihood (the sum of its target tokens' log-probabilities, [STOP]
included, the summary cut to --max_dec_steps as training cuts it), each token's NLL, the
coverage loss (with --coverage) and the copy share (the mean over its tokens of the part of
their probability the pointer gives, (1 - p_gen) * attention, over the whole: 0 without
--pointer_gen). Its per-example NLL and coverage loss are training's (losses.compute_losses), so
the corpus means are eval's loss on the same data (evaluate.run_single_pass).

Writes <run>/scores_<...>_ckpt-<step>/ (decode's directory name with `scores_` for `decode_`, or
--decode_dir): scores.jsonl, a line an example, and scores.json, the corpus means; both at the
end, so an interrupted run leaves nothing.
"""

import json
import os

from absl import logging
import numpy as np
import tensorflow as tf

from pointer_gen import attention
from pointer_gen.base import checkpoints
from pointer_gen.base import files
from pointer_gen.base import stopping
from pointer_gen.base.errors import DataError
from pointer_gen.base.errors import make_output_dir
from pointer_gen.data import batch as batch_lib
from pointer_gen.data import pipeline as data
from pointer_gen.model import losses

SCORES = "scores.jsonl"
MEANS = "scores.json"


def make_scorer(model, hps, vocab_size):
  """The compiled teacher-forced pass of a batch: training's per-example losses
  (losses.compute_losses), each target token's NLL [B, T] and copied share [B, T]."""
  implementation = attention.chosen(hps, "train")

  @tf.function(autograph=False, input_signature=[batch_lib.spec()])
  def score(batch):
    outputs = model(batch, real_steps_only=True, implementation=implementation)
    per_example = losses.compute_losses(outputs, batch, vocab_size, hps.coverage)  # each [B]
    generated, copied = losses.gold_parts(outputs, batch.target, batch.enc_input_ext,
                                          vocab_size)  # [B, T] each
    probs = generated if copied is None else generated + copied  # [B, T]
    token_nll = -tf.math.log(tf.maximum(probs, losses.PROB_FLOOR))  # [B, T]
    share = (tf.zeros_like(probs) if copied is None
             else tf.math.divide_no_nan(copied, probs))  # [B, T]
    return per_example, token_nll, share

  return score


def example_lines(per_example, token_nll, share, dec_len, first):
  """scores.jsonl's lines of one batch (numpy values), its first example numbered `first`."""
  lines = []
  for n, length in enumerate(dec_len):
    nll = [float(v) for v in token_nll[n, :length]]
    line = {"index": first + n, "tokens": int(length),
            "log_likelihood": -float(np.sum(token_nll[n, :length], dtype=np.float64)),
            "nll_per_token": float(per_example.nll[n]), "token_nll": nll,
            "copy_share": float(np.mean(share[n, :length])) if length else 0.0}
    if per_example.coverage_loss is not None:
      line["coverage_loss"] = float(per_example.coverage_loss[n])
    lines.append(line)
  return lines


def means(lines):
  """scores.json's corpus means of scores.jsonl's lines: mean_nll_per_example is eval's loss
  (the pointer-generator's), mean_nll_per_token the baseline's."""
  tokens = sum(line["tokens"] for line in lines)
  result = {
      "num_examples": len(lines), "num_target_tokens": tokens,
      "mean_log_likelihood": float(np.mean([line["log_likelihood"] for line in lines])),
      "mean_nll_per_example": float(np.mean([line["nll_per_token"] for line in lines])),
      "mean_nll_per_token": -sum(line["log_likelihood"] for line in lines) / max(tokens, 1),
      "mean_copy_share": float(np.mean([line["copy_share"] for line in lines]))}
  if "coverage_loss" in lines[0]:
    result["mean_coverage_loss"] = float(np.mean([line["coverage_loss"] for line in lines]))
  return result


def run(hps, vocab, model, ckpt_path, directory):
  """Scores every example of --data_path under the model restored from ckpt_path into
  `directory`; returns scores.json's contents, or None if a stop was requested first."""
  score = make_scorer(model, hps, len(vocab))
  source, dataset = data.input_pipeline(hps, vocab, single_pass=True)
  lines = []
  for batch in dataset:
    if stopping.requested():
      return None
    per_example, token_nll, share = score(batch)
    per_example = tf.nest.map_structure(
        lambda value: None if value is None else value.numpy(), per_example)
    lines += example_lines(per_example, token_nll.numpy(), share.numpy(),
                           batch.dec_len.numpy(), len(lines))
  source.raise_if_failed()
  if not lines:
    raise DataError(f"--data_path={hps.data_path}: no example to score")
  result = {"checkpoint": ckpt_path, "step": checkpoints.step_of(ckpt_path),
            "data_path": hps.data_path, **means(lines)}
  make_output_dir(directory)
  files.write_text_atomic(os.path.join(directory, SCORES),
                          "".join(json.dumps(line) + "\n" for line in lines))
  files.write_text_atomic(os.path.join(directory, MEANS), json.dumps(result, indent=2) + "\n")
  logging.info("Scored the references of %d examples: mean NLL %.4f; written to %s",
               len(lines), result["mean_nll_per_example"], directory)
  return result

