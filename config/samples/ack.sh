#!/usr/bin/env bash
# Acknowledge a window a session's page spawned (a popup, a target=_blank tab, a
# window.open). Until every spawned window of a session has a disposition, the session
# holds its new Open windows (unacknowledged_spawns). Find them:
#   kubectl get browserwindows -l tabwarden.dev/source=spawned
#   kubectl get browsersessions            # the Unacked column counts them
#
# Usage: config/samples/ack.sh <window> [Close|Keep|Temporary] [namespace]
#   Close      close it now (the usual answer for a compose popup you did not want)
#   Keep       keep it open, also after the session ends (a deliverable)
#   Temporary  keep it while the session runs, close it when the session ends
# The same patch works for any window, e.g. Close on an Open window closes its page now.
set -euo pipefail
window=${1:?usage: $0 <window> [Close|Keep|Temporary] [namespace]}
disposition=${2:-Close}
namespace=${3:-default}
kubectl patch browserwindow "$window" -n "$namespace" --type=merge \
  -p "{\"spec\":{\"disposition\":\"$disposition\"}}"
