"""Hand-written Triton baselines that mirror the kernels NineToothed generates.

Each module exposes a plain ``@triton.jit`` kernel, an autotuned variant of it
(where the NineToothed kernel is autotuned too), and a Python wrapper that
allocates the output and launches the kernel.
"""
