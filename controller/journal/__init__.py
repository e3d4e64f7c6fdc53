"""The books: the journal's hash chain, the audit, export, restore and the signed
checkpoints."""
