"""``GET /docs``: the OpenAPI document as one self-contained web page, rendered on the server.

No script and nothing fetched from elsewhere (the server may run offline): the operations grouped
by tag, each with its parameters, request body fields and answers, then every schema; schema
names link to their definitions.
"""

from __future__ import annotations

import html
import json
import re

from plait.server._wire import as_dict, as_list

__all__ = ["render_page"]

_CSS = """
body{font:15px/1.5 system-ui,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
main{max-width:1100px;margin:0 auto;padding:24px}
header{background:#1d2330;color:#fff;padding:20px 24px}header h1{margin:0 0 4px}header a{color:#9cc3ff}
nav{columns:3;background:#fff;border:1px solid #dde1e7;border-radius:6px;padding:12px 16px;margin-bottom:24px}
nav h3{margin:0;font-size:14px}nav ul{margin:0 0 8px;padding-left:16px;font-size:13px}
section.op{background:#fff;border:1px solid #dde1e7;border-radius:6px;margin:12px 0;padding:12px 16px}
.m{display:inline-block;min-width:64px;text-align:center;font-weight:700;border-radius:4px;
color:#fff;padding:1px 6px;margin-right:8px;font-size:13px}
.GET{background:#2f7ed8}.POST{background:#2a9d5b}.PUT{background:#b07d12}.PATCH{background:#8e5bd1}
.DELETE{background:#c8453a}
code,.path{font-family:ui-monospace,monospace;font-size:13px}.path{font-weight:600}
table{border-collapse:collapse;width:100%;margin:6px 0 10px;font-size:13px}
th,td{text-align:left;border-bottom:1px solid #e6e9ee;padding:4px 8px;vertical-align:top}
th{background:#f1f3f6}.req{color:#c8453a;font-size:11px}.desc{white-space:pre-wrap}
h4{margin:10px 0 2px;font-size:13px;text-transform:uppercase;color:#5a6475}h4 a{text-transform:none}
section.schema{background:#fff;border:1px solid #dde1e7;border-radius:6px;margin:10px 0;padding:8px 16px}
"""


def _e(text: object) -> str:
    return html.escape(str(text))


def _prose(text: object) -> str:
    """Escaped text; ````x```` as code."""
    return re.sub(r"``(.+?)``", r"<code>\1</code>", _e(text))


def _name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def type_html(schema: object) -> str:
    """A schema's type as a short phrase (schema names linked)."""
    if not isinstance(schema, dict) or not schema:
        return "any"
    node = as_dict(schema)
    if "$ref" in node:
        name = _name(str(node["$ref"]))
        return f'<a href="#schema-{_e(name)}">{_e(name)}</a>'
    for key in ("anyOf", "oneOf"):
        if key in node:
            return " | ".join(type_html(s) for s in as_list(node[key]))
    if "const" in node:
        return f"<code>{_e(json.dumps(node['const']))}</code>"
    if "enum" in node:
        return " | ".join(f"<code>{_e(json.dumps(v))}</code>" for v in as_list(node["enum"]))
    kind = node.get("type")
    if isinstance(kind, list):
        return " | ".join(type_html({**node, "type": k}) for k in as_list(kind))
    if kind == "array":
        return f"list of {type_html(node.get('items'))}"
    if kind == "object":
        extra = as_dict(node.get("additionalProperties"))
        return f"object of {type_html(extra)}" if extra else "object"
    fmt = node.get("format")
    return _e(kind or "any") + (f" ({_e(fmt)})" if fmt else "")


def _resolve(schema: object, components: dict[str, object]) -> dict[str, object]:
    node = as_dict(schema)
    if "$ref" in node:
        return as_dict(components.get(_name(str(node["$ref"]))))
    return node


def _fields(schema: object, components: dict[str, object]) -> str:
    """The table of an object schema's fields (a list's items'), or its type alone."""
    node = _resolve(schema, components)
    if node.get("type") == "array":
        node = _resolve(node.get("items"), components)
    props = as_dict(node.get("properties"))
    if not props:
        return f"<p>{type_html(schema)}</p>"
    required = set(as_list(node.get("required")))
    rows: list[str] = []
    for name, found in props.items():
        prop = as_dict(found)
        default = f"<code>{_e(json.dumps(prop['default']))}</code>" if "default" in prop else ""
        need = ' <span class="req">required</span>' if name in required else ""
        rows.append(
            f"<tr><td><code>{_e(name)}</code>{need}</td><td>{type_html(prop)}</td><td>{default}</td>"
            f'<td class="desc">{_prose(prop.get("description", ""))}</td></tr>'
        )
    head = "<tr><th>Field</th><th>Type</th><th>Default</th><th>Description</th></tr>"
    return f"<table>{head}{''.join(rows)}</table>"


