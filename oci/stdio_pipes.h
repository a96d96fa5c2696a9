// The container's stdio, when it is the caller's pipes (conmon's, the
// shim's): made reopenable by the container's process, as runc makes it.
#pragma once

#include <sys/types.h>

namespace stockade::oci {

// As root: each of fds 0-2 that is an anonymous pipe of the caller's
// (host root's, mode 0600) is given to `host_uid`, the host uid of the
// process that gets it, as runc's fixStdioPermissions gives it to the
// process user; reopened through /dev/stdout (/proc/self/fd/1) it was closed
// to a leased id, which broke `echo > /dev/stderr`, `tee /dev/stdout` and
// nginx's log links. Anonymous pipes only (pipefs: a named FIFO or a file
// is the host's filesystem), only the caller's own; the group is kept.
void giveStdioPipes(uid_t host_uid);

}  // namespace stockade::oci
