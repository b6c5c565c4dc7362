"""Kernels used by the tests, written as the seed documents write them."""
