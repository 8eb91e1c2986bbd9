"""The model's configuration: its sizes, the pointer and coverage switches, the initialisers' scales.

One frozen value, built from the HParams, that the model and its decoder cell both hold; each
serialises it in get_config and rebuilds it in from_config. Its fields are the model's settings,
declared here once (settings.setting: the flag, its default, help and check, and how the run's
record treats it); config.py makes the flags and HParams fields from them. A new model
hyperparameter is a field here and the line of the model that reads it.
"""

import dataclasses

from pointer_gen.base import settings

FIXED, PHASE = settings.FIXED, settings.PHASE


@dataclasses.dataclass(frozen=True)
class ModelSettings(settings.Settings):
  """The model's settings (HParams fields and flags); defaults are the original's."""
  emb_dim: int = settings.setting(128, "Dimension of the word embeddings.", settings.positive,
                                  record=FIXED)
  hidden_dim: int = settings.setting(256, "Dimension of the LSTM hidden states.",
                                     settings.positive, record=FIXED)
  pointer_gen: bool = settings.setting(
      True, "Pointer-generator (True) or attention baseline (False).", record=FIXED)
  coverage: bool = settings.setting(False, "Use the coverage mechanism and its loss.",
                                    record=PHASE)
  rand_unif_init_mag: float = settings.setting(
      0.02, "Magnitude of the LSTM weights' uniform init.")
  trunc_norm_init_std: float = settings.setting(1e-4, "Std of the truncated-normal init.")


@dataclasses.dataclass(frozen=True)
class _VocabSize:
  vocab_size: int


@dataclasses.dataclass(frozen=True)
class ModelConfig(ModelSettings, _VocabSize):
  """`vocab_size`, the vocabulary's real size (the first field; the --vocab_size flag, a data
  setting, says how many entries of the file to read, 0 the whole file), and the model's
  settings."""

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
