"""The `tirc` command line's error contract: exit 2, one
`FILE[:LINE[:COL]]: error: ...` line, no traceback, nothing half-written on
disk; and a dump's source name stays text in the code it generates.

Commands whose exit status or stderr matter as a process run as real
subprocesses, several at once (each one pays for importing torch); the others
call `tirc.cli.main` in this process.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from concurrent.futures import ThreadPoolExecutor

import pytest

ERROR_LINE = re.compile(r"^(?P<file>[^:\n]+?)(?::(?P<line>\d+)(?::(?P<col>\d+))?)?: error: (?P<msg>\S.*)$")


NO_MODEL = """import torch


def f(x):
    return x + 1


def get_inputs():
    return [torch.randn(4)]
"""


NO_GET_INPUTS = """import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return x + 1


def get_init_inputs():
    return []
"""


# Complex values can be neither lowered nor held in a buffer: an op that
# makes one cannot even fall back to ATen, and the error names it and its line.
COMPLEX_SOURCE = """import torch


class Model(torch.nn.Module):
    def forward(self, x):
        y = x * 2
        return torch.view_as_complex(y).abs()


def get_inputs():
    return [torch.randn(4, 5, 2)]


def get_init_inputs():
    return []
"""


FFT_SOURCE = """import torch


def f(x):
    h = torch.relu(x)
    return torch.fft.rfft(h).abs()


def get_inputs():
    return [torch.randn(4, 8)]
"""


# Python state changes between tracing and the eager run of --check, so the
# compiled program (x * 1 + 1) and eager (x * 2 + 1) disagree most where |x|
# is largest: the last element, 12.
STATEFUL_SOURCE = """import torch


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return x * float(self.calls) + 1.0


def get_inputs():
    return [torch.arange(20, dtype=torch.float32).reshape(4, 5) - 7]


def get_init_inputs():
    return []
"""


_PLUS_ONE = """class Model(torch.nn.Module):
    def forward(self, x):
        return x + 1
