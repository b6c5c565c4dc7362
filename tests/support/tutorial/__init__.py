"""The tutorial's kernels, written as the seed documents write them: test fixtures
of the language (``make`` and ``jit`` styles, constexpr and scalar parameters,
inlined helpers, libdevice).

The ops users call live in the kernel library (``ninetoothed.library``, exposed
as ``nt_torch.ops`` …); these are not shipped.  Import them as
``from support.tutorial import matmul`` (``tests/`` is on the tests' path).
"""
