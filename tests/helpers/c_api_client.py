"""Runs SavedModels through TensorFlow's C API, as a C or C++ server does, from a process that
never imports TensorFlow's Python package: `python c_api_client.py < REQUEST.json` loads
libtensorflow_cc.so.2 from the installed tensorflow package with ctypes, loads each export with
TF_LoadSessionFromSavedModel (the C++ LoadSavedModel TF Serving runs: the MetaGraph's restore
and init ops) and runs each signature asked for with TF_SessionRun on a TF_STRING batch.

REQUEST, read once the library is loaded: {"articles": [str], "exports": [{"dir": str,
"signatures": {name: {"input": tensor name, "outputs": {key: tensor name}}}}]}. Prints
{"exports": [{name: {key: nested lists}}], "imported_tensorflow": bool}: strings decoded as
UTF-8, floats as Python floats.
"""

import ctypes
import importlib.util
import json
import os
import sys

TF_FLOAT, TF_INT32, TF_STRING = 1, 3, 7
# sizeof(TF_TString) (tensorflow/c/tf_tstring.h): a union of 24-byte representations.
TSTRING_SIZE = 24
_SCALARS = {TF_FLOAT: ctypes.c_float, TF_INT32: ctypes.c_int32}


class Output(ctypes.Structure):
  _fields_ = [("oper", ctypes.c_void_p), ("index", ctypes.c_int)]


def _library():
  # find_spec locates the package without running its __init__ (which would import TF).
  package = os.path.dirname(importlib.util.find_spec("tensorflow").origin)
  lib = ctypes.CDLL(os.path.join(package, "libtensorflow_cc.so.2"))
  p, i, size = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t
  signatures = {
      "TF_NewStatus": (p, []), "TF_DeleteStatus": (None, [p]), "TF_GetCode": (i, [p]),
      "TF_Message": (ctypes.c_char_p, [p]), "TF_NewGraph": (p, []),
      "TF_DeleteGraph": (None, [p]), "TF_NewSessionOptions": (p, []),
      "TF_DeleteSessionOptions": (None, [p]),
      "TF_LoadSessionFromSavedModel": (p, [p, p, ctypes.c_char_p,
                                           ctypes.POINTER(ctypes.c_char_p), i, p, p, p]),
      "TF_CloseSession": (None, [p, p]), "TF_DeleteSession": (None, [p, p]),
      "TF_GraphOperationByName": (p, [p, ctypes.c_char_p]),
      "TF_SessionRun": (None, [p, p, ctypes.POINTER(Output), ctypes.POINTER(p), i,
                               ctypes.POINTER(Output), ctypes.POINTER(p), i, p, i, p, p]),
      "TF_AllocateTensor": (p, [i, ctypes.POINTER(ctypes.c_int64), i, size]),
      "TF_DeleteTensor": (None, [p]), "TF_TensorData": (p, [p]), "TF_TensorType": (i, [p]),
      "TF_NumDims": (i, [p]), "TF_Dim": (ctypes.c_int64, [p, i]),
      "TF_StringInit": (None, [p]), "TF_StringCopy": (None, [p, ctypes.c_char_p, size]),
      "TF_StringGetDataPointer": (p, [p]), "TF_StringGetSize": (size, [p]),
      "TF_StringDealloc": (None, [p]),
  }
  for name, (restype, argtypes) in signatures.items():
    function = getattr(lib, name)
    function.restype, function.argtypes = restype, argtypes
  return lib


