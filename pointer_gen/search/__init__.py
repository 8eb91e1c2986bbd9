"""The search: how summaries are decoded from a trained model, one module per part.

  contract             what a strategy implements (rows, initial, advance, finished, winners),
                       the search's settings and state, the memory it decodes from, and a
                       strategy's own settings (settings.Settings, its fields flags)
  distribution         the best candidates of the final distribution, which strategies share
  registry             `--search`: the strategies by name, their settings as flags, written out
  continuous_batching  single-pass decode's slots, each taking the next article when done
  decoding_defaults    `<run>/decoding_defaults.json`: how the run decodes, as given to its
                       training or stored since, which the modes that decode take
  controls             the decoding controls every strategy's steps apply to the final
                       distribution (minimum length, n-gram blocking, [UNK], repetition), a
                       package with its own registry

and one module per strategy, each registered by its line in registry.STRATEGIES (beam: the
original's beam search, the default). Adding one: docs/extending.md.
"""
