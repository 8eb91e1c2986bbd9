"""The quick tier (`-m "not slow"`) starts no process: conftest fails a test that starts one
without the slow marker, naming the test and the program."""

import subprocess
import sys

import pytest

import conftest


def test_a_process_started_by_a_test_without_the_marker_fails_it_naming_both(request):
  with pytest.raises(conftest.ProcessInQuickTest,
                     match=r"test_quick_tier\.py::test_a_process_started_by_a_test_without_the_"
                           r"marker_fails_it_naming_both starts a process \(\S*python\S* -c\) but is "
                           r"not marked @pytest\.mark\.slow"):
    subprocess.run([sys.executable, "-c", "pass"], check=True)
  assert request.node.get_closest_marker(conftest.SLOW) is None


def test_the_standard_librarys_own_uname_is_no_tests_process():
  assert subprocess.run(["uname", "-p"], capture_output=True, check=True).returncode == 0


@pytest.mark.slow
def test_a_test_with_the_marker_starts_processes():
  assert subprocess.run([sys.executable, "-c", "print(6 * 7)"], capture_output=True, text=True,
                        check=True).stdout == "42\n"
