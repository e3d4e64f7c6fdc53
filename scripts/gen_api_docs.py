"""Write the gRPC API reference of the docs site from the comments of proto/jackpot/v1.

    python scripts/gen_api_docs.py          # rewrite docs/reference/api.md
    python scripts/gen_api_docs.py --check  # exit 1 if docs/reference/api.md is stale

protoc (grpcio-tools) reads the .proto files with their source information, so every comment
comes with the element it belongs to: a service and its methods, a message and its fields, an
enum and its values. The page lists them in the order of the files; nothing is written by hand.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from google.protobuf import descriptor_pb2 as d

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "proto"
PACKAGE = Path("jackpot") / "v1"
TARGET = ROOT / "docs" / "reference" / "api.md"

# Field numbers of descriptor.proto, the steps of a SourceCodeInfo location's path.
FILE_PACKAGE, FILE_MESSAGE, FILE_ENUM, FILE_SERVICE, FILE_SYNTAX = 2, 4, 5, 6, 12
MESSAGE_FIELD, MESSAGE_NESTED, MESSAGE_ENUM = 2, 3, 4
ENUM_VALUE, SERVICE_METHOD = 2, 2

Path_ = tuple[int, ...]


def descriptors() -> d.FileDescriptorSet:
    """Every .proto of the package, parsed by protoc with its comments."""
    protos = sorted((PROTO_ROOT / PACKAGE).glob("*.proto"))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "set.pb"
        command = [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            f"-I{PROTO_ROOT}",
            "--include_source_info",
            f"--descriptor_set_out={out}",
            *(str(proto.relative_to(PROTO_ROOT)) for proto in protos),
        ]
        subprocess.run(command, check=True, cwd=PROTO_ROOT)
        return d.FileDescriptorSet.FromString(out.read_bytes())


def escape(text: str) -> str:
    """Comment text safe in Markdown: no HTML tags, emphasis or table breaks by accident."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace("*", r"\*").replace("|", r"\|")


class Comments:
    """The comments of one file, by the path of the element they document."""

    def __init__(self, file: d.FileDescriptorProto) -> None:
        self._by_path: dict[Path_, str] = {}
        for location in file.source_code_info.location:
            path = tuple(location.path)
            text = "\n".join(
                part.strip("\n") for part in (location.leading_comments, location.trailing_comments)
            ).strip("\n")
            if text:
                self._by_path[path] = text

    def block(self, path: Path_) -> str:
        """The comment as paragraphs: its lines kept, each unindented by one space."""
        lines = [line[1:] if line.startswith(" ") else line for line in self.get(path)]
        return escape("\n".join(lines)).strip()

    def cell(self, path: Path_) -> str:
        """The comment in one table cell: lines joined, paragraphs separated by a break."""
        paragraphs = " ".join(line.strip() or "<br>" for line in self.get(path))
        return escape(paragraphs).replace("&lt;br&gt;", "<br>").strip()

    def get(self, path: Path_) -> list[str]:
        return self._by_path.get(path, "").splitlines()


def anchor(full_name: str) -> str:
    return full_name.lower().replace(".", "-")


#: The full names of the messages and enums this page documents (set by :func:`render`).
DOCUMENTED: set[str] = set()


def type_link(type_name: str, package: str) -> str:
    """A field's message or enum type: a link to its section, or its name when it is defined
    elsewhere (a well-known type, another package)."""
    name = type_name.lstrip(".")
    short = name.removeprefix(package + ".")
    return f"[`{short}`](#{anchor(name)})" if name in DOCUMENTED else f"`{name}`"


def documented(prefix: str, messages: Sequence[d.DescriptorProto]) -> Iterator[str]:
    """The full names of ``messages`` and of the messages and enums nested in them."""
    for message in messages:
        full_name = f"{prefix}.{message.name}"
        yield full_name
        yield from (f"{full_name}.{e.name}" for e in message.enum_type)
        yield from documented(full_name, message.nested_type)


SCALARS = {
    value: name.removeprefix("TYPE_").lower()
    for name, value in d.FieldDescriptorProto.Type.items()
    if name not in ("TYPE_MESSAGE", "TYPE_ENUM", "TYPE_GROUP")
}


def field_type(field: d.FieldDescriptorProto, package: str, maps: dict[str, str]) -> str:
    if field.type_name.lstrip(".") in maps:
        return maps[field.type_name.lstrip(".")]
    base = SCALARS[field.type] if not field.type_name else type_link(field.type_name, package)
    if field.label == d.FieldDescriptorProto.LABEL_REPEATED:
        return f"repeated {base}"
    if field.proto3_optional:
        return f"optional {base}"
    return base


