"""The search: how summaries are decoded from a trained model, one module per part.

  contract             what a strategy implements (rows, initial, advance, finished, winners),
                       the search's settings and state, the memory it decodes from, and how a
                       strategy declares settings of its own (`setting`)
  distribution         the best candidates of the final distribution, which strategies share
  beam                 `--search=beam`: the original's beam search, compiled
  greedy               `--search=greedy`: the most probable token a step
  registry             `--search`: the strategies by name, their settings as flags, written out
  continuous_batching  single-pass decode's slots, each taking the next article when done

A new strategy is a module here and its line in registry.STRATEGIES (docs/extending.md).
"""
