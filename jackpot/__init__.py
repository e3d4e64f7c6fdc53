"""Generated protobuf package ``jackpot`` (see proto/ and scripts/gen_proto.py)."""
