"""How Jupyter shows a report: the model holds a hook, the renderers fill it (render/jupyter.py),
so the model never imports a renderer."""

from __future__ import annotations

from typing import Callable

_HTML: dict[str, Callable[[object], str]] = {}  # by the class's module and name


def register_html(cls: str, render: Callable[[object], str]) -> None:
    """`render(obj)` makes the notebook HTML of the objects of `cls` ("module.Class"): named, not
    imported, so registering loads no model the program has not used."""
    _HTML[cls] = render


class HtmlDisplay:
    """Jupyter shows objects of subclasses as the HTML their registered renderer makes (with no
    renderer registered, Jupyter falls back to the plain repr)."""

    def _repr_html_(self) -> str | None:
        render = _HTML.get(f"{type(self).__module__}.{type(self).__qualname__}")
        return render(self) if render is not None else None
