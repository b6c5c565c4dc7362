"""``ninetoothed.runtime.options.check_options``: every option checked before generation."""

from __future__ import annotations

import pytest

from ninetoothed.runtime.options import check_options

KEYWORDS = ("name", "backend")


def check(name=None, **options):
    return check_options("make", name, options, KEYWORDS)


def test_known_options_pass_through_to_the_backend():
    name, backend = check(num_warps=(4, 8), num_stages=2, max_num_configs=3, configs=[{}])
    assert name is None
    assert backend == {"num_warps": (4, 8), "num_stages": 2, "max_num_configs": 3, "configs": [{}]}


def test_kernel_name_names_the_kernel_and_caller_torch_is_accepted():
    assert check(kernel_name="k", caller="torch") == ("k", {})
    assert check("k", kernel_name="k") == ("k", {})


@pytest.mark.parametrize(
    "options, error, pattern",
    [
        (
            {"num_warp": 8},
            TypeError,
            r"unexpected keyword argument 'num_warp'; did you mean 'num_warps'",
        ),
        ({"num_stage": 2}, TypeError, r"did you mean 'num_stages'"),
        ({"xyzzy": 1}, TypeError, r"'xyzzy'; it takes name, backend, num_warps"),
        (
            {"num_warps": "4"},
            TypeError,
            r"num_warps must be an int or a tuple of ints, got str '4'",
        ),
        ({"num_warps": (4, 2.0)}, TypeError, r"num_warps must be .*, got float 2.0"),
        ({"num_warps": True}, TypeError, r"num_warps must be .*, got bool True"),
        ({"num_warps": 3}, ValueError, r"num_warps must be a power of two, got 3"),
        ({"num_warps": ()}, ValueError, r"num_warps is an empty tuple"),
        ({"num_stages": -1}, ValueError, r"num_stages must not be negative, got -1"),
        ({"num_stages": (1, None)}, TypeError, r"num_stages must be .*, got NoneType None"),
        ({"max_num_configs": 0}, ValueError, r"max_num_configs must be at least 1, got 0"),
        ({"max_num_configs": 2.5}, TypeError, r"max_num_configs must be an int, got float 2.5"),
        ({"configs": {"BLOCK": 4}}, TypeError, r"configs must be a list of dicts"),
        ({"kernel_name": 3}, TypeError, r"kernel_name must be a str, got int"),
        ({"caller": "cuda"}, NotImplementedError, r"caller='cuda'.*jit compiles just in time"),
        ({"output_dir": "out"}, NotImplementedError, r"output_dir='out'.*caller='cuda'"),
    ],
    ids=repr,
)
def test_bad_options_are_refused_naming_the_option(options, error, pattern):
    with pytest.raises(error, match=pattern):
        check(**options)


def test_name_and_a_different_kernel_name_conflict():
    with pytest.raises(TypeError, match=r"name='a' and kernel_name='b' both name the kernel"):
        check("a", kernel_name="b")
