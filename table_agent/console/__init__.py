"""The dealer console (``table-agent console``): a dealer runs a real table from a terminal.

The pieces, each in its own module:

* :mod:`~table_agent.console.entry`: what the dealer types (a wager, cards) read and checked
  against the table's registration and its game, before anything is sent;
* :mod:`~table_agent.console.session`: the round's state machine - which phase the round is
  in, what input it expects next, what each command does - pure, no I/O;
* :mod:`~table_agent.console.record`: the round record kept in the state directory (wagers,
  chip count, cards, outcome), one line per finished round;
* :mod:`~table_agent.console.desk`: the session wired to the table's agent (outbox, reports,
  link) and the controller's meter stream;
* :mod:`~table_agent.console.screen`: the terminal (prompt_toolkit, the ``console`` extra);
* :mod:`~table_agent.console.cli`: the command line.

Only ``screen`` imports prompt_toolkit, so everything else imports with the plain agent.
"""
