"""nt-triton's version, in a module of its own: tuning tables and the kernel-reuse
index are keyed by it, and their modules must not import the package itself."""

__all__ = ["VERSION", "VERSIONED_MODULES"]

VERSION = "0.1.0"

VERSIONED_MODULES = ("nt_triton", "triton")
"""The modules whose versions and source files nt-triton's fingerprints cover (its
kernel-reuse index and its C libraries): a kernel's fingerprint names their
functions and classes (:func:`ninetoothed.spec.fingerprint.spec_fingerprint`)."""
