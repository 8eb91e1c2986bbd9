"""Two checkouts measured in interleaved rounds, for tools/dev/compare_trees.py and
tools/dev/time_suite.py: the order of the two alternated each round (on a loaded or drifting machine
the first process of a pair often runs faster, whichever tree it is), each figure reported as its
median, min and max per tree and the new/base ratio of each round, with the CPU named."""

import os
import pathlib
import re
import statistics


def order(round_index):
  """The trees in the order round `round_index` (from 0) runs them."""
  return ("base", "new") if round_index % 2 == 0 else ("new", "base")


def cpu():
  """The CPU's model name, family, logical CPUs and bfloat16 instructions, from /proc/cpuinfo."""
  info = pathlib.Path("/proc/cpuinfo").read_text() if os.path.exists("/proc/cpuinfo") else ""
  model = re.search(r"model name\s*: (.*)", info)
  family = re.search(r"cpu family\s*: (\d+)", info)
  bf16 = [f for f in ("avx512_bf16", "amx_bf16") if re.search(rf"\b{f}\b", info)]
  return (f"{model.group(1) if model else 'unknown CPU'}, family "
          f"{family.group(1) if family else '?'}, {os.cpu_count()} CPUs, "
          f"{', '.join(bf16) or 'no bfloat16 instructions'}")


def summary(figures, digits=3):
  """A line per figure of {"base": {figure: [one value per round]}, "new": {...}}."""
  lines = []
  for key in figures["base"]:
    base, new = figures["base"][key], figures["new"][key]
    ratios = [n / b if b else float("nan") for n, b in zip(new, base)]
    lines.append(
        f"{key}: base median {statistics.median(base):.{digits}f} ({min(base):.{digits}f}-"
        f"{max(base):.{digits}f}), new {statistics.median(new):.{digits}f} "
        f"({min(new):.{digits}f}-{max(new):.{digits}f}); new/base by round "
        f"{', '.join(f'{r:.3f}' for r in ratios)}, median {statistics.median(ratios):.3f}")
  return lines
