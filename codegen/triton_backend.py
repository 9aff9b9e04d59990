"""The Triton backend's record: `output_code.py` holds the kernels'
source (each launched through triton_runtime), runs them through Triton's
interpreter on the CPU, and times their launch configs on a GPU
(triton_tune.py); reductions over few long rows split into two kernels
(triton_split.py)."""

from __future__ import annotations

import black

from scheduler import Target

from . import triton, triton_builds, triton_dedupe, triton_split, triton_tune
from .backend import Backend, site_names
from .kernel_plan import KernelPlan


def _header(device: str) -> list[str]:
    return [
        f'runtime.use_triton_interpreter("{device}")',
        "import triton  # noqa: E402",
        "import triton.language as tl  # noqa: E402",
        "",
        "from codegen import triton_runtime  # noqa: E402",
        "",
        "_launch = triton_runtime.Launches().run",
        "",
    ]


def _kernels(plans: list[KernelPlan], prebuild: bool) -> list[str]:
    """The helpers and kernels, formatted by black: their expressions are
    arbitrary, unlike the wrapper's few constructs that pyformat lays out.
    A kernel with the code of an earlier one is an alias of it (triton_dedupe.py)."""
    helpers, sources = triton.render_kernels(plans)
    defs, aliases = triton_dedupe.shared(plans, sources)
    text = "\n".join(helpers + ["", ""] + [source + "\n\n" for source in defs] + aliases)
    kernels = black.format_str(text, mode=black.Mode()).rstrip("\n")
    # black's blank lines after the imports: two before a definition (or the
    # comment above it: the first kernel's, kernel_comments.py), one before a statement
    return ["", kernels] if kernels.startswith(("@", "def ", "#")) else [kernels]


def _launch(plan: KernelPlan, args: list[str], device: str) -> list[str]:
    """The kernel's launch; one that checks indices takes an error slot on
    the CPU (the interpreter), and a device assert checks them on a GPU."""
    if not triton.checks_indices(plan):
        return triton.launch_call(plan, args, device)
    if device != "cpu":
        return triton.launch_call(plan, args + ["None"], device)
    return [
        "error = runtime.error_tensor()",
        *triton.launch_call(plan, args + ["error"], device),
        f"runtime.check_values(error, {site_names(plan)})",
    ]


TRITON = Backend(
    name="triton",
    devices=("cuda", "cpu"),
    target=Target(
        "triton", launch_configs=True, channels_last=True, split=triton_split.rule, sector_bytes=32
    ),
    ops=triton.SUPPORTED_OPS,
    header=_header,
    kernels=_kernels,
    launch=_launch,
    split_count=triton.split_count,
    tune_launches=triton_tune.tune_launches,
    tuning_target=triton_tune.triton_target,
    build_jobs=triton_builds.launch_jobs,
    launcher="_launch",
)
