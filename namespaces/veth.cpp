#include "namespaces/veth.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <net/if.h>
#include <sched.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <thread>
#include <vector>

namespace stockade::ns {

namespace {

// One rtnetlink request under construction: the header, the family's fixed
// struct, then attributes, nested ones closed in reverse order.
class NetlinkRequest {
  public:
    NetlinkRequest(uint16_t type, uint16_t flags) {
        buffer_.resize(NLMSG_HDRLEN);
        header()->nlmsg_type = type;
        header()->nlmsg_flags = static_cast<uint16_t>(flags | NLM_F_REQUEST | NLM_F_ACK);
    }
    template <class T>
    void addStruct(const T& value) {
        append(&value, sizeof(value));
    }
    void addAttribute(uint16_t type, const void* data, size_t size) {
        rtattr attribute{static_cast<unsigned short>(RTA_LENGTH(size)), type};
        append(&attribute, sizeof(attribute));
        append(data, size);
    }
    void addString(uint16_t type, const std::string& value) {
        addAttribute(type, value.c_str(), value.size() + 1);
    }
    template <class T>
    void addValue(uint16_t type, T value) {
        addAttribute(type, &value, sizeof(value));
    }
    // Returns the nest's offset, for endNest.
    size_t beginNest(uint16_t type) {
        size_t at = buffer_.size();
        addAttribute(type, nullptr, 0);
        return at;
    }
    void endNest(size_t at) {
        reinterpret_cast<rtattr*>(buffer_.data() + at)->rta_len =
            static_cast<unsigned short>(buffer_.size() - at);
    }
    nlmsghdr* finish(uint32_t sequence) {
        header()->nlmsg_len = static_cast<uint32_t>(buffer_.size());
        header()->nlmsg_seq = sequence;
        return header();
    }

