"""The data formats: examples on disk, whatever their format, one module per part.

  skips                a record skipped (`Skip`) and the counting and logging of them
  base                 the `Record` every reader yields, and `DataFormat`, what a format
                       declares (its name, extensions, whether its text is pre-tokenised, its
                       own settings as flags) and implements (read, count, write)
  example              the tf.train.Example that `.bin` and TFRecord records hold
  registry             the formats by name (`--data_format`), detected by extension, their
                       settings as flags
  data_files           --data_path's glob expanded, and the files settled once (`DataFiles`)

and one module per format (`bin_format`: the original's; `jsonl_format`, `tfrecord_format`),
each registered by its line in registry.FORMATS. Adding one: docs/extending.md.
"""
