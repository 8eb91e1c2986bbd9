"""Decoding controls: what a decoded summary may contain, for every search strategy.

A control changes a step's final distribution (p_gen * P_vocab + (1 - p_gen) * attention, over
the extended vocabulary, article words included) before a strategy chooses from it; the
search's shared step (contract.Strategy.candidates and .distribution) applies every active
control, in registry order, whichever strategy runs, so no strategy names one. Each control is
one module declaring its own settings (settings.setting), which are its flags:

  base                the Control interface, the View of the rows it reads, and zero_ids
  min_length          --min_dec_steps: no [STOP] before that step
  ngram_blocking      --block_ngram_repeat, --ignore_when_blocking: no repeated n-gram
  ban_unk             --ban_unk: no [UNK]
  repetition_penalty  --repetition_penalty: a generated token's probability p becomes
                      p ** penalty
  registry            the controls by name, their settings as flags, made from the flags

Adding one: its module and its line in registry.CONTROLS (docs/extending.md).
"""
