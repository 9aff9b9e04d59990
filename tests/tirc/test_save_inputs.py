"""`tirc compile --save-inputs`: the input tensors saved beside the dumps as
`inputs/<sha256>.pt`, named by every dump, and read back by replay and
`--check`, with a located error when a file is missing or changed."""

from __future__ import annotations

import hashlib
import io
import json
import re
import shutil
from pathlib import Path

import pytest
import torch

from ir_text import parse
from tirc.commands import header_inputs
from tirc.dumps import comparable_files

# Exact values matter here: argmax picks one position, and the inputs are a
# transposed (non-contiguous) tensor and a parameter.
PROGRAM = """import torch


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.linspace(-1.0, 2.0, 6))

    def forward(self, x, y):
        z = x * self.scale + y
        return z.argmax(-1), torch.tanh(z)


def get_inputs():
    return [torch.randn(6, 4).t(), torch.randn(6)]
"""

SHA_ATTR = re.compile(r', sha256 = "[0-9a-f]{64}"')
STAGES = ("01-capture.tir", "02-lower.tir", "03-schedule.tir", "04-fusion.tir", "05-memplan.tir")


def tree(directory: Path) -> dict[str, bytes]:
    """Every file's bytes, the manifest's without its timings (which differ between any two runs)."""
    return comparable_files(directory)


