"""Check and convert the command line's values (text, whole numbers, choices) without pydantic.

typer 0.29 converts every typed parameter through a pydantic TypeAdapter, built on first use:
importing pydantic for it costs 0.1-0.14 s on this project's machine, more than analysing a
small trace. tftrace's commands take only three kinds of value, so each such parameter gets a
plain converter here; a parameter of any other kind keeps typer's own.
"""

from __future__ import annotations

from typing import Any, Callable, Literal, get_args, get_origin

import typer


class _Value:
    """Duck-types typer's per-parameter converter (`RuntimeParam.coerce`)."""

    def __init__(self, convert: Callable[[Any], Any]):
        self._convert = convert

    def coerce(self, value: Any, param, ctx) -> Any:
        if value is None:  # an option not given and without default
            return None
        try:
            return self._convert(value)
        except ValueError as e:
            raise typer.BadParameter(str(e), ctx=ctx, param=param) from None


def install(command, help_names: list[str] | None = None) -> None:
    """Give every flag, str, int and Literal parameter of `command` and its subcommands a plain
    converter, the help option included (click makes it on first use, from the context's names)."""
    names = help_names or command.context_settings.get("help_option_names") or ["--help"]
    help_option = command.get_help_option(command.context_class(command, help_option_names=names))
    for param in [*command.params, help_option]:
        convert = _converter(param)
        if convert is not None and hasattr(param, "_runtime_param"):  # typer's cache of its converter
            param._runtime_param = _Value(convert)
    for sub in getattr(command, "commands", {}).values():
        install(sub, names)


def _converter(param) -> Callable[[Any], Any] | None:
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is None or getattr(param, "multiple", False) or getattr(param, "nargs", 1) != 1:
        return None
    annotation, info = descriptor.annotation, descriptor.parameter_info
    if annotation is bool:
        return _flag
    if annotation is str:
        return str
    if annotation is int:
        return _whole(info.min, info.max)
    if get_origin(annotation) is Literal and all(isinstance(c, str) for c in get_args(annotation)):
        return _choice(get_args(annotation))
    return None


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{value!r} is not a flag's value")
    return value


def _whole(low: int | None, high: int | None) -> Callable[[Any], int]:
    def convert(value: Any) -> int:
        try:
            number = int(value)
        except (TypeError, ValueError):
            raise ValueError(f"{value!r} is not a whole number") from None
        if low is not None and number < low:
            raise ValueError(f"{number} is below {low}")
        if high is not None and number > high:
            raise ValueError(f"{number} is above {high}")
        return number
    return convert


def _choice(choices: tuple[str, ...]) -> Callable[[Any], str]:
    def convert(value: Any) -> str:
        if value not in choices:
            raise ValueError(f"{value!r} is not one of {', '.join(choices)}")
        return value
    return convert
