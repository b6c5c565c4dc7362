"""The launch engine: the per-call fast path and the compiled specialisations it launches.

* :mod:`.launcher` -- :class:`~.launcher.FastLauncher`: plans, the miss path,
  binding and loading compiled specialisations;
* :mod:`.hot_source` -- the hot function's source, generated per kernel;
* :mod:`.reads` -- applying a framework's reads (its adapter's
  :class:`~ninetoothed.runtime.hookspecs.HostReads`) one at a time;
* :mod:`.tuning_calls` -- tuning keys, and what the tuner needs for a call;
* :mod:`.target` -- what it needs of a kernel (a protocol: it imports no kernel);
* :mod:`.compiled` -- compiling one specialisation and calling Triton's raw launcher.
"""

__all__: list[str] = []
