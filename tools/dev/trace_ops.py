"""The ops of a tf.profiler trace (its newest .xplane.pb under a log directory), each with its
name, type and duration, for tools/dev/profile_step.py."""

import bisect
import pathlib

from tensorflow.tsl.profiler.protobuf import xplane_pb2

# The trace's events for an asynchronous op's start and for running an XLA executable.
ASYNC_OP_START = "ExecutorState::ProcessAsync::Start"
XLA_EXECUTION = "CpuExecutable::ExecuteAsyncOnStream"


def read_trace(logdir):
  """The newest trace under logdir."""
  paths = sorted(pathlib.Path(logdir).glob("plugins/profile/*/*.xplane.pb"))
  space = xplane_pb2.XSpace()
  space.ParseFromString(paths[-1].read_bytes())
  return space


def stat_value(stat, stat_names):
  """A stat's value; strings that repeat are stored once, as stat metadata, and referenced."""
  kind = stat.WhichOneof("value")
  return stat_names[stat.ref_value] if kind == "ref_value" else getattr(stat, kind)


def op_events(space):
  """(op name, op type, seconds) of every op in the trace. Ops run on the inter-op threads
  (tf_Compute), each event named "name:type"; the executor's own events there are not ops,
  except an asynchronous op's start, which carries the op's name and type as stats: a call to
  an XLA-compiled function (jit_compile) is one, and its kernel's events are named after XLA's
  fusions, so the op is counted from its start event when an XLA execution runs inside it."""
  for plane in space.planes:
    if plane.name != "/host:CPU":
      continue
    names = {key: meta.name for key, meta in plane.event_metadata.items()}
    stat_names = {key: meta.name for key, meta in plane.stat_metadata.items()}
    for line in plane.lines:
      if not line.name.startswith("tf_Compute"):
        continue
      xla_starts = sorted(event.offset_ps for event in line.events
                          if names[event.metadata_id] == XLA_EXECUTION)
      for event in line.events:
        full = names[event.metadata_id]
        if full == ASYNC_OP_START:
          end = event.offset_ps + event.duration_ps
          first = bisect.bisect_left(xla_starts, event.offset_ps)
          if first < len(xla_starts) and xla_starts[first] < end:
            stats = {stat_names[stat.metadata_id]: stat_value(stat, stat_names)
                     for stat in event.stats}
            yield stats["name"], f"{stats['kernel_type']} (XLA)", event.duration_ps / 1e12
          continue
        if ":" not in full or "::" in full or full.startswith("ExecutorState"):
          continue
        name, op_type = full.rsplit(":", 1)
        yield name, op_type, event.duration_ps / 1e12
