"""The attention, e_i = v . tanh(W_h h_i + W_s s + b + w_c cov_i), a = softmax(e) over the
article's words, context sum_i a_i h_i: one module per part.

  interface      what an implementation is: the whole step (scores, masked softmax, context)
                 from the layer's weights, and how the memory it reads is laid out and kept
  eager          the paper's equations, differentiated by TensorFlow: the reference
  fast           what the fast implementations share: the step around their own kernels
  registry       `--attention_implementation`: the implementations by name, the one table of
                 what `auto` runs in each context, the older flags that spell a choice

and one module per fast implementation with its kernels, each registered by its line in
registry.IMPLEMENTATIONS. The layer (layers.BahdanauCoverageAttention) holds the weights and
calls an implementation; adding one: docs/extending.md.
"""

from pointer_gen.attention.interface import Memory
from pointer_gen.attention.registry import AUTO
from pointer_gen.attention.registry import auto
from pointer_gen.attention.registry import check
from pointer_gen.attention.registry import chosen
from pointer_gen.attention.registry import CONTEXTS
from pointer_gen.attention.registry import DEFAULT_SEARCH
from pointer_gen.attention.registry import get
from pointer_gen.attention.registry import implementation_help
from pointer_gen.attention.registry import IMPLEMENTATIONS
from pointer_gen.attention.registry import SearchAttention
from pointer_gen.attention.registry import spelling_help
