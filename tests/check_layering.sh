#!/bin/sh
# The one-way layering of docs/design.md section 1, checked on every test run: the engine includes no Qt, its public
# headers no torch, widgets never include report/ or app/, the report never includes app/, the remote engine no Qt.
set -u
root=${1:-.}
status=0
bad=$(grep -rlE '#include[[:space:]]*[<"]Q' "$root/engine" 2>/dev/null)
[ -n "$bad" ] && { echo "engine/ includes Qt headers: $bad"; status=1; }
bad=$(grep -rlE '#include[[:space:]]*[<"](torch|ATen|c10)/' "$root/engine/include" 2>/dev/null)
[ -n "$bad" ] && { echo "public engine headers include torch: $bad"; status=1; }
if [ -d "$root/widgets" ]; then
    bad=$(grep -rlE '#include[[:space:]]*[<"](\.\./)*(app|report)/' "$root/widgets" 2>/dev/null)
    [ -n "$bad" ] && { echo "widgets/ includes app/ or report/: $bad"; status=1; }
fi
bad=$(grep -rlE '#include[[:space:]]*[<"](\.\./)*app/' "$root/report" 2>/dev/null)
[ -n "$bad" ] && { echo "report/ includes app/: $bad"; status=1; }
# The remote engine's server is part of the headless build: no Qt in remote/.
bad=$(grep -rlE '#include[[:space:]]*[<"]Q' "$root/remote" 2>/dev/null)
[ -n "$bad" ] && { echo "remote/ includes Qt headers: $bad"; status=1; }
[ $status -eq 0 ] && echo "layering: ok"
exit $status
