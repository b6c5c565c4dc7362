/* ninetoothed_ops.c: the C API of NineToothed's kernel library (see ninetoothed_ops.h).
 *
 * Each op checks its arguments as ninetoothed.library.ops does (ranks, shapes,
 * dtypes, options), views its tensors as its kernel takes them (inputs broadcast
 * to the output with stride 0, a softmax's dimension moved last, leading
 * dimensions of rows merged), computes the key values that pick the kernel's
 * variant (dtype, rank, a row's or a head's power of two, thin or persistent
 * GEMM tiles...) as the Python ops pick their kernels, and calls the kernel's
 * dispatcher, launch_nt_ops_<kernel>, which checks and launches as any
 * NineToothed library does.  Ops the library was built without are compiled out
 * (ninetoothed_ops_config.h, generated beside this file).
 */
#include "ninetoothed_ops_config.h"
#include "ops_common.h"

/* ---- element-wise: add, silu, swiglu ---------------------------------------------- */

/* Views of ``inputs`` broadcast to ``output`` (all 1-D when they are one contiguous
   shape); the rank to pick the kernel by. */
static int nt_ops_pointwise(const char *op, const NineToothedOpsTensor *tensors,
                            const char *const *names, int inputs, nt_ops_view_t *views,
                            int *ndim) {
    NineToothedOpsTensor output = tensors[inputs];
    for (int i = 0; i <= inputs; ++i) {
        int status = nt_ops_valid(op, names[i], tensors[i], 0, NT_OPS_MAX_DIMS);
        if (status) return status;
    }
    int status = nt_ops_dtypes_agree(op, tensors, names, inputs + 1);
    if (status) return status;
    uint64_t shape[NT_OPS_MAX_DIMS];
    int rank = 0, same = 1, contiguous = 1;
    for (int i = 0; i < inputs; ++i) rank = tensors[i].ndim > rank ? tensors[i].ndim : rank;
    for (int d = 0; d < rank; ++d) shape[d] = 1;
    for (int i = 0; i < inputs; ++i) {
        NineToothedOpsTensor input = tensors[i];
        for (int d = 0; d < input.ndim; ++d) {
            uint64_t *size = &shape[rank - input.ndim + d];
            if (input.shape[d] != 1 && *size != 1 && input.shape[d] != *size) {
                char a[256], b[256];
                return nt_ops_fail(NINETOOTHED_ERROR_SHAPE, "%s: shapes %s and %s do not broadcast",
                                   op, nt_ops_shape(a, sizeof a, tensors[0].shape, tensors[0].ndim),
                                   nt_ops_shape(b, sizeof b, input.shape, input.ndim));
            }
            if (input.shape[d] != 1) *size = input.shape[d];
        }
    }
    status = nt_ops_output(op, output, shape, rank);
    if (status) return status;
    uint64_t count = 1;
    for (int d = 0; d < rank; ++d) count *= shape[d];
    for (int i = 0; i <= inputs; ++i) {
        same = same && tensors[i].ndim == rank;
        for (int d = 0; same && d < rank; ++d) same = tensors[i].shape[d] == shape[d];
        contiguous = contiguous && nt_ops_contiguous(tensors[i]);
    }
    if (same && contiguous) { /* one block of memory each: 1-D */
        for (int i = 0; i <= inputs; ++i) {
            views[i].data = tensors[i].data, views[i].ndim = 1;
            views[i].shape[0] = count, views[i].strides[0] = 1;
        }
        *ndim = 1;
        return 0;
    }
    if (rank > NT_OPS_MAX_NDIM)
        return nt_ops_fail(NINETOOTHED_ERROR_UNSUPPORTED,
                           "%s: the output has %d dimensions; the library was built for strided or "
                           "broadcast tensors of at most %d (contiguous tensors of one shape take "
                           "any rank)", op, rank, NT_OPS_MAX_NDIM);
    for (int i = 0; i <= inputs; ++i) {
        NineToothedOpsTensor tensor = tensors[i];
        int offset = rank - tensor.ndim;
        views[i].data = tensor.data, views[i].ndim = rank;
        for (int d = 0; d < rank; ++d) {
            int own = d - offset;
            uint64_t size = own >= 0 ? tensor.shape[own] : 1;
            views[i].shape[d] = shape[d];
            views[i].strides[d] = own >= 0 && size == shape[d] ? tensor.strides[own] : 0;
        }
    }
    *ndim = rank;
    return 0;
}

/* A kernel of two inputs and an output (add, swiglu) and its keys (rank, dtype). */
typedef NineToothedResult (*nt_ops_binary_t)(NineToothedStream, NineToothedTensor,
                                              NineToothedTensor, NineToothedTensor, int, int);

static NT_OPS_UNUSED NineToothedResult nt_ops_binary(const char *op, const char *const *names,
                                                     nt_ops_binary_t launch,
                                                     NineToothedStream stream,
                                                     const NineToothedOpsTensor *tensors) {
    nt_ops_view_t views[3];
    int ndim, status = nt_ops_pointwise(op, tensors, names, 2, views, &ndim);
    if (status) return status;
    return launch(stream, nt_ops_kernel_tensor(&views[0]), nt_ops_kernel_tensor(&views[1]),
                  nt_ops_kernel_tensor(&views[2]), ndim, tensors[2].dtype);
}

#if NT_OPS_HAS_ADD
NineToothedResult ninetoothed_ops_add(NineToothedStream stream, NineToothedOpsTensor input,
                                      NineToothedOpsTensor other, NineToothedOpsTensor output) {
    static const char *const names[] = {"input", "other", "output"};
    const NineToothedOpsTensor tensors[] = {input, other, output};
    return nt_ops_binary("add", names, launch_nt_ops_add, stream, tensors);
}
#endif

#if NT_OPS_HAS_SWIGLU
NineToothedResult ninetoothed_ops_swiglu(NineToothedStream stream, NineToothedOpsTensor a,
                                         NineToothedOpsTensor b, NineToothedOpsTensor output) {
    static const char *const names[] = {"a", "b", "output"};
    const NineToothedOpsTensor tensors[] = {a, b, output};
    return nt_ops_binary("swiglu", names, launch_nt_ops_swiglu, stream, tensors);
}
#endif

#if NT_OPS_HAS_SILU
NineToothedResult ninetoothed_ops_silu(NineToothedStream stream, NineToothedOpsTensor input,
                                       NineToothedOpsTensor output) {
    static const char *const names[] = {"input", "output"};
    const NineToothedOpsTensor tensors[] = {input, output};
    nt_ops_view_t views[2];
    int ndim, status = nt_ops_pointwise("silu", tensors, names, 1, views, &ndim);
    if (status) return status;
    return launch_nt_ops_silu(stream, nt_ops_kernel_tensor(&views[0]),
                              nt_ops_kernel_tensor(&views[1]), ndim, output.dtype);
}
#endif

#include "ops_matmul.h"
#include "ops_rows.h"
#include "ops_attention.h"
