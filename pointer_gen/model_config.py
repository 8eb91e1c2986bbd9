"""The model's configuration: its sizes, the pointer and coverage switches, the initialisers' scales.

One frozen value, built from the HParams, that the model and its decoder cell both hold; each
serialises it in get_config and rebuilds it in from_config.
"""

import dataclasses


@dataclasses.dataclass(frozen=True)
class ModelConfig:
  """Defaults are the original's (config.HParams)."""
  vocab_size: int
  emb_dim: int = 128
  hidden_dim: int = 256
  pointer_gen: bool = True
  coverage: bool = False
  rand_unif_init_mag: float = 0.02
  trunc_norm_init_std: float = 1e-4

  @classmethod
  def from_hparams(cls, hps, vocab_size):
    """The HParams' fields of the same names; `vocab_size` is the vocabulary's real size, where
    hps.vocab_size is the flag (0: the whole vocab file)."""
    return cls(vocab_size=vocab_size,
               **{name: getattr(hps, name) for name in FIELDS if name != "vocab_size"})


FIELDS = tuple(field.name for field in dataclasses.fields(ModelConfig))


class Configured:
  """For a Keras layer or model whose first constructor argument is a ModelConfig, held as
  `self.config`: its fields read as the layer's own attributes (`model.hidden_dim`), and
  get_config lists them beside Keras's own entries (name, dtype, ...), from which from_config
  rebuilds the ModelConfig."""

  def __getattr__(self, name):
    # Called only for the names that normal lookup does not find.
    if name in FIELDS:
      return getattr(self.config, name)
    raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

  def get_config(self):
    return {**super().get_config(), **dataclasses.asdict(self.config)}

  @classmethod
  def from_config(cls, config, **kwargs):
    keras_entries = {k: v for k, v in config.items() if k not in FIELDS}
    model_config = ModelConfig(**{name: config[name] for name in FIELDS})
    return super().from_config({**keras_entries, "config": model_config}, **kwargs)
