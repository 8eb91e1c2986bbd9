"""The records a run skips: `Skip`, what a reader raises for a record framed correctly but
unusable, and `SkipCounter`, which counts them by reason and logs the first few, so that one bad
example does not stop a long run (a record whose framing is broken raises DataError instead:
nothing after it can be located reliably)."""

import collections
import contextlib

from absl import logging

# Enough warnings to show what is wrong without flooding the log when a whole file is bad.
MAX_LOGGED_PER_REASON = 20


class Skip(Exception):
  """A record that cannot be used; carries the reason and detail for `SkipCounter.skip`."""

  def __init__(self, reason, detail=""):
    super().__init__(reason)
    self.reason = reason
    self.detail = detail


class SkipCounter:
  """Counts skipped records by reason and logs the first few of each reason. A record is counted
  and logged once, however many passes over the data meet it (training reads its files again
  every epoch), and, inside `one_count_per_record`, however many readers meet it: there every
  SkipCounter made shares one count."""

  def __init__(self):
    self._tally = _shared_tally or _Tally()
    self.counts = self._tally.counts
    self._seen = self._tally.seen

  @property
  def total(self):
    return sum(self.counts.values())

  def skip(self, source, index, reason, detail=""):
    if (source, index) in self._seen:
      return
    self._seen.add((source, index))
    self.counts[reason] += 1
    count = self.counts[reason]
    if count > MAX_LOGGED_PER_REASON:
      return
    suffix = f" ({detail})" if detail else ""
    logging.warning("%s: record %d: skipped, %s%s", source, index, reason, suffix)
    if count == MAX_LOGGED_PER_REASON:
      logging.warning("Skipped %d records for %r; further ones are only counted",
                      count, reason)

  def log_summary(self):
    """Logs the summary line when records were skipped since the last one logged (by any
    counter sharing this one's count)."""
    if self.total != self._tally.total_logged:
      logging.warning("Data: %s", self.summary())
      self._tally.total_logged = self.total

  def summary(self):
    if not self.counts:
      return "skipped 0 records"
    parts = ", ".join(f"{reason}: {n}" for reason, n in sorted(self.counts.items()))
    text = f"skipped {self.total} records ({parts})"
    if max(self.counts.values()) > MAX_LOGGED_PER_REASON:
      text += f"; only the first {MAX_LOGGED_PER_REASON} of each reason were logged"
    return text


class _Tally:
  """What SkipCounters that count together share."""

  def __init__(self):
    self.counts = collections.Counter()
    self.seen = set()  # (source, index) of the records counted
    self.total_logged = 0  # the total in the last summary line logged


_shared_tally = None


@contextlib.contextmanager
def one_count_per_record():
  """Within it, every SkipCounter counts into one tally: a command's start-up checks, its
  training or eval and eval's samples read the same records, and a bad one is logged and
  counted once, not once by each."""
  global _shared_tally
  outer = _shared_tally
  _shared_tally = outer or _Tally()
  try:
    yield
  finally:
    _shared_tally = outer