  private:
    nlmsghdr* header() { return reinterpret_cast<nlmsghdr*>(buffer_.data()); }
    void append(const void* data, size_t size) {
        size_t at = buffer_.size();
        buffer_.resize(at + NLMSG_ALIGN(size));
        if (size > 0) memcpy(buffer_.data() + at, data, size);
    }
    std::vector<char> buffer_;
};

// Sends one request on a fresh NETLINK_ROUTE socket (of the calling thread's
// network namespace) and returns the kernel's answer as an errno (0: done).
Result<int> askKernel(NetlinkRequest& request, const std::string& what) {
    UniqueFd fd(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
    if (!fd) return Error::fromErrno("socket(AF_NETLINK, NETLINK_ROUTE) for " + what);
    sockaddr_nl kernel{};
    kernel.nl_family = AF_NETLINK;
    nlmsghdr* message = request.finish(1);
    if (sendto(fd.get(), message, message->nlmsg_len, 0, reinterpret_cast<sockaddr*>(&kernel),
               sizeof(kernel)) < 0)
        return Error::fromErrno("sendto(NETLINK_ROUTE) for " + what);
    alignas(nlmsghdr) char answer[8192];
    for (;;) {
        ssize_t n = recv(fd.get(), answer, sizeof(answer), 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return Error::fromErrno("recv(NETLINK_ROUTE) for " + what);
        size_t left = static_cast<size_t>(n);
        for (auto* h = reinterpret_cast<nlmsghdr*>(answer); NLMSG_OK(h, left);
             h = NLMSG_NEXT(h, left)) {
            if (h->nlmsg_seq != 1 || h->nlmsg_type != NLMSG_ERROR) continue;
            if (h->nlmsg_len < NLMSG_LENGTH(sizeof(nlmsgerr)))
                return Error::message("a truncated netlink answer for " + what);
            return -static_cast<const nlmsgerr*>(NLMSG_DATA(h))->error;
        }
    }
}

Status request(NetlinkRequest& request, const std::string& what) {
    auto err = askKernel(request, what);
    if (!err) return err.error();
    if (*err != 0) return Error::fromErrno(what, *err);
    return okStatus();
}

}  // namespace

Status createVethPair(const std::string& host_name, const std::string& peer_name,
                      int peer_netns_fd) {
    NetlinkRequest message(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL);
    message.addStruct(ifinfomsg{});
    message.addString(IFLA_IFNAME, host_name);
    size_t info = message.beginNest(IFLA_LINKINFO);
    message.addString(IFLA_INFO_KIND, "veth");
    size_t data = message.beginNest(IFLA_INFO_DATA);
    size_t peer = message.beginNest(VETH_INFO_PEER);
    message.addStruct(ifinfomsg{});
    message.addString(IFLA_IFNAME, peer_name);
    message.addValue<uint32_t>(IFLA_NET_NS_FD, static_cast<uint32_t>(peer_netns_fd));
    message.endNest(peer);
    message.endNest(data);
    message.endNest(info);
    return request(message, "RTM_NEWLINK(veth " + host_name + " <-> " + peer_name +
                                " in the sandbox's network namespace)");
}

Status bringLinkUp(const std::string& name, in_addr address, int prefix_length) {
    unsigned index = if_nametoindex(name.c_str());
    if (index == 0) return Error::fromErrno("if_nametoindex(\"" + name + "\")");
    char text[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &address, text, sizeof(text));
    std::string where = std::string(text) + "/" + std::to_string(prefix_length);

    NetlinkRequest add(RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL);
    ifaddrmsg header{};
    header.ifa_family = AF_INET;
    header.ifa_prefixlen = static_cast<unsigned char>(prefix_length);
    header.ifa_scope = RT_SCOPE_UNIVERSE;
    header.ifa_index = index;
    add.addStruct(header);
    add.addValue(IFA_LOCAL, address);
    add.addValue(IFA_ADDRESS, address);
    if (auto s = request(add, "RTM_NEWADDR(" + where + " on " + name + ")"); !s) return s;

    NetlinkRequest up(RTM_NEWLINK, 0);
    ifinfomsg link{};
    link.ifi_index = static_cast<int>(index);
    link.ifi_flags = IFF_UP;
    link.ifi_change = IFF_UP;
    up.addStruct(link);
    return request(up, "RTM_NEWLINK(" + name + " up)");
}

Result<bool> deleteLink(const std::string& name) {
    NetlinkRequest message(RTM_DELLINK, 0);
    message.addStruct(ifinfomsg{});
    message.addString(IFLA_IFNAME, name);
    std::string what = "RTM_DELLINK(" + name + ")";
    auto err = askKernel(message, what);
    if (!err) return err.error();
    if (*err == ENODEV) return false;
    if (*err != 0) return Error::fromErrno(what, *err);
    return true;
}

Status writeNetSysctl(const std::string& key, const char* value, bool missing_ok) {
    std::string path = "/proc/sys/" + key;
    UniqueFd fd(open(path.c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd) {
        if (missing_ok && errno == ENOENT) return okStatus();
        return Error::fromErrno("open(\"" + path + "\", O_WRONLY)");
    }
    size_t size = strlen(value);
    if (write(fd.get(), value, size) != static_cast<ssize_t>(size))
        return Error::fromErrno("write(\"" + path + "\", \"" + value + "\")");
    return okStatus();
}

Status inNetworkNamespace(int netns_fd, const std::function<Status()>& step) {
    Status outcome = okStatus();
    std::thread worker([&] {
        if (setns(netns_fd, CLONE_NEWNET) < 0) {
            outcome = Error::fromErrno("setns(the sandbox's network namespace, CLONE_NEWNET)");
            return;
        }
        outcome = step();
    });
    worker.join();
    return outcome;
}

Status inThrowawayNetworkNamespace(const std::function<Status()>& step) {
    Status outcome = okStatus();
    std::thread worker([&] {
        if (unshare(CLONE_NEWNET) < 0) {
            outcome = Error::fromErrno("unshare(CLONE_NEWNET)");
            return;
        }
        outcome = step();
    });
    worker.join();
    return outcome;
}

}  // namespace stockade::ns
