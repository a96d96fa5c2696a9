#include "base/inherited_fds.h"

#include <fcntl.h>

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
    for (int fd = 0; fd < kNoted; ++fd)
        if (fcntl(fd, F_GETFD) >= 0) open_at_entry.set(static_cast<size_t>(fd));
    noted = true;
}

bool wasInherited(int fd) noexcept {
    if (!noted) return true;
    return fd >= 0 && fd < kNoted && open_at_entry.test(static_cast<size_t>(fd));
}

}  // namespace stockade
