"""Test-side framework helpers: one module per framework, one interface.

Kernel tests are written once and parametrised by framework; each framework's
helper converts numpy data to its tensors on the test device, makes poisoned
outputs, calls a kernel in that framework's convention (in place for PyTorch
and PaddlePaddle, functional for JAX) and hands results back as numpy.
"""
