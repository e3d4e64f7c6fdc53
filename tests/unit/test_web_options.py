"""``serve --web-port``: off by default, from the command line, the environment or the file."""

from __future__ import annotations

from pathlib import Path

from controller.runtime import settings
from controller.runtime.cli import _config, _parser


def _web_port(argv: list[str], environ: dict[str, str], config: Path | None = None) -> int | None:
    parser, serve = _parser()
    settings.apply(serve, config, environ)
    args = parser.parse_args(["serve", "--insecure", *argv])
    return _config(args, environ).web_port


def test_the_web_port_is_off_unless_asked_for(tmp_path: Path) -> None:
    assert _web_port([], {}) is None
    assert _web_port(["--web-port", "8443"], {}) == 8443
    assert _web_port([], {"JACKPOT_WEB_PORT": "9443"}) == 9443
    config = tmp_path / "controller.toml"
    config.write_text("web-port = 7443\n")
    assert _web_port([], {}, config) == 7443
    assert _web_port(["--web-port", "-1"], {"JACKPOT_WEB_PORT": "9443"}) is None
    assert _web_port(["--web-port", "0"], {}) == 0  # any free port (tests)
