"""NineToothed's kernel library: common deep-learning ops written in the language.

One module per op holds its ``arrangement``, its ``application`` and
``premake`` (the tensors and options of each variant ``make`` builds):
``add``, ``addmm``, ``bmm``, ``conv2d``, ``fused_add_rms_norm``,
``max_pool2d``, ``mm``, ``rms_norm``, ``rotary_position_embedding``,
``scaled_dot_product_attention``, ``scaled_mm`` (float8), ``silu``,
``softmax`` and ``swiglu``.  What
they share is defined once: ``mm``'s arrangement and application serve
``bmm``, ``addmm`` and ``conv2d`` (the paper's implicit GEMM), and their
split-K form (``mm_split``, then ``split_sum``) serves outputs too small to
fill the GPU, as ``flash_decoding`` serves attention of a few query rows
against a long key cache; :mod:`~ninetoothed.library.tiling` holds the
element-wise and row-wise arrangements.

The ops themselves, which check arguments, allocate outputs and pick a
kernel, are framework-agnostic (:mod:`ninetoothed.library.ops`) and
exposed per framework as ``nt_torch.ops``, ``nt_paddle.ops`` and
``nt_jax.ops``, with the same names.  Kernels are made on first use.

:func:`pinned_block_sizes` builds kernels with a fixed block size instead of
tuning them (tests), and :func:`made_kernels` lists the kernels made so far
(their ``source``, their tuned configuration).  :func:`pinned_splits` makes the
matrix-multiplication ops split their reductions into a fixed number of chunks
(1: never) instead of choosing (tests); :func:`pinned_key_splits` does the same
for the keys of decoding-shaped attention (``flash_decoding``; 0: never).
"""

from ninetoothed.library.ops.decoding import pinned_key_splits
from ninetoothed.library.ops.kernels import made as made_kernels
from ninetoothed.library.ops.kernels import pinned_block_sizes
from ninetoothed.library.ops.split import pinned_splits

__all__ = ["made_kernels", "pinned_block_sizes", "pinned_key_splits", "pinned_splits"]
