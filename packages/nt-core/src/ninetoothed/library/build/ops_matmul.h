/* ops_matmul.h: mm, bmm, addmm, conv2d and max_pool2d of NineToothed's C kernel library
 * (part of ninetoothed_ops.c).  The GEMMs pick thin tiles and persistent programs as
 * ninetoothed.library.ops does; they do not split K (small outputs run one kernel). */

/* ``tallest`` as ninetoothed.library.ops.matmul picks it for an unsplit output: the
 * vector form's power of two of ``rows`` (mm.vector_tallest: at most NT_OPS_VECTOR_ROWS
 * rows and NT_OPS_VECTOR_COLUMNS columns), else mm.tallest_block's (0 for None above
 * NT_OPS_THIN rows). */
static int nt_ops_tallest(uint64_t batch, uint64_t rows, uint64_t columns) {
    int64_t tallest = nt_ops_power_of_two((int64_t)(rows ? rows : 1));
    if (rows >= 1 && rows <= NT_OPS_VECTOR_ROWS && batch * columns <= NT_OPS_VECTOR_COLUMNS)
        return (int)tallest;
    if (rows > NT_OPS_THIN) return 0;
    return tallest < 16 ? 16 : (int)tallest;
}

/* ninetoothed.library.mm.uses_persistent. */
static int nt_ops_persistent(uint64_t batch, uint64_t rows, uint64_t columns) {
    return rows > NT_OPS_THIN && batch * rows * columns >= NT_OPS_PERSISTENT_ELEMENTS;
}

/* ``input @ mat2`` is defined: inner sizes and batch sizes agree. */
static int nt_ops_inner(const char *op, NineToothedOpsTensor a, NineToothedOpsTensor b) {
    int n = a.ndim, agree = a.shape[n - 1] == b.shape[n - 2];
    for (int d = 0; d < n - 2; ++d) agree = agree && a.shape[d] == b.shape[d];
    if (agree) return 0;
    char x[256], y[256];
    return nt_ops_fail(NINETOOTHED_ERROR_SHAPE, "%s: cannot multiply shapes %s and %s", op,
                       nt_ops_shape(x, sizeof x, a.shape, a.ndim),
                       nt_ops_shape(y, sizeof y, b.shape, b.ndim));
}

/* The checks every GEMM makes of its two operands and output. */
static int nt_ops_gemm(const char *op, const NineToothedOpsTensor *tensors,
                       const char *const *names, int count, int ndim) {
    for (int i = 0; i < count; ++i) {
        int low = i == 0 && count == 4 ? 0 : ndim; /* addmm's input: at most 2-D */
        int status = nt_ops_valid(op, names[i], tensors[i], low, ndim);
        if (status) return status;
    }
    int status = nt_ops_dtypes_agree(op, tensors, names, count);
    if (status) return status;
    NineToothedOpsTensor a = tensors[count - 3], b = tensors[count - 2];
    status = nt_ops_inner(op, a, b);
    if (status) return status;
    uint64_t shape[3];
    for (int d = 0; d < ndim - 1; ++d) shape[d] = a.shape[d];
    shape[ndim - 1] = b.shape[ndim - 1];
    return nt_ops_output(op, tensors[count - 1], shape, ndim);
}

/* A matrix product's kernel (mm, bmm) and its keys (tallest, persistent, dtype). */
typedef NineToothedResult (*nt_ops_product_t)(NineToothedStream, NineToothedTensor,
                                               NineToothedTensor, NineToothedTensor, int, int,
                                               int);

/* mm (``ndim`` 2) and bmm (3): checks, thin or persistent tiles, the launch. */
static NT_OPS_UNUSED NineToothedResult nt_ops_product(const char *op, int ndim,
                                                      nt_ops_product_t launch,
                                                      NineToothedStream stream,
                                                      const NineToothedOpsTensor *tensors) {
    static const char *const names[] = {"input", "mat2", "output"};
    int status = nt_ops_gemm(op, tensors, names, 3, ndim);
    if (status) return status;
    nt_ops_view_t views[3];
    for (int i = 0; i < 3; ++i) nt_ops_view(tensors[i], &views[i]);
    const uint64_t *a = tensors[0].shape, *b = tensors[1].shape;
    uint64_t batch = ndim == 3 ? a[0] : 1, rows = a[ndim - 2], columns = b[ndim - 1];
    int tallest = nt_ops_tallest(batch, rows, columns);
    int persistent = !tallest && nt_ops_persistent(batch, rows, columns);
    return launch(stream, nt_ops_kernel_tensor(&views[0]), nt_ops_kernel_tensor(&views[1]),
                  nt_ops_kernel_tensor(&views[2]), tallest, persistent, tensors[2].dtype);
}

