"""`tirc report DIR` and `tirc compile --report`, without a browser: the
page is deterministic and names no path of this machine, a hostile dump's
strings cannot leave their JSON block, bad input is one error line with
nothing written, a training compile is one report of both graphs, and the
data the page links by is right (kernels' code and launch lines, the
memory timeline's peak, which source files are read)."""

from __future__ import annotations

import json
import re
import shutil
from html import escape as html_escape

import pytest

from ir_text import parse, print_ir, print_located
from scheduler import held_bytes, peak_memory
from tirc.report import build_report, write_report
from tirc.report.page import embedded_json

ERROR_LINE = re.compile(r"^[^\n]+?(:\d+(:\d+)?)?: error: \S[^\n]*\n$")
HOSTILE = '</script><script>window.pwned=1</script><img src=x onerror="alert(1)">&amp;'


def page_data(html: str) -> dict:
    match = re.search(r'<script type="application/json" id="tirc-data">(.*?)</script>', html, re.S)
    return json.loads(match.group(1))


def copy_dumps(dumps, target):
    shutil.copytree(dumps, target)
    (target / "report.html").unlink(missing_ok=True)
    return target


def test_the_same_dumps_give_the_same_bytes_anywhere(dumps, tmp_path, tirc_run):
    source = dumps("cpp")
    model = source.parent / "model.py"
    first = copy_dumps(source, tmp_path / "a" / "dumps")
    second = copy_dumps(source, tmp_path / "b" / "elsewhere")
    page = write_report(first, sources=[model]).read_bytes()
    assert write_report(second, sources=[model]).read_bytes() == page
    assert str(tmp_path).encode() not in page and str(source.parent).encode() not in page
    # Another process, another hash seed: the same bytes.
    run = tirc_run(
        ["report", second, "--source", model, "-o", tmp_path / "c.html"], tmp_path, PYTHONHASHSEED="7"
    )
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "c.html").read_bytes() == page
    data = page_data(page.decode())
    assert data["sources"] == [{"available": True, "name": "model.py", "note": ""}]


def hostile_dumps(source, target):
    """A copy of `source` whose strings (header source, a node's origin, a
    location's file, a refusal's reason, the manifest) are HOSTILE."""
    copy_dumps(source, target)
    quoted = HOSTILE.replace("\\", "\\\\").replace('"', '\\"')
    for path in target.glob("*.tir"):
        text = re.sub(r'source="[^"]*"', lambda _: f'source="{quoted}"', path.read_text(), count=1)
        text = text.replace('loc("model.py":', f'loc("{quoted}":')
        text = text.replace('origin = "aten.sigmoid.default"', f'origin = "{quoted}"')
        path.write_text(text)
    manifest = json.loads((target / "manifest.json").read_text())
    manifest["source"] = HOSTILE
    (target / "manifest.json").write_text(json.dumps(manifest))
    return target


def test_hostile_strings_stay_inside_their_json_blocks(dumps, tmp_path):
    html = build_report(hostile_dumps(dumps("cpp"), tmp_path / "d"))
    assert HOSTILE not in html
    assert html.count("</script") == html.count("<script")  # no block ended early
    assert "<img" not in html
    assert f"<title>tirc report: {html_escape(HOSTILE)}</title>" in html
    data = page_data(html)  # the strings come back intact, as data
    assert data["title"] == HOSTILE
    graph = data["graphs"][0]
    assert [HOSTILE, 13] in graph["locs"] or any(loc[0] == HOSTILE for loc in graph["locs"])
    assert any(HOSTILE in item[5] for item in graph["items"])


def test_embedded_json_has_no_markup_characters():
    text = embedded_json({"a</script>": "<!-- & -->", "b": ["\u2028"]})
    assert not set("<>&") & set(text)
    assert json.loads(text) == {"a</script>": "<!-- & -->", "b": ["\u2028"]}


