# Sourced by the cluster scripts: waiting on a state, never sleeping and hoping.
# wait_until CMD...: runs CMD until it succeeds, at most ${POLLS:-100} times, ${POLL_SECONDS:-0.2}
# seconds apart; returns 1 when it never does.
wait_until() {
  local i
  for ((i = 0; i < ${POLLS:-100}; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep "${POLL_SECONDS:-0.2}"
  done
  return 1
}
