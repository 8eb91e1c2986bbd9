"""tools/trace_ops.py, profile_step.py's reading of a tf.profiler trace: every op that ran is
counted once, including calls to XLA-compiled functions, whose kernels appear in the trace
under XLA's fusion names rather than as "name:type" op events."""

import collections

import tensorflow as tf

from helpers import load_tool

XLA_CALLS = 3


@tf.function(jit_compile=True)
def shifted_tanh(x):
  return tf.tanh(x + 1.0)


@tf.function
def matmuls_and_xla_calls(a, b):
  x = tf.matmul(a, b, name="plain_matmul")  # [256, 256]
  for i in range(XLA_CALLS):
    with tf.name_scope(f"xla_call_{i}"):
      x = shifted_tanh(x)
  return x


def test_op_events_count_xla_function_calls_once_each(tmp_path):
  trace_ops = load_tool("trace_ops")
  a = tf.random.normal([256, 256], seed=1)
  b = tf.random.normal([256, 256], seed=2)
  matmuls_and_xla_calls(a, b).numpy()  # compiles outside the trace

  options = tf.profiler.experimental.ProfilerOptions(host_tracer_level=3)
  tf.profiler.experimental.start(str(tmp_path), options)
  matmuls_and_xla_calls(a, b).numpy()
  tf.profiler.experimental.stop()

  events = list(trace_ops.op_events(trace_ops.read_trace(tmp_path)))
  by_type = collections.defaultdict(list)
  for name, op_type, seconds in events:
    by_type[op_type].append((name, seconds))
  xla_calls = by_type["PartitionedCall (XLA)"]
  assert sorted(name.split("/")[0] for name, _ in xla_calls) == [
      f"xla_call_{i}" for i in range(XLA_CALLS)]
  assert all(seconds > 0 for _, seconds in xla_calls)
  assert [name for name, _ in by_type["_MklMatMul"] + by_type["MatMul"]] == ["plain_matmul"]
  # The kernels' fusions are inside the calls' time, not ops of their own.
  assert not any("fusion" in name for name, _, _ in events)