def services(file: d.FileDescriptorProto, comments: Comments) -> Iterator[str]:
    package = file.package
    for s, service in enumerate(file.service):
        path: Path_ = (FILE_SERVICE, s)
        yield f"### {service.name} {{ #{anchor(f'{package}.{service.name}')} }}"
        yield ""
        if text := comments.block(path):
            yield text
            yield ""
        yield "| method | request | response | description |"
        yield "|---|---|---|---|"
        for m, method in enumerate(service.method):
            request = type_link(method.input_type, package)
            response = type_link(method.output_type, package)
            if method.client_streaming:
                request = f"stream {request}"
            if method.server_streaming:
                response = f"stream {response}"
            cell = comments.cell((*path, SERVICE_METHOD, m))
            yield f"| `{method.name}` | {request} | {response} | {cell} |"
        yield ""


def enum(
    value: d.EnumDescriptorProto, full_name: str, comments: Comments, path: Path_
) -> Iterator[str]:
    yield f"### {full_name.split('.', 2)[-1]} {{ #{anchor(full_name)} }}"
    yield ""
    if text := comments.block(path):
        yield text
        yield ""
    yield "| value | number | description |"
    yield "|---|---|---|"
    for v, item in enumerate(value.value):
        yield f"| `{item.name}` | {item.number} | {comments.cell((*path, ENUM_VALUE, v))} |"
    yield ""


def map_entries(message: d.DescriptorProto, full_name: str, package: str) -> dict[str, str]:
    """The synthetic map-entry messages of ``message``, as the map types they stand for."""
    maps: dict[str, str] = {}
    for nested in message.nested_type:
        if nested.options.map_entry:
            key, value = nested.field[0], nested.field[1]
            value_type = (
                SCALARS[value.type] if not value.type_name else type_link(value.type_name, package)
            )
            maps[f"{full_name}.{nested.name}"] = f"map&lt;{SCALARS[key.type]}, {value_type}&gt;"
    return maps


def messages(
    items: Sequence[d.DescriptorProto], prefix: str, package: str, comments: Comments, at: Path_
) -> Iterator[str]:
    for i, message in enumerate(items):
        path: Path_ = (*at, i)
        full_name = f"{prefix}.{message.name}"
        maps = map_entries(message, full_name, package)
        yield f"### {full_name.removeprefix(package + '.')} {{ #{anchor(full_name)} }}"
        yield ""
        if text := comments.block(path):
            yield text
            yield ""
        if message.field:
            yield "| field | type | number | description |"
            yield "|---|---|---|---|"
            for f, field in enumerate(message.field):
                kind = field_type(field, package, maps)
                cell = comments.cell((*path, MESSAGE_FIELD, f))
                yield f"| `{field.name}` | {kind} | {field.number} | {cell} |"
            yield ""
        else:
            yield "No fields."
            yield ""
        for e, nested_enum in enumerate(message.enum_type):
            yield from enum(
                nested_enum,
                f"{full_name}.{nested_enum.name}",
                comments,
                (*path, MESSAGE_ENUM, e),
            )
        nested = [n for n in message.nested_type if not n.options.map_entry]
        if nested:
            yield from messages(nested, full_name, package, comments, (*path, MESSAGE_NESTED))


def render(files: d.FileDescriptorSet) -> str:
    for file in files.file:
        DOCUMENTED.update(documented(file.package, file.message_type))
        DOCUMENTED.update(f"{file.package}.{e.name}" for e in file.enum_type)
    lines = [
        "# gRPC API reference",
        "",
        "Generated by `scripts/gen_api_docs.py` from the comments of `proto/jackpot/v1/`;",
        "edit the `.proto` and run `make proto`, never this page. The `.proto` is the contract:",
        "a client built from it alone needs nothing else.",
        "",
    ]
    for file in files.file:
        comments = Comments(file)
        lines += [f"## `{file.name}`", "", f"Package `{file.package}`.", ""]
        # The file's header: the comment above `syntax` (or above `package`).
        if overview := comments.block((FILE_SYNTAX,)) or comments.block((FILE_PACKAGE,)):
            lines += [overview, ""]
        if file.service:
            lines += ["## Services", ""]
            lines += services(file, comments)
        if file.message_type:
            lines += ["## Messages", ""]
            lines += messages(
                file.message_type, file.package, file.package, comments, (FILE_MESSAGE,)
            )
        if file.enum_type:
            lines += ["## Enums", ""]
            for e, value in enumerate(file.enum_type):
                lines += enum(value, f"{file.package}.{value.name}", comments, (FILE_ENUM, e))
    return "\n".join(lines).rstrip() + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the page is stale")
    args = parser.parse_args()
    page = render(descriptors())
    if args.check:
        if not TARGET.exists() or TARGET.read_text(encoding="utf-8") != page:
            print(f"{TARGET.relative_to(ROOT)} is stale: run python scripts/gen_api_docs.py")
            return 1
        return 0
    TARGET.parent.mkdir(parents=True, exist_ok=True)
    TARGET.write_text(page, encoding="utf-8")
    print(f"wrote {TARGET.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
