"""pointer_gen: the pointer-generator network with coverage (See et al., 2017) in TF2 / Keras 3."""

__version__ = "0.1.0"
