"""The grammar's LALR parser, loaded from tables built ahead of time.

lark builds the LALR tables of grammar.lark in about 0.13 s, in every
process and for each of the two parsers (positioned, and the read-back fast
path), which is most of what `tirc fmt` pays beyond its imports. The tables
are written once into `lalr_tables.json`, a data file in the package
(`make grammar-tables`), and loaded from there in a few milliseconds. JSON,
not a Python module: a module of this size takes 0.3 s to compile where no
bytecode is cached (PYTHONDONTWRITEBYTECODE). They are used only when they
were made from this grammar (its sha256) by this lark version; otherwise the
parser is built from the grammar, as before. The file is part of the
source, never a cache entry: nothing read at run time from outside the
package decides how text is parsed.

lark numbers its parse states differently from one build to the next, so
the file is regenerated only when the grammar changes, and
tests/ir_text/test_grammar_tables.py checks that it is current and parses
the golden corpus exactly as a parser built from the grammar does.
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path

import lark
from lark.grammar import Rule
from lark.lexer import TerminalDef

GRAMMAR = Path(__file__).with_name("grammar.lark")
TABLES = Path(__file__).with_name("lalr_tables.json")
# How a dict with integer keys (lark's parse states) is written in JSON.
_INT_KEYS = "int-keyed"
# The options the tables are built with; the callers add only options lark
# allows on a loaded parser (transformer, propagate_positions).
BUILD_OPTIONS = {"parser": "lalr", "maybe_placeholders": True}


def grammar_sha256() -> str:
    return hashlib.sha256(GRAMMAR.read_bytes()).hexdigest()


def lalr_parser(**options) -> lark.Lark:
    """grammar.lark's parser with `options`, from the tables when they are current."""
    tables = current_tables()
    if tables is not None:
        try:
            return lark.Lark._load_from_dict(tables["data"], tables["memo"], **options)
        except (lark.exceptions.LarkError, KeyError, TypeError, ValueError):
            pass  # laid out for another lark: built from the grammar below
    return lark.Lark(GRAMMAR.read_text(), **BUILD_OPTIONS, **options)


def current_tables() -> dict | None:
    """The tables, when they were made from this grammar by this lark; else None."""
    tables = _read(TABLES)
    if not isinstance(tables, dict) or not {"data", "memo"} <= set(tables):
        return None
    if tables.get("lark_version") != lark.__version__ or tables.get("grammar_sha256") != grammar_sha256():
        return None
    return tables


@functools.lru_cache(maxsize=4)
def _read(path: Path) -> dict | None:
    """The tables file, read once per process for both parsers (lark's
    loader does not change what it is given); None when it is unreadable."""
    try:
        return json.loads(path.read_text(), object_hook=_int_keyed)
    except (OSError, ValueError):
        return None


def tables_text() -> str:
    """The text of lalr_tables.json for the grammar as it is now."""
    parser = lark.Lark(GRAMMAR.read_text(), **BUILD_OPTIONS)
    data, memo = parser.memo_serialize([TerminalDef, Rule])
    tables = {
        "lark_version": lark.__version__,
        "grammar_sha256": grammar_sha256(),
        "data": data,
        "memo": memo,
    }
    return json.dumps(_jsonable(tables), sort_keys=True, separators=(",", ":")) + "\n"


def write_tables(target: Path = TABLES) -> None:
    """Write lalr_tables.json (`make grammar-tables`)."""
    target.write_text(tables_text())
    print(f"wrote {target}")


def _jsonable(value):
    """`value` with tuples as lists and integer-keyed dicts as {_INT_KEYS: [[key, value], ...]}."""
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value):
            return {k: _jsonable(v) for k, v in value.items()}
        return {_INT_KEYS: [[k, _jsonable(v)] for k, v in sorted(value.items())]}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def _int_keyed(obj: dict) -> dict:
    pairs = obj.get(_INT_KEYS)
    return obj if pairs is None or len(obj) != 1 else {key: value for key, value in pairs}
