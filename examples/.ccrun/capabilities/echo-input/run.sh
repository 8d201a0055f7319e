#!/bin/sh
# A ccrun @shell capability. It runs on the host with your rights, from the
# project root; CCRUN_CAPABILITY_DIR is this directory. The call's input
# (JSON, checked against "parameters") arrives on stdin.
set -eu
cat
echo