@pytest.fixture(scope="module")
def saved(tmp_path_factory, tirc_start):
    """A directory with program.py and three runs of it, as processes: two with
    --save-inputs and different hash seeds (saved1, saved2), one without (plain)."""
    work = tmp_path_factory.mktemp("save_inputs")
    (work / "program.py").write_text(PROGRAM)
    runs = {"saved1": ("1", ["--save-inputs"]), "saved2": ("2", ["--save-inputs"]), "plain": ("1", [])}
    procs = [
        tirc_start(
            ["compile", "program.py", "--dump-after=all", "--dump-dir", out, "--check", *extra],
            work,
            PYTHONHASHSEED=seed,
        )
        for out, (seed, extra) in runs.items()
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    return work


@pytest.fixture
def copy_of(saved, tmp_path):
    def copy(name="saved1") -> Path:
        return Path(shutil.copytree(saved / name, tmp_path / name))

    return copy


def test_files_are_written_and_named_by_their_sha256(saved):
    files = sorted((saved / "saved1" / "inputs").iterdir())
    assert len(files) == 3  # the parameter, x and y
    for path in files:
        data = path.read_bytes()
        assert path.name == hashlib.sha256(data).hexdigest() + ".pt"
        assert isinstance(torch.load(io.BytesIO(data), weights_only=True), torch.Tensor)
    manifest = json.loads((saved / "saved1" / "manifest.json").read_text())
    listed = [e["file"] for e in manifest["files"] if e["stage"] == "input"]
    assert sorted(listed) == sorted(f"inputs/{p.name}" for p in files)


def test_every_dump_names_the_saved_files(saved):
    names = {p.name.removesuffix(".pt") for p in (saved / "saved1" / "inputs").iterdir()}
    for stage in STAGES:
        module = parse((saved / "saved1" / stage).read_text(), stage)
        assert [i.sha256 in names for i in module.inputs] == [True] * 3, stage


def test_saved_files_hold_the_program_inputs(saved):
    torch.manual_seed(0)  # as tirc does before running program.py
    scale = torch.linspace(-1.0, 2.0, 6)
    x, y = torch.randn(6, 4).t(), torch.randn(6)
    path = saved / "saved1" / "05-memplan.tir"
    loaded = header_inputs(parse(path.read_text(), str(path)), str(path))
    for got, want in zip(loaded, [scale, x, y]):
        assert got.stride() == want.stride()
        torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_without_the_flag_nothing_changes(saved):
    plain = saved / "plain"
    assert not (plain / "inputs").exists()
    for stage in STAGES:
        text = (plain / stage).read_text()
        assert "sha256" not in text
        assert SHA_ATTR.sub("", (saved / "saved1" / stage).read_text()) == text, stage


def test_two_runs_write_identical_directories(saved):
    assert tree(saved / "saved1") == tree(saved / "saved2")


@pytest.mark.parametrize("stage", ["01-capture.tir", "05-memplan.tir"])
def test_replay_and_check_read_the_saved_inputs(copy_of, cli, stage):
    directory = copy_of()
    code, err = cli("replay", directory / stage)
    assert code == 0, err
    code, err = cli("compile", directory / stage, "--check")
    assert code == 0, err


def test_refeed_copies_the_files_and_reproduces_the_dumps(copy_of, cli, tmp_path):
    directory = copy_of()
    out = tmp_path / "refed"
    code, err = cli("compile", directory / "02-lower.tir", "--dump-after=all", "--dump-dir", out)
    assert code == 0, err
    assert tree(out / "inputs") == tree(directory / "inputs")
    for stage in STAGES[2:]:
        assert (out / stage).read_text() == (directory / stage).read_text(), stage


def _one_error(code, err, file: Path, line: int, says: str):
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert re.match(rf"{re.escape(str(file))}:{line}:\d+: error: ", lines[0]), lines[0]
    assert says in lines[0], lines[0]


def _first_input(path: Path):
    module = parse(path.read_text(), str(path))
    return module.inputs[0]


@pytest.mark.parametrize("command", ["replay", "compile", "verify"])
def test_missing_file_is_a_located_error(copy_of, cli, command):
    directory = copy_of()
    dump = directory / "03-schedule.tir"
    first = _first_input(dump)
    (directory / "inputs" / f"{first.sha256}.pt").unlink()
    args = [command, dump] + (["--check"] if command == "compile" else [])
    code, err = cli(*args)
    _one_error(code, err, dump, first.pos[0], f"the saved input inputs/{first.sha256}.pt is missing")


def test_changed_file_is_a_located_error(copy_of, cli):
    directory = copy_of()
    dump = directory / "05-memplan.tir"
    first = _first_input(dump)
    target = directory / "inputs" / f"{first.sha256}.pt"
    target.chmod(0o644)
    target.write_bytes(target.read_bytes() + b"\0")
    code, err = cli("replay", dump)
    _one_error(code, err, dump, first.pos[0], "does not match its sha256 (the file was changed)")


NOT_THE_INPUT = "does not hold a tensor of the input's dtype, shape and strides"


def _like(inp, device="cpu") -> torch.Tensor:
    t = inp.value.type
    return torch.zeros(t.storage_size, device=device).as_strided(t.shape, t.strides)


@pytest.mark.parametrize(
    "make, says",
    [
        (lambda inp: torch.zeros(7), NOT_THE_INPUT),
        # Right dtype, shape and strides, but no values to run on.
        (lambda inp: _like(inp, "meta"), "holds a meta tensor, which has no values"),
        # A layout without strides (asking a CSR tensor for them raises).
        pytest.param(
            lambda inp: _like(inp).to_sparse_csr(),
            NOT_THE_INPUT,
            marks=pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta"),
        ),
    ],
    ids=["another shape", "meta", "sparse csr"],
)
def test_file_not_holding_the_input_is_a_located_error(copy_of, cli, make, says):
    directory = copy_of()
    dump = directory / "02-lower.tir"
    target = next(i for i in parse(dump.read_text(), str(dump)).inputs if len(i.value.type.shape) == 2)
    buffer = io.BytesIO()
    torch.save(make(target), buffer)
    sha = hashlib.sha256(buffer.getvalue()).hexdigest()
    (directory / "inputs" / f"{sha}.pt").write_bytes(buffer.getvalue())
    dump.write_text(dump.read_text().replace(target.sha256, sha, 1))
    code, err = cli("replay", dump)
    _one_error(code, err, dump, target.pos[0], says)


GATHER = """import torch


def pick(x, index):
    return x.gather(1, index) * 2


def get_inputs():
    return [torch.randn(7, 129), torch.randint(0, 129, (7, 5))]
"""


def test_seeded_indices_the_program_refuses_are_one_error(cli, tmp_path):
    """Capture records the index range gather needs (`range = [0, 5]`), so
    seeded replay draws valid indices; a dump without it (an old one, or an
    edited one) draws integers in -8..8, which gather refuses: said as such
    (exit 2, one line naming --save-inputs), not as an internal error; with
    the real inputs saved, the same dump replays."""
    (tmp_path / "gather.py").write_text(GATHER)
    for out, extra in (("seeded", []), ("saved", ["--save-inputs"])):
        code, err = cli(
            "compile",
            tmp_path / "gather.py",
            "--entry",
            "pick",
            "--dump-after=capture",
            "--dump-dir",
            tmp_path / out,
            *extra,
        )
        assert code == 0, err
    seeded = tmp_path / "seeded" / "01-capture.tir"
    code, err = cli("replay", seeded)
    assert code == 0, err
    text = seeded.read_text()
    assert re.search(r"range = \[0, \d+\], ", text), text
    seeded.write_text(re.sub(r"range = \[0, \d+\], ", "", text))
    code, err = cli("replay", seeded)
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "internal error" not in err, err
    assert lines[0].startswith(
        f"{seeded}: error: eager PyTorch fails on the dump's inputs: RuntimeError: index"
    ), err
    assert "--save-inputs" in lines[0], err
    code, err = cli("replay", tmp_path / "saved" / "01-capture.tir")
    assert code == 0, err


VIEWS = """import torch


def views(x, y):
    return x * 2 + x.sum(0), y.softmax(-1)


def get_inputs():
    return [torch.randn(1, 37).expand(13, 37), torch.randn(40, 50)[2:30, 5:45]]
"""


@pytest.mark.parametrize("stage", ["01-capture.tir", "02-lower.tir", "05-memplan.tir"])
def test_replay_keeps_the_inputs_layout(cli, tmp_path, stage):
    """Inputs that are a broadcast (stride 0) and a slice with gaps: the
    replayed copies keep those strides (clone made them contiguous, which
    the compiled code refused as an internal error, and the interpreter
    read past)."""
    (tmp_path / "views.py").write_text(VIEWS)
    code, err = cli(
        "compile", tmp_path / "views.py", "--entry", "views", "--dump-after=all", "--dump-dir", tmp_path / "d"
    )
    assert code == 0, err
    code, err = cli("replay", tmp_path / "d" / stage)
    assert code == 0, err
    assert err.strip().startswith("ok: outputs match"), err
