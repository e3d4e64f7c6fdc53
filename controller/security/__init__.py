"""The controller's certificates, its TLS contexts and the tables' position key."""
