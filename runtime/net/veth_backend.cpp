#include "runtime/net/veth_backend.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "base/file_lock.h"
#include "namespaces/veth.h"
#include "runtime/net/nftables.h"

namespace stockade {

namespace {

constexpr const char* kSlotDir = "/run/stockade/net";
// 169.254.128.0/17 in /30s: the upper half of the link-local range, clear of
// 169.254.169.254 (cloud metadata services), which sits in the lower half.
constexpr uint32_t kPoolBase = 0xa9fe8000;  // 169.254.128.0
constexpr int kSlots = 1 << 13;             // 2^15 addresses / 4
constexpr int kPrefixLength = 30;
constexpr const char* kSandboxLink = "eth0";

std::string slotPath(int slot) {
    return std::string(kSlotDir) + "/slot-" + std::to_string(slot);
}
std::string hostLinkName(int slot) {
    return "stk" + std::to_string(slot) + "h";
}
std::string tableName(int slot) {
    return "stockade_" + std::to_string(slot);
}
in_addr poolAddress(int slot, uint32_t host_part) {
    in_addr out{};
    out.s_addr = htonl(kPoolBase + 4u * static_cast<uint32_t>(slot) + host_part);
    return out;
}

// Removing a table that may not exist: adding it first makes the pair one
// transaction that always succeeds (nft 1.0.6 has no `destroy`).
std::string removeTableRuleset(const std::string& table) {
    return "add table inet " + table + "\ndelete table inet " + table + "\n";
}

// Host side: from the sandbox's end only replies to connections the host
// made (the forwarder's), so none of the host's services or addresses is
// reachable from inside; nothing forwarded to or from it, whatever the
// host's ip_forward says. Matched by name, so it holds before the link exists.
std::string hostRuleset(const std::string& table, const std::string& link) {
    const std::string in = "iifname \"" + link + "\" ";
    return removeTableRuleset(table) + "table inet " + table +
           " {\n"
           "  chain input {\n"
           "    type filter hook input priority filter; policy accept;\n"
           "    " +
           in + "ct state established,related accept\n    " + in +
           "drop\n"
           "  }\n"
           "  chain forward {\n"
           "    type filter hook forward priority filter; policy accept;\n"
           "    " +
           in + "drop\n    oifname \"" + link +
           "\" drop\n"
           "  }\n"
           "}\n";
}

// Sandbox side: a connection to PORT arriving on eth0 goes to the server on
// 127.0.0.1 (so one bound to localhost only is reached; route_localnet lets
// the kernel deliver it), nothing else arriving on eth0 is taken, and only
// replies leave by it.
std::string sandboxRuleset(uint16_t port) {
    const std::string p = std::to_string(port);
    const std::string in = std::string("iifname \"") + kSandboxLink + "\" ";
    const std::string out = std::string("oifname \"") + kSandboxLink + "\" ";
    return "table inet stockade {\n"
           "  chain prerouting {\n"
           "    type nat hook prerouting priority dstnat; policy accept;\n"
           "    " +
           in + "tcp dport " + p + " dnat ip to 127.0.0.1:" + p +
           "\n"
           "  }\n"
           "  chain input {\n"
           "    type filter hook input priority filter; policy accept;\n"
           "    " +
           in + "ct state established,related accept\n    " + in + "ip daddr 127.0.0.1 tcp dport " +
           p + " ct status dnat accept\n    " + in +
           "drop\n"
           "  }\n"
           "  chain output {\n"
           "    type filter hook output priority filter; policy accept;\n"
           "    " +
           out + "ct state established,related accept\n    " + out +
           "drop\n"
           "  }\n"
           "}\n";
}

// The slot file's lock (base/file_lock.h); EWOULDBLOCK when its owner lives.
Result<UniqueFd> lockSlot(int slot, bool create) {
    return lockFileExclusive(slotPath(slot), create);
}

void warn(const std::string& what, const Error& error) {
    std::fprintf(stderr, "stockade: %s: %s\n", what.c_str(), error.describe().c_str());
}

// What a dead owner of `slot` may have left: its host link (gone with the
// sandbox's namespace, unless that outlived it) and its host table.
void removeLeftovers(int slot) {
    if (auto s = ns::deleteLink(hostLinkName(slot)); !s)
        warn("remove the stale link " + hostLinkName(slot), s.error());
    if (auto s = applyNftRuleset(removeTableRuleset(tableName(slot))); !s)
        warn("remove the stale nftables table " + tableName(slot), s.error());
}

Status makeSlotDir() {
    for (const char* dir : {"/run/stockade", kSlotDir})
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
            return Error::fromErrno(std::string("mkdir(\"") + dir + "\")");
    return okStatus();
}

}  // namespace

VethNetwork::VethNetwork(int slot, UniqueFd lock)
    : slot_(slot),
      lock_(std::move(lock)),
      host_link_(hostLinkName(slot)),
      table_(tableName(slot)),
      host_address_(poolAddress(slot, 1)),
      sandbox_address_(poolAddress(slot, 2)) {}

VethNetwork::~VethNetwork() {
    tearDown();
}

// The link goes before the table: while the sandbox lives, its end is never
// reachable without the host's rules.
void VethNetwork::tearDown() {
    if (!lock_) return;
    if (link_created_)
        if (auto s = ns::deleteLink(host_link_); !s)
            warn("remove the link " + host_link_, s.error());
    if (table_added_)
        if (auto s = applyNftRuleset(removeTableRuleset(table_)); !s)
            warn("remove the nftables table inet " + table_, s.error());
    unlink(slotPath(slot_).c_str());
    lock_.reset();
}

Result<std::unique_ptr<VethNetwork>> VethNetwork::create(pid_t init_pid, uint16_t port) {
    if (auto problem = vethBackendProblem()) return Error::message(*problem);
    if (auto s = makeSlotDir(); !s) return s.error();
    removeStaleVethNetworks();
    std::unique_ptr<VethNetwork> net;
    for (int slot = 0; slot < kSlots && !net; ++slot) {
        auto lock = lockSlot(slot, true);
        if (!lock) {
            if (lock.error().errnum() == EWOULDBLOCK) continue;
            return lock.error().withContext("take an address slot");
        }
        // Free, so any owner it had is dead; a file holding a pid had one.
        struct stat st;
        if (fstat(lock->get(), &st) == 0 && st.st_size > 0) removeLeftovers(slot);
        std::string pid = std::to_string(getpid()) + "\n";
        if (ftruncate(lock->get(), 0) < 0 || write(lock->get(), pid.data(), pid.size()) < 0)
            return Error::fromErrno("write(\"" + slotPath(slot) + "\")");
        net.reset(new VethNetwork(slot, std::move(*lock)));
    }
    if (!net)
        return Error::message("all " + std::to_string(kSlots) + " address slots under " + kSlotDir +
                              " are taken");

    const std::string ns_path = "/proc/" + std::to_string(init_pid) + "/ns/net";
    UniqueFd netns(open(ns_path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!netns) return Error::fromErrno("open(\"" + ns_path + "\")");

    // 1. The host's rules, before the link they guard exists.
    if (auto s = applyNftRuleset(hostRuleset(net->table_, net->host_link_)); !s)
        return s.error().withContext("add the host's nftables table inet " + net->table_);
    net->table_added_ = true;
    // 2. The pair; the sandbox's end goes straight into its namespace.
    if (auto s = ns::createVethPair(net->host_link_, kSandboxLink, netns.get()); !s)
        return s.error();
    net->link_created_ = true;
    // 3. The host's end: no IPv6 (no link-local address, no router
    //    solicitations), never a forwarding interface, then the address.
    const std::string host_conf = "net/ipv4/conf/" + net->host_link_ + "/forwarding";
    if (auto s =
            ns::writeNetSysctl("net/ipv6/conf/" + net->host_link_ + "/disable_ipv6", "1", true);
        !s)
        return s.error();
    if (auto s = ns::writeNetSysctl(host_conf, "0"); !s) return s.error();
    if (auto s = ns::bringLinkUp(net->host_link_, net->host_address_, kPrefixLength); !s)
        return s.error();
    // 4. Inside, rules and sysctls before the address: eth0 carries nothing
    //    before it is guarded. route_localnet is per namespace: the host's
    //    own stays as it is.
    in_addr inside = net->sandbox_address_;
    auto configured = ns::inNetworkNamespace(netns.get(), [&]() -> Status {
        for (const char* key :
             {"net/ipv4/conf/all/route_localnet", "net/ipv4/conf/eth0/route_localnet"})
            if (auto s = ns::writeNetSysctl(key, "1"); !s) return s;
        if (auto s = ns::writeNetSysctl("net/ipv4/ip_forward", "0"); !s) return s;
        if (auto s = ns::writeNetSysctl("net/ipv6/conf/eth0/disable_ipv6", "1", true); !s) return s;
        if (auto s = applyNftRuleset(sandboxRuleset(port)); !s)
            return s.error().withContext("add the sandbox's nftables table");
        return ns::bringLinkUp(kSandboxLink, inside, kPrefixLength);
    });
    if (!configured) return configured.error().withContext("configure the sandbox's eth0");
    return net;
}

void removeStaleVethNetworks() {
    if (geteuid() != 0) return;
    DIR* d = opendir(kSlotDir);
    if (!d) return;
    std::vector<int> slots;
    while (dirent* e = readdir(d)) {
        std::string name = e->d_name;
        if (!name.starts_with("slot-")) continue;
        char* end = nullptr;
        long slot = std::strtol(name.c_str() + 5, &end, 10);
        if (*end == '\0' && slot >= 0 && slot < kSlots) slots.push_back(static_cast<int>(slot));
    }
    closedir(d);
    for (int slot : slots) {
        auto lock = lockSlot(slot, false);
        if (!lock) continue;  // a live owner, or already gone
        removeLeftovers(slot);
        unlink(slotPath(slot).c_str());
    }
}

Status probeVethBackend() {
    if (auto problem = vethBackendProblem()) return Error::message(*problem);
    return ns::inThrowawayNetworkNamespace([]() -> Status {
        UniqueFd self(open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
        if (!self) return Error::fromErrno("open(\"/proc/thread-self/ns/net\")");
        if (auto s = ns::createVethPair("stkcheckh", "stkchecks", self.get()); !s) return s;
        if (auto s = applyNftRuleset(sandboxRuleset(8000)); !s) return s;
        return okStatus();
    });
}

std::optional<std::string> vethBackendProblem() {
    if (geteuid() != 0)
        return "--net-backend veth needs root: it creates a veth pair and nftables rules in the "
               "host's network namespace (the default --net-backend userspace works in every "
               "mode)";
    if (!findNft())
        return "--net-backend veth needs the nft binary, and none is in /usr/sbin, /sbin or "
               "/usr/bin (apt-get install nftables)";
    return std::nullopt;
}

}  // namespace stockade