class Client:
  """One C API library and status; `run` loads an export and runs its signatures."""

  def __init__(self):
    self.lib = _library()
    self.status = self.lib.TF_NewStatus()

  def _check(self, what):
    if self.lib.TF_GetCode(self.status) != 0:
      raise RuntimeError(f"{what}: {self.lib.TF_Message(self.status).decode('utf-8')}")

  def _output(self, graph, tensor_name):
    name, index = tensor_name.rsplit(":", 1)
    oper = self.lib.TF_GraphOperationByName(graph, name.encode("utf-8"))
    if not oper:
      raise RuntimeError(f"no operation {name} in the graph")
    return Output(oper, int(index))

  def _string_batch(self, articles):
    lib = self.lib
    dims = (ctypes.c_int64 * 1)(len(articles))
    tensor = lib.TF_AllocateTensor(TF_STRING, dims, 1, TSTRING_SIZE * len(articles))
    data = lib.TF_TensorData(tensor)
    for i, article in enumerate(articles):
      encoded = article.encode("utf-8")
      lib.TF_StringInit(data + i * TSTRING_SIZE)
      lib.TF_StringCopy(data + i * TSTRING_SIZE, encoded, len(encoded))
    return tensor

  def _free_string_batch(self, tensor, count):
    # TF_DeleteTensor frees the buffer of a tensor made by TF_AllocateTensor, not the heap
    # storage each long TF_TString owns.
    data = self.lib.TF_TensorData(tensor)
    for i in range(count):
      self.lib.TF_StringDealloc(data + i * TSTRING_SIZE)
    self.lib.TF_DeleteTensor(tensor)

  def _values(self, tensor):
    """The tensor as nested lists."""
    lib = self.lib
    shape = [lib.TF_Dim(tensor, d) for d in range(lib.TF_NumDims(tensor))]
    count = 1
    for dim in shape:
      count *= dim
    data, dtype = lib.TF_TensorData(tensor), lib.TF_TensorType(tensor)
    if dtype == TF_STRING:
      flat = [ctypes.string_at(lib.TF_StringGetDataPointer(data + i * TSTRING_SIZE),
                               lib.TF_StringGetSize(data + i * TSTRING_SIZE)).decode("utf-8")
              for i in range(count)]
    elif dtype in _SCALARS:
      flat = list((_SCALARS[dtype] * count).from_address(data)) if count else []
    else:
      raise RuntimeError(f"output of TF_DataType {dtype} not handled")
    for dim in reversed(shape[1:]):
      flat = [flat[i:i + dim] for i in range(0, len(flat), dim)]
    return flat

  def run(self, export_dir, signatures, articles):
    lib = self.lib
    graph, options = lib.TF_NewGraph(), lib.TF_NewSessionOptions()
    tags = (ctypes.c_char_p * 1)(b"serve")
    session = lib.TF_LoadSessionFromSavedModel(options, None, export_dir.encode("utf-8"), tags,
                                               1, graph, None, self.status)
    self._check(f"TF_LoadSessionFromSavedModel({export_dir})")
    results = {}
    try:
      for name, signature in signatures.items():
        inputs = (Output * 1)(self._output(graph, signature["input"]))
        keys = sorted(signature["outputs"])
        outputs = (Output * len(keys))(*[self._output(graph, signature["outputs"][k])
                                         for k in keys])
        batch = self._string_batch(articles)
        values = (ctypes.c_void_p * len(keys))()
        try:
          lib.TF_SessionRun(session, None, inputs, (ctypes.c_void_p * 1)(batch), 1, outputs,
                            values, len(keys), None, 0, None, self.status)
        finally:
          self._free_string_batch(batch, len(articles))
        self._check(f"TF_SessionRun({export_dir}, {name})")
        results[name] = {k: self._values(v) for k, v in zip(keys, values)}
        for value in values:
          lib.TF_DeleteTensor(value)
    finally:
      lib.TF_CloseSession(session, self.status)
      lib.TF_DeleteSession(session, self.status)
      lib.TF_DeleteSessionOptions(options)
      lib.TF_DeleteGraph(graph)
    return results


def main():
  client = Client()
  request = json.load(sys.stdin)
  results = [client.run(e["dir"], e["signatures"], request["articles"])
             for e in request["exports"]]
  print(json.dumps({"exports": results, "imported_tensorflow": "tensorflow" in sys.modules}))


if __name__ == "__main__":
  main()
