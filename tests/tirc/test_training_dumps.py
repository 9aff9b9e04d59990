"""`tirc compile --train`: the forward and backward graphs' dumps, each in its
own directory, pass the checks the inference dumps pass (byte-exact round
trip, re-feed to identical later files, replay, determinism across hash
seeds, reduce), and the manifest records the partition."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from ir_text import TircError, parse, print_ir
from tirc.dumps import comparable_files

TRAIN_SOURCE = '''"""A training step for the tirc CLI tests: convolution, batch norm, a head."""

import torch
import torch.nn.functional as F


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.fc = torch.nn.Linear(8, 10)

    def forward(self, x):
        y = F.relu(self.bn(self.conv(x)))
        return self.fc(y.mean((2, 3))) * torch.sigmoid(y.amax((2, 3)).sum(1, keepdim=True))


def get_inputs():
    return [torch.randn(5, 3, 11, 13)]


def loss(outputs, inputs):
    return F.cross_entropy(outputs, torch.arange(5))
'''

GRAPHS = ("forward", "backward")
STAGE_FILES = ("01-capture.tir", "02-lower.tir", "03-schedule.tir", "04-fusion.tir", "05-memplan.tir")


@pytest.fixture(scope="module")
def train_dumps(tmp_path_factory):
    """A directory with MODEL's training dumps (cpp), made once."""
    import contextlib
    import io

    from tirc.cli import main

    root = tmp_path_factory.mktemp("train")
    (root / "model.py").write_text(TRAIN_SOURCE)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(
            ["compile", str(root / "model.py"), "--train", "--dump-after=all", "--dump-dir", str(root / "d")]
        )
    assert code == 0, err.getvalue()
    return root / "d"


def test_each_graph_has_its_stage_files_and_the_manifest_the_partition(train_dumps):
    for kind in GRAPHS:
        names = sorted(p.name for p in (train_dumps / kind).iterdir())
        assert names == sorted([*STAGE_FILES, "output_code.py", "manifest.json"])
    manifest = json.loads((train_dumps / "manifest.json").read_text())["training"]
    backward = parse((train_dumps / "backward" / "01-capture.tir").read_text())
    inputs = [i.value.hint for i in backward.inputs]
    saved = [v["name"] for v in manifest["saved"]]
    assert saved == [name for name in inputs if not name.startswith("tangents")]
    assert "conv.weight" in saved or "bn.weight" in saved, "saved parameters keep their names"
    shapes = {i.value.hint: list(i.value.type.shape) for i in backward.inputs}
    assert all(v["shape"] == shapes[v["name"]] for v in manifest["saved"])
    assert manifest["saved_bytes"] == sum(v["bytes"] for v in manifest["saved"]) > 0
    peaks = manifest["peak_bytes"]
    assert peaks["step"] == max(peaks["forward"], peaks["backward"]) > 0
    forward = parse((train_dumps / "forward" / "01-capture.tir").read_text())
    assert manifest["forward_outputs"] + len(saved) == len(forward.outputs)


def test_the_backward_frees_each_saved_value_after_its_last_use(train_dumps):
    text = (train_dumps / "backward" / "05-memplan.tir").read_text()
    module = parse(text)
    freed = {line.operands[0].hint for line in module.wrapper if line.op == "free"}
    returned = {v.hint for v in module.outputs}
    manifest = json.loads((train_dumps / "manifest.json").read_text())["training"]
    for value in manifest["saved"]:
        assert value["name"] in freed or value["name"] in returned, f"{value['name']} is held to the end"
    assert "args.clear()" in (train_dumps / "backward" / "output_code.py").read_text()


def test_every_dump_round_trips_byte_exactly(train_dumps):
    for kind in GRAPHS:
        for name in STAGE_FILES:
            text = (train_dumps / kind / name).read_text()
            assert print_ir(parse(text)) == text, f"{kind}/{name}"


@pytest.mark.parametrize("kind", GRAPHS)
@pytest.mark.parametrize("index", [0, 3, 4], ids=["capture", "fusion", "memplan"])
def test_refeed_reproduces_later_files(cli, train_dumps, tmp_path, kind, index):
    original = train_dumps / kind
    code, err = cli("compile", original / STAGE_FILES[index], "--dump-after=all", "--dump-dir", tmp_path)
    assert code == 0, err
    for name in [*STAGE_FILES[index + 1 :], "output_code.py"]:
        assert (tmp_path / name).read_bytes() == (original / name).read_bytes(), f"{kind}/{name} differs"


