"""Functions compiled for one type: the codecs of :mod:`jackpot.data` and :mod:`jackpot.wire`.

A codec that loops over a plan of fields, calling a closure per field, spends most of its time
in the loop. Instead, the source of a function that names each field is written once per type
and compiled (the technique :mod:`dataclasses` uses for ``__init__``): decoding or encoding a
record is then straight-line code.

Safety: the only text that goes into the source is field names (identifiers, from a
dataclass's fields or a protobuf descriptor, never from the data decoded; :func:`attribute`
and :func:`identifier` check them) and names this module makes. Every value the function
needs - a record type, an enum, a default, another codec - is bound as a global of the
function (:meth:`FunctionSource.bind`), never written into its text.
"""

from __future__ import annotations

import inspect
import itertools
import keyword
from collections.abc import Callable, Sequence
from typing import Any

Function = Callable[[Any], Any]
"""A compiled codec: one argument (the record, message or data), one result."""


class FunctionSource:
    """The source of one function of one argument being written, and its globals.

    ``lines`` is the body (each line indented by four spaces, as the caller writes it);
    ``names`` the globals the body refers to: the values bound, ``_dict``, ``_list``,
    ``_tuple``, ``_isinstance``, ``_int``, ``_bool``, ``_str``, ``_type`` and ``_getattr`` (the
    builtins of those names), and no other builtin.
    """

    def __init__(self, parameter: str, where: str, **names: Any) -> None:
        self.parameter = identifier(parameter)
        self.where = where
        self.lines: list[str] = []
        self.names: dict[str, Any] = {
            "__builtins__": {},
            "_dict": dict,
            "_list": list,
            "_tuple": tuple,
            "_isinstance": isinstance,
            "_int": int,
            "_bool": bool,
            "_str": str,
            "_type": type,
            "_getattr": getattr,
            **names,
        }
        self._bound = 0

    def bind(self, value: Any) -> str:
        """A new global name for ``value`` (its text never enters the source)."""
        self._bound += 1
        name = f"_v{self._bound}"
        self.names[name] = value
        return name

    def later(self, resolve: Callable[[], Function]) -> str:
        """A new global name for the function ``resolve()`` gives, resolved when it is first
        called (so a codec may call one not compiled yet, or itself, and one that cannot be
        made fails where it is used): a stand-in that puts the function in its place."""
        name = self.bind(None)

        def first(argument: Any) -> Any:
            function = self.names[name] = resolve()
            return function(argument)

        self.names[name] = first
        return name

    def compile(self) -> Function:
        """The function, compiled."""
        text = "\n".join([f"def function({self.parameter}):", *self.lines]) + "\n"
        exec(compile(text, f"<{self.where}>", "exec"), self.names)  # see the module's docstring
        function: Function = self.names.pop("function")
        return function


def call(callee: str, function: Callable[..., Any], arguments: Sequence[tuple[str, str]]) -> str:
    """The expression calling the global ``callee`` (``function``, e.g. a record type) with
    each ``(parameter name, expression)`` of ``arguments``: positionally while each is
    ``function``'s next positional parameter (a positional call is faster), by name after."""
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):  # no signature to read: every argument by name
        parameters = []
    leading = itertools.takewhile(lambda p: p.kind is p.POSITIONAL_OR_KEYWORD, parameters)
    positional = [parameter.name for parameter in leading]
    texts = []
    by_name = False
    for index, (name, value) in enumerate(arguments):
        by_name = by_name or index >= len(positional) or positional[index] != name
        texts.append(f"{identifier(name)}={value}" if by_name else value)
    return f"{callee}({', '.join(texts)})"


def identifier(name: str) -> str:
    """``name`` when it is a Python identifier (as every dataclass field's is), else a
    TypeError: the only text from a type that goes into generated source."""
    if not name.isidentifier() or keyword.iskeyword(name):
        raise TypeError(f"{name!r} is not an identifier: no code is generated for it")
    return name


def attribute(target: str, name: str) -> str:
    """The expression reading attribute ``name`` of the local ``target``: ``target.name``,
    or through ``getattr`` for a name that is a Python keyword (a protobuf field may be)."""
    if name.isidentifier() and not keyword.iskeyword(name):
        return f"{target}.{name}"
    return f"_getattr({target}, {name!r})"
