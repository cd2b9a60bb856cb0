"""The frame around tftrace's HTML: a whole self-contained page, or a notebook fragment whose
stylesheet is scoped to its own container so it leaves the notebook's styles alone."""

from __future__ import annotations

import re

from tftrace.render.html_charts import esc

SCOPE = "tftrace-nb"  # the class of the fragment's container; every rule of its CSS is under it
_PAGE_LEVEL = {":root", "html", "body"}  # these rules style the container itself


def page(title: str, css: str, body: str) -> str:
    """A whole page: inline CSS, nothing fetched."""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{esc(title)}</title>
<style>{css}</style>
</head>
<body>
{body}
</body>
</html>
"""


def fragment(css: str, body: str) -> str:
    """The same content for Jupyter's `_repr_html_`: a container and a stylesheet scoped to it."""
    return f'<div class="{SCOPE}"><style>{scope_css(css, "." + SCOPE)}</style>\n{body}\n</div>'


def scope_css(css: str, scope: str) -> str:
    """Every selector of `css` (tftrace's own stylesheets: plain rules and @media blocks) put
    under `scope`; page-level selectors (`:root`, `html`, `body`) become the scope itself."""
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    out, i = [], 0
    while (j := css.find("{", i)) >= 0:
        head = css[i:j].strip()
        if head.startswith("@"):
            k, depth = j + 1, 1
            while depth:
                depth += {"{": 1, "}": -1}.get(css[k], 0)
                k += 1
            out.append(f"{head} {{\n{scope_css(css[j + 1:k - 1], scope)}\n}}")
        else:
            k = css.index("}", j) + 1
            selectors = ", ".join(_scoped(s.strip(), scope) for s in head.split(","))
            out.append(f"{selectors} {{ {css[j + 1:k - 1].strip()} }}")
        i = k
    return "\n".join(out)


def _scoped(selector: str, scope: str) -> str:
    first, _, rest = selector.partition(" ")
    if first in _PAGE_LEVEL:
        return f"{scope} {rest}".strip()
    return f"{scope} {selector}"
