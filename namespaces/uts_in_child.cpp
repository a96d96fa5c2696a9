#include "namespaces/uts_in_child.h"

#include <errno.h>
#include <unistd.h>

namespace stockade::ns {

int setHostnameInChild(const char* name, size_t length) noexcept {
    if (sethostname(name, length) < 0) return errno;
    return setdomainname("", 0) < 0 ? errno : 0;
}

}  // namespace stockade::ns
