"""The hand evaluators of the games: five-card poker, three-card, two-card and the joker."""
