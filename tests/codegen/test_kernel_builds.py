"""Kernel builds in worker processes (codegen/build_pool.py), their jobs
(triton_builds.py, the launch tuner's), and kernels that share code
(triton_dedupe.py).

On a GPU a worker compiles each job into Triton's cache; here, under the
interpreter, a worker loads the job's module and finds its kernel, which
checks the jobs and the protocol but not the compile (tests/gpu runs that).
"""

from __future__ import annotations

import re
import sys
import time

import pytest
import torch

import tirc
from codegen import triton_tune
from codegen.build_pool import MIN_OPS, BuildJob, BuildPool, workers_wanted
from codegen.kernel_plan import module_plans
from codegen.triton import render_kernel
from codegen.triton_builds import launch_jobs
from codegen.triton_dedupe import code_key
from ir_text import parse

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def twin_sums(x, y):
    return (x * 2).sum(0), (y * 2).sum(0)


def different_sums(x, y):
    return (x * 2).sum(0), (y * 3).sum(0)


def kernel_lines(code: str) -> list[str]:
    return re.findall(r"^def k\w+|^k\w+ = k\w+", code, re.M)


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TIRC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TIRC_NO_CODE_CACHE", "1")
    return tmp_path


def compiled(fn, shape, tmp_path, name="d"):
    torch.manual_seed(0)
    inputs = [torch.randn(*shape), torch.randn(*shape)]
    program = tirc.compile(fn, inputs, backend="triton", dump_after="memplan", dump_dir=tmp_path / name)
    module = parse((tmp_path / name / "05-memplan.tir").read_text(), "05-memplan.tir")
    return program, module, inputs


def test_kernels_with_the_same_code_are_defined_once(fresh_cache):
    program, module, inputs = compiled(twin_sums, (129, 37), fresh_cache)
    assert kernel_lines(program.code) == ["def k0", "k1 = k0"]
    (_, a), (_, b) = module_plans(module)
    assert code_key(a, render_kernel(a)) == code_key(b, render_kernel(b))
    fresh = [torch.randn(129, 37), torch.randn(129, 37)]
    for got, want in zip(program(*fresh), twin_sums(*fresh)):
        torch.testing.assert_close(got, want)
    # A different constant is different code: two definitions.
    other, module, _ = compiled(different_sums, (129, 37), fresh_cache, "e")
    assert kernel_lines(other.code) == ["def k0", "def k1"]
    for got, want in zip(other(*fresh), different_sums(*fresh)):
        torch.testing.assert_close(got, want)


class FakeClock:
    """Made-up timings, each 5% faster than the one before (the launch itself
    ran once when the tuner checked the config)."""

    def __init__(self):
        self.timed = 0

    def __call__(self, run):
        self.timed += 1
        return 0.95**self.timed


class RecordingPool:
    """A pool that builds nothing and records what it was asked."""

    def __init__(self):
        self.submitted, self.waited = [], []

    def submit(self, jobs):
        self.submitted += list(jobs)

    def wait(self, jobs):
        self.waited.append(list(jobs))
        return {job: False for job in jobs}


def test_the_tuner_times_shared_code_once_and_builds_its_configs_first(fresh_cache):
    clock, pool = FakeClock(), RecordingPool()
    _, module, _ = compiled(twin_sums, (64, 1024), fresh_cache)  # on the CPU: nothing tuned yet
    assert all("triton_config" not in dict(k.attrs) for k in module.kernels)
    tuned = triton_tune.tune_launches(module, "cpu", timer=clock, builds=pool)
    (_, plan), _ = module_plans(tuned)
    configs = triton_tune.candidate_configs(plan).configs
    # One kernel's configs built and timed; the twin reads its record.
    assert len(configs) >= 2 and clock.timed == len(configs) * triton_tune.ROUNDS
    assert len(pool.submitted) == len(configs) and pool.waited == [pool.submitted]
    assert {job.kernel for job in pool.submitted} == {"k0"}
    assert [dict(job.meta)["XBLOCK"] for job in pool.submitted] == [c.xblock for c in configs]
    assert all(job.args == ("float32", "float32", 1024, 64) for job in pool.submitted)
    pins = {dict(k.attrs)["triton_config"] for k in tuned.kernels}
    assert len(pins) == 1  # both kernels run the winner


