"""The runtime: ``make`` and ``jit``, each call's binding, and the plugins that run kernels.

:mod:`.make` turns an arrangement and an application into a
:class:`~ninetoothed.runtime.make.Kernel` (its options checked by
:mod:`.options`); :mod:`.plugins` finds the code-generation backend and the
framework adapters that implement :mod:`.hookspecs`' contracts; a call is
bound to the kernel's parameters by :mod:`.binding`, through the adapter
template of :mod:`.adapter`; :mod:`.autodiff` declares kernels functional,
differentiable or batched for every framework.

The package imports none of its modules.
"""

__all__: list[str] = []
