"""A certificate authority for tests, benchmarks and the demo: certificates on first use.

Each role's certificates live in a folder of their own (``<dir>/<role>/<name>.crt``), so a
table and a person may share a name; the CA and the controller's certificate are in
``<dir>`` as ``jackpotctl certs init`` writes them.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from controller.security.certs import init_authority, issue
from controller.security.position_key import write_position_key
from controller.security.tls import TLSFiles
from jackpot.tls import ClientTLS


class TestPKI:
    """The CA in ``directory`` (created if missing) and the certificates issued from it."""

    __test__ = False  # not a pytest test class

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        if not (directory / "ca.crt").exists():
            init_authority(directory)
        self._issued: dict[tuple[str, str], ClientTLS] = {}

    @property
    def ca(self) -> Path:
        """The CA certificate."""
        return self.directory / "ca.crt"

    def server(self) -> TLSFiles:
        """The controller's certificate, key and the CA its clients chain to."""
        return TLSFiles(
            self.directory / "controller.crt", self.directory / "controller.key", self.ca
        )

    def position_key(self) -> Path:
        """The controller's --position-key file beside its certificate (written once,
        atomically: parallel test processes share the directory)."""
        path = self.directory / "position.key"
        if not path.exists():
            temporary = self.directory / f"position.key.{os.getpid()}.{secrets.token_hex(4)}"
            write_position_key(temporary)
            try:
                os.link(temporary, path)
            except FileExistsError:
                pass
            finally:
                temporary.unlink()
        return path

    def client(self, role: str, name: str) -> ClientTLS:
        """The certificate of ``jackpot://role/name``, issued on first use."""
        files = self._issued.get((role, name))
        if files is None:
            folder = self.directory / role
            cert = folder / f"{name}.crt"
            if not cert.exists():
                issue(self.directory, role, name, out=folder)
            files = self._issued[(role, name)] = ClientTLS(self.ca, cert, folder / f"{name}.key")
        return files

    def client_args(self, role: str, name: str) -> list[str]:
        """``--ca``, ``--cert`` and ``--key`` for a client command of ``role``/``name``."""
        files = self.client(role, name)
        return ["--ca", str(files.ca), "--cert", str(files.cert), "--key", str(files.key)]
