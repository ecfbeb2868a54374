#!/usr/bin/env bash
# The Python versions the package declares, and where this machine has them.
# Meant to be sourced by .ci/run (tests/unit/test_supported_pythons.py sources it too).

# Print the versions setup.cfg's classifiers declare ("3.10" ...), one a line, in order.
ci_declared_pythons() {
  sed -n 's/^[[:space:]]*Programming Language :: Python :: \(3\.[0-9][0-9]*\)[[:space:]]*$/\1/p' \
    "${1:-setup.cfg}" | sort -V
}

# Print the path of an interpreter for version $1 ("3.12"): pyenv's newest 3.12.x,
# else python3.12 on PATH, else Debian's python3.12 package (installed here). Fails,
# saying what it tried, when none is found or the one found is another version.
ci_find_python() {
  local version=$1 candidate="" found=""
  local pyenv_root="${PYENV_ROOT:-$HOME/.pyenv}"
  candidate=$(ls -d "$pyenv_root/versions/$version".*/bin/python 2>/dev/null \
    | grep -E "/versions/$version\.[0-9]+/bin/python$" | sort -V | tail -n 1 || true)
  if [ -n "$candidate" ] && [ -x "$candidate" ]; then
    found=$candidate
  elif command -v "python$version" >/dev/null 2>&1; then
    found=$(command -v "python$version")
  elif command -v apt-get >/dev/null 2>&1; then
    if ! apt-cache show "python$version-venv" >/dev/null 2>&1; then
      apt-get update -qq >&2 || true
    fi
    if apt-cache show "python$version-venv" >/dev/null 2>&1; then
      echo "python $version: installing Debian's python$version-venv" >&2
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        "python$version" "python$version-venv" >/dev/null
      found=$(command -v "python$version" || true)
    fi
  fi
  if [ -z "$found" ]; then
    echo "FAIL: setup.cfg declares Python $version, and this machine has none" \
      "(looked in $pyenv_root/versions/$version.*, for python$version on PATH" \
      "and for Debian's python$version-venv)" >&2
    return 1
  fi
  local actual
  actual=$("$found" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  if [ "$actual" != "$version" ]; then
    echo "FAIL: $found is Python $actual, not the declared $version" >&2
    return 1
  fi
  echo "$found"
}
