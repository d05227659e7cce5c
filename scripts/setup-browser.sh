#!/usr/bin/env bash
# Installs headless Chromium (Debian's `chromium` and `chromium-driver`) for
# the HTML report's browser test (tests/html_report.rs), only when
# /usr/bin/chromium is missing (or MSPROBE_RS_REINSTALL=1: downloaded and
# installed again, as on a new machine; scripts/fresh-check.sh sets it).
# Idempotent. Prints the browser's path.
set -euo pipefail
if [ ! -x /usr/bin/chromium ] || [ "${MSPROBE_RS_REINSTALL:-}" = 1 ]; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null; then SUDO=sudo; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --reinstall chromium chromium-driver >/dev/null
fi
echo /usr/bin/chromium