#if NT_OPS_HAS_MM
NineToothedResult ninetoothed_ops_mm(NineToothedStream stream, NineToothedOpsTensor input,
                                     NineToothedOpsTensor mat2, NineToothedOpsTensor output) {
    const NineToothedOpsTensor tensors[] = {input, mat2, output};
    return nt_ops_product("mm", 2, launch_nt_ops_mm, stream, tensors);
}
#endif

#if NT_OPS_HAS_BMM
NineToothedResult ninetoothed_ops_bmm(NineToothedStream stream, NineToothedOpsTensor input,
                                      NineToothedOpsTensor mat2, NineToothedOpsTensor output) {
    const NineToothedOpsTensor tensors[] = {input, mat2, output};
    return nt_ops_product("bmm", 3, launch_nt_ops_bmm, stream, tensors);
}
#endif

#if NT_OPS_HAS_ADDMM
NineToothedResult ninetoothed_ops_addmm(NineToothedStream stream, NineToothedOpsTensor input,
                                        NineToothedOpsTensor mat1, NineToothedOpsTensor mat2,
                                        double beta, double alpha, NineToothedOpsTensor output) {
    static const char *const names[] = {"input", "mat1", "mat2", "output"};
    const NineToothedOpsTensor tensors[] = {input, mat1, mat2, output};
    int status = nt_ops_gemm("addmm", tensors, names, 4, 2);
    if (status) return status;
    nt_ops_view_t views[4];
    for (int i = 1; i < 4; ++i) nt_ops_view(tensors[i], &views[i]);
    /* input broadcast to the output: right-aligned, size 1 read with stride 0 */
    views[0].data = input.data, views[0].ndim = 2;
    for (int d = 0; d < 2; ++d) {
        int own = d - (2 - input.ndim);
        uint64_t size = own >= 0 ? input.shape[own] : 1;
        if (size != 1 && size != output.shape[d]) {
            char a[256], b[256];
            return nt_ops_fail(NINETOOTHED_ERROR_SHAPE,
                               "addmm: input of shape %s does not broadcast to %s",
                               nt_ops_shape(a, sizeof a, input.shape, input.ndim),
                               nt_ops_shape(b, sizeof b, output.shape, 2));
        }
        views[0].shape[d] = output.shape[d];
        views[0].strides[d] = size == output.shape[d] && own >= 0 ? input.strides[own] : 0;
    }
    int tallest = nt_ops_tallest(1, mat1.shape[0], mat2.shape[1]);
    int persistent = !tallest && nt_ops_persistent(1, mat1.shape[0], mat2.shape[1]);
    return launch_nt_ops_addmm(stream, nt_ops_kernel_tensor(&views[0]),
                               nt_ops_kernel_tensor(&views[1]), nt_ops_kernel_tensor(&views[2]),
                               nt_ops_scalar(&beta), nt_ops_scalar(&alpha),
                               nt_ops_kernel_tensor(&views[3]), tallest, persistent,
                               output.dtype);
}
#endif

/* (size + 2 padding - dilation (window - 1) - 1) / stride + 1, or 0 where it is not positive. */
static uint64_t nt_ops_window_count(uint64_t size, int window, int stride, int padding,
                                    int dilation) {
    int64_t reach = (int64_t)size + 2 * (int64_t)padding - (int64_t)dilation * (window - 1) - 1;
    return reach < 0 ? 0 : (uint64_t)(reach / stride + 1);
}

