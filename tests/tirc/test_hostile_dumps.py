"""Hostile dumps: a crafted .tir file must not write or create any file, or
run anything, through `verify`, `fmt`, `replay`, `compile --check` or
`reduce`. Each one is refused with one located error (exit 2, no traceback)
before anything runs, or, for strings that only travel (a source name, a
location), carried as inert text: escaped wherever tirc echoes or emits them.

The dumps here are the attacks of a security review: ATen ops that open
files or share memory with them (`from_file` with `shared=true`), in-place
writes into inputs the dump does not declare as updated, ops that write
where their schemas do not say, Python attributes named as ops, and code or
terminal escapes smuggled through strings, locations and devices.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch

from tirc.cli import main

ERROR_LINE = re.compile(r"^\S+\.tir:\d+:\d+: error: \S")

HEADER = """tirc 0.1 stage={stage} source="evil.py"
options {{backend = "cpp", device = "cpu", fusion = true, fusion_bisect_limit = -1, max_fusion_size = 64}}
input %x : f32[16] {{device = "cpu", seed = 0, strides = [1]}}
input %y : f32[16] {{device = "cpu", seed = 1, strides = [1]}}

"""


def capture(*lines: str, result: str = "%1") -> str:
    return HEADER.format(stage="capture") + "\n".join(lines) + f"\nreturn ({result})\n"


def lower(*lines: str, result: str = "%buf0") -> str:
    return HEADER.format(stage="lower") + "\n".join(lines) + f"\nreturn ({result})\n"


ADD = "%1 = aten.add.Tensor(%0, %x) : f32[16]"

# name -> (dump text, what the refusal says). `TARGET` is replaced by a path
# inside the test's directory that must never come to exist.
REFUSED_OPS = {
    "from_file_shared": (
        capture('%0 = aten.from_file.default("TARGET", true, 16) : f32[16]', ADD),
        "aten.from_file.default",
    ),
    "from_file_filled_in_place": (
        capture(
            '%0 = aten.from_file.default("TARGET", true, 16) : f32[16]',
            "%1 = aten.fill_.Scalar(%0, 7.0) : f32[16]",
        ),
        "aten.from_file.default",
    ),
    "from_file_as_extern": (
        lower('%buf0 = extern aten.from_file.default("TARGET", true, 16) : f32[16] strides [1]'),
        "aten.from_file.default",
    ),
    "fill_into_undeclared_input": (capture("%0 = aten.fill_.Scalar(%x, 1.0) : f32[16]", ADD), "aten.fill_"),
    "copy_into_undeclared_input": (capture("%0 = aten.copy_.default(%x, %y) : f32[16]", ADD), "aten.copy_"),
    "copy_from_writes_dst": (capture("%0 = aten._copy_from.default(%y, %x) : f32[16]", ADD), "_copy_from"),
    "out_argument": (capture("%0 = aten.add.out(%x, %y) {out = %x} : f32[16]", ADD), "aten.add.out"),
    "extern_copy_into_input": (
        lower("%buf0 = extern aten.copy_.default(%x, %y) : f32[16] strides [1]"),
        "aten.copy_",
    ),
    "print_to_stdout": (capture('%0 = aten._print.default("pwned") : f32[16]', ADD), "aten._print"),
    "dunder_class_init": (capture("%0 = aten.__class__.__init__(%x) : f32[16]", ADD), "__class__"),
    "dunder_namespace": (capture("%0 = __builtins__.open.default(%x) : f32[16]", ADD), "__builtins__"),
    "global_generator": (capture("%0 = aten.randn.default([16]) : f32[16]", ADD), "aten.randn"),
}

COMMANDS = {
    "verify": lambda path: ["verify", path],
    "fmt": lambda path: ["fmt", "--check", path],
    "replay": lambda path: ["replay", path],
    "compile": lambda path: ["compile", path, "--check", "--dump-after=all", "--dump-dir", "out"],
    "reduce": lambda path: ["reduce", path, "--until", "mismatch", "-o", "small.tir"],
}


def _run(tmp_path, monkeypatch, capsys, text: str, command: str) -> tuple[int, str]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TIRC_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "evil.tir").write_text(text.replace("TARGET", str(tmp_path / "target")))
    status = main(COMMANDS[command]("evil.tir"))
    return status, capsys.readouterr().err


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("name", sorted(REFUSED_OPS))
def test_a_dump_naming_an_impure_op_is_refused_before_anything_runs(
    name, command, tmp_path, monkeypatch, capsys
):
    text, named = REFUSED_OPS[name]
    status, err = _run(tmp_path, monkeypatch, capsys, text, command)
    assert status == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and ERROR_LINE.match(lines[0]), err
    assert named in lines[0] and "[rule: pure-ops]" in lines[0], err
    assert "Traceback" not in err
    # Nothing written: no target, no dumps, no reduced file, no reproducer.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["evil.tir"]


def test_every_refused_op_is_refused_at_its_line(tmp_path, monkeypatch, capsys):
    for name, (text, _) in sorted(REFUSED_OPS.items()):
        status, err = _run(tmp_path, monkeypatch, capsys, text, "verify")
        line = next(k for k, row in enumerate(text.splitlines(), 1) if row.startswith(("%0", "%buf0")))
        assert status == 2 and f"evil.tir:{line}:" in err, (name, err)


# ---- strings that travel: escaped wherever they are echoed or emitted

# Quotes to close a string of generated code, a raw ESC (the grammar's
# strings take any character but a newline, which is escaped as \n).
INJECTED = '\\"\\"\\"); import os; os.mkdir(\\"PWNED\\") #\\n\x1b[2J\\nok: outputs match eager PyTorch'
INJECTION_DUMPS = {
    "source": HEADER.format(stage="capture").replace('source="evil.py"', f'source="{INJECTED}"')
    + "%0 = aten.add.Tensor(%x, %y) : f32[16]\nreturn (%0)\n",
    "loc": HEADER.format(stage="capture")
    + f'%0 = aten.add.Tensor(%x, %y) : f32[16] loc("{INJECTED}":3)\nreturn (%0)\n',
    "device_literal": HEADER.format(stage="capture")
    + f'%0 = aten.ones.default([16]) {{device = device("{INJECTED}")}} : f32[16]\n'
    + "%1 = aten.add.Tensor(%0, %x) : f32[16]\nreturn (%1)\n",
    "input_device": HEADER.format(stage="capture").replace(
        '{device = "cpu", seed = 0', f'{{device = "cuda:0{INJECTED}", seed = 0'
    )
    + "%0 = aten.add.Tensor(%x, %y) : f32[16]\nreturn (%0)\n",
}


@pytest.mark.parametrize("command", ["verify", "replay", "compile"])
@pytest.mark.parametrize("name", sorted(INJECTION_DUMPS))
def test_strings_from_a_dump_run_nothing_and_forge_no_output(name, command, tmp_path, monkeypatch, capsys):
    status, err = _run(tmp_path, monkeypatch, capsys, INJECTION_DUMPS[name], command)
    assert "Traceback" not in err
    assert not (tmp_path / "PWNED").exists()
    # No raw control characters reach the terminal, and no line of the
    # dump's strings stands alone (a forged "ok: outputs match" line).
    assert "\x1b" not in err
    forged = [line for line in err.splitlines() if line.startswith("ok: outputs match eager PyTorch")]
    assert len(forged) <= (1 if status == 0 else 0), err
    if status != 0:
        assert status == 2 and ERROR_LINE.match(err.strip().splitlines()[0]), err


def test_a_source_name_with_code_compiles_to_inert_text(tmp_path, monkeypatch, capsys):
    status, err = _run(tmp_path, monkeypatch, capsys, INJECTION_DUMPS["source"], "compile")
    assert status == 0, err
    code = (tmp_path / "out" / "output_code.py").read_text()
    compile(code, "output_code.py", "exec")  # still one well-formed module
    assert not (tmp_path / "PWNED").exists()
    assert "ok: outputs match eager PyTorch" in err.splitlines()[-1]


# ---- .pt2 files: their graphs are held to the allow-list, and nothing pickled runs


class _Noisy(torch.nn.Module):
    def forward(self, x):
        return x + torch.randn(16) * 0


def _rewritten(source: Path, target: Path, old: bytes, new: bytes) -> None:
    """A copy of the zip archive `source` with `old` replaced by `new` in every member."""
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(target, "w") as dst:
        for info in src.infolist():
            dst.writestr(info, src.read(info).replace(old, new))


def test_an_exported_graph_is_held_to_the_allow_list(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TIRC_CACHE_DIR", str(tmp_path / "cache"))
    torch.export.save(torch.export.export(_Noisy(), (torch.randn(16),)), "noisy.pt2")
    # A crafted file: the same graph calling from_file, with a path and shared storage.
    _rewritten(
        tmp_path / "noisy.pt2", tmp_path / "evil.pt2", b"aten.randn.default", b"aten.from_file.default"
    )
    for name, op in (("noisy.pt2", "aten.randn.default"), ("evil.pt2", None)):
        for argv in (["compile", name, "--check"], ["compile", name, "--dump-after=all"]):
            status = main(argv)
            err = capsys.readouterr().err
            assert status == 2 and "Traceback" not in err, err
            assert len(err.strip().splitlines()) == 1, err
            if op is not None:
                assert op in err and "[rule: pure-ops]" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["evil.pt2", "noisy.pt2"]
    # torch logs a traceback of its own when a file does not deserialize: not to the user.
    proc = subprocess.run(
        [sys.executable, "-m", "tirc", "compile", "evil.pt2", "--check"], capture_output=True, text=True
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


class _Payload:
    """What a crafted pickle would smuggle: unpickling it creates a directory."""

    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return (os.mkdir, (self.path,))


def test_loading_a_pt2_unpickles_no_code(tmp_path):
    import io
    import pickle

    from tirc.sources import data_only_unpickling

    payload = pickle.dumps(_Payload(str(tmp_path / "PWNED")))
    buffer = io.BytesIO()
    torch.save(_Payload(str(tmp_path / "PWNED2")), buffer)
    with data_only_unpickling():
        with pytest.raises(pickle.UnpicklingError):
            pickle.loads(payload)
        with pytest.raises(pickle.UnpicklingError):
            torch.load(io.BytesIO(buffer.getvalue()), weights_only=False)  # as torch.export.load asks
        tensor = torch.randn(3)
        saved = io.BytesIO()
        torch.save(tensor, saved)
        assert torch.equal(torch.load(io.BytesIO(saved.getvalue()), weights_only=False), tensor)
    assert not (tmp_path / "PWNED").exists() and not (tmp_path / "PWNED2").exists()
    pickle.loads(pickle.dumps([1, 2]))  # restored afterwards


def test_a_memory_plan_cannot_reuse_an_input(tmp_path, monkeypatch, capsys):
    """Kernels write only buffers the plan allocates: a plan that would put
    a result into an input's storage (an in-place write the dump does not
    declare with `update`) is refused."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TIRC_CACHE_DIR", str(tmp_path / "cache"))
    source = Path(__file__).resolve().parents[2] / "examples" / "gelu_bias.py"
    argv = ["compile", str(source), "--dump-after=memplan", "--dump-dir", "d", "--option", "fusion=false"]
    assert main(argv) == 0
    text = (tmp_path / "d" / "05-memplan.tir").read_text()
    assert "  alloc %buf0\n" in text
    (tmp_path / "evil.tir").write_text(text.replace("  alloc %buf0\n", "  reuse %x as %buf0\n"))
    capsys.readouterr()
    for command in ("verify", "replay"):
        assert main([command, "evil.tir"]) == 2
        err = capsys.readouterr().err
        assert ERROR_LINE.match(err) and "[reuse-dead] %x is not a live buffer" in err, err


