"""tools/dev/trace_ops.py, profile_step.py's reading of a tf.profiler trace: every op that ran is
counted once, including calls to XLA-compiled functions, whose kernels appear in the trace
under XLA's fusion names rather than as "name:type" op events.

Which events a real trace holds depends on the machine's load (an asynchronous op's start event
is at times missing from a loaded machine's trace), so the exact counts are checked on a trace
built here event by event, laid out as TensorFlow's profiler writes one; a real trace is checked
against an independent reading of its own events."""

import collections

from tensorflow.tsl.profiler.protobuf import xplane_pb2
import tensorflow as tf

from helpers import load_tool

XLA_CALLS = 3
PS = 10**6  # picoseconds per microsecond


class _Plane:
  """An XPlane under construction: event and stat names registered as metadata on first use."""

  def __init__(self, space, name):
    self.plane = space.planes.add(name=name)
    self.ids = {}

  def _id(self, table, name):
    if (table, name) not in self.ids:
      self.ids[(table, name)] = len(self.ids) + 1
      getattr(self.plane, table)[self.ids[(table, name)]].name = name
    return self.ids[(table, name)]

  def line(self, name):
    return self.plane.lines.add(name=name)

  def event(self, line, name, start_us, duration_us, ref_stats=(), str_stats=()):
    """`ref_stats` are stored as references to stat metadata (as the profiler stores strings
    that repeat), `str_stats` as strings."""
    event = line.events.add(metadata_id=self._id("event_metadata", name),
                            offset_ps=start_us * PS, duration_ps=duration_us * PS)
    for key, value in ref_stats:
      event.stats.add(metadata_id=self._id("stat_metadata", key),
                      ref_value=self._id("stat_metadata", value))
    for key, value in str_stats:
      event.stats.add(metadata_id=self._id("stat_metadata", key), str_value=value)


def _xla_call(plane, line, name, start_us, duration_us):
  """An XLA function call as the profiler records it: the asynchronous op's start event with
  the op's name and type, spanning the XLA execution and its fusion's kernel."""
  plane.event(line, "ExecutorState::ProcessAsync::Start", start_us, duration_us,
              ref_stats=[("name", name)], str_stats=[("kernel_type", "PartitionedCall")])
  plane.event(line, "CpuExecutable::ExecuteAsyncOnStream", start_us + 2, duration_us - 4)
  plane.event(line, "add_tanh_fusion", start_us + 3, duration_us - 6,
              str_stats=[("hlo_op", "add_tanh_fusion")])
  plane.event(line, "ExecutorState::ProcessAsync::Done", start_us + duration_us + 1, 1,
              ref_stats=[("name", name)], str_stats=[("kernel_type", "PartitionedCall")])


def test_op_events_count_xla_function_calls_once_each():
  trace_ops = load_tool("trace_ops")
  space = xplane_pb2.XSpace()
  host = _Plane(space, "/host:CPU")
  first, second = host.line("tf_Compute/1"), host.line("tf_Compute/2")
  host.event(first, "ExecutorState::Process", 0, 100)
  host.event(first, "plain_matmul:_MklMatMul", 5, 30)
  _xla_call(host, first, "xla_call_0/PartitionedCall", 40, 20)
  # An asynchronous op that is no XLA call, and an XLA execution whose start event is missing.
  host.event(second, "ExecutorState::ProcessAsync::Start", 10, 5,
             ref_stats=[("name", "recv")], str_stats=[("kernel_type", "_Recv")])
  host.event(second, "CpuExecutable::ExecuteAsyncOnStream", 20, 5)
  _xla_call(host, second, "xla_call_1/PartitionedCall", 30, 12)
  _xla_call(host, first, "xla_call_2/PartitionedCall", 70, 8)
  # Op-like names outside the executor's threads, and another plane, are not the ops that ran.
  host.event(host.line("python"), "not_an_op:Foo", 0, 50)
  other = _Plane(space, "/host:metadata")
  other.event(other.line("tf_Compute/1"), "elsewhere:Bar", 0, 50)

  assert sorted(trace_ops.op_events(space)) == [
      ("plain_matmul", "_MklMatMul", 30e-6),
      ("xla_call_0/PartitionedCall", "PartitionedCall (XLA)", 20e-6),
      ("xla_call_1/PartitionedCall", "PartitionedCall (XLA)", 12e-6),
      ("xla_call_2/PartitionedCall", "PartitionedCall (XLA)", 8e-6),
  ]


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


def _xla_calls_by_hand(space):
  """(name, seconds) of each asynchronous op's start event that spans an XLA execution on its
  thread: a plain scan over every pair of events, where the tool bisects."""
  calls = []
  threads = [(plane, line) for plane in space.planes for line in plane.lines
             if plane.name == "/host:CPU" and line.name.startswith("tf_Compute")]
  for plane, line in threads:
    named = [(plane.event_metadata[event.metadata_id].name, event) for event in line.events]
    executions = [event.offset_ps for name, event in named
                  if name == "CpuExecutable::ExecuteAsyncOnStream"]
    for event_name, start in named:
      end = start.offset_ps + start.duration_ps
      if (event_name == "ExecutorState::ProcessAsync::Start"
          and any(start.offset_ps <= t < end for t in executions)):
        (name,) = [stat for stat in start.stats
                   if plane.stat_metadata[stat.metadata_id].name == "name"]
        calls.append((plane.stat_metadata[name.ref_value].name if name.HasField("ref_value")
                      else name.str_value, start.duration_ps / 1e12))
  return sorted(calls)


def test_a_real_trace_reads_as_its_events_say(tmp_path):
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
  # Whichever of the calls' events the profiler kept, each kept call counts once, by its name.
  xla_calls = sorted(by_type.pop("PartitionedCall (XLA)", []))
  assert xla_calls == _xla_calls_by_hand(trace_ops.read_trace(tmp_path))
  assert {name.split("/")[0] for name, _ in xla_calls} <= {
      f"xla_call_{i}" for i in range(XLA_CALLS)}
  assert all(seconds > 0 for _, seconds in xla_calls)
  # The kernels' fusions are inside the calls' time, not ops of their own; what else ran is the
  # matmul, at most once.
  assert not any("fusion" in name for name, _, _ in events)
  assert [name for op_type in by_type for name, _ in by_type[op_type]
          if "matmul" in name.lower()] in ([], ["plain_matmul"])