def _parameters(params: list[object]) -> str:
    if not params:
        return ""
    rows = [
        f"<tr><td><code>{_e(p['name'])}</code>"
        + (' <span class="req">required</span>' if p.get("required") else "")
        + f"</td><td>{_e(p['in'])}</td><td>{type_html(p.get('schema'))}</td>"
        f'<td class="desc">{_prose(p.get("description", ""))}</td></tr>'
        for p in map(as_dict, params)
    ]
    head = "<tr><th>Name</th><th>In</th><th>Type</th><th>Description</th></tr>"
    return f"<h4>Parameters</h4><table>{head}{''.join(rows)}</table>"


def _operation(path: str, method: str, op: dict[str, object], components: dict[str, object]) -> str:
    parts = [
        f'<section class="op" id="{_e(op["operationId"])}">',
        f'<div><span class="m {method.upper()}">{method.upper()}</span><span class="path">{_e(path)}</span></div>',
        f"<p><strong>{_e(op.get('summary', ''))}</strong></p>",
    ]
    if op.get("description"):
        parts.append(f'<p class="desc">{_prose(op["description"])}</p>')
    parts.append(_parameters(as_list(op.get("parameters"))))
    body = as_dict(op.get("requestBody"))
    if body:
        schema = as_dict(as_dict(body["content"])["application/json"])["schema"]
        need = " (required)" if body.get("required") else ""
        parts.append(f"<h4>Request body{need}: {type_html(schema)}</h4>{_fields(schema, components)}")
    rows: list[str] = []
    for status, found in as_dict(op.get("responses")).items():
        answer = as_dict(found)
        content = as_dict(answer.get("content"))
        shown = ", ".join(
            f"<code>{_e(media)}</code> {type_html(as_dict(c).get('schema'))}" for media, c in content.items()
        )
        rows.append(
            f"<tr><td>{_e(status)}</td><td>{_e(answer.get('description', ''))}</td><td>{shown}</td></tr>"
        )
    parts.append(f"<h4>Responses</h4><table>{''.join(rows)}</table></section>")
    return "".join(parts)


def render_page(doc: dict[str, object]) -> str:
    """The page of an OpenAPI document."""
    components = as_dict(as_dict(doc.get("components")).get("schemas"))
    tags = [as_dict(t) for t in as_list(doc.get("tags"))]
    by_tag: dict[str, list[tuple[str, str, dict[str, object]]]] = {str(t["name"]): [] for t in tags}
    for path, methods in as_dict(doc.get("paths")).items():
        for method, found in as_dict(methods).items():
            op = as_dict(found)
            for tag in as_list(op.get("tags")) or ["Other"]:
                by_tag.setdefault(str(tag), []).append((path, method, op))
    about = {str(t["name"]): t.get("description", "") for t in tags}
    info = as_dict(doc.get("info"))
    nav = "".join(
        f"<h3>{_e(tag)}</h3><ul>"
        + "".join(
            f'<li><a href="#{_e(op["operationId"])}">{_e(m.upper())} {_e(p)}</a></li>' for p, m, op in ops
        )
        + "</ul>"
        for tag, ops in by_tag.items()
    )
    sections = "".join(
        f'<h2 id="tag-{_e(tag)}">{_e(tag)}</h2><p>{_prose(about.get(tag, ""))}</p>'
        + "".join(_operation(p, m, op, components) for p, m, op in ops)
        for tag, ops in by_tag.items()
    )
    schemas = "".join(
        f'<section class="schema" id="schema-{_e(name)}"><h3>{_e(name)}</h3>'
        f'<p class="desc">{_prose(as_dict(schema).get("description", ""))}</p>{_fields(schema, components)}</section>'
        for name, schema in components.items()
    )
    title = f"{info.get('title', 'API')} {info.get('version', '')}".strip()
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title>'
        f'<meta name="viewport" content="width=device-width, initial-scale=1"><style>{_CSS}</style></head><body>'
        f"<header><h1>{_e(title)}</h1><div>{_prose(info.get('description', ''))} "
        f'OpenAPI {_e(doc.get("openapi", ""))}: <a href="openapi.json">openapi.json</a></div></header>'
        f'<main><nav>{nav}</nav>{sections}<h2 id="schemas">Schemas</h2>{schemas}</main></body></html>'
    )
