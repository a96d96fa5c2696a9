#include "namespaces/uts_in_child.h"

#include <errno.h>
#include <unistd.h>

#include "namespaces/call_note_in_child.h"

namespace stockade::ns {

int setHostnameInChild(const char* name, size_t length, const char* domain, size_t domain_length,
                       bool refuse) noexcept {
    if (length > 0 && (refuse || sethostname(name, length) < 0))
        return noteCallInChild("sethostname")
            .path(name)
            .number(static_cast<long>(length))
            .done(errno);
    if (domain && setdomainname(domain, domain_length) < 0)
        return noteCallInChild("setdomainname")
            .path(domain)
            .number(static_cast<long>(domain_length))
            .done(errno);
    return 0;
}

}  // namespace stockade::ns
