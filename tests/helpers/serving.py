"""For the export tests: checkpoints to export (pointer_gen's own with random weights, the original
TF1 code's) and the processes that load exports (the client scripts beside this file)."""

import os
import subprocess

import numpy as np
import tensorflow as tf

from pointer_gen.base import checkpoints
from pointer_gen.model import pointer_generator as model_lib
from pointer_gen.text import vocab as vocab_lib
from pointer_gen.training import tf1_checkpoint


def write_random_checkpoint(hps, vocab_size, step):
  """A model with random weights large enough for varied summaries of every length that copy
  article OOVs (a tiny trained model only repeats one frequent word), as train would save it."""
  model = model_lib.PointerGenerator.from_hparams(hps, vocab_size)
  rng = np.random.default_rng(5)
  for variable in model.weights:
    variable.assign(rng.normal(0.0, 0.5, variable.shape).astype("float32"))
  # Copy often, and stop after a few words now and then.
  model.cell.p_gen_layer.bias.assign([-2.5])
  bias = model.cell.vocab_projection.bias
  bias.assign(tf.tensor_scatter_nd_update(bias, [[vocab_lib.STOP_ID]], [4.0]))
  checkpoint = checkpoints.make_checkpoint(model)
  checkpoint.step.assign(step)
  manager = tf.train.CheckpointManager(checkpoint, hps.train_dir, checkpoints.MAX_TO_KEEP,
                                       checkpoint_name=checkpoints.CHECKPOINT_NAME)
  return manager.save(checkpoint_number=step)


def write_tf1_checkpoint(prefix, hps, vocab_size, step):
  """A checkpoint as the original TF1 code's eval saves it (`bestmodel-<step>`: its variables
  under their TF1 names and global_step, no Adagrad accumulators), with random weights;
  returns its prefix."""
  rng = np.random.default_rng(6)
  values = {entry.name: rng.normal(0.0, 0.5, entry.shape(hps.hidden_dim, hps.emb_dim,
                                                         vocab_size)).astype(np.float32)
            for entry in tf1_checkpoint.entries_for(hps.pointer_gen, hps.coverage)}
  values[tf1_checkpoint.GLOBAL_STEP] = np.int64(step)
  names = sorted(values)
  prefix = f"{prefix}-{step}"
  os.makedirs(os.path.dirname(prefix), exist_ok=True)
  tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names, shape_and_slices=[""] * len(names),
                    tensors=[tf.constant(values[n]) for n in names])
  return prefix


def start(command, cwd):
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
  return subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(process):
  """The process's standard output, once it has exited 0."""
  stdout, stderr = process.communicate(timeout=300)
  assert process.returncode == 0, stderr[-3000:]
  return stdout