"""


# Programs that break the convention in other ways: name -> (source, what the error says).
BAD_PROGRAMS = {
    "exits_while_loaded": ("import sys\n\nsys.exit(3)\n", "sys.exit(3)"),
    "model_not_a_class": (
        "Model = 5\n\n\ndef get_inputs():\n    return [torch.randn(3)]\n",
        "Model is a int",
    ),
    "get_inputs_returns_none": (
        _PLUS_ONE + "\n\ndef get_inputs():\n    return None\n",
        "returned a NoneType",
    ),
    "get_inputs_returns_a_tensor": (
        _PLUS_ONE + "\n\ndef get_inputs():\n    return torch.randn(3)\n",
        "returned a Tensor; it must return a list of tensors",
    ),
    "meta_input": (
        _PLUS_ONE + '\n\ndef get_inputs():\n    return [torch.randn(3, device="meta")]\n',
        "item 0 is on the meta device",
    ),
    "sparse_input": (
        _PLUS_ONE + "\n\ndef get_inputs():\n    return [torch.randn(3, 3).to_sparse()]\n",
        "input 0 is a sparse_coo tensor",
    ),
    "int_output": (
        _PLUS_ONE.replace("return x + 1", "return x + 1, 3")
        + "\n\ndef get_inputs():\n    return [torch.randn(3)]\n",
        "output 1 (of the program's outputs, flattened) is int",
    ),
}


# get_inputs() gives a divisor of 0: eager raises, so --check has nothing to compare.
DIVIDES_BY_ZERO = "import torch\n" + (
    _PLUS_ONE.replace("return x + 1", "return x // (x - x)")
    + "\n\ndef get_inputs():\n    return [torch.arange(3)]\n"
)


def line_of(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


@pytest.fixture(scope="module")
def work(tmp_path_factory, dumps, sources):
    """A directory with the programs and corrupted dumps, and the error cases:
    (directory, {name: (args, expectations)}); arguments are relative to it."""
    work = tmp_path_factory.mktemp("cli_work")
    (work / "model.py").write_text(sources["model"])
    (work / "entry.py").write_text(sources["entry"])
    (work / "nomodel.py").write_text(NO_MODEL)
    (work / "ratio.py").write_text(RATIO_SOURCE)
    (work / "noinputs.py").write_text(NO_GET_INPUTS)
    (work / "complex.py").write_text(COMPLEX_SOURCE)
    (work / "fft.py").write_text(FFT_SOURCE)
    (work / "model.pt2").write_text("not a torch.export archive")
    (work / "stateful.py").write_text(STATEFUL_SOURCE)
    for name, (source, _) in BAD_PROGRAMS.items():
        (work / f"{name}.py").write_text("import torch\n" + source)

    lower = (dumps("cpp") / "02-lower.tir").read_text()
    capture = (dumps("cpp") / "01-capture.tir").read_text()
    (work / "truncated.tir").write_text(lower[: len(lower) // 2])
    (work / "unknown_body_op.tir").write_text(lower.replace("add(", "frobnicate(", 1))
    (work / "unknown_aten_op.tir").write_text(capture.replace("aten.add.Tensor", "aten.frobnicate.Tensor", 1))
    (work / "bad_aten_args.tir").write_text(BAD_ATEN_ARGS)
    os.mkfifo(work / "fifo.tir")  # reading it would block forever
    body_line = line_of(lower, "add(")
    aten_line = line_of(capture, "aten.add.Tensor")

    def dump_into(name):
        return ["--dump-after=all", "--dump-dir", f"out_{name}"]

    cases = {
        "missing_file": (["compile", "missing.py"], {"file": "missing.py"}),
        "fifo_dump": (["verify", "fifo.tir"], {"file": "fifo.tir", "says": "not a regular file"}),
        "missing_dump": (["replay", "missing.tir"], {"file": "missing.tir"}),
        "no_model": (["compile", "nomodel.py"], {"file": "nomodel.py", "says": "Model"}),
        "no_get_inputs": (["compile", "noinputs.py"], {"file": "noinputs.py", "says": "get_inputs"}),
        "missing_entry": (
            ["compile", "entry.py", "--entry", "no_such_fn"],
            {"file": "entry.py", "says": "no_such_fn"},
        ),
        "truncated_dump": (
            ["compile", "truncated.tir", *dump_into("truncated_dump")],
            {"file": "truncated.tir", "located": True, "clean_dir": "out_truncated_dump"},
        ),
        "replay_truncated_dump": (["replay", "truncated.tir"], {"file": "truncated.tir", "located": True}),
        "unknown_body_op": (
            ["compile", "unknown_body_op.tir", *dump_into("unknown_body_op")],
            {
                "file": "unknown_body_op.tir",
                "line": body_line,
                "says": "frobnicate",
                "clean_dir": "out_unknown_body_op",
            },
        ),
        "verify_unknown_body_op": (
            ["verify", "unknown_body_op.tir"],
            {"file": "unknown_body_op.tir", "line": body_line, "says": "frobnicate"},
        ),
        "verify_bad_aten_args": (
            ["verify", "bad_aten_args.tir"],
            {"file": "bad_aten_args.tir", "line": 5, "says": "aten.min.dim: Dimension out of range"},
        ),
        "unknown_aten_op": (
            ["compile", "unknown_aten_op.tir", *dump_into("unknown_aten_op")],
            {
                "file": "unknown_aten_op.tir",
                "line": aten_line,
                "says": "aten.frobnicate",
                "clean_dir": "out_unknown_aten_op",
            },
        ),
        "unsupported_dtype": (
            ["compile", "complex.py", *dump_into("unsupported_dtype")],
            {
                "file": "complex.py",
                "says": "aten.view_as_complex",
                "source_line": line_of(COMPLEX_SOURCE, "torch.view_as_complex"),
                "complete_dir": "out_unsupported_dtype",
            },
        ),
        "pt2_source": (["compile", "model.pt2"], {"file": "model.pt2", "says": "torch.export.load"}),
        "unknown_suffix": (
            ["compile", "model.txt"],
            {"file": "model.txt", "says": ".py program or a .tir dump"},
        ),
        "unsupported_dtype_fn": (
            ["compile", "fft.py", "--entry", "f"],
            {"file": "fft.py", "says": "aten._fft_r2c", "source_line": line_of(FFT_SOURCE, "torch.fft.rfft")},
        ),
    }
    for name, (_, says) in BAD_PROGRAMS.items():
        cases[name] = (["compile", f"{name}.py"], {"file": f"{name}.py", "says": says})
    (work / "divides_by_zero.py").write_text(DIVIDES_BY_ZERO)
    cases["check_where_eager_raises"] = (
        ["compile", "divides_by_zero.py", "--check"],
        {
            "file": "divides_by_zero.py",
            "says": "--check: eager PyTorch raises on the program's inputs: RuntimeError",
        },
    )
    return work, cases


# Run as real processes too (each costs an interpreter start and `import torch`).
# ATen's fake-tensor check of this call fails; torch logs that failure with a
# traceback on stderr unless tirc quiets it (seen only in a real process).
BAD_ATEN_ARGS = """tirc 0.1 stage=capture source="r.py"
options {}
input %x : f32[4, 8] {device = "cpu", seed = 0, strides = [8, 1]}

