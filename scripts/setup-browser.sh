#!/usr/bin/env bash
# Installs headless Chromium (Debian's `chromium` and `chromium-driver`) for
# the HTML report's browser test (tests/html_report.rs), only when
# /usr/bin/chromium is missing. Idempotent. Prints the browser's path.
set -euo pipefail
if [ ! -x /usr/bin/chromium ]; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null; then SUDO=sudo; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium chromium-driver >/dev/null
fi
echo /usr/bin/chromium
