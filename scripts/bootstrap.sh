#!/usr/bin/env bash
# Make a fresh Debian machine ready: Python venv support, redis-server, tmux, chromium, the
# project's venv.
# Used by `make demo`, `make test` and CI. Installs Debian packages only when missing, with
# sudo when not root. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    echo "bootstrap: need root to run: $*" >&2; exit 1; fi
}

apt_install() {
  echo "bootstrap: installing Debian packages: $*"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "bootstrap: Python 3.11 or newer is needed ($PYTHON is $("$PYTHON" --version 2>&1))" >&2
  exit 1
fi

missing=()
command -v redis-server >/dev/null || missing+=(redis-server)
command -v redis-cli >/dev/null || missing+=(redis-tools)  # makes the tests' Redis Cluster
command -v tmux >/dev/null || missing+=(tmux)  # the dealer console's test types into a terminal
# Alertmanager and amtool: the alerting tests check deploy/alertmanager and route real alerts.
command -v prometheus-alertmanager >/dev/null || missing+=(prometheus-alertmanager)
# The sign and floor view tests drive Debian's Chromium headless (Playwright, its own driver,
# never its browser downloads: the network is closed).
command -v chromium >/dev/null || missing+=(chromium)
# The gaming-day tests build a tiny LD_PRELOAD clock for their redis-server (controller/testing/clock.py).
command -v gcc >/dev/null || missing+=(gcc libc6-dev)
command -v npm >/dev/null || missing+=(npm)  # installs buf (below)
if [ ! -x "$VENV/bin/python" ] && ! "$PYTHON" -c 'import ensurepip' 2>/dev/null; then
  missing+=("python3-venv")
fi
if [ "${#missing[@]}" -gt 0 ]; then apt_install "${missing[@]}"; fi

# Debian's redis-server and prometheus-alertmanager packages start system services (ports 6379,
# 9093) where systemd runs; nothing here uses them (demo and tests start their own servers on
# free ports).

stamp="$VENV/.installed"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ constraints.txt -nt "$stamp" ]; then
  [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q -c constraints.txt -e '.[dev]'
  # The documentation site (mkdocs.yml; `make check` builds it with --strict).
  "$VENV/bin/python" -m pip install -q -c constraints.txt mkdocs mkdocs-material
  touch "$stamp"
fi

# The lowest redis-py pyproject.toml allows, in a folder of its own: a round runs on it
# (tests/system/test_redis_py_lowest.py puts the folder first on PYTHONPATH); the venv's own
# redis-py (constraints.txt) is the top of the range. Its hiredis is the venv's.
redis_lowest=$(sed -n 's/^ *"redis\[hiredis\]>=\([0-9.]*\),<[0-9]*",.*/\1/p' pyproject.toml)
redis_low="$VENV/redis-low"
if [ -z "$redis_lowest" ]; then
  echo "bootstrap: no redis[hiredis]>=LOWEST,<UPPER in pyproject.toml" >&2; exit 1
fi
if [ ! -d "$redis_low/redis-$redis_lowest.dist-info" ]; then
  rm -rf "$redis_low"
  "$VENV/bin/python" -m pip install -q --target "$redis_low" "redis==$redis_lowest"
fi

# buf (the @bufbuild/buf npm package, pinned): `make check` lints proto/ and checks it against
# the last release (proto/README.md). Installed into .buf/ (ignored by git), never globally.
BUF_VERSION=1.75.0
buf=.buf/node_modules/.bin/buf
if [ ! -x "$buf" ] || [ "$("$buf" --version 2>/dev/null)" != "$BUF_VERSION" ]; then
  npm install --prefix .buf --no-save --no-audit --no-fund --loglevel=error \
    "@bufbuild/buf@$BUF_VERSION" >/dev/null
fi
