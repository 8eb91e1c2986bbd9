"""The suite's check for errors in a command's stderr sees the project's errors and nothing of
TensorFlow's runtime, whose C++ notices differ between CPUs, builds and versions."""

from hypothesis import given
from hypothesis import strategies as st

from helpers import project_error_lines

# What a run of `python -m pointer_gen.run` prints around its errors (from a real demo run).
CLEAN_RUN = """\
I1123 12:14:02.118210 139812 run.py:43] No --data_path: using the built-in demo corpus
I1123 12:14:09.550117 139812 train.py:201] step 1: loss 6.2514, 0.41 s
W1123 12:14:10.002311 139812 checkpoints.py:60] Removed model.ckpt-3_temp, left by a save that was cut off
"""
TF_NOTICES = [
    "E0000 00:00:1795425238.848519    3975 util.cc:131] oneDNN supports DT_BOOL only on platforms "
    "with AVX-512. Falling back to the default Eigen-based implementation if present.",
    "E0000 00:00:1763899101.119826   12207 cuda_executor.cc:1309] INTERNAL: CUDA Runtime error: "
    "Failed call to cudaGetRuntimeVersion",
    "2026-11-23 12:14:02.118210: E tensorflow/core/framework/op_kernel.cc:1830] OP_REQUIRES failed",
    "F0000 00:00:1795425238.848519    3975 port.cc:153] any text at all",
]

file_names = st.from_regex(r"\A[a-z_][a-z0-9_]{0,20}\.(cc|h|cpp)\Z")
texts = st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), max_size=120)


def test_a_clean_run_and_tensorflows_notices_are_not_errors():
  assert project_error_lines(CLEAN_RUN + "\n".join(TF_NOTICES)) == []


@given(severity=st.sampled_from("EF"), file_name=file_names, text=texts,
       thread=st.integers(1, 2**63), line_number=st.integers(1, 99999))
def test_any_tensorflow_cpp_error_line_is_not_the_projects(severity, file_name, text, thread,
                                                           line_number):
  line = (f"{severity}0000 00:00:1795425238.848519 {thread:>8} {file_name}:{line_number}] "
          f"{text}")
  assert project_error_lines(CLEAN_RUN + line + "\n") == []


@given(severity=st.sampled_from("EF"), text=texts,
       module=st.sampled_from(["run.py", "evaluate.py", "train.py", "decode.py", "checkpoints.py"]))
def test_an_error_logged_by_a_pointer_gen_module_is_found(severity, text, module):
  line = f"{severity}1123 12:14:11.000001 139812 {module}:88] {text}"
  assert project_error_lines(CLEAN_RUN + line + "\n") == [line]


def test_tracebacks_and_printed_errors_are_found():
  stderr = (CLEAN_RUN + "Traceback (most recent call last):\n  File \"x.py\", line 1\n"
            "ValueError: boom\nerror: --vocab_size=3: must be 0 (whole file) or more than the "
            "4 special tokens\n")
  assert project_error_lines(stderr) == [
      "Traceback (most recent call last):",
      "error: --vocab_size=3: must be 0 (whole file) or more than the 4 special tokens"]
