"""``jackpotctl link-groups``: create, list and resume link groups (maintenance:
:mod:`controller.ctl.controls`).

    jackpotctl --controller 127.0.0.1:50051 link-groups create casino-floor
    jackpotctl --controller ... link-groups resume casino-floor --reason "lost rounds paid by hand"
"""

from __future__ import annotations

import argparse
import sys

from controller.ctl import controls
from controller.ctl.remote import call, show
from jackpot.v1 import jackpot_pb2 as pb


def add_commands(top: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``link-groups create|list|resume``, then the controls' ``maintenance``."""
    groups = top.add_parser("link-groups", help="link groups").add_subparsers(
        dest="action", required=True
    )
    create_group = groups.add_parser("create")
    create_group.add_argument("link_group_id")
    create_group.add_argument("--description", default="")
    create_group.set_defaults(handler=_create_link_group)
    groups.add_parser("list").set_defaults(handler=_list_link_groups)
    resume = groups.add_parser(
        "resume",
        help="serve a stopped link group again, in a new epoch, once what Redis lost is "
        "reconciled (journaled with your certificate and the reason)",
    )
    resume.add_argument("link_group_id")
    resume.add_argument("--reason", required=True)
    resume.set_defaults(handler=_resume_link_group)

    controls.add_link_group_commands(groups)


def _create_link_group(args: argparse.Namespace) -> int:
    group = call(
        args,
        "CreateLinkGroup",
        pb.CreateLinkGroupRequest(link_group_id=args.link_group_id, description=args.description),
    )
    return show(args, group, f"link group {group.link_group_id} ready")


def _list_link_groups(args: argparse.Namespace) -> int:
    reply = call(args, "ListLinkGroups", pb.ListLinkGroupsRequest())
    lines = [
        f"{g.link_group_id}: meters {', '.join(g.meter_ids) or '-'}; "
        f"tables {', '.join(g.table_ids) or '-'}; journal #{g.journal.seq}"
        + (f"; STOPPED: {g.stopped}" if g.stopped else "")
        for g in reply.link_groups
    ]
    return show(args, reply, "\n".join(lines) or "no link groups")


def _resume_link_group(args: argparse.Namespace) -> int:
    group = call(args, "GetLinkGroup", pb.GetLinkGroupRequest(link_group_id=args.link_group_id))
    if not group.stopped:
        print(f"jackpotctl: link group {group.link_group_id} is not stopped", file=sys.stderr)
        return 1
    print(f"link group {group.link_group_id} is stopped: {group.stopped}")
    reply = call(
        args,
        "ResumeLinkGroup",
        pb.ResumeLinkGroupRequest(
            link_group_id=args.link_group_id, reason=args.reason, epoch=group.journal.epoch
        ),
    )
    return show(
        args,
        reply,
        f"link group {reply.link_group_id} serves again in epoch {reply.journal.epoch} "
        f"(journal #{reply.journal.seq})",
    )
