"""Running the controller: ``jackpot-controller``, its settings, the server and its worker
processes, the rules file and the state guard."""
