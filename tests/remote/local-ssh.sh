#!/bin/sh
# ssh's stand-in for the remote tests (ATTNSCOPE_SSH): called as ssh is, `local-ssh.sh [USER@]HOST COMMAND`, it
# leaves the host aside and runs the command here through a shell, as sshd runs it through the user's shell.
# ATTNSCOPE_TEST_SSH_LOG, when set, gets the host and command it was given, one line each; ATTNSCOPE_TEST_SSH_PIDS
# the process id the command runs as (the exec keeps it), for a test that drops the link. ATTNSCOPE_LINK_HOME, when
# set, is the host's home: HOME there, and where the command runs (as sshd runs it in the user's home).
host="$1"
shift
if [ -n "$ATTNSCOPE_TEST_SSH_LOG" ]; then
    printf '%s\n%s\n' "$host" "$*" >> "$ATTNSCOPE_TEST_SSH_LOG"
fi
if [ -n "$ATTNSCOPE_TEST_SSH_PIDS" ]; then
    echo $$ >> "$ATTNSCOPE_TEST_SSH_PIDS"
fi
if [ -n "$ATTNSCOPE_LINK_HOME" ]; then
    cd "$ATTNSCOPE_LINK_HOME"
    export HOME="$ATTNSCOPE_LINK_HOME"
fi
exec sh -c "$*"
