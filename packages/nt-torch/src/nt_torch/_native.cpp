// The library ops' native allocation and signature check for PyTorch, in C++.
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
//
// ``Guard(tensors)`` is the memo's signature check (``signature_guard``), the
// answer PyTorch's ``TensorGuards`` gives, read straight from the tensors: called
// with as many objects, it is true when each has the recorded exact type, dispatch
// keys (with the thread's included and excluded keys applied, the Python keys
// left out: the memo and the lane test dispatch modes themselves, before the
// guard), dtype, device, requires_grad, sizes and strides.
#include <Python.h>

#include <ATen/ops/empty.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/util/SmallVector.h>

#include <memory>
#include <new>
#include <vector>
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

const c10::DispatchKeySet python_keys({c10::DispatchKey::Python,
                                       c10::DispatchKey::PythonTLSSnapshot,
                                       c10::DispatchKey::PythonDispatcher});

// A tensor's dispatch keys as an operator call in this thread would see them.
uint64_t effective_keys(const at::Tensor& tensor) {
  const c10::impl::LocalDispatchKeySet local = c10::impl::tls_local_dispatch_key_set();
  return (((tensor.key_set() | local.included_) - local.excluded_) - python_keys).raw_repr();
}

struct Signature {
  PyTypeObject* type;
  uint64_t keys;
  at::ScalarType dtype;
  at::Device device;
  bool requires_grad;
  std::vector<int64_t> sizes, strides;

  bool fits(PyObject* value) const {
    if (Py_TYPE(value) != type) return false;
    const at::Tensor& tensor = THPVariable_Unpack(value);
    return tensor.scalar_type() == dtype && tensor.device() == device &&
           tensor.requires_grad() == requires_grad && tensor.sizes() == sizes &&
           tensor.strides() == strides && effective_keys(tensor) == keys;
  }
};

// The recorded types are held (a type freed and another made at its address must not
// pass for it).
void release_types(const std::vector<Signature>& signatures) {
  for (const Signature& signature : signatures)
    Py_DECREF(reinterpret_cast<PyObject*>(signature.type));
}

struct Guard {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  std::vector<Signature>* signatures;
};

PyObject* guard_call(PyObject* callable, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  const auto& signatures = *reinterpret_cast<Guard*>(callable)->signatures;
  const Py_ssize_t count = PyVectorcall_NARGS(nargsf);
  if ((kwnames != nullptr && PyTuple_GET_SIZE(kwnames) != 0) ||
      count != static_cast<Py_ssize_t>(signatures.size()))
    Py_RETURN_FALSE;
  try {
    for (Py_ssize_t i = 0; i < count; i++)
      if (!signatures[static_cast<size_t>(i)].fits(args[i])) Py_RETURN_FALSE;
  } catch (const std::exception&) {
    Py_RETURN_FALSE;  // a tensor whose sizes cannot be read (symbolic, nested): not these
  }
  Py_RETURN_TRUE;
}

// Each tensor's signature appended to ``out`` (its type held); false with a Python error
// set for anything but a plain strided tensor; throws where sizes cannot be read.
bool record(PyObject* sequence, std::vector<Signature>& out) {
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(sequence); i++) {
    PyObject* value = PySequence_Fast_GET_ITEM(sequence, i);
    if (!THPVariable_Check(value)) {
      PyErr_Format(PyExc_TypeError, "Guard(tensors): item %zd is a %s, not a tensor", i,
                   Py_TYPE(value)->tp_name);
      return false;
    }
    const at::Tensor& tensor = THPVariable_Unpack(value);
    if (tensor.layout() != at::kStrided || tensor.is_nested()) {
      PyErr_Format(PyExc_TypeError, "Guard(tensors): item %zd is not a strided tensor", i);
      return false;
    }
    const auto sizes = tensor.sizes(), strides = tensor.strides();  // throw if symbolic
    out.push_back(Signature{Py_TYPE(value), effective_keys(tensor), tensor.scalar_type(),
                            tensor.device(), tensor.requires_grad(),
                            std::vector<int64_t>(sizes.begin(), sizes.end()),
                            std::vector<int64_t>(strides.begin(), strides.end())});
    Py_INCREF(Py_TYPE(value));
  }
  return true;
}

// Guard(tensors): records each tensor's signature; refuses anything but plain
// strided tensors with concrete sizes.
int guard_init(PyObject* object, PyObject* args, PyObject* kwargs) {
  HANDLE_TH_ERRORS
  auto* self = reinterpret_cast<Guard*>(object);
  PyObject* tensors = nullptr;
  static const char* keywords[] = {"tensors", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O", const_cast<char**>(keywords), &tensors))
    return -1;
  PyObject* sequence = PySequence_Fast(tensors, "Guard(tensors) takes a sequence of tensors");
  if (sequence == nullptr) return -1;
  auto signatures = std::make_unique<std::vector<Signature>>();
  bool recorded = false;
  try {
    recorded = record(sequence, *signatures);
  } catch (...) {  // the types taken so far go back, and PyTorch's error is raised
    release_types(*signatures);
    Py_DECREF(sequence);
    throw;
  }
  Py_DECREF(sequence);
  if (!recorded) {
    release_types(*signatures);
    return -1;
  }
  release_types(*self->signatures);
  delete self->signatures;
  self->signatures = signatures.release();
  self->vectorcall = guard_call;
  return 0;
  END_HANDLE_TH_ERRORS_RET(-1)
}

PyObject* guard_new(PyTypeObject* type, PyObject* /*args*/, PyObject* /*kwargs*/) {
  PyObject* object = type->tp_alloc(type, 0);
  if (object == nullptr) return nullptr;
  auto* self = reinterpret_cast<Guard*>(object);
  self->signatures = new (std::nothrow) std::vector<Signature>();
  self->vectorcall = guard_call;
  if (self->signatures == nullptr) {
    Py_DECREF(object);
    return PyErr_NoMemory();
  }
  return object;
}

void guard_dealloc(PyObject* object) {
  auto* signatures = reinterpret_cast<Guard*>(object)->signatures;
  if (signatures != nullptr) release_types(*signatures);
  delete signatures;
  Py_TYPE(object)->tp_free(object);
}

PyTypeObject GuardType = [] {
  PyTypeObject type{PyVarObject_HEAD_INIT(nullptr, 0)};
  type.tp_name = "ninetoothed_torch_native.Guard";
  type.tp_doc = "Guard(tensors)(*values): whether the values have the tensors' signatures.";
  type.tp_basicsize = sizeof(Guard);
  type.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL;
  type.tp_new = guard_new;
  type.tp_init = guard_init;
  type.tp_dealloc = guard_dealloc;
  type.tp_call = PyVectorcall_Call;
  type.tp_vectorcall_offset = offsetof(Guard, vectorcall);
  return type;
}();

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

PyMODINIT_FUNC PyInit_ninetoothed_torch_native() {
  if (PyType_Ready(&GuardType) < 0) return nullptr;
  PyObject* module = PyModule_Create(&definition);
  if (module == nullptr) return nullptr;
  Py_INCREF(&GuardType);
  if (PyModule_AddObject(module, "Guard", reinterpret_cast<PyObject*>(&GuardType)) < 0) {
    Py_DECREF(&GuardType);
    Py_DECREF(module);
    return nullptr;
  }
  return module;
}
