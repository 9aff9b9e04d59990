"""Re-feeding a dump reproduces every later file byte for byte, and two runs
under different PYTHONHASHSEEDs write byte-identical dump directories."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from tirc.dumps import comparable_files

BACKENDS = ("cpp", "triton")


def later_files(stage_files, index):
    return [*stage_files[index + 1 :], "output_code.py"]


@pytest.mark.parametrize("index", range(5), ids=["capture", "lower", "schedule", "fusion", "memplan"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_refeed_reproduces_later_files(cli, dumps, stage_files, tmp_path, backend, index):
    original = dumps(backend)
    refed = tmp_path / "B"
    code, err = cli("compile", original / stage_files[index], "--dump-after=all", "--dump-dir", refed)
    assert code == 0, err
    expected = later_files(stage_files, index)
    written = sorted(p.name for p in refed.iterdir())
    assert written == sorted([*expected, "manifest.json"])
    for name in expected:
        assert (refed / name).read_bytes() == (
            original / name
        ).read_bytes(), f"{name} differs after re-feeding"
    # the manifest describes the later files exactly as the original run did
    before = {e["file"]: e for e in json.loads((original / "manifest.json").read_text())["files"]}
    after = json.loads((refed / "manifest.json").read_text())
    assert [e["file"] for e in after["files"]] == expected
    for entry in after["files"]:
        assert entry == before[entry["file"]]


def test_refeed_of_a_refed_dump_is_a_fixed_point(cli, dumps, stage_files, tmp_path):
    """capture -> B; B's lower -> C: C's files equal B's and the original's."""
    original = dumps("cpp")
    b, c = tmp_path / "B", tmp_path / "C"
    assert cli("compile", original / stage_files[0], "--dump-after=all", "--dump-dir", b)[0] == 0
    assert cli("compile", b / stage_files[1], "--dump-after=all", "--dump-dir", c)[0] == 0
    for name in later_files(stage_files, 1):
        assert (c / name).read_bytes() == (original / name).read_bytes(), name


def _tree(directory):
    """Every file's bytes; the manifest's without its timings, which differ
    between any two runs (and are checked to be there)."""
    assert "timings" in json.loads((directory / "manifest.json").read_text())
    return comparable_files(directory)


@pytest.mark.parametrize("backend", BACKENDS)
def test_hash_seed_does_not_reach_the_output(tmp_path, sources, tirc_run, dumps, stage_files, backend):
    (tmp_path / "model.py").write_text(sources["model"])
    seeds = ("0", "12345")
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = [
            pool.submit(
                tirc_run,
                [
                    "compile",
                    "model.py",
                    "--backend",
                    backend,
                    "--dump-after=all",
                    "--dump-dir",
                    f"seed{seed}",
                ],
                tmp_path,
                PYTHONHASHSEED=seed,
            )
            for seed in seeds
        ]
        for run in runs:
            proc = run.result(timeout=600)
            assert proc.returncode == 0, proc.stderr
    first, second = (_tree(tmp_path / f"seed{seed}") for seed in seeds)
    assert sorted(first) == sorted([*stage_files, "output_code.py", "manifest.json"])
    differ = [name for name in first if first[name] != second.get(name)]
    assert not differ, f"files differ between PYTHONHASHSEED=0 and 12345: {differ}"
    # and a third run, in this process with its own hash seed and another directory
    third = _tree(dumps(backend))
    differ = [name for name in first if first[name] != third.get(name)]
    assert not differ, f"files differ from an in-process run: {differ}"
