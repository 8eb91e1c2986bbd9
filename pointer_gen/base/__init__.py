"""The base, which every layer may use and which imports no other layer of the package.

  version          the package's version, which the package, the run record and setup.py read
  errors           the errors for bad user input, naming the file, record or flag
  settings         a component's own settings declared as flags beside its code
  files            atomic writes: a reader sees the old file or the complete new one
  stopping         Ctrl-C and SIGTERM as one clean stop between steps
  environment      the process's TensorFlow settings: CPU allocator, XLA's vector width (the
                   command line's choice), optimiser, --debug
  precision        `--precision`: the Keras dtype policy, float32 or mixed_bfloat16
  distribute       `--strategy`: one device, local GPUs, many workers, TPU
  tensorboard_log  TensorBoard scalars, text and pictures written with core TensorFlow alone
  run_lock         one trainer per run directory: the flock on `<run>/trainer.lock`
  checkpoints      where checkpoints live; which one each mode loads and how it restores it
  loop_gradients   a loop's gradients taken once around it: sums over its steps after it,
                   kernels transposed before it (the encoder's, the attention's states)
"""
