// The veth backend of `stockade serve --net-backend veth` (root only;
// docs/dev-servers.md): a veth pair between the host and the sandbox's
// network namespace, a /30 of link-local addresses, and nftables rules on both
// ends so that the published port is the only way in and nothing goes out.
//
// Each sandbox takes a slot N (0..8191) of 169.254.128.0/17:
//   host end   stkNh  169.254.128.0 + 4N + 1 /30, in the host's namespace
//   sandbox    eth0   169.254.128.0 + 4N + 2 /30, no default route
//   host table inet stockade_N: from stkNh only replies (input), nothing
//              forwarded to or from it
//   sandbox    table inet stockade: tcp to PORT on eth0 DNAT to 127.0.0.1,
//              nothing else in; only replies out
// The slot is owned through /run/stockade/net/slot-N, flock'ed by the
// supervisor for its whole life: a free lock means its owner is dead and what
// the slot names is stale (removeStaleVethNetworks()).
#pragma once

#include <netinet/in.h>
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "base/error.h"
#include "base/unique_fd.h"

namespace stockade {

class VethNetwork {
  public:
    // Connects the sandbox whose init is `init_pid` (a child of the caller,
    // not yet reaped) for `port`. Everything made is removed again when this
    // fails, and when the returned object is destroyed.
    static Result<std::unique_ptr<VethNetwork>> create(pid_t init_pid, uint16_t port);
    ~VethNetwork();
    VethNetwork(const VethNetwork&) = delete;
    VethNetwork& operator=(const VethNetwork&) = delete;

    in_addr hostAddress() const { return host_address_; }
    in_addr sandboxAddress() const { return sandbox_address_; }
    const std::string& hostLink() const { return host_link_; }
    int slot() const { return slot_; }

  private:
    VethNetwork(int slot, UniqueFd lock);
    void tearDown();

    int slot_;
    UniqueFd lock_;
    std::string host_link_;
    std::string table_;
    in_addr host_address_{};
    in_addr sandbox_address_{};
    bool table_added_ = false;
    bool link_created_ = false;  // never delete a link of that name made by another
};

// Removes the links, tables and slot files of supervisors that died without
// tearing down (SIGKILL). Quietly does nothing when not root.
void removeStaleVethNetworks();

// Why the veth backend cannot run here, with the fix, or nullopt. Cheap
// (euid, the nft binary); the real attempt may still fail, and says why.
std::optional<std::string> vethBackendProblem();

// Tries the backend's kernel side where it leaves nothing behind, in a
// throwaway network namespace: a veth pair, and an nftables table with the
// NAT and conntrack rules the sandbox's side uses (stockade check, root).
Status probeVethBackend();

}  // namespace stockade
