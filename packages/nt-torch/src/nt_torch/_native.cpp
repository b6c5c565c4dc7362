// The library ops' native allocation for PyTorch: a plan's output made in C++.
//
// A memo's plan allocates each output through a function of no argument
// (``TorchFramework.allocation``).  From Python, ``template.new_empty(*sizes)``
// goes through PyTorch's argument parser before it reaches ``at::empty``; on the
// GPU machine's host that parse is about half of the allocation's cost, and an
// elementwise op's whole host cost is an allocation and a launch.  ``empty``
// calls ``at::empty`` directly: the same operator, through the same dispatcher
// (and so the same caching allocator, device guard and deterministic fill), with
// the dtype and device of a template tensor.  The express extension
// (``_express.c``) calls it once this module is built; until then, or where it
// cannot be built, plans keep the Python allocation.
//
// Only untraced calls reach a plan (the memo and the express lane ask first), so
// no mode or transform needs to see this allocation.
#include <Python.h>

#include <ATen/ops/empty.h>
#include <c10/util/SmallVector.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/python_variable.h>

namespace {

// empty(like, sizes): a new contiguous tensor of ``sizes`` (a tuple of ints) with
// ``like``'s dtype, layout and device; it requires no grad.
PyObject* empty(PyObject* /*module*/, PyObject* const* args, Py_ssize_t count) {
  HANDLE_TH_ERRORS
  if (count != 2 || !THPVariable_Check(args[0]) || !PyTuple_Check(args[1])) {
    PyErr_SetString(PyExc_TypeError, "empty(like, sizes) takes a tensor and a tuple of ints");
    return nullptr;
  }
  const at::Tensor& like = THPVariable_Unpack(args[0]);
  const Py_ssize_t rank = PyTuple_GET_SIZE(args[1]);
  c10::SmallVector<int64_t, 8> sizes(static_cast<size_t>(rank));
  for (Py_ssize_t i = 0; i < rank; i++) {
    const long long size = PyLong_AsLongLong(PyTuple_GET_ITEM(args[1], i));
    if (size == -1 && PyErr_Occurred()) return nullptr;
    sizes[static_cast<size_t>(i)] = size;
  }
  return THPVariable_Wrap(at::empty(sizes, like.options()));
  END_HANDLE_TH_ERRORS
}

PyMethodDef methods[] = {
    {"empty", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(empty)), METH_FASTCALL,
     "empty(like, sizes): at::empty(sizes, like.options()), wrapped."},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef definition = {
    PyModuleDef_HEAD_INIT, "ninetoothed_torch_native",
    "The library ops' native allocation for PyTorch.", -1, methods,
    nullptr, nullptr, nullptr, nullptr,
};

}  // namespace

PyMODINIT_FUNC PyInit_ninetoothed_torch_native() { return PyModule_Create(&definition); }
