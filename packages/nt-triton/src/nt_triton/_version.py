"""nt-triton's version, in a module of its own: tuning tables and the kernel-reuse
index are keyed by it, and their modules must not import the package itself."""

__all__ = ["VERSION"]

VERSION = "0.1.0"
