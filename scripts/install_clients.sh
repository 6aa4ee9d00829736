#!/usr/bin/env bash
# Installs the real clients used by the real-client checks into a cache dir:
#   opencode-ai@1.18.33 (the opencode CLI, a Bun single-file binary in a platform package)
#   ccusage@20.0.24     (a Rust binary in @ccusage/ccusage-<platform>; 20.0.26 has no
#                        platform packages on the registry, so it does not install)
# and, when asked by name:
#   claude-code-log     claude-code-log==1.7.0 (PyPI) in a venv: CCL_BIN
#   claude-code         @anthropic-ai/claude-code@2.1.197 (npm, its native binary from the
#                       platform package; about 250 MB): CLAUDE_BIN
#   hermes              hermes-agent==0.19.0 (PyPI) in a venv: HERMES_BIN, HERMES_PY
# Idempotent: nothing is fetched when they are already there at these versions.
# Prints shell assignments on stdout (logs go to stderr), so callers can do
#   eval "$(scripts/install_clients.sh)"                   # sets OPENCODE_BIN and CCUSAGE_BIN
#   eval "$(scripts/install_clients.sh claude-code-log)"   # ... and CCL_BIN
# Env: SD_CLIENTS (default ~/.cache/session-doctor-clients).
set -euo pipefail

OPENCODE_VERSION=1.18.33
CCUSAGE_VERSION=20.0.24
CCL_VERSION=1.7.0
CLAUDE_VERSION=2.1.197
HERMES_VERSION=0.19.0
dir="${SD_CLIENTS:-$HOME/.cache/session-doctor-clients}"

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) plat=linux-x64 ;;
  Linux-aarch64) plat=linux-arm64 ;;
  Darwin-x86_64) plat=darwin-x64 ;;
  Darwin-arm64) plat=darwin-arm64 ;;
  *) echo "install_clients: unsupported platform $(uname -sm)" >&2; exit 1 ;;
esac
nm="$dir/node_modules"
ccusage_bin="$nm/.bin/ccusage"

# opencode --version creates ~/.config/opencode, ~/.local/share/opencode etc.: run it in a scratch HOME.
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
oc_version() {
  [ -x "$1" ] && HOME="$scratch" XDG_DATA_HOME="$scratch/d" XDG_CONFIG_HOME="$scratch/c" \
    XDG_CACHE_HOME="$scratch/k" XDG_STATE_HOME="$scratch/s" timeout 60 "$1" --version 2>/dev/null
}
# The AVX2 build first, then the baseline build (CPUs without AVX2) where there is one.
find_opencode() {
  local b
  for b in "$nm/opencode-$plat/bin/opencode" "$nm/opencode-$plat-baseline/bin/opencode"; do
    if [ "$(oc_version "$b" || true)" = "$OPENCODE_VERSION" ]; then echo "$b"; return 0; fi
  done
  return 1
}
cc_ok() { [ "$("$ccusage_bin" --version 2>/dev/null || true)" = "ccusage $CCUSAGE_VERSION" ]; }

if find_opencode >/dev/null && cc_ok; then
  echo "install_clients: already installed in $dir" >&2
else
  echo "install_clients: npm install into $dir" >&2
  mkdir -p "$dir"
  # --ignore-scripts: opencode-ai's postinstall only links the platform binary; not needed.
  npm install --prefix "$dir" --no-audit --no-fund --ignore-scripts --save-exact \
    "opencode-ai@$OPENCODE_VERSION" "ccusage@$CCUSAGE_VERSION" >&2
fi

opencode_bin="$(find_opencode)" || { echo "install_clients: opencode $OPENCODE_VERSION does not run" >&2; exit 1; }
cc_ok || { echo "install_clients: ccusage $CCUSAGE_VERSION does not run" >&2; exit 1; }
echo "install_clients: opencode $OPENCODE_VERSION at $opencode_bin; ccusage $CCUSAGE_VERSION at $ccusage_bin" >&2
printf 'OPENCODE_BIN=%q\nCCUSAGE_BIN=%q\n' "$opencode_bin" "$ccusage_bin"

for extra in "$@"; do
  case "$extra" in
    claude-code-log)
      venv="$dir/ccl-venv"
      ccl="$venv/bin/claude-code-log"
      if [ "$("$ccl" --version 2>/dev/null | grep -o '[0-9][0-9.]*' | head -n 1)" != "$CCL_VERSION" ]; then
        echo "install_clients: pip install claude-code-log==$CCL_VERSION into $venv" >&2
        python3 -m venv "$venv" >&2
        "$venv/bin/pip" install -q "claude-code-log==$CCL_VERSION" >&2
      fi
      "$ccl" --version >/dev/null 2>&1 || { echo "install_clients: claude-code-log does not run" >&2; exit 1; }
      echo "install_clients: claude-code-log $CCL_VERSION at $ccl" >&2
      printf 'CCL_BIN=%q\n' "$ccl"
      ;;
    claude-code)
      cdir="$dir/claude-code"
      claude="$cdir/node_modules/@anthropic-ai/claude-code-$plat/claude"
      if [ "$(HOME="$scratch" "$claude" --version 2>/dev/null | cut -d' ' -f1)" != "$CLAUDE_VERSION" ]; then
        echo "install_clients: npm install @anthropic-ai/claude-code@$CLAUDE_VERSION into $cdir" >&2
        mkdir -p "$cdir"
        npm install --prefix "$cdir" --no-audit --no-fund --ignore-scripts --save-exact \
          "@anthropic-ai/claude-code@$CLAUDE_VERSION" >&2
      fi
      [ "$(HOME="$scratch" "$claude" --version 2>/dev/null | cut -d' ' -f1)" = "$CLAUDE_VERSION" ] \
        || { echo "install_clients: claude $CLAUDE_VERSION does not run" >&2; exit 1; }
      echo "install_clients: claude $CLAUDE_VERSION at $claude" >&2
      printf 'CLAUDE_BIN=%q\n' "$claude"
      ;;
    hermes)
      # hermes-agent (PyPI) in its own venv; `hermes --version` prints "Hermes Agent v0.19.0 (...)".
      # HERMES_PY is that venv's python (for `from hermes_state import SessionDB`).
      venv="$dir/hermes-venv"
      hermes="$venv/bin/hermes"
      hermes_ver() { "$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("hermes-agent"))' 2>/dev/null || true; }
      if [ "$(hermes_ver)" != "$HERMES_VERSION" ] || [ ! -x "$hermes" ]; then
        echo "install_clients: pip install hermes-agent==$HERMES_VERSION into $venv" >&2
        python3 -m venv "$venv" >&2
        "$venv/bin/pip" install -q "hermes-agent==$HERMES_VERSION" >&2
      fi
      [ "$(hermes_ver)" = "$HERMES_VERSION" ] && "$venv/bin/python" -c 'import hermes_state' 2>/dev/null \
        || { echo "install_clients: hermes-agent $HERMES_VERSION does not import" >&2; exit 1; }
      echo "install_clients: hermes-agent $HERMES_VERSION at $hermes" >&2
      printf 'HERMES_BIN=%q\nHERMES_PY=%q\n' "$hermes" "$venv/bin/python"
      ;;
    *) echo "install_clients: unknown client $extra" >&2; exit 1 ;;
  esac
done
