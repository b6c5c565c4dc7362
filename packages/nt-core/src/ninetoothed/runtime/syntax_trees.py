"""One lock for the work on Python syntax trees that threads would otherwise do at once.

CPython 3.11 (and some later releases) counts the depth of its conversions
between syntax trees and Python objects (``ast.parse``, ``compile`` of a
tree) in interpreter-wide state, not per thread: two threads converting at
once can fail with ``SystemError: AST constructor recursion depth mismatch``.
Making a kernel parses and builds syntax trees throughout (the application's
source, symbol expressions, the generated code), and so does Triton when it
interprets or first compiles a kernel.  Everything of ours that does holds
:data:`LOCK`: ``make`` and ``jit`` while they analyse and generate, and the
Triton backend's interpreted launches and front-end checks (its interpreter
lock is this lock), so one thread's make never meets another's first call.
"""

from __future__ import annotations

import threading

__all__ = ["LOCK"]

LOCK = threading.RLock()
"""Held while a thread makes a kernel, and by backends around their own syntax-tree work
(re-entrant: a kernel made while a launch holds it)."""
