"""Training and its checkpoints. Uses every layer below it (base, text, formats, data,
attention, model); of search only the run's decoding defaults that training records, and never
inference.

  training_state   the model, its Adagrad and the step as one checkpoint; the train dir's upkeep
  train            `--mode=train`: the loop, its saves, TensorBoard, non-finite guard
  evaluate         `--mode=eval`: scores checkpoints on validation data, keeps the best
  train_utilities  `--convert_to_coverage_model` and `--restore_best_model`
  tf1_checkpoint   reads the original TF1 code's checkpoints into a run
"""
