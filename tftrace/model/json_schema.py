"""The JSON Schema (draft 2020-12) of each JSON document tftrace writes, generated from the model's
dataclasses and the comments beside their fields, so the schema cannot drift from the output."""

from __future__ import annotations

import dataclasses
import inspect
import re
import types
import typing

DIALECT = "https://json-schema.org/draft/2020-12/schema"
_SCALARS = {int: "integer", float: "number", str: "string", bool: "boolean", type(None): "null"}
_FIELD = re.compile(r"^\s+(\w+)\s*:[^#]*?(?:#\s?(.*))?$")
_COMMENT = re.compile(r"^\s+#\s?(.*)$")


def schema_of(cls: type, title: str, description: str = "") -> dict:
    """A self-contained schema of `cls.to_dict()`: the root class inline, every other dataclass
    under `$defs`. Objects are closed (`additionalProperties: false`) and every key is required,
    because tftrace writes every field of its version; a later schema_version adds keys."""
    defs: dict = {}
    root = _object(cls, defs)
    defs.pop(cls.__name__, None)
    out = {"$schema": DIALECT, "$id": f"https://tftrace.invalid/schema/{title}.json", "title": title}
    if description:
        out["description"] = description
    out.update(root)
    if defs:
        out["$defs"] = dict(sorted(defs.items()))
    return out


def _object(cls: type, defs: dict, rename: str = "") -> dict:
    """A dataclass as an object schema; `rename` gives its `name` key another one (a diff's
    layer, category and owner rows)."""
    hints = typing.get_type_hints(cls)
    notes = field_notes(cls)
    renames = getattr(cls, "JSON_ROW_KEYS", {})
    props: dict = {}
    for f in dataclasses.fields(cls):
        key = rename if f.name == "name" and rename else f.name
        prop = _type(hints[f.name], defs, renames.get(f.name, ""))
        if notes.get(f.name):
            prop = {**prop, "description": notes[f.name]}
        props[key] = prop
        if f.name.endswith("_ps"):  # every time in ps has its ms beside it (model/report.py, _to_json)
            props[f.name[:-3] + "_ms"] = {"type": ["number", "null"], "description": f"{f.name} in milliseconds"}
    out = {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}
    doc = (cls.__doc__ or "").strip()
    if doc and not doc.startswith(f"{cls.__name__}("):  # not dataclass's generated signature
        out = {"description": " ".join(doc.split()), **out}
    return out


def _type(hint, defs: dict, rename: str = "") -> dict:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(hint)
        if all(a in _SCALARS for a in args):
            return {"type": [_SCALARS[a] for a in args]}
        return {"anyOf": [_type(a, defs) for a in args]}
    if origin is tuple:
        return {"type": "array", "items": _type(typing.get_args(hint)[0], defs, rename)}
    if origin is dict:
        return {"type": "object", "additionalProperties": _type(typing.get_args(hint)[1], defs)}
    if hint is dict:
        return {"type": "object"}
    if dataclasses.is_dataclass(hint):
        name = f"{hint.__name__}.{rename}" if rename else hint.__name__
        if name not in defs:
            defs[name] = {}  # claimed first: a class that holds itself ends here
            defs[name] = _object(hint, defs, rename)
        return {"$ref": f"#/$defs/{name}"}
    if hint in _SCALARS:
        return {"type": _SCALARS[hint]}
    raise TypeError(f"no JSON Schema for {hint!r}")


def field_notes(cls: type) -> dict[str, str]:
    """Each field's comment in the class's source: the comment on its line (and the comment lines
    that go on with its sentence, in lower case), else the comment lines just above it. Empty where the source is not there."""
    try:
        lines = inspect.getsource(cls).splitlines()
    except (OSError, TypeError):
        return {}
    notes: dict[str, str] = {}
    above: list[str] = []
    last = ""  # the field whose own-line comment later comment lines continue
    for line in lines[1:]:
        comment = _COMMENT.match(line)
        if comment:
            if not (comment.group(1)[:1].islower() or comment.group(1)[:1] in "(,;"):
                last = ""  # not a sentence going on: a block about the next field
            if last:
                notes[last] += " " + comment.group(1).strip()
            else:
                above.append(comment.group(1).strip())
            continue
        field = _FIELD.match(line)
        if not field or "(" in line.split(":")[0]:
            above, last = [], ""
            continue
        name, trailing = field.group(1), (field.group(2) or "").strip()
        notes[name] = " ".join(above + ([trailing] if trailing else []))
        above, last = [], name if trailing else ""
    return {k: v for k, v in notes.items() if v}


def _documents() -> dict:
    """Each JSON document tftrace writes: (its class, what it is)."""
    from tftrace.model.answers import (Captured, ErrorAnswer, Explanation, Findings, Owners, RooflineAnswer, Spilled,
                                       WhatIf)
    from tftrace.model.diff_report import DiffReport
    from tftrace.model.report import Report
    return {
        "report": (Report, "`tftrace analyze --format json`: every run's steps, breakdown, verdict, findings, "
                           "owners, ops and the rest; read back by `tftrace diff` and Report.from_dict."),
        "diff": (DiffReport, "`tftrace diff --format json`: step time with its significance, what moved, the "
                             "findings resolved, new and persisting, and the verdict."),
        "findings": (Findings, "`tftrace findings --format json`: each run's ranked findings, compact."),
        "explain": (Explanation, "`tftrace explain --format json`: the ops, owners, steps and timeline behind "
                                 "one finding, capped."),
        "whatif": (WhatIf, "`tftrace whatif --format json`: the step after several fixes together, and what "
                           "it rests on."),
        "owners": (Owners, "Each run's owners: who in the program holds each part of a step (the MCP owners tool)."),
        "roofline": (RooflineAnswer, "The cost figures each run's report holds: ops' FLOPs and bytes, devices' peaks, "
                               "FLOPs per step and MFU; null where unknown (the MCP roofline tool)."),
        "captured": (Captured, "What a capture wrote (the MCP capture tool, served with --allow-capture)."),
        "spilled": (Spilled, "An answer larger than the limit: the file it was written to."),
        "error": (ErrorAnswer, "Any command's failure with `--format json`, with the exit code it ends with."),
    }


DOCUMENTS = ("report", "diff", "findings", "explain", "whatif", "owners", "roofline", "captured", "spilled", "error")


def document_schema(name: str) -> dict:
    """One document's self-contained schema (`tftrace schema NAME`)."""
    cls, description = _documents()[name]
    return schema_of(cls, name, description)


def combined_schema(names: tuple[str, ...] = DOCUMENTS, title: str = "tftrace") -> dict:
    """One schema that each of `names`' documents validates against (`oneOf` them): their
    dataclasses share one `$defs`, each document's root is there under its name."""
    from tftrace.model.version import VERSION
    defs: dict = {}
    for name in names:
        one = document_schema(name)
        defs.update(one.pop("$defs", {}))
        for key in ("$schema", "$id", "title"):
            one.pop(key)
        defs[name] = one
    return {"$schema": DIALECT, "$id": f"https://tftrace.invalid/schema/{title}.json", "title": title,
            "description": f"The JSON that tftrace {VERSION} writes (schema_version from model/report.py).",
            "type": "object", "oneOf": [{"$ref": f"#/$defs/{n}"} for n in names], "$defs": dict(sorted(defs.items()))}
