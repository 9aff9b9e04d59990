"""bench/models.py: the model benchmark's rows, its check against float64 and
its list, on `--small` models with the C++ backend (no Inductor: its
compile alone would take most of this file's time here)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
import torch

BENCH = Path(__file__).parents[1] / "bench"


def _load():
    sys.path.insert(0, str(BENCH))  # models.py imports its neighbours (common, gpu, model_zoo)
    spec = importlib.util.spec_from_file_location("bench_models", BENCH / "models.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


models = _load()
zoo = sys.modules["model_zoo"]

FIELDS = {
    "model",
    "group",
    "dtype",
    "shapes",
    "eager_ms",
    "inductor_ms",
    "tirc_ms",
    "inductor_compile_s",
    "tirc_compile_s",
    "eager_error",
    "inductor_error",
    "tirc_error",
    "match",
    "status",
    "tirc_over_inductor",
    "tirc_over_eager",
}


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _run(tmp_path, *args) -> tuple[int, list[dict]]:
    out = tmp_path / "rows.jsonl"
    rc = models.main(["--small", "--device", "cpu", "--no-inductor", "--out", str(out), *args])
    return rc, _rows(out)


def test_list_names_every_model(capsys):
    assert models.main(["--list", "--small"]) == 0
    listed = capsys.readouterr().out
    specs = zoo.suite()
    assert len({s.name for s in specs}) == len(specs)
    for s in specs:
        assert f"| {s.name} " in listed
        assert s.group in zoo.GROUPS and set(s.shapes) == {"cuda", "cpu", "small"}
    assert {s.group for s in specs} == set(zoo.GROUPS)


def test_small_models_match_eager_and_fill_every_field(tmp_path, capsys):
    rc, rows = _run(tmp_path, "--dtype", "f32,bf16", "--only", "resnet_basic_block,normalize_whole")
    assert rc == 0
    assert [(r["model"], r["dtype"]) for r in rows] == [
        ("resnet_basic_block", "f32"),
        ("normalize_whole", "f32"),
        ("resnet_basic_block", "bf16"),
        ("normalize_whole", "bf16"),
    ]
    for r in rows:
        assert set(r) == FIELDS
        assert r["match"] and r["status"] == "ok", r
        assert r["eager_ms"] > 0 and r["tirc_ms"] > 0 and r["tirc_compile_s"] > 0
        assert r["tirc_over_eager"] == pytest.approx(r["tirc_ms"] / r["eager_ms"])
        assert r["inductor_ms"] is None and r["tirc_over_inductor"] is None
        assert 0 < r["eager_error"] < models.REL_TOL[models.DTYPES[r["dtype"]]]
    printed = capsys.readouterr().out
    assert "- tirc mismatches or failures: none" in printed
    assert "resnet_basic_block | conv-graph | bf16 |" in printed


def test_a_wrong_result_and_a_failed_compile_are_rows_not_a_stop(tmp_path, monkeypatch):
    """A result 1% off fails the check; a compile that raises is named in its
    row; the model after both is still measured."""
    real = models.tirc.compile

    def flaky(model, inputs, **kwargs):
        if getattr(model, "fn", None) is zoo.normalize_whole:
            raise RuntimeError("injected failure")
        program = real(model, inputs, **kwargs)
        return program if inputs[0].dim() == 2 else (lambda *xs: program(*xs) * 1.01)

    monkeypatch.setattr(models.tirc, "compile", flaky)
    rc, rows = _run(tmp_path, "--only", "conv_bn_relu,normalize_whole,mean_all")
    assert rc == 1
    wrong, failed, last = rows
    assert not wrong["match"] and wrong["status"] == "tirc mismatch" and wrong["tirc_ms"] > 0
    assert not failed["match"] and "RuntimeError: injected failure" in failed["status"]
    assert failed["tirc_ms"] is None and failed["eager_ms"] > 0
    assert last["model"] == "mean_all" and last["status"] == "tirc mismatch"


def test_the_check_allows_eagers_own_error_and_no_more():
    f32, bf16 = torch.float32, torch.bfloat16
    assert models._within(3e-3, 2e-3, bf16)  # bf16 rounding as eager's
    assert not models._within(5e-2, 2e-3, bf16)
    assert models._within(5e-5, 1e-7, f32)
    assert not models._within(1e-2, 1e-6, f32)
    want = torch.randn(37, 129, dtype=torch.float64)
    assert models._error(want.float(), want.float(), want) < 1e-7
    assert models._error(want.float()[:36], want.float(), want) == float("inf")
    assert models._error(want.bfloat16(), want.float(), want) == float("inf")  # a dtype change


def test_every_model_builds_with_calibrated_batch_norms():
    for spec in zoo.suite():
        model = spec.build(seed=3)
        assert not model.training
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                assert not torch.allclose(m.running_var, torch.ones_like(m.running_var))
                assert not torch.allclose(m.running_mean, torch.zeros_like(m.running_mean))


def test_unknown_names_are_refused(capsys):
    with pytest.raises(SystemExit):
        models.main(["--small", "--only", "resnet_basic_block,no_such_model"])
    assert "no model named no_such_model" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        models.main(["--small", "--dtype", "f16", "--only", "mean_all"])


def test_channels_last_lays_out_4d_and_5d_parameters_and_inputs(tmp_path):
    spec = {s.name: s for s in zoo.suite()}["conv3d_bn_relu"]
    setup = models.Setup("cpu", "cpu", "small", False, True, str(tmp_path))
    model = models._prepare(spec, torch.float32, setup, seed=0)
    assert model[0].weight.is_contiguous(memory_format=torch.channels_last_3d)
    assert models._inputs(spec, torch.float32, setup, 1)[0].is_contiguous(
        memory_format=torch.channels_last_3d
    )
    rc, rows = _run(tmp_path, "--channels-last", "--only", "conv3d_bn_relu")
    assert rc == 0 and rows[0]["match"] and rows[0]["status"] == "ok"
