"""The core that the controller and the table agent share, and neither owns.

Cards and hand evaluation (:mod:`jackpot.cards`, :mod:`jackpot.hands`), the games' facts
(:mod:`jackpot.games`), wager and award kinds (:mod:`jackpot.kinds`), money in integer cents
(:mod:`jackpot.money`), journal positions (:mod:`jackpot.epochs`), the results a table is
answered with (:mod:`jackpot.results`), the one error hierarchy (:mod:`jackpot.errors`), the
TLS files of a gRPC channel (:mod:`jackpot.tls`) and the generated protobuf code
(``jackpot.v1``, from proto/ by scripts/gen_proto.py). It imports nothing of Redis or
Prometheus, so the agent installs without them.
"""
