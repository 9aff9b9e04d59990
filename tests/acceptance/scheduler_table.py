"""The scheduler acceptance run's table: one row per problem from the CLI's and
the worker's results (with whether it passes), the totals row, and the table
as text or Markdown."""

from __future__ import annotations

COLUMNS = (
    "problem",
    "check",
    "tirc kernels",
    "tirc externs",
    "inductor kernels",
    "inductor externs",
    "kernels ok",
    "peak eager",
    "peak tirc",
    "peak inductor",
    "planned peak",
    "peak ok",
    "note",
)


def kib(n) -> str:
    return "-" if n is None else f"{n / 1024:.1f}K"


def num(n) -> str:
    return "-" if n is None else str(n)


def make_row(name: str, cli: dict, r: dict) -> tuple[list[str], bool, dict]:
    """(cells, whether the row passes, its numbers for the totals)."""
    notes: list[str] = []
    check = cli["check"]
    if cli.get("message"):
        notes.append(cli["message"])
    if "error" in r:
        notes.append(r["error"])
    if r.get("api_match") is False:
        if check == "match":
            check = "api-mismatch"
        notes.append(f"api: {r.get('api_message', '')}")
    if "ind_error" in r:
        notes.append(r["ind_error"])
    if r.get("ind_message"):
        notes.append(r["ind_message"])
    if r.get("ind_graphs", 1) != 1:
        graphs = r["ind_graphs"]
        notes.append(
            "inductor: no graph (Dynamo ran it eagerly)" if graphs == 0 else f"inductor: {graphs} graphs"
        )
    fallbacks = [n for n in r.get("ind_extern_names", []) if not n.startswith("extern_kernels.")]
    if fallbacks:
        notes.append("inductor fallback: " + ", ".join(fallbacks))
    if r.get("ind_kernels") is not None and r.get("ind_counter") != r.get("ind_kernels"):
        notes.append(f"inductor generated_kernel_count {r.get('ind_counter')}")
    tk, ik = cli.get("kernels"), r.get("ind_kernels")
    kernels_ok = tk is not None and ik is not None and tk <= ik
    pe, pt = r.get("peak_eager"), r.get("peak_tirc")
    peak_ok = pe is not None and pt is not None and pt <= pe
    cells = [
        name,
        check,
        num(tk),
        num(cli.get("externs")),
        num(ik),
        num(r.get("ind_externs")),
        "yes" if kernels_ok else "NO",
        kib(pe),
        kib(pt),
        kib(r.get("peak_inductor")),
        kib(cli.get("plan_peak")),
        "yes" if peak_ok else "NO",
        "; ".join(notes),
    ]
    passed = check == "match" and "error" not in r and "ind_error" not in r and kernels_ok and peak_ok
    numbers = {
        "tirc kernels": tk,
        "tirc externs": cli.get("externs"),
        "inductor kernels": ik,
        "inductor externs": r.get("ind_externs"),
        "peak eager": pe,
        "peak tirc": pt,
        "peak inductor": r.get("peak_inductor"),
        "planned peak": cli.get("plan_peak"),
        "check": check == "match",
        "kernels ok": kernels_ok,
        "peak ok": peak_ok,
    }
    return cells, passed, numbers


def totals_row(rows: list[dict], passed: int) -> list[str]:
    def total(key, fmt):
        values = [r[key] for r in rows if r[key] is not None]
        missing = len(rows) - len(values)
        return fmt(sum(values)) + (f" ({missing} -)" if missing else "")

    def count(key):
        return f"{sum(r[key] for r in rows)}/{len(rows)}"

    return [
        "total",
        count("check"),
        total("tirc kernels", str),
        total("tirc externs", str),
        total("inductor kernels", str),
        total("inductor externs", str),
        count("kernels ok"),
        total("peak eager", kib),
        total("peak tirc", kib),
        total("peak inductor", kib),
        total("planned peak", kib),
        count("peak ok"),
        f"{passed}/{len(rows)} rows pass",
    ]


def format_text(table: list[list[str]], note_width: int = 90) -> str:
    cut = [
        row[:-1] + [row[-1] if len(row[-1]) <= note_width else row[-1][: note_width - 3] + "..."]
        for row in table
    ]
    widths = [max(len(row[k]) for row in cut) for k in range(len(COLUMNS))]
    lines = []
    for i, row in enumerate(cut):
        cells = [
            c.ljust(w) if k in (0, 1, len(COLUMNS) - 1) else c.rjust(w)
            for k, (c, w) in enumerate(zip(row, widths))
        ]
        lines.append("  ".join(cells).rstrip())
        if i == 0 or i == len(cut) - 2:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def format_markdown(table: list[list[str]]) -> str:
    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    header, *body = table
    align = ["---" if k in (0, 1, len(COLUMNS) - 1) else "---:" for k in range(len(COLUMNS))]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    for k, row in enumerate(body):
        cells = [cell(c) for c in row]
        if k == len(body) - 1:  # totals in bold
            cells = [f"**{c}**" if c else c for c in cells]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
