"""Run by tests/base/test_distribute.py in a fresh process: one clipped training step on a fixed
global batch with one device and with MirroredStrategy over two logical CPUs; prints the largest
weight difference and the two losses and global norms as JSON."""

import json
import sys

import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

from pointer_gen.text import vocab as vocab_lib
from pointer_gen.training import train  # pylint: disable=g-import-not-at-top

sys.path.insert(0, sys.argv[1])
from helpers import distribute_common  # pylint: disable=g-import-not-at-top


def main():
  corpus, out = sys.argv[2], sys.argv[3]
  # Clipping forced: the norm it divides by must be the global batch's, decided once.
  hps = distribute_common.tiny_hparams(corpus, out).replace(max_grad_norm=0.2)
  vocab = vocab_lib.Vocab.from_file(hps.vocab_path, hps.vocab_size)
  global_batch = distribute_common.first_batch(hps, vocab, batch_size=8)
  dataset = tf.data.Dataset.from_tensors(global_batch).repeat()
  results = {}
  for name, strategy in (("single", tf.distribute.get_strategy()),
                         ("mirrored", tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]))):
    trainer = train.Trainer(hps.replace(exp_name=name), vocab, strategy)
    before = [v.numpy() for v in trainer.model.trainable_variables]
    step = train.make_train_step(trainer.model, trainer.optimizer, trainer.step, hps,
                                 len(vocab), strategy)
    scalars = step(iter(strategy.experimental_distribute_dataset(dataset)))
    results[name] = {
        "weights": [v.numpy() for v in trainer.model.trainable_variables],
        "moved": max(float(abs(a - b).max()) for a, b in
                     zip(before, [v.numpy() for v in trainer.model.trainable_variables])),
        "loss": float(scalars["loss"]), "global_norm": float(scalars["global_norm"]),
        "replicas": strategy.num_replicas_in_sync,
    }
  diff = max(float(abs(a - b).max()) for a, b in zip(results["single"]["weights"],
                                                       results["mirrored"]["weights"]))
  print(json.dumps({"max_weight_diff": diff, "max_grad_norm": hps.max_grad_norm, **{
      name: {k: v for k, v in r.items() if k != "weights"} for name, r in results.items()}}))


if __name__ == "__main__":
  main()
