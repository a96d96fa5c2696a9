#include "runtime/supervisor/cancel_hold.h"

#include <signal.h>

namespace stockade {

namespace {

constexpr int kCancels[] = {SIGINT, SIGTERM, SIGHUP};

volatile sig_atomic_t held_cancel = 0;

void onCancel(int sig) {
    if (held_cancel == 0) {
        held_cancel = sig;
        return;
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

bool ignored(int sig) {
    struct sigaction now {};
    return sigaction(sig, nullptr, &now) == 0 && now.sa_handler == SIG_IGN;
}

}  // namespace

void holdCancelUntilSupervised() {
    for (int sig : kCancels) {
        if (ignored(sig)) continue;
        struct sigaction hold {};
        hold.sa_handler = onCancel;
        sigemptyset(&hold.sa_mask);
        // Restarted: what the plan reads or writes is never cut short by
        // the cancel it will end in.
        hold.sa_flags = SA_RESTART;
        sigaction(sig, &hold, nullptr);
    }
}

int heldCancel() {
    return held_cancel;
}

void cancelSignals(sigset_t* set) {
    sigemptyset(set);
    for (int sig : kCancels)
        if (!ignored(sig)) sigaddset(set, sig);
}

}  // namespace stockade
