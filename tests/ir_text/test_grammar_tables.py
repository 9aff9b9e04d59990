"""The LALR tables built ahead of time (ir_text/grammar_tables.py): current
for grammar.lark, used by both parsers, parsing every golden stage exactly
as a parser built from the grammar does, and ignored when they were made
from another grammar or are damaged."""

from __future__ import annotations

import json
from pathlib import Path

import lark
import pytest

from ir_text import grammar_tables
from ir_text.grammar_tables import BUILD_OPTIONS, GRAMMAR, current_tables, lalr_parser, tables_text

GOLDEN = sorted((Path(__file__).resolve().parents[1] / "golden" / "cases").glob("*/*.tir"))


def test_the_tables_are_current():
    assert current_tables() is not None, "grammar.lark changed: run `make grammar-tables`"


def test_both_parsers_are_loaded_from_the_tables(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("built from the grammar")

    before = json.dumps(current_tables(), sort_keys=True, default=repr)
    monkeypatch.setattr(lark, "Lark", type("NoBuild", (lark.Lark,), {"__init__": refuse}))
    assert lalr_parser(propagate_positions=True) is not None
    assert lalr_parser(transformer=lark.Transformer()) is not None
    # The tables are read once per process and shared: loading must not change them.
    assert json.dumps(current_tables(), sort_keys=True, default=repr) == before


@pytest.fixture(scope="module")
def parsers():
    built = lark.Lark(GRAMMAR.read_text(), **BUILD_OPTIONS, propagate_positions=True)
    return built, lalr_parser(propagate_positions=True)


def _positioned(tree):
    """The tree with each subtree's position, for an exact comparison."""
    if tree is None:  # an absent optional part (maybe_placeholders)
        return None
    if not isinstance(tree, lark.Tree):
        return (tree.type, str(tree), tree.line, tree.column)
    meta = tree.meta
    place = (meta.line, meta.column, meta.end_line, meta.end_column) if not meta.empty else None
    return (tree.data, place, [_positioned(child) for child in tree.children])


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_golden_stage_parses_as_with_the_grammar_s_parser(parsers, path):
    built, loaded = parsers
    text = path.read_text()
    assert _positioned(loaded.parse(text)) == _positioned(built.parse(text))


def test_tables_of_another_grammar_are_not_used(tmp_path, monkeypatch):
    tables = json.loads(tables_text())
    tables["grammar_sha256"] = "0" * 64
    forged = tmp_path / "lalr_tables.json"
    forged.write_text(json.dumps(tables))
    monkeypatch.setattr(grammar_tables, "TABLES", forged)
    assert current_tables() is None
    assert lalr_parser().parse(GOLDEN[0].read_text()) is not None  # built from the grammar


@pytest.mark.parametrize("damage", ["", "{", '{"lark_version": 1}', "[]"])
def test_damaged_tables_are_not_used(tmp_path, monkeypatch, damage):
    damaged = tmp_path / "lalr_tables.json"
    damaged.write_text(damage)
    monkeypatch.setattr(grammar_tables, "TABLES", damaged)
    assert current_tables() is None
    assert lalr_parser().parse(GOLDEN[0].read_text()) is not None


def test_a_missing_file_means_the_grammar_s_parser(tmp_path, monkeypatch):
    monkeypatch.setattr(grammar_tables, "TABLES", tmp_path / "absent.json")
    assert current_tables() is None
    assert lalr_parser().parse(GOLDEN[0].read_text()) is not None
