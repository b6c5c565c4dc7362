"""Where NineToothed keeps what it generates: sources, the kernel-reuse index, tuning tables."""

__all__: list[str] = []
