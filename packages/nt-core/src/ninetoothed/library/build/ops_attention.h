/* ops_attention.h: scaled_dot_product_attention and rotary_position_embedding of
 * NineToothed's C kernel library (part of ninetoothed_ops.c).  Each variant serves the
 * head dimensions of one power of two (those built: NT_OPS_HEADS). */

/* The power of two ``head`` pads to (``exact``: ``head`` itself), if the library was
   built for it. */
static int nt_ops_head(const char *op, uint64_t head, int exact, int *padded) {
    *padded = (int)nt_ops_power_of_two((int64_t)head);
    for (int i = 0; i < NT_OPS_HEAD_COUNT; ++i)
        if (nt_ops_heads[i] == *padded && (!exact || (uint64_t)*padded == head)) return 0;
    char built[128];
    size_t used = 0;
    built[0] = 0;
    for (int i = 0; i < NT_OPS_HEAD_COUNT && used < sizeof built; ++i)
        used += (size_t)snprintf(built + used, sizeof built - used, "%s%d", i ? ", " : "",
                                 nt_ops_heads[i]);
    if (exact)
        return nt_ops_fail(NINETOOTHED_ERROR_NO_VARIANT,
                           "%s: a head dimension of %llu; the library was built for head "
                           "dimensions of %s", op, (unsigned long long)head, built);
    return nt_ops_fail(NINETOOTHED_ERROR_NO_VARIANT,
                       "%s: a head dimension of %llu pads to %d; the library was built for heads "
                       "padding to %s", op, (unsigned long long)head, *padded, built);
}

#if NT_OPS_HAS_SCALED_DOT_PRODUCT_ATTENTION
NineToothedResult ninetoothed_ops_scaled_dot_product_attention(
    NineToothedStream stream, NineToothedOpsTensor query, NineToothedOpsTensor key,
    NineToothedOpsTensor value, int is_causal, double scale, int enable_gqa,
    NineToothedOpsTensor output) {
    static const char *const names[] = {"query", "key", "value", "output"};
    static const char op[] = "scaled_dot_product_attention";
    const NineToothedOpsTensor tensors[] = {query, key, value, output};
    for (int i = 0; i < 4; ++i) {
        int status = nt_ops_valid(op, names[i], tensors[i], 4, 4);
        if (status) return status;
    }
    int status = nt_ops_dtypes_agree(op, tensors, names, 4);
    if (status) return status;
    const uint64_t *q = query.shape, *k = key.shape;
    int same = k[0] == q[0] && k[3] == q[3];
    for (int d = 0; d < 4; ++d) same = same && value.shape[d] == k[d];
    if (!same) {
        char a[128], b[128], c[128];
        return nt_ops_fail(NINETOOTHED_ERROR_SHAPE, "%s: shapes do not match: %s, %s, %s", op,
                           nt_ops_shape(a, sizeof a, q, 4), nt_ops_shape(b, sizeof b, k, 4),
                           nt_ops_shape(c, sizeof c, value.shape, 4));
    }
    if (k[1] != q[1] && !(enable_gqa && k[1] && q[1] % k[1] == 0))
        return nt_ops_fail(NINETOOTHED_ERROR_SHAPE,
                           "%s: %llu query heads and %llu key/value heads need enable_gqa and "
                           "key/value heads that divide the query heads",
                           op, (unsigned long long)q[1], (unsigned long long)k[1]);
    if (q[3] < 16 || q[3] > 256)
        return nt_ops_fail(NINETOOTHED_ERROR_SHAPE,
                           "%s: the head dimension must be from 16 to 256, got %llu", op,
                           (unsigned long long)q[3]);
    status = nt_ops_output(op, output, q, 4);
    if (status) return status;
    int head;
    status = nt_ops_head(op, q[3], 0, &head);
    if (status) return status;
    double causal = is_causal ? 1.0 : 0.0;
    if (scale == 0.0) scale = 1.0 / sqrt((double)q[3]); /* 0: torch's default */
    nt_ops_view_t views[4];
    for (int i = 0; i < 4; ++i) nt_ops_view(tensors[i], &views[i]);
    return launch_nt_ops_scaled_dot_product_attention(
        stream, nt_ops_kernel_tensor(&views[0]), nt_ops_kernel_tensor(&views[1]),
        nt_ops_kernel_tensor(&views[2]), nt_ops_scalar(&scale), nt_ops_scalar(&causal),
        nt_ops_kernel_tensor(&views[3]), k[1] != q[1], q[2] <= NT_OPS_FEW_QUERIES, head,
        output.dtype);
}
#endif

#if NT_OPS_HAS_ROTARY_POSITION_EMBEDDING
NineToothedResult ninetoothed_ops_rotary_position_embedding(NineToothedStream stream,
                                                            NineToothedOpsTensor input,
                                                            NineToothedOpsTensor sin_,
                                                            NineToothedOpsTensor cos_,
                                                            int interleaved,
                                                            NineToothedOpsTensor output) {
    static const char *const names[] = {"input", "sin", "cos", "output"};
    static const char op[] = "rotary_position_embedding";
    const NineToothedOpsTensor tensors[] = {input, sin_, cos_, output};
    static const int ranks[] = {4, 2, 2, 4};
    for (int i = 0; i < 4; ++i) {
        int status = nt_ops_valid(op, names[i], tensors[i], ranks[i], ranks[i]);
        if (status) return status;
    }
    int status = nt_ops_dtypes_agree(op, tensors, names, 4);
    if (status) return status;
    uint64_t length = input.shape[1], dim = input.shape[3];
    const uint64_t angles[] = {length, dim / 2};
    if (dim % 2 || sin_.shape[0] != length || sin_.shape[1] != dim / 2 ||
        cos_.shape[0] != length || cos_.shape[1] != dim / 2) {
        char a[128], b[128], c[128], d[128];
        return nt_ops_fail(NINETOOTHED_ERROR_SHAPE,
                           "%s: input %s needs an even last dimension and sin, cos of shape %s; "
                           "got %s, %s", op, nt_ops_shape(a, sizeof a, input.shape, 4),
                           nt_ops_shape(b, sizeof b, angles, 2),
                           nt_ops_shape(c, sizeof c, sin_.shape, 2),
                           nt_ops_shape(d, sizeof d, cos_.shape, 2));
    }
    status = nt_ops_output(op, output, input.shape, 4);
    if (status) return status;
    int head;
    status = nt_ops_head(op, dim, 1, &head);
    if (status) return status;
    nt_ops_view_t views[4];
    for (int i = 0; i < 4; ++i) nt_ops_view(tensors[i], &views[i]);
    return launch_nt_ops_rotary_position_embedding(
        stream, nt_ops_kernel_tensor(&views[0]), nt_ops_kernel_tensor(&views[1]),
        nt_ops_kernel_tensor(&views[2]), nt_ops_kernel_tensor(&views[3]), interleaved != 0, head,
        output.dtype);
}
#endif
