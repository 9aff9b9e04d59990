"""The report page in a real headless Chromium: it loads clean, links a
source line to its kernels and back, shows every refused pair of the fusion
dump as an arc and a row, links every kernel to a source line, lists the
fallback ops, and runs nothing a hostile dump smuggles in."""

from __future__ import annotations

import json
import shutil
from collections import Counter

import pytest

from ir_text import parse, value_names
from tirc.report import write_report

from tests.browser.report_models import model_files

# tests/browser/models (conftest.model_files: TIRC_REPORT_MODELS names others).
MODELS = tuple(model_files())
TABS = ("overview", "code", "fusion", "memory", "kernels")


def open_tab(page, tab: str) -> None:
    page.page.click(f"nav.tabs button[data-tab={tab}]")
    page.page.wait_for_selector(f'#view > .tab[data-tab="{tab}"]:not([hidden])')


@pytest.mark.parametrize("model", MODELS)
def test_the_report_loads_with_no_error_and_no_request(report, page, model):
    rep = report(model)
    page.open(rep.url)
    for tab in TABS:
        open_tab(page, tab)
    open_tab(page, "code")
    page.page.click('.pane[data-file="01-capture.tir"] .ln.it')  # a graph op
    assert page.page.inner_text("#side h2")
    page.assert_clean()


@pytest.mark.parametrize("model", MODELS)
def test_a_source_line_links_to_its_kernel_and_back(report, page, model):
    rep = report(model)
    graph = rep.data()["graphs"][0]
    kernel = next(k for k in graph["kernels"] if not k["extern"] and k["locs"])
    file, line = graph["locs"][kernel["locs"][0]]
    page.open(rep.url)
    open_tab(page, "code")
    p = page.page
    p.click(f'.pane[data-file="src:{file}"] .ln[data-line="{line}"]')
    assert p.inner_text("#side h2") == f"{file}:{line}"
    p.click(f'#side a[data-kernel-name="{kernel["name"]}"]')
    assert p.inner_text("#side h2").startswith(f"kernel @{kernel['name']}")
    # Its nodes, its launch in the wrapper, its code and launch in output_code.py.
    for kind in ("node", "wline", "code", "launch"):
        assert p.locator(f"#side ul[data-kind={kind}] a").count() >= 1, kind
    p.locator("#side ul[data-kind=wline] a").first.click()
    assert f"launch @{kernel['name']}(" in p.inner_text('.pane[data-file="05-memplan.tir"] .ln.sel')
    p.locator("#side ul[data-kind=code] a").first.click()
    assert p.locator('.pane[data-file="output_code.py"] .ln.sel').count() >= 1
    p.locator("#side a[data-loc]", has_text=f"{file}:{line}").first.click()
    assert p.inner_text("#side h2") == f"{file}:{line}"
    source_line = p.locator(f'.pane[data-file="src:{file}"] .ln[data-line="{line}"]')
    assert "sel" in source_line.get_attribute("class").split()
    page.assert_clean()


def refused_pairs(dump_dir) -> list[tuple[str, str, str, str]]:
    """(first, second, first's kernel, second's kernel) of every refused line of the fusion dump."""
    module = parse((dump_dir / "04-fusion.tir").read_text())
    names = value_names(module)
    kernel_of = {id(v): k.name.name for k in module.kernels for v in k.nodes}
    return [
        (names[id(r.first)], names[id(r.second)], kernel_of[id(r.first)], kernel_of[id(r.second)])
        for r in module.refusals
    ]


@pytest.mark.parametrize("model", MODELS)
def test_every_refused_pair_has_an_arc_and_a_row(report, page, model, collect_while_scrolling):
    rep = report(model)
    expected = refused_pairs(rep.directory)
    assert expected, "the model should refuse some pairs"
    page.open(rep.url)
    open_tab(page, "fusion")
    arcs = collect_while_scrolling(
        page.page,
        ".fusion-graph .vl",
        "svg .edge",
        "el => [el.dataset.item, el.dataset.a, el.dataset.b, el.dataset.ka, el.dataset.kb]",
    )
    rows = collect_while_scrolling(
        page.page, ".fusion-table .vl", ".row.refusal", "el => [el.dataset.item, el.dataset.a, el.dataset.b]"
    )
    assert Counter(tuple(v) for v in arcs.values()) == Counter(expected)
    assert Counter(tuple(v) for v in rows.values()) == Counter(pair[:2] for pair in expected)
    page.assert_clean()


@pytest.mark.parametrize("model", MODELS)
def test_every_kernel_links_to_a_source_line(report, page, model, collect_while_scrolling):
    rep = report(model)
    module = parse((rep.directory / "05-memplan.tir").read_text())
    page.open(rep.url)
    open_tab(page, "kernels")
    rows = collect_while_scrolling(
        page.page,
        '#view > .tab[data-tab="kernels"] .vl',
        ".row.kernel",
        "el => [el.dataset.kernelName, el.querySelectorAll('a[data-loc]').length]",
    )
    assert sorted(rows) == sorted(k.name.name for k in module.kernels)
    assert [name for name, (links,) in rows.items() if links < 1] == []
    page.assert_clean()


def test_the_fallback_op_is_listed_and_linked_to_its_node(report, page):
    rep = report("fallback")
    page.open(rep.url)
    p = page.page
    assert "aten.sort.default" in p.inner_text('#view > .tab[data-tab="overview"]')
    p.locator('#view > .tab[data-tab="overview"] a[data-item]', has_text="aten.sort.default").first.click()
    assert "extern aten.sort.default(" in p.inner_text('.pane[data-file="05-memplan.tir"] .ln.sel')
    page.assert_clean()