def _break_fusion(d):
    text = (d / "04-fusion.tir").read_text()
    (d / "04-fusion.tir").write_text(text[: len(text) // 2])


def _break_manifest(d):
    (d / "manifest.json").write_text("{\n  oops")


def _break_code(d):
    (d / "output_code.py").write_text("def call(args:\n")


def _drop_an_alloc(d):
    path = d / "05-memplan.tir"
    lines = path.read_text().splitlines(keepends=True)
    alloc = next(k for k, line in enumerate(lines) if line.startswith("  alloc "))
    path.write_text("".join(lines[:alloc] + lines[alloc + 1 :]))


@pytest.mark.parametrize(
    "damage, expected",
    [
        (_break_fusion, r"04-fusion\.tir:\d+:\d+: error: unexpected end of file"),
        (_break_manifest, r"manifest\.json:2:3: error: malformed manifest"),
        (_break_code, r"output_code\.py:1:\d+: error: not valid Python"),
        (
            _drop_an_alloc,
            r"05-memplan\.tir:\d+:\d+: error: \[unallocated-write\] @k0 writes %\w+, which is not",
        ),
    ],
)
def test_a_malformed_file_is_one_error_line_and_leaves_the_old_report(dumps, tmp_path, cli, damage, expected):
    d = copy_dumps(dumps("cpp"), tmp_path / "d")
    (d / "report.html").write_text("the old report")
    damage(d)
    code, err = cli("report", d)
    assert code == 2
    assert ERROR_LINE.match(err) and re.search(expected, err), err
    assert (d / "report.html").read_text() == "the old report"
    assert [p.name for p in d.iterdir() if p.name.startswith(".")] == []  # no temporary file left


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda p: None, "no such directory"),
        (lambda p: p.write_text("x"), "not a directory"),
        (lambda p: p.mkdir(), "no dumps here"),
    ],
)
def test_no_dump_directory_is_one_error_line(tmp_path, cli, make, message):
    target = tmp_path / "d"
    make(target)
    code, err = cli("report", target)
    assert code == 2
    assert err.startswith(f"{target}: error: {message}") and err.count("\n") == 1, err


def test_the_memory_timeline_peaks_at_the_manifests_peak_bytes(dumps):
    d = dumps("cpp")
    module = parse((d / "05-memplan.tir").read_text())
    held = held_bytes(module)
    assert len(held) == len(module.wrapper) + 1 and max(held) == peak_memory(module)
    manifest = json.loads((d / "manifest.json").read_text())
    (peak,) = [f["peak_bytes"] for f in manifest["files"] if f["stage"] == "memplan"]
    memory = page_data(build_report(d))["graphs"][0]["memory"]
    assert memory["peak"] == peak and memory["held"] == held
    assert {b[4] for b in memory["buffers"]} <= {"alloc", "extern", "in-place", "pool", "input"}


@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_every_loop_kernel_has_its_code_and_launch_in_output_code(dumps, backend):
    d = dumps(backend)
    graph = page_data(build_report(d))["graphs"][0]
    code_file = [f["name"] for f in graph["files"]].index("output_code.py")
    lines = (d / "output_code.py").read_text().split("\n")
    for k, kernel in enumerate(graph["kernels"]):
        parts = {item[0]: item for item in graph["items"] if item[7] == k and item[1] == code_file}
        if kernel["extern"]:
            continue
        assert {"code", "launch"} <= set(parts), kernel["name"]
        launch = "\n".join(lines[parts["launch"][2] - 1 : parts["launch"][3]])
        assert kernel["python"] in launch
        assert kernel["locs"], kernel["name"]


def test_a_dump_not_in_canonical_form_is_shown_as_printed(dumps, tmp_path):
    d = copy_dumps(dumps("cpp"), tmp_path / "d")
    path = d / "02-lower.tir"
    path.write_text(path.read_text().replace("\n\n", "\n\n// a comment\n\n", 1))
    html = build_report(d)
    files = page_data(html)["graphs"][0]["files"]
    note = files[[f["name"] for f in files].index("02-lower.tir")]["note"]
    assert note and "canonical" in note
    shown = re.search(r'id="tirc-text-0-1">(.*?)</script>', html, re.S).group(1)
    assert json.loads(shown) == print_ir(parse(path.read_text()))


