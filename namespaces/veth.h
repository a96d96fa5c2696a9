// Network namespace, parent side, for the veth backend of `stockade serve`
// (docs/dev-servers.md): a veth pair between the host and a sandbox's network
// namespace, made with rtnetlink written by hand (a request, an ack: no
// libmnl for four message types). Every function acts in the network
// namespace of the calling thread; inNetworkNamespace() runs a step in
// another one. Needs CAP_NET_ADMIN (root in the initial user namespace).
#pragma once

#include <netinet/in.h>

#include <functional>
#include <string>

#include "base/error.h"
#include "base/unique_fd.h"

namespace stockade::ns {

// Creates the pair `host_name` (here) and `peer_name` in the network namespace
// `peer_netns_fd` (an fd of /proc/PID/ns/net). Both ends start down and
// without addresses.
Status createVethPair(const std::string& host_name, const std::string& peer_name,
                      int peer_netns_fd);

// Gives `name` the address/prefix and brings it up.
Status bringLinkUp(const std::string& name, in_addr address, int prefix_length);

// Deletes the link `name` (and so its veth peer); false when there was none.
Result<bool> deleteLink(const std::string& name);

// Writes `value` to /proc/sys/`key` of this thread's network namespace
// (per-namespace sysctls such as net/ipv4/conf/eth0/route_localnet).
// `missing_ok`: a key that does not exist (IPv6 disabled at boot) is no error.
Status writeNetSysctl(const std::string& key, const char* value, bool missing_ok = false);

// Runs `step` on a thread of its own that first joins `netns_fd`'s network
// namespace (setns(2) acts per thread), so the caller's own namespace is
// never left. Processes the step spawns start in that namespace too.
Status inNetworkNamespace(int netns_fd, const std::function<Status()>& step);

// Runs `step` on a thread of its own in a new, empty network namespace, which
// goes away with everything in it when the thread ends (stockade check).
Status inThrowawayNetworkNamespace(const std::function<Status()>& step);

}  // namespace stockade::ns
