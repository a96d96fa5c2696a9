// A cancel (SIGINT, SIGTERM, SIGHUP) that comes while `run` still reads its
// options or plans the sandbox, before the supervisor's signalfd exists.
// Acted on by the default action it ended stockade with no record (and a
// cgroup leaf made); held, the supervisor takes it before the clone and the
// run ends "cancelled" with its record and teardown. A second one while
// the first is held is not waited on: the default action, as before (a plan
// stuck on a FIFO or a hung filesystem stays killable by a plain signal).
#pragma once

#include <signal.h>

namespace stockade {

// From `run`'s start: a handler that keeps the first cancel. A signal the
// caller left ignored (nohup's SIGHUP, a background job's SIGINT) stays
// ignored, here and for the whole run (cancelSignals()).
void holdCancelUntilSupervised();

// The first cancel held since then, 0 if none.
int heldCancel();

// SIGINT, SIGTERM and SIGHUP but those whose disposition is SIG_IGN.
void cancelSignals(sigset_t* set);

}  // namespace stockade