def test_only_plain_file_names_are_looked_up_beside_the_dumps(dumps, tmp_path):
    d = copy_dumps(dumps("cpp"), tmp_path / "d")
    (tmp_path / "secret.py").write_text("SECRET = 'do not embed'\n")
    (d / "model.py").write_text((dumps("cpp").parent / "model.py").read_text())
    for path in d.glob("02-lower.tir"):
        text = path.read_text()
        first = text.index('loc("model.py":')
        path.write_text(text[:first] + text[first:].replace('loc("model.py":', 'loc("../secret.py":', 1))
    html = build_report(d)
    sources = {s["name"]: s for s in page_data(html)["sources"]}
    assert sources["model.py"]["available"]
    assert (
        not sources["../secret.py"]["available"] and sources["../secret.py"]["note"] == "source not available"
    )
    assert "do not embed" not in html


def test_print_located_gives_each_items_line(dumps):
    module = parse((dumps("cpp") / "05-memplan.tir").read_text())
    printed = print_located(module)
    lines = printed.text.split("\n")
    at = lambda item: lines[printed.lines[id(item)] - 1]  # noqa: E731
    for node in module.nodes:
        assert at(node).startswith(f"{printed.names[id(node.result)]} = ")
    for kernel in module.kernels:
        assert at(kernel).startswith(f"  kernel @{kernel.name.name} = fuse(")
    for r in module.refusals:
        assert at(r).startswith(f"  refused({printed.names[id(r.first)]}, ")
    for w in module.wrapper:
        assert at(w).startswith(f"  {w.op} ")


def test_report_without_dump_after_dumps_every_stage(model_file, tmp_path, cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, err = cli("compile", model_file, "--report")
    assert code == 0, err
    assert "tirc: report in tirc-dump/report.html" in err
    names = {p.name for p in (tmp_path / "tirc-dump").iterdir()}
    assert {"01-capture.tir", "05-memplan.tir", "output_code.py", "manifest.json", "report.html"} <= names


TRAIN_SOURCE = """import torch
import torch.nn.functional as F


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(6, 8), torch.nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x))).softmax(-1)


def get_inputs():
    return [torch.randn(4, 6)]
"""


def test_a_training_compile_is_one_report_of_both_graphs(tmp_path, cli):
    (tmp_path / "train.py").write_text(TRAIN_SOURCE)
    code, err = cli("compile", tmp_path / "train.py", "--train", "--dump-dir", tmp_path / "d", "--report")
    assert code == 0, err
    data = page_data((tmp_path / "d" / "report.html").read_text())
    top = json.loads((tmp_path / "d" / "manifest.json").read_text())
    assert [g["name"] for g in data["graphs"]] == ["forward", "backward"]
    assert data["training"] == top
    for graph in data["graphs"]:
        assert graph["kernels"] and graph["memory"]["peak"] == top["training"]["peak_bytes"][graph["name"]]
        assert all(k["locs"] for k in graph["kernels"] if not k["extern"])
    assert data["sources"][0]["name"] == "train.py" and data["sources"][0]["available"]
    # One graph's directory is a report of its own.
    alone = page_data(build_report(tmp_path / "d" / "backward"))
    assert [g["name"] for g in alone["graphs"]] == [""] and alone["training"] is None


def test_the_api_writes_the_report_with_report_true(tmp_path):
    """tirc.compile(..., report=True) writes dump_dir/report.html once the
    compile is done, embedding the file that defines the function; without
    dumps it is one clear error."""
    import torch

    import tirc

    def program(x):
        return torch.softmax(x * 3, dim=-1)

    compiled = tirc.compile(program, [torch.randn(5, 37)], dump_after="all", dump_dir=tmp_path, report=True)
    x = torch.randn(5, 37)
    torch.testing.assert_close(compiled(x), program(x))
    page = (tmp_path / "report.html").read_text()
    assert "torch.softmax(x * 3, dim=-1)" in page
    with pytest.raises(tirc.TircError, match="report=True needs dumps"):
        tirc.compile(program, [torch.randn(5, 37)], report=True)