def test_search_finds_a_buffer_and_a_source_line(report, page):
    rep = report("cnn")
    graph = rep.data()["graphs"][0]
    file, line = graph["locs"][0]
    page.open(rep.url)
    p = page.page
    p.fill("#q", "buf1")
    p.wait_for_selector("#results.open a[data-item]")
    assert "%buf1" in p.inner_text("#results")
    p.fill("#q", f"{file}:{line}")
    p.wait_for_selector("#results.open a[data-loc]")
    p.press("#q", "Enter")
    assert p.inner_text("#side h2") == f"{file}:{line}"
    page.assert_clean()


def test_the_memory_tab_marks_the_manifests_peak(report, page, collect_while_scrolling):
    rep = report("gpt")
    manifest = json.loads((rep.directory / "manifest.json").read_text())
    (peak,) = [f["peak_bytes"] for f in manifest["files"] if f["stage"] == "memplan"]
    buffers = rep.data()["graphs"][0]["memory"]["buffers"]
    page.open(rep.url)
    open_tab(page, "memory")
    p = page.page
    assert f"({peak} bytes)" in p.inner_text(".memory .summary")
    shown = collect_while_scrolling(p, ".buffers .vl", ".row.buffer", "el => [el.dataset.buffer]")
    assert sorted(shown) == sorted(b[0] for b in buffers)
    p.click("button[data-zoom=peak]")
    assert p.locator(".chart line.peak").count() == 1
    page.assert_clean()


HOSTILE = '</script><script>window.pwned=1</script><img src=x onerror="window.pwned=2">'


def test_a_hostile_dump_runs_nothing_and_shows_its_strings_as_text(report, page, tmp_path):
    rep = report("fallback")
    dumps = tmp_path / "dumps"
    shutil.copytree(rep.directory, dumps)
    (dumps / "report.html").unlink()
    quoted = HOSTILE.replace("\\", "\\\\").replace('"', '\\"')
    for path in dumps.glob("*.tir"):
        text = path.read_text().replace('source="fallback.py"', f'source="{quoted}"')
        text = text.replace('origin = "aten.tanh.default"', f'origin = "{quoted}"')
        path.write_text(text)
    manifest = json.loads((dumps / "manifest.json").read_text())
    manifest["source"] = HOSTILE
    manifest["profile"] = {"total_us": 1.0, "kernels": [{"name": HOSTILE, "kind": HOSTILE, "calls": HOSTILE}]}
    (dumps / "manifest.json").write_text(json.dumps(manifest))
    page.open(write_report(dumps).resolve().as_uri())
    p = page.page
    for tab in TABS:
        open_tab(page, tab)
    p.fill("#q", "buf0")
    p.wait_for_selector("#results.open a[data-item]")
    p.press("#q", "Enter")
    assert p.evaluate("window.pwned") is None
    assert p.title() == f"tirc report: {HOSTILE}"
    assert p.inner_text("header h1") == f"tirc report: {HOSTILE}"
    assert p.locator("img").count() == 0
    assert p.evaluate("document.querySelectorAll('script:not([type])').length") == 1
    page.assert_clean()


def test_profile_rows_link_to_their_kernels(report, page, tmp_path):
    rep = report("fallback")
    dumps = tmp_path / "dumps"
    shutil.copytree(rep.directory, dumps)
    manifest = json.loads((dumps / "manifest.json").read_text())
    kernel = next(k for k in rep.data()["graphs"][0]["kernels"] if not k["extern"])
    row = {
        "name": kernel["python"],
        "kind": "kernel",
        "calls": 1,
        "us": 2.5,
        "share": 0.5,
        "bytes": 1024,
        "gbps": 0.4,
    }
    manifest["profile"] = {"total_us": 5.0, "kernels": [row, {"name": "aten.sort.default", "kind": "extern"}]}
    (dumps / "manifest.json").write_text(json.dumps(manifest))
    page.open(write_report(dumps).resolve().as_uri())
    p = page.page
    p.click(f'table.profile a[data-kernel-name="{kernel["name"]}"]')
    assert p.inner_text("#side h2").startswith(f"kernel @{kernel['name']}")
    assert "2.5 us over 1 call(s)" in p.inner_text("#side")
    page.assert_clean()


def test_a_training_directory_is_one_report_with_a_graph_selector(report, page, tmp_path):
    forward, backward = report("fallback"), report("cnn")
    root = tmp_path / "train"
    shutil.copytree(forward.directory, root / "forward")
    shutil.copytree(backward.directory, root / "backward")
    training = {"graphs": ["forward", "backward"], "saved": [], "saved_bytes": 0, "peak_bytes": {}}
    (root / "manifest.json").write_text(json.dumps({"source": "model.py", "training": training}))
    page.open(write_report(root).resolve().as_uri())
    p = page.page
    open_tab(page, "kernels")
    kernel_names = "el => [el.dataset.kernelName]"
    names = {k["name"] for k in backward.data()["graphs"][0]["kernels"]}
    assert p.eval_on_selector_all(".row.kernel", f"els => els.map({kernel_names})") != []
    p.click("nav.graphs button[data-graph='1']")
    shown = {row[0] for row in p.eval_on_selector_all(".row.kernel", f"els => els.map({kernel_names})")}
    assert shown == names
    open_tab(page, "code")
    assert p.locator('.pane[data-file="src:cnn.py"]').count() == 1
    page.assert_clean()
