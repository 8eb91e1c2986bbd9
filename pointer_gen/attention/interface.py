"""What an attention implementation is: the whole of one decoder step's attention, and how the
memory it reads is kept.

The boundary is the step, as Hugging Face Transformers' attention functions take the module:
`attend` gets the layer (layers.BahdanauCoverageAttention, which holds the weights: W_s and b
as `query_layer`, v, w_c with `use_coverage`) and computes from its weights the scores, the
masked softmax and the context. The layer and its callers never ask what an implementation
needs; a formula with a new weight is the layer's weight and the reference's use of it, and the
fast implementations, which do not read it, fail their test until they do.

For B query rows, `rows` of them per article:

  attend(layer, query, memory, coverage=None, rows=1) -> (context [B, D], attn [B, L])
      query s = [c; h] [B, 2H]; coverage [B, L] (used with layer.use_coverage); memory a
      Memory as `memory` laid it out and `rows_kept` keeps it. context in the compute dtype,
      attn the distribution over the L positions, float32 (precision.OUTPUT_DTYPE)
  memory(memory) -> the Memory (model.encode's, one row per article) as `attend` reads it,
      made once per article
  rows_kept(rows) -> a Memory of counts: the copies of each of an article's memory fields a
      search keeps for its `rows` query rows (rows: one per row; 1: shared by them)
  teacher_forcing(memory, steps) -> a TeacherForcing: training's loop of `steps` steps
      over `memory`, which gives each step its memory and is told the attention after the loop

and says what it can do, for the flags' checks: differentiable (it can train), uses_xla (an
XLA kernel: an export of it runs only where XLA does).
"""

from typing import Any, NamedTuple


class Memory(NamedTuple):
  """What the attention reads, made once per article; N rows (one an article, or a search's
  rows as its implementation keeps them: rows_kept), L positions. A NamedTuple, so that tf.nest
  and tf.function signatures take it as it is."""
  states: Any  # h_i [N, L, D], the encoder's states
  features: Any  # W_h h_i [N, L, U], or as the implementation's `memory` lays them out
  mask: Any  # [N, L]: 1 on the article's positions, 0 on the padding
  # The search's, read by its copy distribution and not by the attention (None outside a
  # search): the extended ids and their search.copy_index.
  ext_ids: Any = None  # [N, L] int32
  copy_segment: Any = None  # [N, L] int32
  article_ids: Any = None  # [N, L] int32
  # An implementation's own tensors, a nest it alone reads (hand_gradient's context tap in
  # training's loop); () when it keeps none, which tf.function signatures take (None they
  # refuse).
  own: Any = ()


class TeacherForcing:
  """Training's decoder loop as an implementation sees it: `at(step)`, the memory that step's
  `attend` reads, and `after(attn)`, every step's attention [B, T, L] (float32) once the loop
  has run, for gradients computed after it. This one: the memory as it is, nothing after."""

  def __init__(self, memory):
    self.memory = memory

  def at(self, step):
    del step  # every step reads the same memory
    return self.memory

  def after(self, attn):
    """Nothing is left to do after the loop."""
    del attn


class Implementation:
  """The interface (see the module's docstring); a subclass implements `attend` and, if the
  memory is not read as model.encode makes it, `memory` and `rows_kept`."""

  differentiable = True
  uses_xla = False

  def __init__(self, name):
    self.name = name

  def memory(self, memory):
    return memory

  def rows_kept(self, rows):
    # Every field per row; `own`, the implementation's, stays () (none kept).
    return Memory(*[rows] * (len(Memory._fields) - 1))

  def teacher_forcing(self, memory, steps):
    del steps  # the same memory at every step
    return TeacherForcing(memory)

  def attend(self, layer, query, memory, coverage=None, rows=1):
    raise NotImplementedError

  def __repr__(self):
    return f"<attention implementation {self.name}>"