#if NT_OPS_HAS_CONV2D
NineToothedResult ninetoothed_ops_conv2d(NineToothedStream stream, NineToothedOpsTensor input,
                                         NineToothedOpsTensor weight, int stride_h,
                                         int stride_w, int padding_h, int padding_w,
                                         int dilation_h, int dilation_w,
                                         NineToothedOpsTensor output) {
    static const char *const names[] = {"input", "weight", "output"};
    const NineToothedOpsTensor tensors[] = {input, weight, output};
    for (int i = 0; i < 3; ++i) {
        int status = nt_ops_valid("conv2d", names[i], tensors[i], 4, 4);
        if (status) return status;
    }
    int status = nt_ops_dtypes_agree("conv2d", tensors, names, 3);
    if (status) return status;
    if (input.shape[1] != weight.shape[1])
        return nt_ops_fail(NINETOOTHED_ERROR_SHAPE, "conv2d: input has %llu channels, the filter %llu",
                           (unsigned long long)input.shape[1], (unsigned long long)weight.shape[1]);
    if (input.shape[1] == 0)
        return nt_ops_fail(NINETOOTHED_ERROR_SHAPE,
                           "conv2d: the input has no channels; a convolution needs at least one");
    if (stride_h <= 0 || stride_w <= 0 || dilation_h <= 0 || dilation_w <= 0 || padding_h < 0 ||
        padding_w < 0)
        return nt_ops_fail(NINETOOTHED_ERROR_INVALID_ARGUMENT,
                           "conv2d: stride and dilation must be positive and padding at least 0");
    uint64_t p = nt_ops_window_count(input.shape[2], (int)weight.shape[2], stride_h, padding_h,
                                     dilation_h);
    uint64_t q = nt_ops_window_count(input.shape[3], (int)weight.shape[3], stride_w, padding_w,
                                     dilation_w);
    if (p == 0 || q == 0)
        return nt_ops_fail(NINETOOTHED_ERROR_SHAPE, "conv2d: the filter (%llu, %llu) does not fit the input (%llu, %llu)",
                           (unsigned long long)weight.shape[2], (unsigned long long)weight.shape[3],
                           (unsigned long long)input.shape[2], (unsigned long long)input.shape[3]);
    const uint64_t shape[] = {input.shape[0], weight.shape[0], p, q};
    status = nt_ops_output("conv2d", output, shape, 4);
    if (status) return status;
    nt_ops_view_t views[3];
    for (int i = 0; i < 3; ++i) nt_ops_view(tensors[i], &views[i]);
    return launch_nt_ops_conv2d(stream, nt_ops_kernel_tensor(&views[0]),
                                nt_ops_kernel_tensor(&views[1]), nt_ops_kernel_tensor(&views[2]),
                                stride_h, stride_w, padding_h, padding_w, dilation_h, dilation_w,
                                output.dtype);
}
#endif

#if NT_OPS_HAS_MAX_POOL2D
NineToothedResult ninetoothed_ops_max_pool2d(NineToothedStream stream, NineToothedOpsTensor input,
                                             int kernel_h, int kernel_w, int stride_h,
                                             int stride_w, int padding_h, int padding_w,
                                             NineToothedOpsTensor output) {
    static const char *const names[] = {"input", "output"};
    const NineToothedOpsTensor tensors[] = {input, output};
    for (int i = 0; i < 2; ++i) {
        int status = nt_ops_valid("max_pool2d", names[i], tensors[i], 4, 4);
        if (status) return status;
    }
    int status = nt_ops_dtypes_agree("max_pool2d", tensors, names, 2);
    if (status) return status;
    if (kernel_h <= 0 || kernel_w <= 0 || stride_h <= 0 || stride_w <= 0 || padding_h < 0 ||
        padding_w < 0 || 2 * padding_h > kernel_h || 2 * padding_w > kernel_w)
        return nt_ops_fail(NINETOOTHED_ERROR_INVALID_ARGUMENT,
                           "max_pool2d: kernel_size and stride must be positive and padding at "
                           "most half the window; got (%d, %d), (%d, %d), (%d, %d)",
                           kernel_h, kernel_w, stride_h, stride_w, padding_h, padding_w);
    uint64_t p = nt_ops_window_count(input.shape[2], kernel_h, stride_h, padding_h, 1);
    uint64_t q = nt_ops_window_count(input.shape[3], kernel_w, stride_w, padding_w, 1);
    if (p == 0 || q == 0)
        return nt_ops_fail(NINETOOTHED_ERROR_SHAPE,
                           "max_pool2d: the window (%d, %d) does not fit the input (%llu, %llu)",
                           kernel_h, kernel_w, (unsigned long long)input.shape[2],
                           (unsigned long long)input.shape[3]);
    const uint64_t shape[] = {input.shape[0], input.shape[1], p, q};
    status = nt_ops_output("max_pool2d", output, shape, 4);
    if (status) return status;
    nt_ops_view_t views[2];
    for (int i = 0; i < 2; ++i) nt_ops_view(tensors[i], &views[i]);
    return launch_nt_ops_max_pool2d(stream, nt_ops_kernel_tensor(&views[0]),
                                    nt_ops_kernel_tensor(&views[1]), kernel_h, kernel_w,
                                    stride_h, stride_w, padding_h, padding_w, output.dtype);
}
#endif
