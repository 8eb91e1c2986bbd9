"""Training under tf.distribute gives the weights of one device on the same global batch."""

import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from pointer_gen.base import checkpoints
from pointer_gen.model import pointer_generator as model_lib
from pointer_gen.text import vocab as vocab_lib
from pointer_gen.training import train

from helpers import REPO
from helpers import distribute_common
from helpers import tiny_flags

# Each test here starts real processes (conftest.SLOW).
pytestmark = pytest.mark.slow

HELPERS = REPO / "tests" / "helpers"

TOLERANCE = 2e-5


def _env():
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=str(REPO))
  env.pop("TF_CONFIG", None)
  return env


def test_mirrored_over_two_logical_cpus_matches_one_device(demo_corpus, tmp_path):
  out = subprocess.run([sys.executable, str(HELPERS / "distributed_step.py"), str(REPO / "tests"),
                        str(demo_corpus["dir"]), str(tmp_path / "runs")], env=_env(),
                       capture_output=True, text=True, timeout=300, check=False)
  assert out.returncode == 0, out.stderr[-3000:]
  result = json.loads(out.stdout.strip().splitlines()[-1])
  assert result["mirrored"]["replicas"] == 2 and result["single"]["replicas"] == 1
  assert result["single"]["moved"] > 1e-3  # the step really changed the weights
  assert result["max_weight_diff"] < TOLERANCE, result
  assert abs(result["single"]["loss"] - result["mirrored"]["loss"]) < 1e-5
  # Clipped, by the original's norm over the global batch: each replica's own embedding rows
  # alone would give a smaller one (and each replica its own).
  assert result["single"]["global_norm"] > 3 * result["max_grad_norm"]
  assert abs(result["single"]["global_norm"] / result["mirrored"]["global_norm"] - 1) < 1e-5


def _free_ports(count):
  sockets = [socket.socket() for _ in range(count)]
  for s in sockets:
    s.bind(("127.0.0.1", 0))
  ports = [s.getsockname()[1] for s in sockets]
  for s in sockets:
    s.close()
  return ports


def test_two_workers_match_one_process_on_the_global_batch(demo_corpus, tmp_path):
  hps = distribute_common.tiny_hparams(str(demo_corpus["dir"]), str(tmp_path / "runs"))
  ports = _free_ports(2)
  cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
  flags = [f"--data_path={hps.data_path}", f"--vocab_path={hps.vocab_path}",
           f"--log_root={hps.log_root}", *tiny_flags(**distribute_common.CHANGES),
           "--strategy=multi_worker"]
  workers = []
  for index in range(2):
    env = _env()
    env["TF_CONFIG"] = json.dumps({"cluster": cluster, "task": {"type": "worker",
                                                                "index": index}})
    workers.append(subprocess.Popen(
        [sys.executable, "-m", "pointer_gen.run", "--mode=train"] + flags, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
  outputs = [w.communicate(timeout=300) for w in workers]
  for w, (_, err) in zip(workers, outputs):
    assert w.returncode == 0, err[-3000:]
  assert "global batch 8" in outputs[0][1]
  # Only the chief wrote into the run directory; the other worker cleaned up its own.
  assert sorted(os.listdir(hps.train_dir)) == sorted(
      ["checkpoint", "model.ckpt-1.data-00000-of-00001", "model.ckpt-1.index"]
      + [f for f in os.listdir(hps.train_dir) if f.startswith("events.out.tfevents")])
  assert "Removed this worker's temporary directory" in outputs[1][1]

  # One process, one device, the two workers' first batches as one global batch.
  vocab = vocab_lib.Vocab.from_file(hps.vocab_path, hps.vocab_size)
  shards = [distribute_common.first_batch(hps, vocab, 4, num_shards=2, shard_index=i)
            for i in range(2)]
  single = train.Trainer(hps.replace(log_root=str(tmp_path / "single")), vocab)
  step = train.make_train_step(single.model, single.optimizer, single.step, hps, len(vocab))
  step(iter(tf.data.Dataset.from_tensors(distribute_common.concat_batches(*shards))))

  restored = model_lib.PointerGenerator.from_hparams(hps, len(vocab))
  assert checkpoints.restore_weights(restored, checkpoints.newest(hps.train_dir)) == 1
  for mine, theirs in zip(single.model.trainable_variables, restored.trainable_variables):
    np.testing.assert_allclose(mine.numpy(), theirs.numpy(), atol=TOLERANCE)