%0, %1 = aten.min.dim(%x, 5) : (f32[4], i64[4])
return (%0)
"""


# Row sums of x / y at 37 columns: the interpreted Triton kernel divides
# 0 by 0 in its masked-off lanes, and numpy warns about it.
RATIO_SOURCE = """import torch


def ratio(x, y):
    return (x / y).sum(-1)


def get_inputs():
    return [torch.randn(37, 37), torch.randn(37, 37)]
"""


PROCESS_CASES = ["missing_file", "unknown_body_op", "unsupported_dtype", "verify_bad_aten_args"]


@pytest.fixture(scope="module")
def batch(work, tirc_run):
    """The subprocess runs of this module, started together, 3 at a time:
    {name: future of CompletedProcess}."""
    directory, cases = work
    runs = {name: cases[name][0] for name in PROCESS_CASES}
    runs["check_triton"] = ["compile", "model.py", "--backend", "triton", "--check"]
    runs["check_mismatch"] = ["compile", "stateful.py", "--check"]
    runs["check_masked_nans"] = ["compile", "ratio.py", "--entry", "ratio", "--backend", "triton", "--check"]
    pool = ThreadPoolExecutor(max_workers=3)
    # separate dump directories from the in-process runs of the same cases
    futures = {
        name: pool.submit(tirc_run, [a.replace("out_", "proc_out_") for a in args], directory)
        for name, args in runs.items()
    }
    yield futures
    pool.shutdown(wait=True)


def check_error(directory, code, stderr, want, prefix="out_"):
    assert code == 2, f"exit {code}\n{stderr}"
    assert "Traceback" not in stderr, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, f"expected one stderr line, got:\n{stderr}"
    match = ERROR_LINE.match(lines[0])
    assert match, f"not 'FILE[:LINE[:COL]]: error: ...': {lines[0]!r}"
    assert match["file"] == want["file"], lines[0]
    assert "internal error" not in lines[0]
    if want.get("located"):
        assert match["line"] and match["col"], f"no line:col in {lines[0]!r}"
    if "line" in want:
        assert (
            match["line"] == str(want["line"]) and match["col"]
        ), f"expected line {want['line']}: {lines[0]!r}"
    if "says" in want:
        assert want["says"] in match["msg"], lines[0]
    if "source_line" in want:
        # the user's source line: in the location or in the message
        assert f"{want['file']}:{want['source_line']}" in lines[0], lines[0]
    if "clean_dir" in want:
        out = directory / want["clean_dir"].replace("out_", prefix)
        assert not out.exists() or not any(out.iterdir()), sorted(p.name for p in out.iterdir())
    if "complete_dir" in want:
        out = directory / want["complete_dir"].replace("out_", prefix)
        files = sorted(p.name for p in out.iterdir()) if out.exists() else []
        assert not [f for f in files if f.startswith(".") or f.endswith(".tmp")], files
        if files:
            manifest = json.loads((out / "manifest.json").read_text())
            listed = {e["file"]: e["sha256"] for e in manifest["files"]}
            assert set(files) - {"manifest.json"} == set(listed), (files, listed)
            for name, sha in listed.items():
                assert hashlib.sha256((out / name).read_bytes()).hexdigest() == sha, name


ERROR_CASES = [
    "missing_file",
    "fifo_dump",
    "missing_dump",
    "no_model",
    "no_get_inputs",
    "missing_entry",
    "truncated_dump",
    "replay_truncated_dump",
    "unknown_body_op",
    "verify_unknown_body_op",
    "verify_bad_aten_args",
    "unknown_aten_op",
    "unsupported_dtype",
    "unsupported_dtype_fn",
    "pt2_source",
    "unknown_suffix",
    *BAD_PROGRAMS,
]


@pytest.mark.parametrize("name", ERROR_CASES)
def test_error_exit_2_one_located_line(work, batch, cli, monkeypatch, name):
    # (`batch` only starts the subprocesses early, to run beside these tests)
    directory, cases = work
    args, want = cases[name]
    monkeypatch.chdir(directory)
    code, err = cli(*args)
    check_error(directory, code, err, want)


@pytest.mark.parametrize(
    "source", ['x"""\nimport pathlib; pathlib.Path("INJECTED").touch()\n"""', "C:\\Users\\me\\model.py"]
)
def test_a_dumps_source_name_stays_text_in_generated_code(dumps, tmp_path, cli, monkeypatch, source):
    """The header's `source` is any string: it goes into output_code.py's
    docstring escaped, so it can neither run as code nor break the module."""
    text = (dumps("cpp") / "02-lower.tir").read_text()
    quoted = source.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    edited = re.sub(r'source="[^"]*"', lambda m: f'source="{quoted}"', text, count=1)
    assert edited != text
    monkeypatch.chdir(tmp_path)
    (tmp_path / "edited.tir").write_text(edited)
    code, err = cli("replay", "edited.tir")
    assert code == 0, err
    assert not (tmp_path / "INJECTED").exists()


def test_check_where_eager_raises_is_an_input_error(work, cli, monkeypatch):
    """The program compiles, but eager raises on get_inputs(): nothing to
    compare, so an error (exit 2) that says so, after the compile summary."""
    directory, _ = work
    monkeypatch.chdir(directory)
    code, err = cli("compile", "divides_by_zero.py", "--check")
    assert code == 2 and "Traceback" not in err and "internal error" not in err, err
    last = err.strip().splitlines()[-1]
    assert last == (
        "divides_by_zero.py: error: --check: eager PyTorch raises on the program's inputs: "
        "RuntimeError: ZeroDivisionError"
    ), err


@pytest.mark.parametrize("name", PROCESS_CASES)
def test_error_as_a_process(work, batch, name):
    directory, cases = work
    proc = batch[name].result(timeout=600)
    check_error(directory, proc.returncode, proc.stderr, cases[name][1], prefix="proc_out_")


def test_compile_check_as_a_process(batch):
    proc = batch["check_triton"].result(timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "ok" in proc.stderr and "match" in proc.stderr


def test_the_triton_interpreters_warnings_stay_out_of_the_output(batch):
    proc = batch["check_masked_nans"].result(timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "Warning" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 2, proc.stderr


def test_check_mismatch_as_a_process_exits_1_naming_worst_element(batch):
    proc = batch["check_mismatch"].result(timeout=600)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "mismatch" in proc.stderr
    assert "[3, 4]" in proc.stderr, proc.stderr  # |x| is largest there
    assert "atol" in proc.stderr and "rtol" in proc.stderr


# -- errors of compile's options, fmt and verify ---------------------------------


def test_entry_on_a_dump_is_an_error(cli, dumps):
    code, err = cli("compile", dumps("cpp") / "02-lower.tir", "--entry", "f")
    assert code == 2
    assert "error:" in err and "--entry" in err


def test_stop_after_before_the_input_stage_is_an_error(cli, dumps):
    code, err = cli("compile", dumps("cpp") / "04-fusion.tir", "--stop-after=lower")
    assert code == 2
    assert "error:" in err and "Traceback" not in err


def test_unknown_stage_names_are_errors(cli, model_file):
    code, err = cli("compile", model_file, "--dump-after=lower,bogus")
    assert code == 2 and "bogus" in err
    code, err = cli("compile", model_file, "--stop-after=bogus")
    assert code == 2 and "bogus" in err


def test_fmt_of_a_malformed_file_is_an_error(cli, dumps, tmp_path):
    text = (dumps("cpp") / "02-lower.tir").read_text()
    path = tmp_path / "bad.tir"
    path.write_text(text[: len(text) // 2])
    code, err = cli("fmt", path)
    assert code == 2
    assert ERROR_LINE.match(err.strip()) and len(err.strip().splitlines()) == 1, err
    assert path.read_text() == text[: len(text) // 2]


def test_verify_rejects_a_wrong_derived_fact(cli, dumps, tmp_path):
    """Derived facts printed in a dump are checked, never trusted."""
    text = (dumps("cpp") / "03-schedule.tir").read_text()
    match = re.search(r"group \((\d+), (\d+)\)", text)
    assert match, text
    edited = text[: match.start()] + f"group ({int(match[1]) + 1}, {match[2]})" + text[match.end() :]
    path = tmp_path / "facts.tir"
    path.write_text(edited)
    code, err = cli("verify", path)
    assert code == 2, err
    m = ERROR_LINE.match(err.strip())
    assert m and m["file"] == str(path), err