@pytest.mark.parametrize("kind", GRAPHS)
@pytest.mark.parametrize("name", [STAGE_FILES[0], STAGE_FILES[4]])
def test_replay(cli, train_dumps, kind, name):
    code, err = cli("replay", train_dumps / kind / name)
    assert code == 0, err
    assert "ok: outputs match" in err


def test_hash_seed_does_not_reach_the_training_dumps(tmp_path, tirc_run):
    (tmp_path / "model.py").write_text(TRAIN_SOURCE)
    seeds = ("0", "4242")
    command = ["compile", "model.py", "--train", "--dump-after=all", "--dump-dir"]
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = [
            pool.submit(tirc_run, [*command, f"s{seed}"], tmp_path, PYTHONHASHSEED=seed) for seed in seeds
        ]
        for run in runs:
            proc = run.result(timeout=600)
            assert proc.returncode == 0, proc.stderr
    first, second = (comparable_files(tmp_path / f"s{seed}") for seed in seeds)
    assert "backward/05-memplan.tir" in first and "forward/output_code.py" in first
    differ = [name for name in first if first[name] != second.get(name)]
    assert not differ, f"files differ between hash seeds: {differ}"


def test_check_compares_the_loss_and_every_gradient(cli, tmp_path):
    (tmp_path / "model.py").write_text(TRAIN_SOURCE)
    code, err = cli("compile", tmp_path / "model.py", "--train", "--check")
    assert code == 0, err
    assert "ok: the training step matches eager PyTorch" in err
    code, err = cli(
        "compile",
        tmp_path / "model.py",
        "--train",
        "--check",
        "--option",
        "inject_fault=codegen:miscompile:mul",
    )
    assert code == 1, err
    assert "mismatch against eager PyTorch: " in err


def test_a_backward_miscompile_reduces_to_a_few_ops(cli, train_dumps, tmp_path):
    out = tmp_path / "small.tir"
    code, err = cli(
        "reduce",
        train_dumps / "backward" / STAGE_FILES[0],
        "--until",
        "mismatch",
        "--option",
        "inject_fault=codegen:miscompile:mul:2",
        "-o",
        out,
    )
    assert code == 0, err
    reduced = parse(out.read_text())
    original = parse((train_dumps / "backward" / STAGE_FILES[0]).read_text())
    assert len(reduced.graph) <= 5 < len(original.graph)
    code, err = cli("replay", out, "--option", "inject_fault=codegen:miscompile:mul:2")
    assert code == 1 and "mismatch" in err


@pytest.mark.parametrize(
    "extra, message",
    [
        (["-o", "out.tir"], "-o: a training compile has two graphs"),
        (["--stop-after", "lower"], "--stop-after: a training compile runs both graphs"),
    ],
)
def test_flags_a_training_compile_does_not_take(cli, tmp_path, extra, message):
    (tmp_path / "model.py").write_text(TRAIN_SOURCE)
    code, err = cli("compile", tmp_path / "model.py", "--train", *extra)
    assert code == 2
    assert message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_train_refuses_a_dump(cli, train_dumps):
    code, err = cli("compile", train_dumps / "backward" / STAGE_FILES[0], "--train")
    assert code == 2
    assert "without --train" in err


def test_a_cuda_program_may_take_cpu_scalars(train_dumps):
    """Attention's random-number state reaches a CUDA backward as CPU
    scalars: a 0-d CPU input passes the device check of a CUDA dump, a
    larger one does not."""
    from tirc.options import Options
    from tirc.pipeline import Context, check_module

    text = (train_dumps / "forward" / "01-capture.tir").read_text()
    cuda = text.replace('device = "cpu"', 'device = "cuda"').replace('backend = "cpp"', 'backend = "triton"')
    scalar = cuda.replace(
        'input %bn.num_batches_tracked : i64[] {device = "cuda"',
        'input %bn.num_batches_tracked : i64[] {device = "cpu"',
    )
    assert scalar != cuda
    options = Options(backend="triton", device="cuda")
    check_module(parse(scalar), Context(options))
    tensor = cuda.replace(
        'input %x : f32[5, 3, 11, 13] {device = "cuda"', 'input %x : f32[5, 3, 11, 13] {device = "cpu"'
    )
    assert tensor != cuda
    # (the fake run of the graph or the device check refuses it)
    with pytest.raises(TircError, match="cpu"):
        check_module(parse(tensor), Context(options))
