#!/usr/bin/env bash
# Install what the integration-test servers need beyond the Java artifacts
# (those come from scripts/setup-java.sh):
#   - MariaDB server from Debian packages (mariadbd, mariadb-install-db)
#   - openssl (the TLS test servers make a throw-away CA and certificates)
#   - Python client libraries for the tests (scripts/requirements-servers.txt)
# Idempotent. Needs root (or sudo) for apt-get only when MariaDB is missing.
# Does not start anything: tests/servers/ starts servers on demand.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-}"
if [[ -z "$PYTHON" ]]; then
  if [[ -x "$ROOT/.venv/bin/python" ]]; then PYTHON="$ROOT/.venv/bin/python"; else PYTHON=python3; fi
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi

have_mariadb() {
  command -v mariadbd >/dev/null || [[ -x /usr/sbin/mariadbd ]] || command -v mysqld >/dev/null || [[ -x /usr/sbin/mysqld ]]
}

if have_mariadb && { command -v mariadb-install-db >/dev/null || command -v mysql_install_db >/dev/null; }; then
  echo "setup-servers: MariaDB already installed"
else
  echo "setup-servers: installing mariadb-server from Debian packages"
  # Keep the package's init script from starting a system-wide server on
  # port 3306 during installation: tests start their own.
  POLICY=/usr/sbin/policy-rc.d
  CREATED_POLICY=0
  if [[ ! -e $POLICY ]]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee $POLICY >/dev/null
    $SUDO chmod +x $POLICY
    CREATED_POLICY=1
  fi
  trap '[[ $CREATED_POLICY -eq 1 ]] && $SUDO rm -f '"$POLICY" EXIT
  $SUDO apt-get update -q
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
      mariadb-server mariadb-client
fi

if ! command -v openssl >/dev/null; then
  echo "setup-servers: installing openssl"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends openssl
fi

# setpriv (util-linux, essential on Debian) drops OpenSearch to an
# unprivileged user when tests run as root and sets the parent-death signal.
if ! command -v setpriv >/dev/null && [[ ! -x /usr/bin/setpriv ]]; then
  $SUDO apt-get install -y -q util-linux
fi
getent passwd "${ETL_TEST_SERVER_USER:-nobody}" >/dev/null || {
  echo "setup-servers: user ${ETL_TEST_SERVER_USER:-nobody} missing (OpenSearch cannot run as root)" >&2; exit 1; }

echo "setup-servers: installing Python client libraries"
"$PYTHON" -m pip install -q -r "$ROOT/scripts/requirements-servers.txt"
