"""The C++/OpenMP backend's record: its kernels are one C++ source, built
with g++ into a shared library (cache.py) that `output_code.py` loads, and
each launch passes the buffers' pointers."""

from __future__ import annotations

from scheduler import Target

from . import cpp, cpp_extern_select
from .backend import Backend, site_names
from .cpp_build import start_build
from .kernel_plan import KernelPlan
from .pyformat import layout


def _kernels(plans: list[KernelPlan], prebuild: bool) -> list[str]:
    source = cpp.render_source(plans)
    if prebuild:
        start_build(_source_text(source))
    lines = ['CPP_SOURCE = r"""', source + '"""', "", "_library = runtime.cpp_library(CPP_SOURCE)"]
    for plan in plans:
        arity = len(plan.params) + plan.checks_values
        lines += layout(f'{plan.name} = runtime.cpp_kernel(_library, "{plan.name}", {arity})')
    return lines


def _prebuild(plans: list[KernelPlan]) -> None:
    start_build(_source_text(cpp.render_source(plans)))


def _source_text(source: str) -> str:
    """The string that CPP_SOURCE holds (the r\"\"\" opening line's newline
    included), which is what the runtime builds and the cache is keyed by."""
    return "\n" + source


def _launch(plan: KernelPlan, args: list[str], device: str) -> list[str]:
    """A call with the buffers' pointers; a kernel that checks values gets
    an error slot, checked after it."""
    pointers = [a + ".data_ptr()" for a in args]
    if not plan.checks_values:
        return [f"{plan.name}({', '.join(pointers)})"]
    return [
        "error = runtime.error_slot()",
        f"{plan.name}({', '.join(pointers + ['error'])})",
        f"runtime.check_values(error, {site_names(plan)})",
    ]


CPP = Backend(
    name="cpp",
    devices=("cpu",),
    target=Target("cpp", loop_nests=True),
    ops=cpp.SUPPORTED_OPS,
    header=lambda device: [],
    kernels=_kernels,
    launch=_launch,
    select_externs=cpp_extern_select.select_externs,
    prebuild=_prebuild,
    tuning_target=cpp_extern_select.extern_target,
)
