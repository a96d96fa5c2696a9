#include "base/inherited_fds.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>

#include <bitset>

namespace stockade {

namespace {

// Descriptors above this are judged not inherited: a caller handing stockade
// fd 5000 for its record is not a case worth a bigger table.
constexpr int kNoted = 1024;

bool noted = false;
std::bitset<kNoted> open_at_entry;

}  // namespace

void noteInheritedFds() noexcept {
    // One poll(2) over every slot answers POLLNVAL for each closed one: a
    // single system call where a fcntl(F_GETFD) per slot took 1,024 (1.2 ms
    // of every run on this VM, where a system call costs about 1 µs).
    // poll refuses more entries than RLIMIT_NOFILE allows; slots past the
    // soft limit (open only if it was lowered after they were) and a poll
    // that fails for any reason are asked one by one, as before.
    static pollfd slots[kNoted];
    rlimit files{};
    int polled = getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < kNoted
                     ? static_cast<int>(files.rlim_cur)
                     : kNoted;
    for (int fd = 0; fd < polled; ++fd) slots[fd] = {fd, 0, 0};
    if (poll(slots, static_cast<nfds_t>(polled), 0) < 0) polled = 0;
    for (int fd = 0; fd < polled; ++fd)
        if (!(slots[fd].revents & POLLNVAL)) open_at_entry.set(static_cast<size_t>(fd));
    for (int fd = polled; fd < kNoted; ++fd)
        if (fcntl(fd, F_GETFD) >= 0) open_at_entry.set(static_cast<size_t>(fd));
    noted = true;
}

bool wasInherited(int fd) noexcept {
    if (!noted) return true;
    return fd >= 0 && fd < kNoted && open_at_entry.test(static_cast<size_t>(fd));
}

}  // namespace stockade
