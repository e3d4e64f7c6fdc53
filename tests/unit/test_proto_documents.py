"""The .proto alone tells a client every string it meets: every hand and paytable line name
the controller can send, the lowercase name of every enum value, the roles of every RPC, and
no document that is not in the repository."""

from __future__ import annotations

import re
from pathlib import Path

from controller.api.access import ACCESS
from controller.domain.line_tables import LINE_TABLES
from jackpot.hands import joker_poker, poker, three_card, two_card
from jackpot.v1 import jackpot_pb2 as pb

ROOT = Path(__file__).resolve().parents[2]
PROTO = (ROOT / "proto" / "jackpot" / "v1" / "jackpot.proto").read_text()
WORDS = set(re.findall(r"[a-z0-9_]+", PROTO))


def test_every_hand_and_line_name_is_listed() -> None:
    hands = {c.label for e in (poker.HandCategory, three_card.ThreeCardCategory) for c in e}
    hands |= {c.label for c in joker_poker.JokerCategory}
    hands |= {h.value for h in two_card.StartingHand}
    lines = {line for _, counts in LINE_TABLES.values() for key in counts for line in key}
    suited = {
        line for line in lines if re.fullmatch(r"\w+_in_(spades|hearts|diamonds|clubs)", line)
    }
    for line in suited:  # listed as <hand>_in_* with the four suits named once
        assert f"{line.rsplit('_in_', 1)[0]}_in_*" in PROTO, line
    missing = sorted((hands | lines) - suited - WORDS)
    assert missing == [], f"hand or line names the .proto does not list: {missing}"


def test_every_enum_value_has_its_lowercase_name() -> None:
    for enum in pb.DESCRIPTOR.enum_types_by_name.values():
        prefix = re.sub(r"(?<!^)(?=[A-Z])", "_", enum.name).upper() + "_"
        for value in enum.values:
            if value.number == 0 and value.name.endswith("_UNSPECIFIED"):
                continue
            lower = value.name.removeprefix(prefix).lower()
            assert f'"{lower}"' in PROTO, value.name


def _rpc_comment(lines: list[str], name: str) -> str:
    """The comment lines right above ``rpc <name>(``; for an RPC without its own comment, the
    comment above the run of RPCs it ends (one comment for a group)."""
    at = next(i for i, line in enumerate(lines) if line.strip().startswith(f"rpc {name}("))
    above: list[str] = []
    index = at - 1
    while index >= 0:
        line = lines[index].strip()
        if line.startswith("//"):
            above.append(line)
        elif line.startswith("rpc ") and not above:
            pass  # an RPC of the same group: look further up
        else:
            break
        index -= 1
    return "\n".join(reversed(above))


def test_every_rpc_says_its_roles() -> None:
    """Each RPC's comment (or its group's) names the roles of the access table."""
    lines = PROTO.splitlines()
    for service in pb.DESCRIPTOR.services_by_name.values():
        for method in service.methods:
            path = f"/{service.full_name}/{method.name}"
            assert path in ACCESS, path
            said = _rpc_comment(lines, method.name)
            assert re.search(r"Roles?:", said), f"{method.name} says no role"
            for role in ACCESS[path].roles:
                assert role.value in said, f"{method.name}: {role.value} is not said"


def test_no_dangling_document() -> None:
    for cited in set(re.findall(r"(?:docs/)?[\w./-]+\.md", PROTO)):
        assert (ROOT / cited).exists(), cited
    for module in set(re.findall(r"\b(?:controller|jackpot)/[\w/]+\.py", PROTO)):
        assert (ROOT / module).exists(), module
