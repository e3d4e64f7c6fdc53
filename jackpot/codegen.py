"""Functions compiled for one type: the codecs of :mod:`jackpot.data` and :mod:`jackpot.wire`.

A codec that loops over a plan of fields, calling a closure per field, spends most of its time
in the loop. Instead, the source of a function that names each field is written once per type
and compiled (the technique :mod:`dataclasses` uses for ``__init__``): decoding or encoding a
record is then straight-line code.

Each function's source is registered in :mod:`linecache` under its own name,
``<jackpot.codegen WHERE>`` (WHERE says which codec: ``data decoder of
jackpot.results.SettleResult``), so that a traceback through it shows its lines and pdb lists
them. :func:`complete` resolves every codec a function calls, so that a module compiles all
the codecs it uses when it is imported (:func:`jackpot.data.compile_decoders`,
:func:`jackpot.wire.compile_encoders`), none on a first request; :data:`COMPILED` names each
compiled, in order.

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
import linecache
import types
from collections.abc import Callable, Sequence
from typing import Any

Function = Callable[[Any], Any]
"""A compiled codec: one argument (the record, message or data), one result."""

FILENAME = "<jackpot.codegen {where}>"
"""The pseudo-filename a compiled function's source is registered under in linecache."""
COMPILED: list[str] = []
"""The pseudo-filename of each function compiled, in the order compiled (once each)."""


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
        """A new global name for the function ``resolve()`` gives, resolved by
        :func:`complete` or else when it is first called (so a codec may call one not
        compiled yet, or itself, and one that cannot be made fails where it is used): a
        stand-in that puts the function in its place."""
        name = self.bind(None)
        self.names[name] = _Later(self.names, name, resolve)
        return name

    def compile(self) -> Function:
        """The function, compiled, its source registered in :mod:`linecache`."""
        text = "\n".join([f"def function({self.parameter}):", *self.lines]) + "\n"
        filename = _register(FILENAME.format(where=self.where), text)
        exec(compile(text, filename, "exec"), self.names)  # see the module's docstring
        function: Function = self.names.pop("function")
        COMPILED.append(filename)
        return function


class _Later:
    """The stand-in for a function not resolved yet (:meth:`FunctionSource.later`)."""

    __slots__ = ("name", "names", "resolve")

    def __init__(self, names: dict[str, Any], name: str, resolve: Callable[[], Function]):
        self.names, self.name, self.resolve = names, name, resolve

    def __call__(self, argument: Any) -> Any:
        function = self.names[self.name] = self.resolve()
        return function(argument)


def complete(function: Function) -> Function:
    """``function`` (a compiled codec) with every stand-in of it resolved now, and of each
    codec it calls, transitively: none is compiled on a first call any more. A codec that
    cannot be made is refused here (its TypeError)."""
    seen: set[int] = set()
    todo = [function]
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        names = getattr(current, "__globals__", {})
        for name, value in list(names.items()):
            if isinstance(value, _Later):
                value = names[name] = value.resolve()
            if isinstance(value, types.FunctionType) and value.__code__.co_filename in _SOURCES:
                todo.append(value)
    return function


_SOURCES: dict[str, str] = {}
"""Each pseudo-filename registered, and its source."""


def _register(filename: str, text: str) -> str:
    """``filename`` (made unique: ``#2`` added to a name already given to other source)
    with ``text`` in :mod:`linecache`, as a file of no modification time (kept by
    ``linecache.checkcache``)."""
    unique, count = filename, 1
    while _SOURCES.get(unique, text) != text:
        count += 1
        unique = f"{filename[:-1]} #{count}>"
    _SOURCES[unique] = text
    linecache.cache[unique] = (len(text), None, text.splitlines(keepends=True), unique)
    return unique


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
