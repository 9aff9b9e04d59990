"""GPU check of indirect indices (run by hand on an NVIDIA machine, not by
pytest):

    python tests/gpu/gpu_indices.py

Gathers, embeddings, index_select, advanced indexing with negative indices
and cross-entropy's targets, compiled for device cuda at real and odd
sizes, against eager PyTorch on fresh random indices. Then an index out of
range, in a process of its own for each program, since a device assert
loses the CUDA context: the compiled kernel must stop on its assert (the
process fails with "device-side assert"), as eager's does, and not read
outside the buffer. CI runs the same checks through the interpreter
(tests/codegen/test_value_checks.py). Exits 1 on any failure.
"""

import subprocess
import sys

import torch
import torch.nn.functional as F

import tirc
from checks import close_to_eager


def program(name):
    """(fn, inputs(valid) -> list, the position of the index tensor, its bound)."""
    vocab, dim, n = 32003, 1037, 4099

    def embedding_inputs():
        return [
            torch.randint(0, vocab, (n,), device="cuda"),
            torch.randn(vocab, dim, device="cuda").bfloat16(),
        ]

    def gather_inputs():
        x = torch.randn(1000, 129, device="cuda")
        return [x, torch.randint(0, 129, (1000, 37), device="cuda")]

    def negative_inputs():
        return [torch.randn(129, 37, device="cuda"), torch.randint(-129, 129, (1000,), device="cuda")]

    def select_inputs():
        return [torch.randn(4097, 37, device="cuda"), torch.randint(0, 4097, (129,), device="cuda")]

    def target_inputs():
        return [torch.randn(4096, 32000, device="cuda"), torch.randint(0, 32000, (4096,), device="cuda")]

    return {
        "embedding_bf16": (lambda i, w: F.embedding(i, w) * 2, embedding_inputs, 0, vocab),
        "gather_rows": (lambda x, i: torch.gather(x, 1, i).sum(1), gather_inputs, 1, 129),
        "advanced_negative": (lambda x, i: x[i].relu(), negative_inputs, 1, 129),
        "index_select_sum": (lambda x, i: x.index_select(0, i).sum(1), select_inputs, 1, 4097),
        "cross_entropy_targets": (lambda x, t: F.cross_entropy(x, t), target_inputs, 1, 32000),
    }[name]


NAMES = ["embedding_bf16", "gather_rows", "advanced_negative", "index_select_sum", "cross_entropy_targets"]


def out_of_range(name) -> None:
    """Run in a child process: one index out of range, then synchronize."""
    fn, make, at, bound = program(name)
    compiled = tirc.compile(fn, make(), backend="triton", device="cuda")
    inputs = make()
    index = inputs[at].clone()
    index.view(-1)[index.numel() // 2] = bound + 5
    inputs[at] = index
    compiled(*inputs)
    torch.cuda.synchronize()


def main() -> int:
    failures = 0
    for name in NAMES:
        fn, make, at, bound = program(name)
        try:
            compiled = tirc.compile(fn, make(), backend="triton", device="cuda")
            fresh = make()
            got, want = compiled(*fresh), fn(*fresh)
            exact = fn(*[t.double() if t.is_floating_point() else t for t in fresh])
            close_to_eager(got, want, exact)
            print(f"ok   {name}")
        except Exception as err:  # report every failure, then exit 1
            failures += 1
            print(f"FAIL {name}: {type(err).__name__}: {err}")
            continue
        child = subprocess.run(
            [sys.executable, __file__, "--out-of-range", name], capture_output=True, text=True, timeout=300
        )
        if child.returncode != 0 and "device-side assert" in child.stderr:
            print(f"ok   {name}: an index out of range stops on the device assert")
        else:
            failures += 1
            print(f"FAIL {name}: out of range gave exit {child.returncode}: {child.stderr.strip()[-300:]}")
    print(f"{failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--out-of-range"]:
        out_of_range(sys.argv[2])
    else:
        sys.exit(main())
