"""Peak memory of the calling process, for the benchmarks' reports."""

import pathlib
import resource


def peak_rss_gb():
  """This process's own peak RSS in GB. Linux keeps ru_maxrss across exec, so in a child that
  tools/dev/benchmark.py started it would hold the parent's peak when that is higher: read VmHWM,
  the process's own high-water mark, where /proc has it."""
  status = pathlib.Path("/proc/self/status")
  if status.exists():
    for line in status.read_text().splitlines():
      if line.startswith("VmHWM:"):
        return int(line.split()[1]) / 2**20  # kB
  return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
