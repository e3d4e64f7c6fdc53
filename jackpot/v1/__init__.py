"""Generated code for the ``jackpot.v1`` proto package. Do not edit: run scripts/gen_proto.py."""