def test_launch_jobs_name_the_function_that_runs_each_kernel(fresh_cache):
    program, module, _ = compiled(twin_sums, (129, 37), fresh_cache)
    assert launch_jobs(module, program.code, "cpu") == []
    (job,) = launch_jobs(module, program.code, "cuda")  # k1 runs k0's function, on the same types
    assert job.kernel == "k0" and job.source == program.code
    assert job.args == ("float32", "float32", 37, 129)
    assert "num_warps" in dict(job.meta) and len(job.grid) == 1


def test_a_pool_builds_each_job_once_in_its_workers(fresh_cache):
    program, module, _ = compiled(different_sums, (129, 37), fresh_cache)
    jobs = launch_jobs(module, program.code, "cuda")
    assert [job.kernel for job in jobs] == ["k0", "k1"]
    missing = BuildJob(program.code, "k7", jobs[0].args, jobs[0].grid, jobs[0].meta)
    broken = BuildJob("def (:\n", "k0", (), (1,), ())
    pool = BuildPool(2)
    try:
        pool.start(MIN_OPS)
        pool.submit(jobs + [broken, missing] + jobs)
        # The workers end every job, with no help from this process.
        deadline = time.monotonic() + 120
        while not all(map(pool.finished, jobs + [broken, missing])) and time.monotonic() < deadline:
            time.sleep(0.05)
        built = pool.wait(jobs + [broken, missing])
    finally:
        pool.close()
    assert built == {jobs[0]: True, jobs[1]: True, broken: False, missing: False}
    assert pool.wait([BuildJob("", "never", (), (1,), ())]) == {BuildJob("", "never", (), (1,), ()): False}
    late = BuildJob(program.code, "k0", jobs[0].args, (12345,), jobs[0].meta)
    pool.submit([late])  # after close: left to the launch, never waited on
    assert pool.wait([late]) == {late: False}


def test_workers_that_die_fail_their_jobs_without_hanging():
    pool = BuildPool(2, command=[sys.executable, "-c", "import sys; sys.exit(3)"])
    jobs = [BuildJob(f"# {k}\n", "k0", (), (1,), ()) for k in range(5)]
    start = time.monotonic()
    pool.start(MIN_OPS)
    pool.submit(jobs)
    assert pool.wait(jobs) == {job: False for job in jobs}
    later = BuildJob("# late\n", "k0", (), (1,), ())
    pool.submit([later])  # no worker left: it ends at once
    assert pool.wait([later]) == {later: False}
    assert time.monotonic() - start < 60
    pool.close()


def test_the_compiling_process_builds_while_workers_start(fresh_cache):
    program, module, _ = compiled(different_sums, (129, 37), fresh_cache)
    jobs = launch_jobs(module, program.code, "cuda")
    pool = BuildPool(2, command=[sys.executable, "-c", "import time; time.sleep(60)"])  # never ready
    start = time.monotonic()
    pool.start(MIN_OPS)
    pool.submit(jobs)
    assert pool.wait(jobs) == {job: True for job in jobs}
    assert time.monotonic() - start < 30
    pool.close()


def test_a_small_program_starts_no_workers(fresh_cache):
    program, module, _ = compiled(different_sums, (129, 37), fresh_cache)
    jobs = launch_jobs(module, program.code, "cuda")
    pool = BuildPool(2, command=[sys.executable, "-c", "raise SystemExit('started')"])
    pool.start(MIN_OPS - 1)
    assert not pool.started
    pool.submit(jobs)
    assert pool.wait(jobs) == {job: True for job in jobs}  # built here
    pool.close()


def test_the_number_of_workers(monkeypatch):
    monkeypatch.delenv("TIRC_COMPILE_WORKERS", raising=False)
    assert workers_wanted("cpu") == 0
    monkeypatch.setenv("TIRC_COMPILE_WORKERS", "3")
    assert workers_wanted("cpu") == 3
    monkeypatch.setenv("TIRC_COMPILE_WORKERS", "0")
    assert workers_wanted("cuda") == 0
