"""The seed documents' kernels, written as they write them.

Used by the test suite, the demo and the benchmarks (one definition each).
Import from the repository root: `from nt_examples import matmul`.
"""
