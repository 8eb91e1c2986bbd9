import os
import stat

import pytest
import tensorflow as tf

from pointer_gen.base import files


def test_write_text_atomic_replaces_the_file_whole(tmp_path):
  path = tmp_path / "ROUGE_results.txt"
  files.write_text_atomic(str(path), "first\n")
  files.write_text_atomic(path, "second: của\n")
  assert path.read_text(encoding="utf-8") == "second: của\n"
  assert os.listdir(tmp_path) == ["ROUGE_results.txt"]
  # The usual permissions (umask applied), not mkstemp's 0600.
  umask = os.umask(0)
  os.umask(umask)
  assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask


def test_atomic_file_writes_bytes(tmp_path):
  path = tmp_path / "train.bin"
  with files.atomic_file(path, "wb") as f:
    f.write(b"\x00\x01")
    # Nothing at the final name while the file is being written.
    assert not path.exists()
    assert os.listdir(tmp_path) == [f"train.bin{files.TEMPORARY_MARK}{os.getpid()}"]
  assert path.read_bytes() == b"\x00\x01"
  assert os.listdir(tmp_path) == ["train.bin"]


def test_an_error_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
  path = tmp_path / "vocab"
  path.write_text("old 1\n")
  with pytest.raises(KeyboardInterrupt):
    with files.atomic_file(path) as f:
      f.write("new 2\n")
      raise KeyboardInterrupt
  assert path.read_text() == "old 1\n"
  assert os.listdir(tmp_path) == ["vocab"]


def test_paths_with_a_scheme_go_through_tensorflows_file_systems():
  path = "ram://pointer_gen_test/checkpoint"
  files.write_text_atomic(path, "model_checkpoint_path: \"model.ckpt-1\"\n")
  files.write_text_atomic(path, "model_checkpoint_path: \"model.ckpt-2\"\n")
  with tf.io.gfile.GFile(path) as f:
    assert f.read() == "model_checkpoint_path: \"model.ckpt-2\"\n"
  assert tf.io.gfile.listdir("ram://pointer_gen_test") == ["checkpoint"]


def test_unknown_mode_is_refused(tmp_path):
  with pytest.raises(ValueError, match="mode='a': expected 'w' or 'wb'"):
    with files.atomic_file(tmp_path / "x", "a"):
      pass
