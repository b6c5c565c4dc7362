"""addmm = beta * input + alpha * (mat1 @ mat2), reusing matmul's application by inlining."""

import ninetoothed
from ninetoothed import Tensor
from nt_examples import matmul


def arrangement(input, mat1, mat2, beta, alpha, output):
    _, _, input_arranged = matmul.arrangement(mat1, mat2, input)
    mat1_arranged, mat2_arranged, output_arranged = matmul.arrangement(mat1, mat2, output)
    return input_arranged, mat1_arranged, mat2_arranged, beta, alpha, output_arranged


def application(input, mat1, mat2, beta, alpha, output):
    matmul.application(mat1, mat2, output)
    output = beta * input + alpha * output  # noqa: F841


tensors = (Tensor(2), Tensor(2), Tensor(2), Tensor(0), Tensor(0), Tensor(2))
kernel = ninetoothed.make(arrangement, application, tensors)
