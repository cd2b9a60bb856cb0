"""How Jupyter shows a report: the model holds a hook, the renderers fill it (render/jupyter.py),
so the model never imports a renderer."""

from __future__ import annotations

from typing import Callable

_HTML: dict[type, Callable[[object], str]] = {}


def register_html(cls: type, render: Callable[[object], str]) -> None:
    """`render(obj)` makes the notebook HTML of `cls`'s objects."""
    _HTML[cls] = render


class HtmlDisplay:
    """Jupyter shows objects of subclasses as the HTML their registered renderer makes (with no
    renderer registered, Jupyter falls back to the plain repr)."""

    def _repr_html_(self) -> str | None:
        render = _HTML.get(type(self))
        return render(self) if render is not None else None
