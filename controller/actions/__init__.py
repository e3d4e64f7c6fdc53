"""Operations shared by gRPC, the floor view and jackpotctl: a jackpot's review, a gaming
day's close, the reconciliation after a restore."""