# Ops whose ATen kernels write or read through arguments they do not check:
# a dump gives them indices outside the buffer (a range it declares, or
# seeds of -8..8), or a logsumexp smaller than the query. Each run refuses
# them with one message (ir_text/index_guards.py) instead of corrupting the
# process's heap. Run as real processes: a missed check would abort them.
UNCHECKED_ARGUMENTS = {
    "pool_indices": (
        """tirc 0.1 stage=capture source="evil.py"
options {backend = "cpp", device = "cpu", fusion = true, fusion_bisect_limit = -1, max_fusion_size = 64}
input %g : f32[1, 1, 2, 2] {device = "cpu", seed = 0, strides = [4, 4, 2, 1]}
input %x : f32[1, 1, 4, 4] {device = "cpu", seed = 1, strides = [16, 16, 4, 1]}
input %i : i64[1, 1, 2, 2] {device = "cpu", range = [100000, 100001], seed = 2, strides = [4, 4, 2, 1]}

%0 = aten.max_pool2d_with_indices_backward.default(%g, %x, [2, 2], [2, 2], [0, 0], [1, 1], false, %i) : f32[1, 1, 4, 4]
return (%0)
""",
        "indices must lie in [0, 16)",
    ),
    "embedding_rows": (
        """tirc 0.1 stage=capture source="evil.py"
options {backend = "cpp", device = "cpu", fusion = true, fusion_bisect_limit = -1, max_fusion_size = 64}
input %g : f32[3, 4] {device = "cpu", seed = 0, strides = [4, 1]}
input %i : i64[3] {device = "cpu", seed = 2, strides = [1]}

%0 = aten.embedding_dense_backward.default(%g, %i, 5, -1, false) : f32[5, 4]
return (%0)
""",
        "indices must lie in [0, 5)",
    ),
    "attention_logsumexp": (
        """tirc 0.1 stage=capture source="evil.py"
options {backend = "cpp", device = "cpu", fusion = true, fusion_bisect_limit = -1, max_fusion_size = 64}
input %g : f32[1, 2, 64, 8] {device = "cpu", seed = 0, strides = [1024, 512, 8, 1]}
input %q : f32[1, 2, 64, 8] {device = "cpu", seed = 1, strides = [1024, 512, 8, 1]}
input %o : f32[1, 2, 64, 8] {device = "cpu", seed = 2, strides = [1024, 512, 8, 1]}
input %l : f32[1, 2, 1] {device = "cpu", seed = 3, strides = [2, 1, 1]}

%0, %1, %2 = aten._scaled_dot_product_flash_attention_for_cpu_backward.default(%g, %q, %q, %q, %o, %l, 0.0, false) : (f32[1, 2, 64, 8], f32[1, 2, 64, 8], f32[1, 2, 64, 8])
return (%0)
""",
        "logsumexp has shape [1, 2, 1], expected [1, 2, 64]",
    ),
}


@pytest.mark.parametrize("command", ["replay", "compile"])
@pytest.mark.parametrize("name", sorted(UNCHECKED_ARGUMENTS))
def test_arguments_kernels_trust_are_checked_first(name, command, tmp_path, tirc_run):
    text, message = UNCHECKED_ARGUMENTS[name]
    (tmp_path / "evil.tir").write_text(text)
    args = [command, "evil.tir"] + (["--check"] if command == "compile" else [])
    proc = tirc_run(args, tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr
