"""GPU check of tensors with no elements (run by hand on an NVIDIA machine,
not by pytest):

    python tests/gpu/gpu_empty.py

A kernel over no rows launches a grid of 0 programs, and a reduction over
no elements must not read its input (whose data pointer may be null): on
the GPU a stray read is an illegal address, not a wrong number. CI runs the
same programs through the interpreter (tests/codegen/test_empty_tensors.py).
Exits 1 on any mismatch or error.
"""

import sys

import torch
import torch.nn.functional as F

import tirc


def randn(*shape):
    return torch.randn(*shape, device="cuda")


PROGRAMS = {
    "pointwise_no_rows": (lambda x: torch.relu(x) * 2, lambda: [randn(0, 37)]),
    "softmax_no_rows": (lambda x: x.softmax(-1), lambda: [randn(0, 4096)]),
    "layer_norm_no_rows": (lambda x: F.layer_norm(x, (4096,)), lambda: [randn(0, 4096)]),
    "sum_over_nothing": (lambda x: x.sum(-1) + 1, lambda: [randn(4097, 0)]),
    "softmax_over_nothing": (lambda x: x.softmax(-1), lambda: [randn(5, 0)]),
    "row_input_and_empty_sum": (
        lambda x, y: x.sum(-1) * y + x.prod(-1),
        lambda: [randn(1000, 0), randn(1000)],
    ),
    "sum_of_no_rows": (lambda x: x.sum(0) * 2, lambda: [randn(0, 4097)]),
    "cat_with_empty": (lambda x, y: torch.cat([x, y]).exp(), lambda: [randn(0, 129), randn(37, 129)]),
}


def main() -> int:
    failures = 0
    for name, (fn, make_inputs) in PROGRAMS.items():
        try:
            compiled = tirc.compile(fn, make_inputs(), backend="triton", device="cuda")
            fresh = make_inputs()
            got, want = compiled(*fresh), fn(*fresh)
            torch.cuda.synchronize()
            torch.testing.assert_close(got, want, equal_nan=True)
            print(f"ok   {name}")
        except Exception as err:  # report every failure, then exit 1
            failures += 1
            print(f"FAIL {name}: {type(err).__name__}: {str(err).splitlines()[0][:300]}")
    print(f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
