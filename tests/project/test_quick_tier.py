"""The quick tier (`-m "not slow"`) starts no process, exports nothing, runs no modes end to end
and trains no model until it learns: conftest fails a test that does any of these without the
slow marker, naming the test and what it did."""

import subprocess
import sys
from typing import NamedTuple

import pytest
import tensorflow as tf

import conftest
from pointer_gen import api
from pointer_gen.inference import export
from pointer_gen.training import train


def test_a_process_started_by_a_test_without_the_marker_fails_it_naming_both(request):
  with pytest.raises(conftest.SlowInQuickTest,
                     match=r"test_quick_tier\.py::test_a_process_started_by_a_test_without_the_"
                           r"marker_fails_it_naming_both starts a process \(\S*python\S* -c\) but is "
                           r"not marked @pytest\.mark\.slow"):
    subprocess.run([sys.executable, "-c", "pass"], check=True)
  assert request.node.get_closest_marker(conftest.SLOW) is None


def test_the_standard_librarys_own_uname_is_no_tests_process():
  assert subprocess.run(["uname", "-p"], capture_output=True, check=True).returncode == 0


def test_a_savedmodel_written_by_a_test_without_the_marker_fails_it(tmp_path):
  with pytest.raises(conftest.SlowInQuickTest, match=r"test_a_savedmodel_written_by_a_test_without_"
                     r"the_marker_fails_it writes a SavedModel but is not marked @pytest\.mark\.slow"):
    tf.saved_model.save(tf.Module(), str(tmp_path / "saved"))
  assert not (tmp_path / "saved").exists()


@pytest.mark.slow
def test_a_test_with_the_marker_starts_processes():
  assert subprocess.run([sys.executable, "-c", "print(6 * 7)"], capture_output=True, text=True,
                        check=True).stdout == "42\n"


def test_the_exports_serving_module_built_by_a_test_without_the_marker_fails_it():
  with pytest.raises(conftest.SlowInQuickTest, match=r"test_the_exports_serving_module_built_by_a_"
                     r"test_without_the_marker_fails_it builds the export's serving module but is "
                     r"not marked @pytest\.mark\.slow"):
    export.ServingModule(model=None, vocab_file=None, hps=None, settings=None)


class _ModeRun(NamedTuple):
  mode: str


_RUNS = []
# A stand-in for api.run_settled under the guard that conftest puts on it.
_run_counted = conftest._counting_modes(_RUNS.append)  # pylint: disable=protected-access


@pytest.fixture
def one_mode_run():
  _run_counted(_ModeRun("train"))


@pytest.fixture
def another_mode_run():
  _run_counted(_ModeRun("eval"))


def test_the_library_runs_every_mode_through_the_counted_function():
  assert getattr(api.run_settled, "guarded", False)


def test_a_mode_in_each_fixture_and_one_in_the_test_are_no_end_to_end_run(one_mode_run,
                                                                          another_mode_run):
  del one_mode_run, another_mode_run
  _RUNS.clear()
  _run_counted(_ModeRun("decode"))
  assert _RUNS == [_ModeRun("decode")]


def test_a_second_mode_run_to_its_end_without_the_marker_fails_the_test():
  _RUNS.clear()
  _run_counted(_ModeRun("train"))
  with pytest.raises(conftest.SlowInQuickTest, match=r"test_a_second_mode_run_to_its_end_without_"
                     r"the_marker_fails_the_test runs a second mode to its end \(--mode=decode\) "
                     r"but is not marked @pytest\.mark\.slow"):
    _run_counted(_ModeRun("decode"))
  assert _RUNS == [_ModeRun("train"), _ModeRun("decode")]


def test_a_mode_run_that_fails_is_not_counted():
  def refused(hps):
    raise ValueError(f"--mode={hps.mode} refused")
  run_refused = conftest._counting_modes(refused)  # pylint: disable=protected-access
  for _ in range(2):
    with pytest.raises(ValueError, match="refused"):
      run_refused(_ModeRun("train"))
  _run_counted(_ModeRun("decode"))


def _counted_step():
  """A train step made by conftest's guard around a stand-in that keeps its calls."""
  calls = []
  return conftest._counting_steps(lambda: calls.append)(), calls  # pylint: disable=protected-access


def test_the_library_makes_every_train_step_through_the_counted_function():
  assert getattr(train.make_train_step, "guarded", False)


def test_training_over_the_quick_tiers_steps_without_the_marker_fails_the_test():
  step, calls = _counted_step()
  for n in range(conftest.MAX_QUICK_STEPS):
    step(n)
  with pytest.raises(conftest.SlowInQuickTest, match=r"test_training_over_the_quick_tiers_steps_"
                     rf"without_the_marker_fails_the_test trains over {conftest.MAX_QUICK_STEPS} "
                     r"steps but is not marked @pytest\.mark\.slow"):
    step(conftest.MAX_QUICK_STEPS)
  assert calls == list(range(conftest.MAX_QUICK_STEPS))


@pytest.fixture
def trained_the_quick_tiers_steps():
  step, _ = _counted_step()
  for n in range(conftest.MAX_QUICK_STEPS):
    step(n)


def test_a_fixtures_steps_and_the_tests_are_counted_apart(trained_the_quick_tiers_steps):
  del trained_the_quick_tiers_steps
  step, calls = _counted_step()
  for n in range(conftest.MAX_QUICK_STEPS):
    step(n)
  assert len(calls) == conftest.MAX_QUICK_STEPS
