"""Arrangements: symbols, symbolic tensors and the meta-operations that arrange them.

Everything here is symbolic and needs no backend: :mod:`.symbol` (integer
expressions) and :mod:`.simplify` (their clean-up), :mod:`.dtype` (element
types), :mod:`.tensor` (:class:`~ninetoothed.arrangement.tensor.Tensor` and
its meta-operations, with the argument checks, slicing, reshaping and
broadcasting helpers in the ``_`` modules beside it), :mod:`.mapping` (the
records that tell each element its source element), :mod:`.names` (generated
tensor names) and :mod:`.reference` (the reference semantics: arrangements
evaluated on concrete sizes).

The package imports none of its modules: ``import ninetoothed.arrangement.x``
loads ``x`` and what it needs, nothing more.
"""

__all__: list[str] = []
