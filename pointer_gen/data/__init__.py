"""Data: examples read from files into batches, and what a run records of its data and model.
Uses the base, text and formats; never the model.

  run_record  `<run>/run_config.json`: the model's settings, which every mode follows
  raw_text    how raw text became the data's tokens, apart from how files are read
  pipeline    the input pipeline: records -> id tensors -> padded, bucketed batches
  batch       a batch's fields (what the model, the losses and the search read), an article of it
  demo        the built-in demo corpus, generated in the `.bin` format
"""
