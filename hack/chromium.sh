#!/usr/bin/env bash
# chromium.sh makes sure Debian's Chromium is installed, installing it with
# apt-get when running as root. Tests never skip for a missing browser: without
# one they fail, so this runs before them.
set -euo pipefail
if [[ -n "${TABWARDEN_CHROMIUM:-}" && -x "${TABWARDEN_CHROMIUM}" ]] || command -v chromium >/dev/null 2>&1 || [[ -x /usr/lib/chromium/chromium ]]; then
  exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "chromium is not installed: run 'sudo apt-get install -y chromium' (Debian) or set TABWARDEN_CHROMIUM to a Chromium binary" >&2
  exit 1
fi
echo "chromium: installing Debian's chromium with apt-get" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq chromium >/dev/null
echo "chromium: $(/usr/bin/chromium --version 2>/dev/null | head -n1)" >&2
