/* ops_rows.h: softmax, rms_norm and fused_add_rms_norm of NineToothed's C kernel library
 * (part of ninetoothed_ops.c).  One program holds one row: the kernels take 2-D (rows,
 * length) tensors, so the leading dimensions of any rank are merged, which their strides
 * must allow; each variant serves the rows of one power of two of length. */

/* The tensors' views as rows (softmax first moves ``dim`` last); the row's power of two. */
static int nt_ops_row_views(const char *op, const NineToothedOpsTensor *tensors,
                            const char *const *names, const int *is_row, int count, int dim,
                            nt_ops_view_t *views, int *row) {
    NineToothedOpsTensor input = tensors[0];
    uint64_t length = input.shape[dim];
    for (int i = 0; i < count; ++i) {
        nt_ops_view(tensors[i], &views[i]);
        if (!is_row[i]) continue;
        int last = views[i].ndim - 1;
        uint64_t size = views[i].shape[dim];
        int64_t stride = views[i].strides[dim];
        for (int d = dim; d < last; ++d) { /* ``dim`` moved last, the others in order */
            views[i].shape[d] = views[i].shape[d + 1];
            views[i].strides[d] = views[i].strides[d + 1];
        }
        views[i].shape[last] = size, views[i].strides[last] = stride;
        if (nt_ops_rows(&views[i]) != 0) {
            char text[256];
            return nt_ops_fail(NINETOOTHED_ERROR_UNSUPPORTED,
                               "%s: the dimensions of %s (shape %s) other than the row's do not "
                               "merge into one (their strides are not one row apart); the library's "
                               "kernels take rows of such views only: copy it to a contiguous "
                               "tensor", op, names[i],
                               nt_ops_shape(text, sizeof text, tensors[i].shape, tensors[i].ndim));
        }
    }
    if (length > NT_OPS_MAX_ROW)
        return nt_ops_fail(NINETOOTHED_ERROR_UNSUPPORTED,
                           "%s: rows of %llu elements are longer than %d, the longest the library "
                           "was built for", op, (unsigned long long)length, NT_OPS_MAX_ROW);
    *row = (int)nt_ops_power_of_two((int64_t)length);
    return 0;
}

/* Every tensor valid and of one dtype; the other rows of the input's shape, a weight
   (not a row) of the row's length. */
static int nt_ops_row_checks(const char *op, const NineToothedOpsTensor *tensors,
                             const char *const *names, int count, const int *is_row) {
    for (int i = 0; i < count; ++i) {
        int status = nt_ops_valid(op, names[i], tensors[i], 1, is_row[i] ? NT_OPS_MAX_DIMS : 1);
        if (status) return status;
    }
    int status = nt_ops_dtypes_agree(op, tensors, names, count);
    if (status) return status;
    NineToothedOpsTensor input = tensors[0];
    for (int i = 1; i < count; ++i) {
        NineToothedOpsTensor other = tensors[i];
        int same = is_row[i] ? other.ndim == input.ndim : other.shape[0] == input.shape[input.ndim - 1];
        for (int d = 0; is_row[i] && same && d < input.ndim; ++d) same = other.shape[d] == input.shape[d];
        if (same) continue;
        char expected[256], got[256];
        const uint64_t *shape = is_row[i] ? input.shape : &input.shape[input.ndim - 1];
        return nt_ops_fail(NINETOOTHED_ERROR_SHAPE, "%s: %s must have shape %s, got %s", op, names[i],
                           nt_ops_shape(expected, sizeof expected, shape, is_row[i] ? input.ndim : 1),
                           nt_ops_shape(got, sizeof got, other.shape, other.ndim));
    }
    return 0;
}

#if NT_OPS_HAS_SOFTMAX
NineToothedResult ninetoothed_ops_softmax(NineToothedStream stream, NineToothedOpsTensor input,
                                          int dim, NineToothedOpsTensor output) {
    static const char *const names[] = {"input", "output"};
    static const int is_row[] = {1, 1};
    const NineToothedOpsTensor tensors[] = {input, output};
    int status = nt_ops_row_checks("softmax", tensors, names, 2, is_row);
    if (status) return status;
    if (dim < -input.ndim || dim >= input.ndim)
        return nt_ops_fail(NINETOOTHED_ERROR_INVALID_ARGUMENT,
                           "softmax: dim %d is out of range for %d dimensions", dim, input.ndim);
    nt_ops_view_t views[2];
    int row;
    status = nt_ops_row_views("softmax", tensors, names, is_row, 2, dim < 0 ? dim + input.ndim : dim,
                              views, &row);
    if (status) return status;
    return launch_nt_ops_softmax(stream, nt_ops_kernel_tensor(&views[0]),
                                 nt_ops_kernel_tensor(&views[1]), row, output.dtype);
}
#endif

#if NT_OPS_HAS_RMS_NORM
NineToothedResult ninetoothed_ops_rms_norm(NineToothedStream stream, NineToothedOpsTensor input,
                                           NineToothedOpsTensor weight, double eps,
                                           NineToothedOpsTensor output) {
    int weighted = weight.ndim != 0 || weight.data != NULL; /* else: no weight */
    const NineToothedOpsTensor tensors[] = {input, weighted ? weight : output, output};
    const char *const names[] = {"input", weighted ? "weight" : "output", "output"};
    const int is_row[] = {1, !weighted, 1};
    int count = weighted ? 3 : 2;
    int status = nt_ops_row_checks("rms_norm", tensors, names, count, is_row);
    if (status) return status;
    nt_ops_view_t views[3];
    int row;
    status = nt_ops_row_views("rms_norm", tensors, names, is_row, count, input.ndim - 1, views,
                              &row);
    if (status) return status;
    NineToothedTensor scalar = nt_ops_scalar(&eps);
    if (weighted)
        return launch_nt_ops_rms_norm(stream, nt_ops_kernel_tensor(&views[0]),
                                      nt_ops_kernel_tensor(&views[1]), scalar,
                                      nt_ops_kernel_tensor(&views[2]), row, output.dtype);
    return launch_nt_ops_rms_norm_unweighted(stream, nt_ops_kernel_tensor(&views[0]), scalar,
                                             nt_ops_kernel_tensor(&views[1]), row, output.dtype);
}
#endif

#if NT_OPS_HAS_FUSED_ADD_RMS_NORM
NineToothedResult ninetoothed_ops_fused_add_rms_norm(NineToothedStream stream,
                                                     NineToothedOpsTensor input,
                                                     NineToothedOpsTensor residual,
                                                     NineToothedOpsTensor weight, double eps,
                                                     NineToothedOpsTensor output,
                                                     NineToothedOpsTensor sum) {
    static const char *const names[] = {"input", "residual", "weight", "output", "sum"};
    static const int is_row[] = {1, 1, 0, 1, 1};
    const NineToothedOpsTensor tensors[] = {input, residual, weight, output, sum};
    int status = nt_ops_row_checks("fused_add_rms_norm", tensors, names, 5, is_row);
    if (status) return status;
    nt_ops_view_t views[5];
    int row;
    status = nt_ops_row_views("fused_add_rms_norm", tensors, names, is_row, 5, input.ndim - 1,
                              views, &row);
    if (status) return status;
    return launch_nt_ops_fused_add_rms_norm(
        stream, nt_ops_kernel_tensor(&views[0]), nt_ops_kernel_tensor(&views[1]),
        nt_ops_kernel_tensor(&views[2]), nt_ops_scalar(&eps), nt_ops_kernel_tensor(&views[3]),
        nt_ops_kernel_tensor(&views[4]), row, output.dtype);
}
#endif
