"""The launch engine: compiled specialisations, the per-call fast path (:mod:`.fastpath`)."""

from nt_triton._launch.compiled import Loaded, Specialisation, specialise
from nt_triton._launch.fastpath import FastLauncher, HostReads

__all__ = ["FastLauncher", "HostReads", "Loaded", "Specialisation", "specialise"]
