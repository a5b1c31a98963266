"""What `isthmus parameters` prints and docs/parameters.md holds: every parameter the
engine declares (`isthmus.declared`), as rows of words and as one Markdown page."""

from __future__ import annotations

from isthmus import declared


def catalogue() -> list[tuple[str, str, declared.Parameter]]:
    """Every declared parameter as (type, kind, parameter), in declaration order."""
    rows = []
    for type_name, schema in declared.DECLARED.items():
        kinds = [
            v["properties"]["kind"]["const"]
            for v in schema.get("oneOf", [])
            if "kind" in v.get("properties", {})
        ]
        for kind in kinds or [None]:
            for parameter in declared.parameters(type_name, kind).values():
                rows.append((type_name, kind or "", parameter))
    return rows


def _shown_default(parameter: declared.Parameter) -> str:
    if not parameter.has_default or parameter.required:
        return "required"
    value = parameter.user_default()
    if value is None:
        return "none"
    if isinstance(value, dict):  # a whole nested configuration: its own rows say it
        return "its defaults"
    return str(value).lower() if isinstance(value, bool) else str(value)


def rows() -> list[dict[str, str]]:
    """Every declared parameter as the words a table shows: where it is declared (type
    and kind), its name, unit, default, range and meaning."""
    out = []
    for type_name, kind, parameter in catalogue():
        known = declared.UNITS.get(parameter.unit or "")
        unit = known.shown if known else parameter.unit or ""
        if parameter.holds:
            unit = parameter.holds
        out.append(
            {
                "type": type_name,
                "kind": kind,
                "parameter": parameter.name,
                "unit": unit,
                "default": _shown_default(parameter),
                "range": parameter.range_text(),
                "meaning": parameter.meaning,
            }
        )
    return out


def choices(schema: dict) -> list[tuple[str, str]]:
    """A type's alternatives as (value, meaning): its kinds, or its plain values."""
    out = []
    for option in schema.get("oneOf", []):
        value = option.get("const") or option.get("properties", {}).get("kind", {}).get("const")
        if value is not None:
            out.append((value, declared.one_line(option.get("description", ""))))
    return out


def _table(parameters_rows: list[dict[str, str]]) -> list[str]:
    lines = [
        "| parameter | unit | default | range | meaning |",
        "| --- | --- | --- | --- | --- |",
    ]
    for row in parameters_rows:
        unit = row["unit"]
        if unit in declared.DECLARED:  # a field holding another declared type links to its section
            unit = f"[{unit}](#{unit.lower()})"
        cells = [f"`{row['parameter']}`", unit, row["default"], row["range"]]
        cells.append(row["meaning"].replace("|", "\\|"))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def markdown() -> str:
    """docs/parameters.md: every declared type, its kinds or values, and a table of
    its parameters."""
    lines = [
        "# Parameters",
        "",
        "Every parameter the engine takes, with its meaning, unit, default and valid range,",
        "as the engine's own types declare them (`crates/isthmus-core/src/declared.rs`).",
        "Python's models (`isthmus.queues`, `isthmus.transport.TcpParams`, the BCN, DCQCN and",
        "PFC settings), the scenario schema (`isthmus schema`) and this page are derived from",
        "that one declaration; `isthmus parameters` prints it, and",
        "`isthmus parameters --markdown --out docs/parameters.md` writes this page (a test",
        "keeps the two equal).",
        "",
        "A time is written with its unit (`5ms`, `200us`), a size in bytes (`1460B`, `64KB`),",
        "a rate in bit/s (`10Gbps`), a queue limit in packets or bytes (`250pkts`, `300KB`);",
        "the Python API also takes an integer in the engine's unit (ps, bytes, bit/s).",
    ]
    by_type: dict[str, list[dict[str, str]]] = {}
    for row in rows():
        by_type.setdefault(row["type"], []).append(row)
    for type_name, schema in declared.DECLARED.items():
        lines += ["", f"## {type_name}", ""]
        if schema.get("description"):
            lines += [declared.one_line(schema["description"]), ""]
        alternatives = choices(schema)
        if alternatives:
            word = "kind" if any("properties" in o for o in schema["oneOf"]) else "value"
            lines += [f"One {word} of:", ""]
            lines += [f"- `{value}`: {meaning}" for value, meaning in alternatives]
            lines.append("")
        own = [row for row in by_type.get(type_name, []) if not row["kind"]]
        if own:
            lines += _table(own)
        for kind, _ in alternatives:
            of_kind = [row for row in by_type.get(type_name, []) if row["kind"] == kind]
            if of_kind:
                lines += ["", f"### {type_name} `{kind}`", "", *_table(of_kind)]
    return "\n".join(line for line in lines).replace("\n\n\n", "\n\n").rstrip() + "\n"
