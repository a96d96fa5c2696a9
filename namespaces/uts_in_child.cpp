#include "namespaces/uts_in_child.h"

#include <errno.h>
#include <unistd.h>

#include "namespaces/call_note_in_child.h"

namespace stockade::ns {

int setHostnameInChild(const char* name, size_t length, bool refuse) noexcept {
    if (refuse || sethostname(name, length) < 0)
        return noteCallInChild("sethostname")
            .path(name)
            .number(static_cast<long>(length))
            .done(errno);
    return setdomainname("", 0) < 0
               ? noteCallInChild("setdomainname").path("").number(0).done(errno)
               : 0;
}

}  // namespace stockade::ns
