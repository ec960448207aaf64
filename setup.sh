#!/usr/bin/env bash
# Set up graphview in ./.venv on a fresh machine (safe to re-run; fast when nothing changed).
set -euo pipefail
cd "$(dirname "$0")"
# Qt needs a few system libraries even to draw offscreen, and the xcb ones to open a window on an
# X display (Xvfb included); install them if this machine lacks them.
missing=()
for lib in libEGL.so.1:libegl1 libGL.so.1:libgl1 libxkbcommon.so.0:libxkbcommon0 libfontconfig.so.1:libfontconfig1 \
           libglib-2.0.so.0:libglib2.0-0 libdbus-1.so.3:libdbus-1-3 libX11.so.6:libx11-6 \
           libX11-xcb.so.1:libx11-xcb1 libxcb-cursor.so.0:libxcb-cursor0 libxcb-icccm.so.4:libxcb-icccm4 \
           libxcb-image.so.0:libxcb-image0 libxcb-keysyms.so.1:libxcb-keysyms1 libxcb-randr.so.0:libxcb-randr0 \
           libxcb-render-util.so.0:libxcb-render-util0 libxcb-shape.so.0:libxcb-shape0 libxcb-xkb.so.1:libxcb-xkb1 \
           libxcb-sync.so.1:libxcb-sync1 libxcb-xfixes.so.0:libxcb-xfixes0 libxkbcommon-x11.so.0:libxkbcommon-x11-0; do
  ldconfig -p 2>/dev/null | grep -q "${lib%%:*}" || missing+=("${lib##*:}")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" fonts-dejavu-core >/dev/null
  else
    echo "setup.sh: Qt needs these system packages: ${missing[*]} (install them, then run setup.sh again)" >&2
  fi
fi
# A virtual display for the app on a machine without a screen (`xvfb-run -a .venv/bin/graphview ...`)
# and xdotool, with which the tests see its window appear.
tools=()
command -v xvfb-run >/dev/null || tools+=(xvfb xauth)
command -v xdotool >/dev/null || tools+=(xdotool)
if [ ${#tools[@]} -gt 0 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${tools[@]}" >/dev/null; } ||
    echo "setup.sh: could not install ${tools[*]}; the app still runs on a real display" >&2
fi
# --tests: also Chromium and its driver, in which the tests open the exported web page (a real
# browser, headless); the app itself never needs them
if [ "${1:-}" = "--tests" ] && ! { command -v chromium >/dev/null && command -v chromedriver >/dev/null; }; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; } ||
      echo "setup.sh: could not install chromium and chromium-driver; the web page's browser test is skipped" >&2
  else
    echo "setup.sh: the web page's browser test needs chromium and chromedriver (install them to run it)" >&2
  fi
fi
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
# torch first and pinned: a CPU wheel of 2.13.0 is what we test against; an unpinned torch
# would pull a multi-GB CUDA build. pyproject.toml declares torch>=2.2 for other machines.
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  .venv/bin/pip install --quiet --disable-pip-version-check torch==2.13.0
fi
.venv/bin/pip install --quiet --disable-pip-version-check -e ".[test]" "PySide6-Essentials!=6.12.0"
