"""The HTML page: one self-contained file, its CSS and script inline, the
data in `<script type="application/json">` blocks (the main one, and one per
file text, which the page parses only when it shows that file).

Every string from a dump is untrusted. In the JSON blocks `<`, `>` and `&`
are written as \\u003c, \\u003e, \\u0026, so no text can end its block (a
`</script>` in a source name) or open markup; the script inserts strings
only escaped or as text. The page's Content-Security-Policy lets only its
own script run (by its sha256) and fetches nothing: no network access of
any kind, and it opens from file://."""

from __future__ import annotations

import base64
import hashlib
import html
import json
from pathlib import Path

_ASSETS = Path(__file__).parent


def embedded_json(value) -> str:
    """JSON for a `<script type="application/json">` block: deterministic
    (sorted keys, ASCII), and no `<`, `>` or `&` outside escapes."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _block(block_id: str, value) -> str:
    return f'<script type="application/json" id="{block_id}">{embedded_json(value)}</script>'


def render_page(title: str, data: dict, texts: list[list[str]], sources: list[str | None]) -> str:
    """The page for `data` (report.py's), the texts of each graph's files
    (`texts[graph][file]`) and the user's source texts (None: not available)."""
    script = (_ASSETS / "report.js").read_text()
    style = (_ASSETS / "report.css").read_text()
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    policy = (
        f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; "
        "base-uri 'none'; form-action 'none'"
    )
    blocks = [_block("tirc-data", data)]
    for g, files in enumerate(texts):
        blocks += [_block(f"tirc-text-{g}-{f}", text) for f, text in enumerate(files)]
    blocks += [_block(f"tirc-source-{k}", text) for k, text in enumerate(sources) if text is not None]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{policy}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>tirc report: {html.escape(title)}</title>",
        f"<style>\n{style}</style>",
        "</head>",
        "<body>",
        '<div id="app"><p class="loading">Loading the report…</p></div>',
        *blocks,
        f"<script>{script}</script>",
        "</body>",
        "</html>",
    ]
    return "\n".join(parts) + "\n"
